"""The reference backend certifies clean: every property, nothing skipped, in every I/O mode."""

from __future__ import annotations

import pytest

from conformance.targets import NIXL_CAPABILITIES

pytestmark = pytest.mark.slow  # the whole suite, once per I/O mode: minutes


@pytest.mark.parametrize("mode", sorted(NIXL_CAPABILITIES.io_modes))
def test_the_reference_backend_passes_the_whole_suite_with_nothing_skipped(
    pytester: pytest.Pytester, mode: str
) -> None:
    result = pytester.runpytest_subprocess(
        "--backend=nixl", f"--backend-mode={mode}", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.OK
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) == 0
    assert outcomes["passed"] >= 60
    result.stdout.fnmatch_lines([f"*hicache-conformance: nixl ({mode})*", "skipped properties: none"])
