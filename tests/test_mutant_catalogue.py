"""Every mutant in the catalogue resolves as a backend and differs from the reference."""

from __future__ import annotations

from conformance.harness.registry import resolve_backend
from reference_backend.backend import NixlBackend
from tests.mutants import catalogue


def test_every_mutant_resolves_by_name() -> None:
    assert len(catalogue.MUTANTS) >= 12
    for name in catalogue.MUTANTS:
        spec = resolve_backend(f"tests.mutants.catalogue:{name}")
        assert spec.capabilities == resolve_backend("nixl").capabilities


def test_every_mutant_class_overrides_something() -> None:
    mutants = [
        c
        for c in vars(catalogue).values()
        if isinstance(c, type) and issubclass(c, NixlBackend) and c is not NixlBackend
    ]
    assert mutants
    for cls in mutants:
        assert set(vars(cls)) - {
            "__module__",
            "__doc__",
            "__qualname__",
            "__firstlineno__",
            "__static_attributes__",
        }
        assert cls.__doc__, f"{cls.__name__} must say which defect it carries"
