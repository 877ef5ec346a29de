"""A backend's declared known defects: expected failures that turn the run red once fixed."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

PROPERTY = "test_exists_hit_policies.py::test_batch_exists_v2_follows_every_pools_hit_policy[adversarial]"


def _run(pytester: pytest.Pytester, backend: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / "cert"
    result = pytester.runpytest(
        f"--backend=tests.declared:{backend}",
        f"--cert-report={out}",
        "-p",
        "no:cacheprovider",
        "--hypothesis-seed=0",
        "-k",
        "follows_every_pools_hit_policy and adversarial",
    )
    return result, json.loads((out / "report.json").read_text())


def test_a_declared_defect_that_still_fails_is_an_expected_failure_and_not_certified(
    pytester: pytest.Pytester,
) -> None:
    result, report = _run(pytester, "STILL_BROKEN")
    result.assert_outcomes(xfailed=1)
    (entry,) = [
        p for p in report["properties"] if p["outcome"] != "not run"
    ]  # the report lists the whole suite
    assert entry["outcome"] == "known defect" and entry["property"] == PROPERTY
    assert entry["reason"] == "takes the minimum of the pools' figures"
    assert report["verdict"] == "not certified"
    assert report["known_defects"] == [entry["property"]]


def test_a_declared_defect_that_was_fixed_fails_the_run(pytester: pytest.Pytester) -> None:
    result, report = _run(pytester, "FIXED")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*XPASS(strict)*declared, but the backend is right*"])
    assert report["verdict"] == "not certified"


def test_a_defect_declared_for_another_mode_does_not_excuse_this_one(pytester: pytest.Pytester) -> None:
    result, _ = _run(pytester, "BROKEN_IN_ANOTHER_MODE")
    result.assert_outcomes(failed=1)


def test_patterns_other_than_a_trailing_parameter_wildcard_match_nothing(pytester: pytest.Pytester) -> None:
    result, report = _run(pytester, "GLOB")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["warning: known-defect key 'test_batch_exists_v2_*[*]' matches no suite property"]
    )
    assert report["unmatched_known_defects"] == ["test_batch_exists_v2_*[*]"]


def test_only_keys_that_can_never_apply_are_reported_as_unmatched() -> None:
    from conformance.doubles.memory_backend import SPEC

    ids = ["test_a[x-1]", "test_b"]
    spec = replace(SPEC, known_defects={"test_a[*]": "", "test_b": "", "test_b@nomode": "", "test_c[*]": ""})
    assert spec.unmatched_defects(ids) == ["test_b@nomode", "test_c[*]"]


def test_a_defect_keyed_to_a_server_holds_on_that_server_only() -> None:
    from conformance.doubles.memory_backend import SPEC

    spec = replace(SPEC, known_defects={"test_a[NUL]@moto": "moto stores it"}, servers=("moto", "rgw"))
    assert spec.known_defect("test_a[NUL]", "default", "moto") == ("moto stores it", True)
    assert spec.known_defect("test_a[NUL]", "default", "rgw") is None
    assert spec.known_defect("test_a[NUL]", "default") is None
    assert spec.unmatched_defects(["test_a[NUL]"]) == []
    assert replace(spec, servers=()).unmatched_defects(["test_a[NUL]"]) == ["test_a[NUL]@moto"]


def test_an_intermittent_defect_that_did_not_show_leaves_the_run_green(pytester: pytest.Pytester) -> None:
    result, report = _run(pytester, "INTERMITTENT_AND_PASSING")
    result.assert_outcomes(xpassed=1)
    assert result.ret == pytest.ExitCode.OK
    (entry,) = [p for p in report["properties"] if p["outcome"] != "not run"]
    assert entry["outcome"] == "known defect" and entry["reason"].startswith(
        "intermittent, not caught this run: "
    )
    assert report["verdict"] == "not certified", (
        "the backend declares the defect: a run that missed it proves nothing"
    )


def test_a_known_defect_runs_without_shrinking_and_the_settings_come_back() -> None:
    """A known defect only has to fail: its @given settings and the profile that nested runs (the
    stateful model) inherit both lose the shrink phase for its call, and nothing else changes."""
    from hypothesis import Phase, given, settings, strategies

    from conformance.plugin.execution import _unshrunk

    @settings(max_examples=5)
    @given(strategies.integers())
    def prop(x: int) -> None:
        pass

    own, profile = prop._hypothesis_internal_use_settings, settings.get_current_profile_name()  # type: ignore[attr-defined]
    assert Phase.shrink in own.phases and Phase.shrink in settings().phases
    with _unshrunk(SimpleNamespace(obj=prop)):  # type: ignore[arg-type]
        inside = prop._hypothesis_internal_use_settings  # type: ignore[attr-defined]
        assert Phase.shrink not in inside.phases and inside.max_examples == 5
        assert Phase.shrink not in settings().phases
        assert settings().max_examples == settings.get_profile(profile).max_examples
    assert prop._hypothesis_internal_use_settings is own  # type: ignore[attr-defined]
    assert settings.get_current_profile_name() == profile and Phase.shrink in settings().phases
