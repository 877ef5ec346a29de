"""Public: ``--backend=memory``, the in-memory model backend (the entry point names this path).

The definition lives in :mod:`conformance.doubles.memory_backend`.
"""

from conformance.doubles.memory_backend import SPEC, MemoryBackend

__all__ = ["SPEC", "MemoryBackend"]
