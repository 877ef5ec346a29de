"""The conformance matrix says, per backend and family, what the reports of one run say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.certificate.matrix import BEGIN, END, SUMMARY_BEGIN, SUMMARY_END, MixedRun, load, main, table


def _report(backend: str, outcomes: dict[str, str], seed: int = 0, digest: str = "d") -> dict[str, Any]:
    properties = [
        {
            "property": pid,
            "family": pid.split("::")[0].removeprefix("test_").removesuffix(".py"),
            "outcome": o,
        }
        for pid, o in outcomes.items()
    ]
    return {
        "backend": backend,
        "mode": "m",
        "backend_version": "v1",
        "verdict": "not certified" if "known defect" in outcomes.values() else "certified for a subset",
        "suite_version": "0",
        "suite_digest": digest,
        "hypothesis_profile": "p",
        "seed": seed,
        "date": "2026-12-03",
        "environment": {"torch": "2.13.0"},
        "properties": properties,
    }


def _write(tmp_path: Path, *reports: dict[str, Any]) -> list[Path]:
    paths = []
    for i, r in enumerate(reports):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(r))
        paths.append(path)
    return paths


def test_each_cell_says_passed_known_defect_or_not_claimed(tmp_path: Path) -> None:
    a = _report(
        "a",
        {
            "test_bad_input.py::x": "passed",
            "test_bad_input.py::y": "known defect",
            "test_persistence.py::z": "skipped",
            "test_concurrency.py::w": "passed",
            "test_concurrency.py::v": "skipped",
        },
    )
    row = next(line for line in table(load(_write(tmp_path, a))).splitlines() if line.startswith("| `a`"))
    assert "known defect 1/2" in row
    assert "not claimed" in row
    assert "passed 1/2, 1 not claimed" in row


def test_one_backend_on_two_servers_is_two_rows_that_name_their_server(tmp_path: Path) -> None:
    moto = {**_report("obj", {"test_x.py::p": "passed"}), "server": "moto 5.2.1"}
    rgw = {**_report("obj", {"test_x.py::p": "known defect"}), "server": "ceph radosgw 16.2.15"}
    rows = [
        line for line in table(load(_write(tmp_path, moto, rgw))).splitlines() if line.startswith("| `obj`")
    ]
    assert [row.split(" | ")[2] for row in rows] == ["ceph radosgw 16.2.15", "moto 5.2.1"]
    assert "known defect 1/1" in rows[0] and "passed 1/1" in rows[1]


def test_reports_of_different_runs_are_refused(tmp_path: Path) -> None:
    one, other = _report("a", {"test_x.py::p": "passed"}), _report("b", {"test_x.py::p": "passed"}, seed=1)
    with pytest.raises(MixedRun, match="seed"):
        load(_write(tmp_path, one, other))


def test_the_marked_table_in_a_document_is_replaced(tmp_path: Path) -> None:
    doc = tmp_path / "README.md"
    doc.write_text(f"before\n{BEGIN}\nold\n{END}\nafter\n")
    paths = _write(tmp_path, _report("a", {"test_x.py::p": "passed"}))
    assert main([*map(str, paths), "--update", str(doc)]) == 0
    text = doc.read_text()
    assert "old" not in text and "passed 1/1" in text and text.endswith(f"{END}\nafter\n")


def test_a_marked_summary_gets_the_verdicts_and_counts_without_the_families(tmp_path: Path) -> None:
    doc = tmp_path / "README.md"
    doc.write_text(f"before\n{SUMMARY_BEGIN}\nold\n{SUMMARY_END}\nafter\n")
    paths = _write(tmp_path, _report("a", {"test_x.py::p": "passed", "test_y.py::q": "skipped"}))
    assert main([*map(str, paths), "--update", str(doc)]) == 0
    text = doc.read_text()
    header = next(line for line in text.splitlines() if line.startswith("| backend"))
    assert header == "| backend | mode | server | version | verdict | passed | known defects | not claimed |"
    assert "old" not in text and "passed 1/1" not in text and text.endswith(f"{SUMMARY_END}\nafter\n")
    assert "seed" in text  # the line that says which run it came from


def test_a_document_without_markers_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "README.md"
    doc.write_text("no markers\n")
    paths = _write(tmp_path, _report("a", {"test_x.py::p": "passed"}))
    with pytest.raises(ValueError, match="neither"):
        main([*map(str, paths), "--update", str(doc)])
