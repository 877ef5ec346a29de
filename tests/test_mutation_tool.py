"""``python -m tests.mutation``'s own parts: what its population leaves out, how it names tests,
and that a finished sample's score is printed without running anything.

Runs where the ``mutation`` extra is installed; the score itself is a README command, not a test.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

pytest.importorskip("cosmic_ray")
pytest.importorskip("coverage")

import tests.mutation.__main__ as tool
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


def test_a_sample_that_finished_is_scored_without_a_calibration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every sampled mutant has a result: the score comes from the results file, the suite never runs."""
    monkeypatch.setattr(tool, "population", lambda: ([tool.Mutant("m.py", "core/X", 0, 1, 0, 1)], 0))

    def calibrate(*_: object) -> None:
        raise AssertionError("calibrated though every sampled mutant had a result")

    monkeypatch.setattr(tool, "calibrate", calibrate)
    outcome = tool.Outcome("m.py:1:X:0", "killed", 1.0, "exit 1: p", "-a\n+b")
    (tmp_path / "results-direct-seed0.jsonl").write_text(json.dumps(asdict(outcome)) + "\n")
    assert tool.main(["--sample", "1", "--workdir", str(tmp_path)]) == 0
    assert "score: 1 / 1 non-equivalent = 100.0%" in capsys.readouterr().out


def test_a_run_the_watchdog_ended_names_the_property_that_hung() -> None:
    """A hang is a kill only once confirmed, so the tool must know which property to rerun."""
    output = (
        "hicache-conformance: certifying nixl (mode direct): 1 property in 1 family, hypothesis seed 0\n"
        "hicache-conformance: test_lifecycle.py::test_x[a]: it ran past its time limit of 180 s; "
        "ending this process\n"
    )
    assert tool.OVERRUN.search(output)
    assert tool._killer(output) == "conformance/suite/test_lifecycle.py::test_x[a] (past its time limit)"
    assert tool._killer("FAILED conformance/suite/test_a.py::test_b - AssertionError\n") == (
        "conformance/suite/test_a.py::test_b"
    )


def test_the_hang_limit_is_a_multiple_of_the_slowest_property_with_a_floor() -> None:
    quick = tool.Calibration(1.0, {"a": 0.5, "b": 2.0}, {}, {})
    slow = tool.Calibration(1.0, {"a": 30.0}, {}, {})
    assert tool.hang_limit(quick) == tool.HANG_FLOOR
    assert tool.hang_limit(slow) == 30.0 * tool.HANG_FACTOR
