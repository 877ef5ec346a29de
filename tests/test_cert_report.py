"""``--cert-report`` writes a report that matches the run it describes."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest


def _run(pytester: pytest.Pytester, backend: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / "cert"
    result = pytester.runpytest(
        f"--backend={backend}", f"--cert-report={out}", "-p", "no:cacheprovider", *args
    )
    report = json.loads((out / "report.json").read_text())
    assert (out / "report.md").read_text().startswith(f"# HiCache v2 certification: {report['backend']}")
    return result, report


def test_the_report_counts_what_the_run_counted(pytester: pytest.Pytester) -> None:
    result, report = _run(pytester, "memory", "-k", "exists or alignment")
    outcomes = result.parseoutcomes()
    counted = Counter(p["outcome"] for p in report["properties"])
    assert counted["passed"] == outcomes["passed"]
    assert counted["skipped"] == outcomes.get("skipped", 0)
    assert report["verdict"] == "certified for a subset"
    assert sorted(report["not_claimed"]) == sorted(
        p["nodeid"] for p in report["properties"] if p["outcome"] == "skipped"
    )
    assert all(
        p["reason"].startswith("backend 'memory' does not declare")
        for p in report["properties"]
        if p["outcome"] == "skipped"
    )
    assert report["capabilities"]["persistence"] is False
    assert {"python", "torch", "nixl", "os"} <= set(report["environment"])
    hypothesis_runs = [
        p for p in report["properties"] if "hit_policy" in p["nodeid"] or "leading_run" in p["nodeid"]
    ]
    assert hypothesis_runs and all(p["examples"] > 0 for p in hypothesis_runs)
    assert isinstance(report["seed"], int)


def test_a_failing_backend_is_not_certified_and_its_failures_are_named(pytester: pytest.Pytester) -> None:
    result, report = _run(pytester, "tests.broken.partial_exists:SPEC", "-k", "exists")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failed = sorted(p["nodeid"] for p in report["properties"] if p["outcome"] == "failed")
    assert report["verdict"] == "not certified"
    assert sorted(report["failing"]) == failed
    assert failed and all("test_batch_exists_counts_the_leading_run_of_present_keys" in n for n in failed)


def test_a_backend_passing_everything_it_ran_is_certified(pytester: pytest.Pytester) -> None:
    result, report = _run(pytester, "nixl", "-k", "exists_hit_policies", "--hypothesis-seed=7")
    assert result.ret == pytest.ExitCode.OK
    assert report["verdict"] == "certified"
    assert report["seed"] == 7
    assert report["backend"] == "nixl" and report["mode"] == "buffered"


def test_junit_xml_records_every_property(pytester: pytest.Pytester) -> None:
    xml = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "--backend=memory", f"--junitxml={xml}", "-p", "no:cacheprovider", "-k", "exists"
    )
    assert result.ret == pytest.ExitCode.OK
    assert xml.read_text().count("<testcase ") == result.parseoutcomes()["passed"]
