"""A backend that cannot be certified stops the run with one clear sentence, never a traceback or a flood."""

from __future__ import annotations

import pytest

GOOD_CLAIMS = "Capabilities(hit_policies=frozenset({PoolHitPolicy.ALL_PAGES}))"

BACKEND = """
from conformance.model.capabilities import BackendSpec, Capabilities
from conformance.model.interface import PoolHitPolicy
from conformance.doubles.memory_backend import MemoryBackend

{body}
"""


def _usage_error(result: pytest.RunResult, *expected: str) -> None:
    """One short error; each of ``expected`` is words, split at ``*``, that stderr must hold."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    text = result.stderr.str() + result.stdout.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text, text[-3000:]
    assert len(text.splitlines()) < 15, text
    for words in expected:
        assert all(w in result.stderr.str() for w in words.split("*")), (words, result.stderr.str())


def test_a_backend_module_that_fails_to_import_is_one_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(mybackend="raise RuntimeError('the vendor SDK is not configured')\n")
    result = pytester.runpytest_subprocess("--backend=mybackend:SPEC")
    _usage_error(
        result, "*cannot load backend 'mybackend:SPEC': RuntimeError: the vendor SDK is not configured*"
    )


def test_a_missing_extra_is_named(pytester: pytest.Pytester) -> None:
    """``--backend=nixl`` without NIXL says to install the ``nixl`` extra."""
    pytester.makepyfile(
        no_nixl="import sys\nfor m in ('nixl', 'nixl_cu12', 'nixl_cu13'):\n    sys.modules[m] = None\n"
    )
    result = pytester.runpytest_subprocess("-p", "no_nixl", "--backend=nixl")
    _usage_error(result, "*backend 'nixl'*needs the 'nixl' extra: pip install 'hicache-conformance[nixl]'*")


@pytest.mark.parametrize(
    ("claims", "complaint"),
    [
        (
            "Capabilities(hit_policies=frozenset({'all_pages'}))",
            "*hit_policies must hold PoolHitPolicy members*'all_pages'*",
        ),
        ("Capabilities(persistence='yes')", "*persistence must be True or False, not 'yes'*"),
        ("Capabilities(side_pools='mamba')", "*side_pools must be a set, not 'mamba'*"),
        (
            "Capabilities(io_modes={'fast': {}}, direct_io_modes=frozenset({'direct'}))",
            "*direct_io_modes*not all in io_modes*",
        ),
    ],
    ids=["policy-strings", "string-bool", "string-set", "unknown-direct-mode"],
)
def test_wrongly_typed_capabilities_are_one_error_when_the_spec_loads(
    pytester: pytest.Pytester, claims: str, complaint: str
) -> None:
    pytester.makepyfile(mybackend=BACKEND.format(body=f"SPEC = BackendSpec('mine', MemoryBackend, {claims})"))
    _usage_error(
        pytester.runpytest_subprocess("--backend=mybackend:SPEC"), "*invalid Capabilities*", complaint
    )


def test_a_factory_that_cannot_build_stops_the_run_once(pytester: pytest.Pytester) -> None:
    """Built once at session start: one error, not one "failed property" per property."""
    body = (
        "def make(config, storage_dir):\n    raise RuntimeError('no device found')\n\n"
        f"SPEC = BackendSpec('mine', make, {GOOD_CLAIMS})\n"
    )
    pytester.makepyfile(mybackend=BACKEND.format(body=body))
    result = pytester.runpytest_subprocess("--backend=mybackend:SPEC", "-n", "2")
    _usage_error(result, "*'mybackend:SPEC'*factory cannot build a backend*RuntimeError: no device found*")


def test_an_unknown_mode_is_one_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--backend=memory", "--backend-mode=direct")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "backend 'memory' declares I/O modes ['default'], not 'direct'" in result.stderr.str()
