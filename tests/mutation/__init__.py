"""The suite's mutation score on the reference backend: ``python -m tests.mutation`` (docs/mutation.md)."""
