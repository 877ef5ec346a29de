"""The closer: deleted segments' descriptors closed off the writer's thread, counted until closed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reference_backend import closer
from reference_backend.closer import Closer


def deleted_file(folder: Path, nbytes: int) -> int:
    """A descriptor of a file of ``nbytes`` that is no longer named: what eviction leaves."""
    path = folder / "segment"
    path.write_bytes(b"\x5a" * nbytes)
    fd = os.open(path, os.O_RDONLY)
    path.unlink()
    return fd


def still_open(fd: int, folder: Path) -> bool:
    """Whether ``fd`` still names the deleted file (its number may be reused once it is closed)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder))
    except OSError:
        return False


def test_a_deleted_file_counts_as_pending_until_its_descriptor_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(closer, "SLICE", 4096)
    monkeypatch.setattr(closer, "AT_ONCE", 4096)
    monkeypatch.setattr(closer, "PAUSE", 0.5)  # a crawl: the file is still open when looked at
    closing = Closer()
    fd = deleted_file(tmp_path, 64 * 4096)
    closing.close(fd, 64 * 4096)
    assert closing.pending == 64 * 4096
    assert still_open(fd, tmp_path)
    closing.flush()  # no pauses: done long before 64 slices of half a second
    assert closing.pending == 0
    assert not still_open(fd, tmp_path)


def test_the_closing_thread_ends_once_nothing_is_left(tmp_path: Path) -> None:
    """A thread per log that never ended would pile up in a process that opens many stores."""
    closing = Closer()
    fds = [deleted_file(tmp_path, 20 << 20) for _ in range(3)]
    for fd in fds:
        closing.close(fd, 20 << 20)
    thread = closing._thread
    assert thread is not None
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert closing.pending == 0
    assert not any(still_open(fd, tmp_path) for fd in fds)
    closing.flush()  # nothing left: returns at once


def test_a_small_file_is_closed_at_once(tmp_path: Path) -> None:
    """A small segment (a small budget's) costs its close less than a thread's hand-off: a store
    that evicts on every write must not wait on the thread for each."""
    closing = Closer()
    fd = deleted_file(tmp_path, closer.AT_ONCE)
    closing.close(fd, closer.AT_ONCE)
    assert not still_open(fd, tmp_path)
    assert closing.pending == 0
    assert closing._thread is None
