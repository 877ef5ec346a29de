"""The most bytes a folder held while it was watched, sampled without pause by a process of its own.

A budget a store overshoots only between two steps of its eviction (a compaction's copy before its
delete, tombstones before the space they free) is still overshot: the disk had to hold it. Counting
after each call misses that, and a thread of the test's own process samples only when the backend
lets go of the GIL. A separate process walks the folder back to back for as long as the watch lasts,
so a window of a few walks is seen (on a loaded machine, one shorter than a scheduler's time slice
only by chance: the sampler is one more process), and each sample is a total the folder held at
one instant (:func:`held_at_once`), never a sum of sizes from moments apart.

Run as ``python -m conformance.servers.folder_peak FOLDER``: it prints ``ready``, samples until its stdin
closes, then prints the peak.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType


def file_sizes(storage: Path | str) -> dict[str, tuple[int, int]]:
    """(inode, bytes) of every regular file under the folder, by path."""
    out = {}
    for folder, _, files in os.walk(storage):
        for name in files:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:  # removed while we looked
                continue
            out[path] = (st.st_ino, st.st_size)
    return out


def stored_bytes(storage: Path | str) -> int:
    """Bytes of every regular file under a folder nothing is writing to."""
    return sum(size for _, size in file_sizes(storage).values())


def held_at_once(storage: Path | str) -> int:
    """Bytes the folder certainly held at one instant, while writers work in it.

    A walk reads each file's size at another moment, so one walk can add a segment's size from
    before its delete to another's from after a growth the delete made room for: a total the
    folder never held. A second look keeps each file at the smaller of its two sizes, and drops
    files gone or replaced: as files only grow between a creation and a removal, every file kept
    held at least that much at the instant between the two looks."""
    total = 0
    for path, (inode, size) in file_sizes(storage).items():
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_ino == inode:
            total += min(size, st.st_size)
    return total


def held_after_deletion(storage: Path | str) -> int:
    """Bytes of files under the folder that this process still holds open after they were deleted.

    A deleted file keeps its blocks until its last descriptor closes: a store that evicts by
    deleting a file it keeps open has freed nothing, though the folder no longer lists it. The
    backend under test runs in this process; Linux names such a descriptor's file
    ``<path> (deleted)`` under ``/proc/self/fd``."""
    inside, mark = os.path.realpath(storage) + os.sep, " (deleted)"
    held: dict[int, int] = {}
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return 0
    for fd in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(inside) and target.endswith(mark):
                st = os.stat(f"/proc/self/fd/{fd}")
                held[st.st_ino] = st.st_size
        except OSError:  # closed while we looked
            continue
    return sum(held.values())


class FolderPeak:
    """``with FolderPeak(folder) as watch: ...``, then ``watch.peak``: the most bytes seen under the
    folder from entering to leaving (the sampler's count of walks is in ``watch.samples``)."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = str(folder)
        self.peak = 0
        self.samples = 0
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> FolderPeak:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__, self.folder],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        if self._proc.stdout.readline().strip() != "ready":
            self._proc.kill()
            raise RuntimeError(f"the folder sampler for {self.folder} did not start")
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        out, _ = proc.communicate(timeout=60)  # closes stdin: the sampler's signal to stop
        figures = out.split()
        if proc.returncode != 0 or len(figures) != 2:
            raise RuntimeError(f"the sampler of {self.folder} failed (exit {proc.returncode}): {out!r}")
        self.peak, self.samples = int(figures[0]), int(figures[1])


def _sample(folder: str) -> None:
    """Walk ``folder`` back to back until stdin closes; print the peak and the number of walks."""
    stop = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    peak, samples = held_at_once(folder), 1
    print("ready", flush=True)
    while not stop.is_set():
        peak = max(peak, held_at_once(folder))
        samples += 1
    print(max(peak, held_at_once(folder)), samples, flush=True)


if __name__ == "__main__":
    _sample(sys.argv[1])
