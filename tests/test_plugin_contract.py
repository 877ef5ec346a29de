"""The suite's contract with a reader: every property states its guarantee in one line (the docs site
states every claim and property from the code: tests/test_docs.py)."""

from __future__ import annotations

import importlib
import inspect

import pytest

from conformance.plugin.run import SUITE_DIR

MODULES = sorted(p.stem for p in SUITE_DIR.glob("test_*.py"))


@pytest.mark.parametrize("module", MODULES)
def test_every_property_states_its_guarantee_in_one_line(module: str) -> None:
    """A one-line docstring names the guarantee; the report and every failure quote it."""
    loaded = importlib.import_module(f"conformance.suite.{module}")
    properties = [f for n, f in vars(loaded).items() if n.startswith("test_") and inspect.isfunction(f)]
    assert properties
    for prop in properties:
        doc = inspect.getdoc(prop) or ""
        first, _, rest = doc.partition("\n")
        assert first.strip(), f"{module}.{prop.__name__} has no guarantee docstring"
        assert not rest or rest.startswith("\n"), (
            f"{module}.{prop.__name__}: the guarantee spans lines: {doc!r}"
        )
