"""Closing deleted segments off the caller's thread, their page cache given back a slice at a time.

The last close of a deleted segment frees its page cache at once: 8-12 ms for a 128 MiB segment
written buffered on this machine, paid by whichever write buried it. That was the evicting write's
p99 at 100k entries (issue 32): one write in a hundred and thirty stalled six times its median.
Closed on another thread, the same work still stalled the writes beside it (the kernel frees
pages on the locks a write takes to add them). So a thread of the log's own drops the file's
cached pages a few MiB at a time, pausing between slices, and then closes it. Dropping cached pages
never changes what a read returns: another process still holding the file reads it from disk.

A deleted file keeps its blocks until it is closed, so the bytes still queued count as stored
(``pending``) until then, and a write that needs them now has them closed at once (``flush``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque

SLICE = 4 << 20
"""Bytes of page cache dropped at a time: about 0.4 ms of the kernel's work here."""
AT_ONCE = 4 * SLICE
"""A file this small is closed on the caller's thread (1.5 ms at most): a hand-off to the thread
costs more than that on a busy machine (a thread started, the GIL passed back and forth), and a
small budget, whose segments are small, evicts on every write."""
PAUSE = 0.0005
"""Seconds between two slices, in which the writes beside it run unhindered."""


class Closer:
    """Descriptors of deleted files to close, and the one thread that closes them (started at the
    first, again in a forked child)."""

    def __init__(self) -> None:
        self._queue: deque[tuple[int, int]] = deque()
        self._pending = 0
        self._hurry = 0
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._cond = threading.Condition()

    @property
    def pending(self) -> int:
        """Bytes of the files handed over and not closed yet: still taken on disk."""
        with self._cond:
            return self._pending

    def close(self, fd: int, nbytes: int) -> None:
        """Close ``fd`` (a deleted file of ``nbytes``) soon; the caller has forgotten it: its number
        may be reused once closed. A small one (``AT_ONCE``), or a file still named (whose close
        frees nothing), is closed at once."""
        with self._cond:
            if nbytes <= AT_ONCE and not self._queue:
                with contextlib.suppress(OSError):
                    os.close(fd)
                return
            self._queue.append((fd, nbytes))
            self._pending += nbytes
            self._working()
            self._cond.notify_all()

    def flush(self) -> None:
        """Close every descriptor handed over so far, without pauses, before returning."""
        with self._cond:
            if not self._queue:
                return
            self._working()
            self._hurry += 1
            try:
                self._cond.wait_for(lambda: not self._queue)
            finally:
                self._hurry -= 1

    def _working(self) -> None:
        """Under the condition, with a queue: make sure a thread of this process works on it (it
        ends once the queue is empty; a forked child inherits the queue but not the thread)."""
        if self._thread is None or self._pid != os.getpid():
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, name="hicache-closer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._queue:
                    self._thread = None
                    return
                fd, nbytes = self._queue[0]
            self._release(fd)
            with self._cond:
                self._queue.popleft()
                self._pending -= nbytes
                self._cond.notify_all()

    def _release(self, fd: int) -> None:
        with contextlib.suppress(OSError):
            size = os.fstat(fd).st_size
            for at in range(0, size, SLICE):
                if self._hurry:
                    break
                os.posix_fadvise(fd, at, SLICE, os.POSIX_FADV_DONTNEED)
                time.sleep(PAUSE)
        with contextlib.suppress(OSError):
            os.close(fd)
