"""``stores_files`` promises files, not a layout: the damage properties find them by what a write changed."""

from __future__ import annotations

import pytest

MARKED_BACKEND = """
from dataclasses import replace

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


def make(config, storage_dir):
    marker = storage_dir / "FORMAT"  # a marker file beside the entries, written once
    if not marker.exists():
        marker.write_text("mystore 1\\n")
    return NixlBackend(config, storage_dir)


# buffered said explicitly: the reference backend's default is O_DIRECT, as HiCacheNixl's
CLAIMS = replace(
    NIXL_CAPABILITIES, io_modes={"buffered": {"use_direct_io": False}}, direct_io_modes=frozenset()
)
SPEC = BackendSpec("marked", make, CLAIMS)
"""


def test_a_backend_with_a_format_marker_file_passes_the_damage_properties(pytester: pytest.Pytester) -> None:
    """The issue's case: a marker file made four properties fail with "too many values to unpack"."""
    pytester.makepyfile(mystore=MARKED_BACKEND)
    result = pytester.runpytest_subprocess(
        "--backend=mystore:SPEC",
        "-p",
        "no:cacheprovider",
        "-k",
        "(truncated or corrupted or read_only) and not bucket",  # the bucket twins need stores_objects
    )
    result.assert_outcomes(passed=5)


def test_the_process_properties_close_what_they_open_under_w_error(pytester: pytest.Pytester) -> None:
    """A user's ``filterwarnings = error`` turned unclosed worker pipes into failed SIGKILL properties."""
    pytester.makeini("[pytest]\nfilterwarnings =\n    error\n")
    result = pytester.runpytest_subprocess(
        "--backend=nixl",
        "-p",
        "no:benchmark",  # under an outer xdist run it warns that benchmarks are off: an error here
        "-p",
        "no:cacheprovider",
        "-k",
        "(killed and at-once) or file_size or two_processes",
    )
    result.assert_outcomes(passed=7)  # five crash properties, two multi-process writers
