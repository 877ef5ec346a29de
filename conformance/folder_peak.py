"""The most bytes a folder held while it was watched, sampled without pause by a process of its own.

A budget a store overshoots only between two steps of its eviction (a compaction's copy before its
delete, tombstones before the space they free) is still overshot: the disk had to hold it. Counting
after each call misses that, and a thread of the test's own process samples only when the backend
lets go of the GIL. A separate process walks the folder back to back for as long as the watch lasts,
so a window of a few walks is seen.

Run as ``python -m conformance.folder_peak FOLDER``: it prints ``ready``, samples until its stdin
closes, then prints the peak.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType


def stored_bytes(storage: Path | str) -> int:
    """Bytes of every regular file under the folder."""
    total = 0
    for folder, _, files in os.walk(storage):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:  # removed while we looked
                continue
    return total


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
        peak, samples = out.split()
        self.peak, self.samples = int(peak), int(samples)


def _sample(folder: str) -> None:
    """Walk ``folder`` back to back until stdin closes; print the peak and the number of walks."""
    stop = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    peak, samples = stored_bytes(folder), 1
    print("ready", flush=True)
    while not stop.is_set():
        peak = max(peak, stored_bytes(folder))
        samples += 1
    print(max(peak, stored_bytes(folder)), samples, flush=True)


if __name__ == "__main__":
    _sample(sys.argv[1])
