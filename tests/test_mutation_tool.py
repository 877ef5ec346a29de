"""``python -m tests.mutation``'s own parts: what its population leaves out, and how it names tests.

Runs where the ``mutation`` extra is installed; the score itself is a README command, not a test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("cosmic_ray")
pytest.importorskip("coverage")

from tests.mutation.__main__ import population
from tests.mutation.order import junit_name

MODULE = """from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    LIMIT = 1 + 2


def grow(size: int | None = 3) -> int | None:
    extra: int | None = None
    return size + 1
"""


def test_mutants_inside_annotations_and_type_checking_blocks_are_left_out(tmp_path: Path) -> None:
    (tmp_path / "reference_backend").mkdir()
    (tmp_path / "reference_backend" / "grow.py").write_text(MODULE)
    mutants, dropped = population(tmp_path)
    lines = {m.line for m in mutants}
    # the `if TYPE_CHECKING` test itself, the default value and the addition stay; `int | None`
    # three times and `1 + 2` under TYPE_CHECKING go
    assert lines == {5, 9, 11}
    assert not [m for m in mutants if m.operator.startswith("core/ReplaceBinaryOperator_BitOr")]
    assert dropped >= 3 + 10


def test_tests_are_named_as_junit_xml_names_them() -> None:
    assert junit_name("conformance/suite/test_x.py::test_y[a-b]") == "conformance.suite.test_x::test_y[a-b]"
    assert (
        junit_name("conformance/suite/test_x.py::Model::runTest") == "conformance.suite.test_x.Model::runTest"
    )
