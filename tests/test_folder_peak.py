"""The folder sampler sees what lives between two calls, and never a total the folder did not hold."""

from __future__ import annotations

import multiprocessing
import os
import time
import uuid
from pathlib import Path

from conformance.servers.folder_peak import FolderPeak, stored_bytes

CHUNK = 16 << 10
FILES = 8


def test_a_file_that_exists_for_a_moment_is_seen(tmp_path: Path) -> None:
    """A MiB that exists for ten milliseconds at a time, thirty times, is in the peak; a count
    before and after each would never see it. (Windows much shorter than the scheduler's time
    slice are seen by chance on a loaded machine: the sampler is one more process.)"""
    (tmp_path / "kept").write_bytes(b"k" * 4096)
    with FolderPeak(tmp_path) as watch:
        for _ in range(30):
            passing = tmp_path / "passing"
            passing.write_bytes(b"p" * (1 << 20))
            time.sleep(0.01)
            os.unlink(passing)
            time.sleep(0.005)
    assert stored_bytes(tmp_path) == 4096
    assert watch.peak == 4096 + (1 << 20), watch.samples


def churn(folder: str, seconds: float) -> None:
    """Hold ``FILES`` chunks' worth, no more: delete the oldest file, then grow the newest by as
    much, four KiB at a time, as a store evicting before it writes does."""

    def fresh() -> str:
        path = os.path.join(folder, f"{time.time_ns()}-{uuid.uuid4().hex}")
        open(path, "wb").close()
        return path

    files = []
    for _ in range(FILES):
        files.append(fresh())
        with open(files[-1], "ab") as f:
            f.write(b"x" * CHUNK)
    growing = fresh()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        oldest = files.pop(0)
        size = os.path.getsize(oldest)
        os.unlink(oldest)
        with open(growing, "ab") as f:
            for _ in range(size // 4096):
                f.write(b"y" * 4096)
                f.flush()
        if os.path.getsize(growing) >= 4 * CHUNK:
            files.append(growing)
            growing = fresh()


def test_a_churning_folder_is_never_over_counted(tmp_path: Path) -> None:
    """A writer that frees before it grows keeps the folder at ``FILES`` chunks at most. One walk
    reads each file at another moment, so a plain sum over a walk goes over that (shown here, in
    this process, before the writer stops); the sampler's peak never does."""
    limit = FILES * CHUNK
    writer = multiprocessing.get_context("spawn").Process(target=churn, args=(str(tmp_path), 30.0))
    over, settled = 0, time.monotonic() + 1.0  # a second of churn under the sampler, at least
    with FolderPeak(tmp_path) as watch:
        writer.start()
        try:
            while writer.is_alive() and (over <= limit or time.monotonic() < settled):
                over = max(over, stored_bytes(tmp_path))
        finally:
            writer.terminate()
            writer.join()
    assert over > limit, "the writer never made a plain walk over-count: nothing was shown"
    assert watch.peak <= limit, f"the sampler reported {watch.peak} bytes; the folder never held over {limit}"


def test_the_peak_of_a_quiet_folder_is_what_it_holds(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a").write_bytes(b"a" * 1000)
    (tmp_path / "b").write_bytes(b"b" * 24)
    with FolderPeak(tmp_path) as watch:
        time.sleep(0.05)
    assert (watch.peak, stored_bytes(tmp_path)) == (1024, 1024)
    assert watch.samples > 1
