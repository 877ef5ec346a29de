"""The folder sampler sees what lives between two calls: bytes written and deleted within a moment."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conformance.folder_peak import FolderPeak, stored_bytes


def test_a_file_that_exists_for_a_moment_is_seen(tmp_path: Path) -> None:
    """A MiB that exists for two milliseconds at a time, thirty times, is in the peak; a count
    before and after each would never see it."""
    (tmp_path / "kept").write_bytes(b"k" * 4096)
    with FolderPeak(tmp_path) as watch:
        for _ in range(30):
            passing = tmp_path / "passing"
            passing.write_bytes(b"p" * (1 << 20))
            time.sleep(0.002)
            os.unlink(passing)
            time.sleep(0.005)
    assert stored_bytes(tmp_path) == 4096
    assert watch.peak == 4096 + (1 << 20), watch.samples


def test_the_peak_of_a_quiet_folder_is_what_it_holds(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a").write_bytes(b"a" * 1000)
    (tmp_path / "b").write_bytes(b"b" * 24)
    with FolderPeak(tmp_path) as watch:
        time.sleep(0.05)
    assert (watch.peak, stored_bytes(tmp_path)) == (1024, 1024)
    assert watch.samples > 1
