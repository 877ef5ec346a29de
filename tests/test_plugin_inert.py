"""Installed, the plugin changes nothing in another project's test run until ``--backend`` is given.

Each test runs pytest in a child process (``sys.modules`` and hypothesis's settings are
process-wide), on a user project that knows nothing of HiCache.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

USER_TESTS = """
import sys
import warnings

import pytest
from hypothesis import given, settings, strategies as st

HEAVY_AT_COLLECTION = sorted(m for m in ("torch", "conformance.harness.rig", "nixl") if m in sys.modules)
RUNS = []


@given(st.binary())
def test_a_user_property(blob):
    RUNS.append(blob)


def test_hypothesis_ran_its_own_profile():
    # hypothesis picks "default", or "ci" where it detects CI; the plugin must not change which
    print("PROFILE", settings.get_current_profile_name(), settings.default.max_examples, len(RUNS))
    assert len(RUNS) == settings.default.max_examples


def test_nothing_heavy_was_imported_at_start():
    assert HEAVY_AT_COLLECTION == []


def test_no_generic_fixture_is_injected(request):
    with pytest.raises(pytest.FixtureLookupError):
        request.getfixturevalue("target")


def test_no_warning_filter_was_added(request):
    assert request.config.getini("filterwarnings") == []
"""


@pytest.fixture
def user_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makepyfile(test_user=USER_TESTS)
    monkeypatch.setenv("TMPDIR", str(pytester.mkdir("tmp")))
    # pytester makes the project HOME; SGLang's import writes its JIT cache under ~/.cache/sglang,
    # which is SGLang's in every deployment, not something the plugin leaves in the project
    monkeypatch.setenv("HOME", str(pytester.mkdir("home")))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return pytester


def _profile_line(result: pytest.RunResult) -> str:
    found = re.search(r"PROFILE \S+ \d+ \d+", result.stdout.str())
    assert found, result.stdout.str()[-2000:]
    return found.group()


def test_without_backend_the_plugin_changes_nothing(user_project: pytest.Pytester) -> None:
    """Hypothesis keeps the profile it picks alone, no torch at start, no ``target``, no filters."""
    args = ("-p", "no:randomly", "-p", "no:cacheprovider", "-s")
    result = user_project.runpytest_subprocess(*args)
    result.assert_outcomes(passed=5)
    assert "hicache" in result.stdout.str()  # the plugin was loaded, and still changed nothing
    assert "hicache-conformance:" not in result.stdout.str()  # and printed no progress line
    alone = user_project.runpytest_subprocess(*args, "-p", "no:hicache_conformance")
    alone.assert_outcomes(passed=5)
    assert "hicache" not in alone.stdout.str()
    assert _profile_line(result) == _profile_line(alone)


def test_a_certification_leaves_no_folders_behind(user_project: pytest.Pytester) -> None:
    """No temp folders, no ``.hypothesis`` database, no ``.benchmarks`` after a run with --backend."""
    before = set(os.listdir(user_project.path))
    result = user_project.runpytest_subprocess("--backend=memory", "-k", "exists_v2_follows or sidecar")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    ours = {"stdout", "stderr", "runpytest-0", "runpytest-current"}  # pytester's own files
    created = set(os.listdir(user_project.path)) - before - ours
    # .benchmarks comes from pytest-benchmark (the test extra), in every run, --backend or not
    assert created <= {".pytest_cache", ".benchmarks"}, created
    assert os.listdir(user_project.path / "tmp") == []


def test_with_backend_the_suite_profile_loads_and_the_user_can_choose_another(
    user_project: pytest.Pytester,
) -> None:
    """``--backend`` loads the suite's 12-example profile unless ``--hypothesis-profile`` says otherwise."""
    user_project.makeconftest(
        "from hypothesis import settings\nsettings.register_profile('mine', max_examples=3)\n"
    )
    user_project.makepyfile(
        test_profile="""
from hypothesis import settings

def test_profile():
    print("PROFILE", settings.get_current_profile_name(), settings.default.max_examples,
          settings.default.database)
"""
    )
    ours = user_project.runpytest_subprocess("--backend=memory", "test_profile.py", "-s")
    ours.stdout.fnmatch_lines(["*PROFILE hicache-default 12 None"])
    mine = user_project.runpytest_subprocess(
        "--backend=memory", "test_profile.py", "-s", "--hypothesis-profile=mine"
    )
    mine.stdout.fnmatch_lines(["*PROFILE mine-certification 3 None"])
