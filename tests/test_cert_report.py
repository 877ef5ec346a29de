"""``--cert-report`` writes a report that matches the run it describes, and certifies only the suite."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conformance.certificate.report import CERTIFYING_EXAMPLES, CertReport, PropertyResult
from conformance.harness.watchdog import EXIT_OVERRUN
from conformance.servers.services import LOOPBACK, free_port, kill_all, running

ROOT = Path(__file__).resolve().parents[1]


def _run(
    pytester: pytest.Pytester, backend: str, *args: str, out: str = "cert"
) -> tuple[pytest.RunResult, dict[str, Any]]:
    folder = pytester.path / out
    result = pytester.runpytest(
        f"--backend={backend}", f"--cert-report={folder}", "-p", "no:cacheprovider", *args
    )
    report = json.loads((folder / "report.json").read_text())
    assert (folder / "report.md").read_text().startswith(f"# HiCache v2 certification: {report['backend']}")
    page = (folder / "report.html").read_text()
    assert "Verdict: <strong" in page and f">{report['verdict']}</strong>" in page
    return result, report


def test_a_keyword_selection_is_a_partial_run_that_lists_what_did_not_run(pytester: pytest.Pytester) -> None:
    keyword = "leading_run or pools_hit_policy or stride"
    result, report = _run(pytester, "memory", "-k", keyword)
    outcomes = result.parseoutcomes()
    ran = [p for p in report["properties"] if p["outcome"] != "not run"]
    counted = Counter(p["outcome"] for p in ran)
    assert counted["passed"] == outcomes["passed"]
    assert counted["skipped"] == outcomes.get("skipped", 0)
    assert report["verdict"] == "partial run"
    assert len(report["not_run"]) == outcomes["deselected"] > 0
    assert len(report["not_run"]) + len(ran) == len(report["suite"]) == len(report["properties"])
    assert report["selection"]["keyword"] == keyword
    assert report["capabilities"]["persistence"] is False
    assert {"python", "torch", "nixl", "os"} <= set(report["environment"])
    hypothesis_runs = [
        p for p in ran if "follows_every_pools_hit_policy" in p["property"] or "leading_run" in p["property"]
    ]
    assert hypothesis_runs and all(p["examples"] > 0 for p in hypothesis_runs)
    assert isinstance(report["seed"], int) and report["seeds"] == {"main": report["seed"]}
    assert report["date"].endswith("UTC") and f"-k '{keyword}'" in report["command"]
    assert report["hypothesis_profile"] == "hicache-default"
    assert report["max_examples"] == 12 and report["property_timeout"] == 150 * 12  # the default limit
    assert f"--hypothesis-seed={report['seed']}" in report["rerun"]
    assert [p["property"] for p in report["properties"]] == sorted(
        p["property"] for p in report["properties"]
    )
    # the run said what it was doing and how far it was, family by family
    out = result.stdout.str()
    families = Counter(p["family"] for p in ran)
    assert (
        f"hicache-conformance: certifying memory (mode default): {len(ran)} properties in "
        f"{len(families)} families, hypothesis seed {report['seed']}"
    ) in out
    for family, n in families.items():
        assert f"hicache-conformance: {family} started: backend memory, mode default, {n} propert" in out
        assert re.search(rf"hicache-conformance: {family} done {n}/{n} in \d+:\d\d \(", out), family


@pytest.mark.parametrize(
    "narrowing",
    [
        ["-m", "not hicache_requires"],
        ["--deselect", "{suite}/test_bad_input.py::test_an_empty_batch_does_nothing"],
        ["{suite}/test_bad_input.py"],
        ["{suite}/test_bad_input.py::test_an_empty_batch_does_nothing"],
    ],
    ids=["mark", "deselect", "path", "node-id"],
)
def test_every_way_of_narrowing_the_run_is_a_partial_run(
    pytester: pytest.Pytester, narrowing: list[str]
) -> None:
    from conformance.plugin.run import SUITE_DIR

    args = [a.format(suite=SUITE_DIR) for a in narrowing]
    _, report = _run(pytester, "memory", *args, "-k", "bad_input")
    assert report["verdict"] == "partial run", report["verdict"]
    assert report["not_run"]
    assert all(p["property"] in report["suite"] for p in report["properties"])


def test_the_users_own_tests_never_count_as_properties(pytester: pytest.Pytester) -> None:
    """The issue's run: ``--backend=X tests`` ran three user tests and called it certified."""
    pytester.makepyfile(test_mine="def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    result, report = _run(pytester, "memory", "test_mine.py")
    result.assert_outcomes(passed=2)
    assert report["verdict"] == "partial run"
    assert report["other_tests"] == 2
    assert all(p["outcome"] == "not run" for p in report["properties"])
    assert len(report["not_run"]) == len(report["suite"]) > 100


def test_a_failing_backend_is_not_certified_and_each_failure_is_explained(pytester: pytest.Pytester) -> None:
    result, report = _run(pytester, "tests.broken.partial_exists:SPEC", "-k", "leading_run")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failed = [p for p in report["properties"] if p["outcome"] == "failed"]
    assert report["verdict"] == "not certified"
    assert sorted(report["failing"]) == sorted(p["property"] for p in failed)
    leading = [
        p for p in failed if "test_batch_exists_counts_the_leading_run_of_present_keys" in p["property"]
    ]
    assert leading, [p["property"] for p in failed]
    for p in leading:
        assert p["guarantee"] and p["message"].startswith("AssertionError")
        assert "Falsifying" in p["example"] and "present=" in p["example"], p["example"]
    markdown = (pytester.path / "cert" / "report.md").read_text()
    assert "## Failing properties" in markdown and "Minimal example:" in markdown


def test_a_property_whose_process_died_is_certified_failed_never_passed(pytester: pytest.Pytester) -> None:
    """Under xdist a worker that dies mid-property (a native crash, a hang killed from outside)
    leaves only xdist's own failure report, without the property's record; its setup had passed."""
    result, report = _run(
        pytester, "tests.broken.dying_process:SPEC", "-n", "1", "-k", "leading_run and llama3_mha"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (row,) = [p for p in report["properties"] if p["outcome"] != "not run"]
    assert row["property"].endswith("test_batch_exists_counts_the_leading_run_of_present_keys[llama3_mha]")
    assert row["outcome"] == "failed" and row["reason"] == "the process running it died"
    assert report["verdict"] == "not certified" and report["failing"] == [row["property"]]


HUNG = "test_exists_hit_policies.py::test_batch_exists_counts_the_leading_run_of_present_keys[llama3_mha]"
HUNG_LATER = (
    "test_pool_isolation.py::test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[llama3_mha]"
)
HANG = ("--property-timeout=5", "-k")
ROUND_TRIP_THEN_HANG = "test_dtype and llama3_mha or leading_run and llama3_mha"


def _overran(report: dict[str, Any], *hung: str) -> None:
    rows = [p for p in report["properties"] if p["property"] in hung]
    assert len(rows) == len(hung)
    for row in rows:
        assert row["outcome"] == "failed" and row["reason"] == "it ran past its time limit of 5 s", row
        assert "hanging_exists.py" in row["message"] and "never.join()" in row["message"], row["message"]
    assert report["verdict"] == "not certified" and report["failing"] == sorted(hung)
    round_trips = [
        p["outcome"]
        for p in report["properties"]
        if "test_dtype" in p["property"] and "llama3_mha" in p["property"]
    ]
    assert set(round_trips) == {"passed"}, round_trips


def test_a_property_that_hangs_fails_at_its_time_limit_and_the_run_goes_on(pytester: pytest.Pytester) -> None:
    """A hang no signal reaches (a join that never returns, as a native destructor's can) ends its
    worker at the limit: the property fails with where it hung, and a fresh worker runs the rest
    (here a second property that hangs too, and fails on its own account)."""
    keyword = f"{ROUND_TRIP_THEN_HANG} or test_a_rank_never_sees and llama3_mha"
    result, report = _run(pytester, "tests.broken.hanging_exists:SPEC", "-n", "1", *HANG, keyword)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _overran(report, HUNG, HUNG_LATER)


def test_without_xdist_a_hang_ends_the_run_with_its_certificate_written(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process: the property fails at its limit, the certificate is written before the process ends."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the broken backends live in this repository's tests/
    folder = pytester.path / "cert"
    result = pytester.runpytest_subprocess(
        "--backend=tests.broken.hanging_exists:SPEC",
        f"--cert-report={folder}",
        "-p",
        "no:cacheprovider",
        *HANG,
        ROUND_TRIP_THEN_HANG,
    )
    assert result.ret == EXIT_OVERRUN
    assert f"hicache-conformance: {HUNG}: it ran past its time limit of 5 s" in result.stderr.str()
    _overran(json.loads((folder / "report.json").read_text()), HUNG)


def test_kill_all_stops_the_services_a_process_started(tmp_path: Path) -> None:
    """A process ending an overrun skips its cleanup: its servers are killed by pid first."""
    port = free_port()
    argv = [sys.executable, "-m", "http.server", "--bind", LOOPBACK, "--directory", str(tmp_path), str(port)]
    with running(argv, port, what="http.server") as pid:
        kill_all()
        os.waitpid(pid, 0)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.slow
def test_a_backend_passing_the_whole_suite_quickly_is_checked_not_certified(
    pytester: pytest.Pytester,
) -> None:
    """Every property ran and passed (memory skips what it does not claim), at a profile too shallow
    for a certificate."""
    pytester.makeconftest(
        "from hypothesis import settings\nsettings.register_profile('quick', max_examples=2)\n"
    )
    result, report = _run(pytester, "memory", "--hypothesis-seed=7", "--hypothesis-profile=quick")
    assert result.ret == pytest.ExitCode.OK
    assert report["verdict"] == "quick check", "two examples a property are no certificate"
    assert report["max_examples"] == 2 and "needs 12" in report["why"]
    assert report["seed"] == 7 and "not_run" not in report
    assert report["hypothesis_profile"] == "quick"
    truncation = [p for p in report["properties"] if "truncated_object_is_neither" in p["property"]]
    assert truncation and all(p["requires"] == ["stores_files"] for p in truncation)
    assert all(p["outcome"] in ("passed", "skipped") for p in report["properties"])
    skipped = [p["reason"] for p in report["properties"] if p["outcome"] == "skipped"]
    assert all("does not declare" in r or "declares no" in r for r in skipped), skipped
    stateful = [p for p in report["properties"] if "stateful" in p["property"]]
    assert stateful and all(p["examples"] > 0 for p in stateful), stateful
    assert report["coverage"]["model geometries"] and report["coverage"]["pool kinds"]


def test_the_verdict_certifies_only_a_whole_clean_run_at_full_depth() -> None:
    """The verdict rules on their own: failure, partial run, quick check, subset, certified."""
    suite = ["test_a.py::test_x", "test_a.py::test_y"]

    def report(*outcomes: str, other: int = 0, examples: int = CERTIFYING_EXAMPLES) -> str:
        rows = [PropertyResult(pid, "a", o) for pid, o in zip(suite, outcomes)]
        cert = CertReport(
            "b", "1", "m", {}, 1, suite=suite, properties=rows, other_tests=other, max_examples=examples
        )
        return str(cert.verdict()["verdict"])

    assert report("passed", "passed") == "certified"
    assert report("passed", "passed", examples=400) == "certified"
    assert report("passed", "skipped") == "certified for a subset"
    assert report("passed", "passed", examples=CERTIFYING_EXAMPLES - 1) == "quick check"
    assert report("passed", "skipped", examples=3) == "quick check"
    assert report("passed") == "partial run"
    assert report("passed", "passed", other=1) == "partial run"
    assert report("failed") == "not certified"
    assert report("failed", examples=3) == "not certified"
    assert report("passed", "known defect") == "not certified"


def test_the_html_certificate_gives_verdict_families_skips_seed_and_the_command_to_reproduce(
    tmp_path: Path,
) -> None:
    rows = [
        PropertyResult("test_a.py::test_x", "a", "passed"),
        PropertyResult(
            "test_a.py::test_y", "a", "skipped", reason="backend 'b' does not declare persistence"
        ),
        PropertyResult(
            "test_b.py::test_z[p]", "b", "failed", guarantee="No <b>tag</b> leaks.", message="got <script>"
        ),
        PropertyResult("test_c.py::test_w", "c", "known defect", reason="keys are paths"),
    ]
    cert = CertReport(
        "mine",
        "1.0",
        "direct",
        {},
        1234,
        command="pytest --backend=mine",
        rerun="pytest --backend=mine --hypothesis-seed=1234",
        suite=[r.property for r in rows] + ["test_c.py::test_v"],
        properties=rows,
        max_examples=CERTIFYING_EXAMPLES,
    )
    cert.write(tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert ">not certified</strong>" in page
    # every family's counts: properties, passed, failed, known defect, skipped, not run
    assert "<tr><td>a</td><td>2</td><td>1</td><td>0</td><td>0</td><td>1</td><td>0</td>" in page
    assert "<tr><td>c</td><td>2</td><td>0</td><td>0</td><td>1</td><td>0</td><td>1</td>" in page
    assert "<tr><td>all</td><td>5</td><td>1</td><td>1</td><td>1</td><td>1</td><td>1</td>" in page
    assert "<code>test_a.py::test_y</code>: backend &#x27;b&#x27; does not declare persistence" in page
    assert "<code>1234 in every process</code>" in page
    assert "<code>pytest --backend=mine --hypothesis-seed=1234</code>" in page
    assert "got &lt;script&gt;" in page and "<script>" not in page and "No &lt;b&gt;tag" in page
    assert "<code>test_c.py::test_v</code>" in page  # not run


def test_junit_xml_records_every_property(pytester: pytest.Pytester) -> None:
    xml = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "--backend=memory", f"--junitxml={xml}", "-p", "no:cacheprovider", "-k", "leading_run or hit_policy"
    )
    assert result.ret == pytest.ExitCode.OK
    assert xml.read_text().count("<testcase ") == result.parseoutcomes()["passed"]


@pytest.mark.slow
def test_the_rerun_command_reproduces_the_failing_set_under_xdist(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers, one seed: the report's rerun command fails exactly the same properties, the same way."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the broken backends live in this repository's tests/
    args = [
        "-n",
        "2",
        "-p",
        "no:cacheprovider",
        "-k",
        "overwriting_one_pool and (adversarial or qwen3 or nemotron)",
    ]
    first = pytester.runpytest_subprocess(
        "--backend=tests.broken.pool_blind_names:SPEC", f"--cert-report={pytester.path / 'one'}", *args
    )
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    one = json.loads((pytester.path / "one" / "report.json").read_text())
    assert set(one["seeds"]) == {"main", "gw0", "gw1"} and set(one["seeds"].values()) == {one["seed"]}
    rerun = shlex.split(one["rerun"])
    assert rerun[:3] == ["python", "-m", "pytest"]  # as pytester started it
    rerun = rerun[3:]
    assert f"--hypothesis-seed={one['seed']}" in rerun
    rerun = [a.replace(str(pytester.path / "one"), str(pytester.path / "two")) for a in rerun]
    second = pytester.runpytest_subprocess(*rerun)
    assert second.ret == pytest.ExitCode.TESTS_FAILED
    two = json.loads((pytester.path / "two" / "report.json").read_text())

    def failures(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
        return {
            p["property"]: (p["message"], p["example"])
            for p in report["properties"]
            if p["outcome"] == "failed"
        }

    assert failures(one) and failures(one) == failures(two)


def test_skips_and_example_counts_come_back_from_xdist_workers(pytester: pytest.Pytester) -> None:
    """The issue's run said "skipped properties: none" beside "8 skipped": the controller now gathers them."""
    folder = pytester.path / "cert"
    result = pytester.runpytest_subprocess(
        "--backend=memory", "-n", "2", f"--cert-report={folder}", "-p", "no:cacheprovider", "-k", "alignment"
    )
    skipped = result.parseoutcomes()["skipped"]
    assert skipped > 0
    result.stdout.fnmatch_lines([f"skipped properties ({skipped}), not certified:"])
    report = json.loads((folder / "report.json").read_text())
    # the controller says how far the run is, from its workers' reports
    ran = [p for p in report["properties"] if p["outcome"] != "not run"]
    result.stdout.re_match_lines(
        [rf"hicache-conformance: certifying memory \(mode default\): {len(ran)} propert"]
    )
    result.stdout.re_match_lines(
        [rf".*hicache-conformance: alignment_fallback done (\d+)/\1 in .*; run \d+/{len(ran)} done"]
    )
    ran = [p for p in report["properties"] if p["outcome"] == "passed"]
    assert ran and all(p["examples"] > 0 for p in ran)
