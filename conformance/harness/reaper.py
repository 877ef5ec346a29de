"""Finished storage folders are deleted on a thread of their own, never by the example that used them.

Unlinking files a backend has just written can block for a large part of a second on a busy disk
(ext4 waits on the journal and on discards), and a certification creates thousands of folders:
measured on sglang-nixl's hit-policy property, deleting them inline took 6-60% of its wall time.
The examples only need each folder gone eventually, so they hand it over here and go on.
"""

from __future__ import annotations

import queue
import shutil
import threading
from pathlib import Path


class Reaper:
    """Deletes the folders it is handed, in order, on one daemon thread started on first use."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Path | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def discard(self, path: Path) -> None:
        """Delete ``path`` and everything under it, soon; the caller must not use it again."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hicache-reaper", daemon=True)
                self._thread.start()
        self._queue.put(path)

    def drain(self) -> None:
        """Return once every folder handed over so far is deleted (before the root goes)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _run(self) -> None:
        while (path := self._queue.get()) is not None:
            shutil.rmtree(path, ignore_errors=True)


REAPER = Reaper()
"""The process's one reaper: xdist workers each have their own."""
