"""The example backend the docs tell readers to copy (``examples/dict_backend.py``) is certified for
what it claims: a whole run of the suite, every claimed property passing, every other one skipped
with the claim it lacks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conformance.harness.registry import resolve_backend

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "examples.dict_backend:SPEC"


def test_the_example_resolves_as_the_docs_spell_it() -> None:
    spec = resolve_backend(EXAMPLE)
    assert spec.name == "dict-example" and spec.capabilities.v1_kv and spec.capabilities.side_pools


@pytest.mark.slow  # the whole suite: about two minutes on 2 cores
def test_the_example_backend_is_certified_for_a_subset(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    folder = pytester.path / "cert"
    result = pytester.runpytest_subprocess(
        f"--backend={EXAMPLE}", "-n", "2", "-p", "no:cacheprovider", f"--cert-report={folder}"
    )
    report = json.loads((folder / "report.json").read_text())
    failed = [p["property"] for p in report["properties"] if p["outcome"] not in ("passed", "skipped")]
    assert result.ret == pytest.ExitCode.OK and failed == [], failed
    assert report["verdict"] == "certified for a subset"
    reasons = [p["reason"] for p in report["properties"] if p["outcome"] == "skipped"]
    assert reasons and all("does not declare" in r or "declares no" in r for r in reasons), reasons
