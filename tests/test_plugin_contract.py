"""The suite's contract with a reader: every property states its guarantee, the README states every claim."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from conformance.contract import BEGIN, END, capability_table
from conformance.plugin import SUITE_DIR

ROOT = Path(__file__).resolve().parents[1]
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


def test_the_readme_documents_every_capability_as_the_code_declares_it() -> None:
    readme = (ROOT / "README.md").read_text()
    assert BEGIN in readme and END in readme
    current = readme[readme.index(BEGIN) : readme.index(END) + len(END)]
    assert current == capability_table(), (
        "README is stale: run python -m conformance.contract --update README.md"
    )
