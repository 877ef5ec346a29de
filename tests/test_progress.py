"""A certification run says what it is doing and how far it is: a line per family as it starts and ends.

The lines of whole runs, with and without xdist, are checked in tests/test_cert_report.py
(``test_a_keyword_selection_...``, ``test_skips_and_example_counts_...``).
"""

from __future__ import annotations

from conformance.certificate.progress import Progress


def _progress(lines: list[str], now: list[float]) -> Progress:
    return Progress("mine", "direct", lines.append, clock=lambda: now[0])


def test_each_family_says_when_it_starts_and_ends_with_its_counts_and_the_runs() -> None:
    lines: list[str] = []
    now = [100.0]
    progress = _progress(lines, now)
    progress.expect(["test_a.py::p1", "test_a.py::p2", "test_b.py::q[x]"], seed=7)
    progress.expect(["test_a.py::p1"], seed=7)  # a second xdist worker's collection changes nothing
    assert lines == [
        "hicache-conformance: certifying mine (mode direct): 3 properties in 2 families, hypothesis seed 7"
    ]
    now[0] = 101.0
    progress.report("test_a.py::p1", "setup", "passed")
    now[0] = 103.0
    progress.report("test_b.py::q[x]", "setup", "skipped")
    progress.report("test_b.py::q[x]", "teardown", "passed")
    progress.report("test_a.py::p1", "call", "failed")
    progress.report("test_a.py::p1", "teardown", "passed")  # a property keeps its worst outcome
    now[0] = 172.0
    progress.report("test_a.py::p2", "setup", "passed")
    progress.report("test_a.py::p2", "call", "known defect")
    progress.report("test_a.py::p2", "teardown", "passed")
    assert lines[1:] == [
        "hicache-conformance: a started: backend mine, mode direct, 2 properties; run 0/3 done, 0:01 elapsed",
        "hicache-conformance: b started: backend mine, mode direct, 1 property; run 0/3 done, 0:03 elapsed",
        "hicache-conformance: b done 1/1 in 0:00 (1 skipped); run 1/3 done, 0:03 elapsed",
        "hicache-conformance: a done 2/2 in 1:11 (1 known defect, 1 failed); run 3/3 done, 1:12 elapsed",
    ]


def test_a_property_whose_worker_died_is_done_and_failed() -> None:
    lines: list[str] = []
    progress = _progress(lines, [0.0])
    progress.expect(["test_a.py::p"], seed=0)
    progress.report("test_a.py::p", "setup", "passed")
    progress.report("test_a.py::p", "???", "failed")  # xdist's account of a worker lost under it
    progress.report("test_a.py::p", "teardown", "passed")  # nothing counts twice
    assert lines[-1].startswith("hicache-conformance: a done 1/1 in 0:00 (1 failed); run 1/1 done")


def test_an_xdist_controller_knows_suite_properties_by_node_id_alone(tmp_path) -> None:
    from conformance.plugin.run import SUITE_DIR, suite_id_of

    (tmp_path / "test_bad_input.py").write_text("")  # the user's own file of a suite module's name
    inside = SUITE_DIR.relative_to(SUITE_DIR.parents[1])  # conformance/suite, under the repository
    assert suite_id_of(SUITE_DIR.parents[1], f"{inside}/test_bad_input.py::t[x]") == "test_bad_input.py::t[x]"
    # the suite outside the rootdir: pytest names its tests relative to the suite folder
    assert suite_id_of(tmp_path / "elsewhere", "test_lifecycle.py::t") == "test_lifecycle.py::t"
    assert suite_id_of(tmp_path, "test_bad_input.py::t") is None
    assert suite_id_of(tmp_path, "test_nothing_here.py::t") is None
