"""A checkpoint of the log's index, so that a restart reads one file instead of every commit.

The segment log stays the truth; the checkpoint only saves the scan. It is written when a backend
closes, and while it runs every ``EVERY`` records committed (or a sixteenth of the index), on a
thread of its own, after syncing the segments it names: a crash costs the restart the scan of
what came after it, not of the whole log. It is numpy's uncompressed ``.npz`` (a zip whose every
member carries a CRC-32, checked as it is read, so a torn or altered file fails to load), under a
temporary name, synced, then renamed over the last one, so a reader meets the old checkpoint or
the new one, never half of one.

It holds the index's arrays, each segment's place in the scan (name, inode, bytes scanned,
sealed, where its newest commit starts and that commit's sequence number) and the tombstones
each segment holds. :meth:`reference_backend.log.SegmentLog.restore` trusts it only where the
log agrees (see there); a checkpoint that is missing, torn, of another version or contradicted
by a segment is ignored, and the index is built from the log.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import uuid
from dataclasses import dataclass

import numpy as np

VERSION = 1
EVERY = 1 << 16
SHARE = 16
"""Records committed between two checkpoints of a running log: ``EVERY`` at the least, or the
index's count over ``SHARE`` where that is more. A checkpoint writes 48 bytes a record, so they
add 16 x 48 = 768 bytes for each record written (under 5% at 16-KiB pages, under 0.1% at 1 MiB),
and a crash at 1M entries scans at most 62,500 records after loading the last one."""
SEGMENT = np.dtype(
    [
        ("number", "<u4"),
        ("ino", "<u8"),
        ("scanned", "<u8"),
        ("last", "<i8"),
        ("last_seq", "<u8"),
        ("sealed", "u1"),
    ]
)
TOMB = np.dtype([("number", "<u4"), ("family", "S8"), ("seq", "<u8")])


@dataclass(frozen=True)
class Saved:
    """What a checkpoint holds."""

    names: list[str]
    segments: np.ndarray
    """One ``SEGMENT`` row per name."""
    tombs: np.ndarray
    index: dict[str, np.ndarray]


def sweep(path: str) -> None:
    """Remove temporary checkpoints (``save``'s) whose writer process is gone: a process killed
    while it wrote one leaves it behind, and nothing else ever would remove it."""
    folder, name = os.path.split(path)
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        if not (entry.startswith(f"{name}.") and entry.endswith(".tmp")):
            continue
        pid = entry[len(name) + 1 :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, entry))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def save(path: str, saved: Saved) -> bool:
    """Write ``saved`` to ``path`` whole or not at all; False when it could not be written."""
    tmp = f"{path}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "wb") as out:
            members = {
                "version": np.array([VERSION]),
                "names": np.array(saved.names, dtype=np.str_),
                "segments": saved.segments,
                "tombs": saved.tombs,
                **{f"index_{k}": v for k, v in saved.index.items()},
            }
            np.savez(out, **members)  # type: ignore[arg-type]  # numpy types its keywords as options
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False


def _libc_trim() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


_TRIM = _libc_trim()


def give_back() -> None:
    """Hand the kernel the heap pages a checkpoint's write left free: numpy writes a zip member in
    buffers of up to 16 MiB, which glibc may serve from a heap (the writing thread's own) and keep
    resident when freed, about 8 bytes an entry a checkpoint; glibc's ``malloc_trim`` releases
    them (elsewhere nothing is done)."""
    if _TRIM is not None:
        _TRIM(0)


def load(path: str) -> Saved | None:
    """The checkpoint at ``path``, or None when there is none, it is torn, or of another version."""
    try:
        with np.load(path, allow_pickle=False) as files:
            if files["version"].tolist() != [VERSION]:
                return None
            names = [str(n) for n in files["names"]]
            segments, tombs = files["segments"], files["tombs"]
            index = {k.removeprefix("index_"): files[k] for k in files.files if k.startswith("index_")}
    except Exception:  # a torn zip raises zipfile's, numpy's or the OS's errors alike
        return None
    if segments.dtype != SEGMENT or tombs.dtype != TOMB or len(segments) != len(names):
        return None
    return Saved(names, segments, tombs, index)
