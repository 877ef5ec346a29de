"""The segment log: how entries reach the disk, and how any process finds them again.

Every writing backend instance appends to a segment file of its own under ``root/segments``, so
no two writers ever share a file and no cross-process lock exists. A batch is one extent::

    [commit block][record][record]...

The records move first, in one NIXL transfer. Only after it completes is the commit block
written over the extent's first block, with one ``pwrite``. The commit names every record (entry
digest, offset, size, geometry tag, checksum), carries a sequence number, the segment's id and a
CRC. A scanner that finds no valid commit at an extent's start stops reading that segment there,
so a batch is visible whole or not at all, and a writer killed mid-batch leaves only bytes
nothing refers to. A writer seals a segment it has finished, so readers stop watching it grow.

Records are never rewritten: a newer version of an entry is a new record under a later commit,
and the index keeps the highest sequence number. A reader holding a location never sees it
change under it. When every record of one of its own finished segments has been superseded, the
writer deletes that segment, and one less than half live has its records copied forward a batch's
worth per write (``reclaim``), so overwrites do not grow the store without bound. The index
(:mod:`reference_backend.index`) is checkpointed at close (:mod:`reference_backend.checkpoint`)
and restored when the log opens, where the segments agree with it. A segment that
vanishes (``clear`` in another process) or shrinks is noticed by one ``stat`` per segment per
call.

A writer asks for an :class:`Extent` (``reserve``): the place of each record of its batch, fixed
once, in file positions. It moves the records there and hands the extent back to ``commit``. The
log knows nothing of NIXL: whoever registers a segment's file descriptor with an agent holds the
segment (``hold``) until it lets go, and a retired segment's descriptor is closed by ``bury`` only
once nobody holds it, so no transfer can meet a closed or reused descriptor.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import mmap
import os
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from reference_backend import checkpoint
from reference_backend.closer import Closer
from reference_backend.index import Index, Record, columns, spare_records
from reference_backend.record import BLOCK, UNIT, pad

FOLDER = "segments"
SUFFIX = ".seg"
MAGIC = b"HCC2"
VERSION = 3
HAS_SUM = 1
DEAD = 2
"""An entry flag: a tombstone. Its digest's first 8 bytes name a family (every pool's and rank's
record of one key); records of that family older than the tombstone are evicted."""
DEPTH_SHIFT = 8
"""Entry flags above this bit hold the record's depth in its prefix chain (the eviction policy's)."""
SEALED = 1
"""A commit flag: the segment's writer has finished it, so readers stop watching it grow."""
# magic, version, flags, entry count, extent bytes (commit block included), sequence,
# segment id (ties a commit to the file it was written for), CRC-32 of the block
_HEAD = struct.Struct("<4sHHIQQQI")
_ENTRY = struct.Struct("<16sQQIIQQ")


class Entry(NamedTuple):
    """One record a commit publishes: what it is, where it lies in the extent, how to check it."""

    digest: bytes
    offset: int
    size: int
    tag: int
    flags: int
    checksum: int
    seq: int = 0
    """The record's own sequence number where it differs from its commit's: a record compaction
    moved keeps the one it was written with, so a newer version written meanwhile still wins."""


CLOCK_REALTIME_COARSE = 5
"""Linux's coarse wall clock, which the kernel stamps a local file system's times with (Python
names only the fine one)."""


def coarse_tick(stamp: int) -> int:
    """The coarse clock now, truncated as coarsely as ``stamp`` may have been: to the largest power
    of ten (up to a second) that divides it, so a file system's granularity is never underrated."""
    try:
        now = time.clock_gettime_ns(CLOCK_REALTIME_COARSE)
    except OSError:
        return 0
    granule = 1
    while granule < 1_000_000_000 and stamp % (granule * 10) == 0:
        granule *= 10
    return now - now % granule


CLUSTER_FILE_SYSTEMS = frozenset({"gfs2", "ocfs2"})
"""Shared-disk cluster file systems: on a block device, yet every node stamps with its own clock."""


@functools.cache
def stamped_by_this_kernel(dev: int) -> bool:
    """Whether files on ``dev`` take their times from this kernel's coarse clock: a file system on a
    block device, not a cluster one. Network and FUSE file systems (major 0) stamp with another
    machine's clock; so does a shared-disk cluster file system, though it sits on a block device."""
    try:
        with open("/proc/self/mountinfo") as mounts:
            return block_local(dev, mounts.read())
    except OSError:
        return False


def block_local(dev: int, mountinfo: str) -> bool:
    """``stamped_by_this_kernel`` for ``dev``, given the text of ``/proc/self/mountinfo``; a device no
    mount names is not trusted."""
    if os.major(dev) == 0:
        return False
    wanted = f"{os.major(dev)}:{os.minor(dev)}"
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == wanted and "-" in fields:
            return fields[fields.index("-") + 1] not in CLUSTER_FILE_SYSTEMS
    return False


def commit_size(count: int) -> int:
    """Bytes reserved at an extent's start for the commit block of ``count`` records."""
    return pad(_HEAD.size + _ENTRY.size * count, BLOCK)


@dataclass(frozen=True)
class Layout:
    """Where each record of a batch lies in its extent, from the extent's start, and the extent's
    size: computed once, for the reservation, the transfer and the commit alike."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    size: int

    @classmethod
    def of(cls, groups: Sequence[Sequence[int]]) -> Layout:
        """Records of ``groups`` (their sizes, group by group) after the commit block. Each group's
        records start on a file-system block and the extent ends on one, so every write of the
        batch is whole blocks."""
        offsets, sizes = [], []
        at = commit_size(sum(len(g) for g in groups))
        for group in groups:
            at = pad(at, BLOCK)
            for size in group:
                offsets.append(at)
                sizes.append(size)
                at += size
        return cls(tuple(offsets), tuple(sizes), pad(at, BLOCK))


def segment_id(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def encode_commit(entries: Sequence[Entry], extent: int, seq: int, segment: int, flags: int = 0) -> bytes:
    body = b"".join(_ENTRY.pack(*e) for e in entries)
    head = _HEAD.pack(MAGIC, VERSION, flags, len(entries), extent, seq, segment, 0)
    crc = zlib.crc32(body, zlib.crc32(head))
    block = _HEAD.pack(MAGIC, VERSION, flags, len(entries), extent, seq, segment, crc) + body
    return block.ljust(commit_size(len(entries)), b"\x00")


def decode_head(raw: bytes, segment: int) -> tuple[int, int, int] | None:
    """(entry count, extent bytes, sequence) when ``raw`` starts like a commit of ``segment``."""
    if len(raw) < _HEAD.size:
        return None
    magic, version, _, count, extent, seq, owner, _ = _HEAD.unpack_from(raw)
    if magic != MAGIC or version != VERSION or owner != segment:
        return None
    if extent < commit_size(count) or extent % UNIT:
        return None
    return count, extent, seq


def decode_commit(raw: bytes, segment: int) -> tuple[list[Entry], int, int, int] | None:
    """(entries, extent bytes, sequence, flags) of a whole, intact commit block, else None."""
    head = decode_head(raw, segment)
    if head is None or len(raw) < commit_size(head[0]):
        return None
    count, extent, seq = head
    crc = _HEAD.unpack_from(raw)[-1]
    body = raw[_HEAD.size : _HEAD.size + _ENTRY.size * count]
    blank = _HEAD.pack(*_HEAD.unpack_from(raw)[:-1], 0)
    if zlib.crc32(body, zlib.crc32(blank)) != crc:
        return None
    entries = [Entry(*_ENTRY.unpack_from(body, i * _ENTRY.size)) for i in range(count)]
    floor = commit_size(count)
    records = [e for e in entries if not e.flags & DEAD]
    if any(e.offset < floor or e.size <= 0 or e.offset + e.size > extent for e in records):
        return None
    return entries, extent, seq, _HEAD.unpack_from(raw)[2]


@dataclass(eq=False)
class Segment:
    """One segment file, open once."""

    path: str
    fd: int
    ino: int
    own: bool
    scanned: int = 0
    """Own segment: where the next extent goes. Another's: how far its commits were read."""
    sealed: bool = False
    retired: bool = False
    """Forgotten by the log: nobody may start using its descriptor, which ``bury`` closes."""
    holds: int = 0
    """Users of its descriptor outside the log (NIXL registrations), counted by ``hold``."""
    number: int = 0
    """The index's name for it."""
    last: int = -1
    """Where the newest commit read or written in it starts: what a checkpoint is checked by."""
    last_seq: int = 0

    @functools.cached_property
    def name(self) -> str:
        return os.path.basename(self.path)

    @functools.cached_property
    def id(self) -> int:
        """What ties a commit to this file (a hash of its name), asked by every commit and scan."""
        return segment_id(self.name)


@dataclass(frozen=True)
class Extent:
    """Room reserved at the tail of our segment for one batch: where each record goes, in file
    positions, and where the commit block that publishes them goes."""

    segment: Segment
    start: int
    layout: Layout

    @property
    def fd(self) -> int:
        return self.segment.fd

    @property
    def size(self) -> int:
        return self.layout.size

    @property
    def end(self) -> int:
        return self.start + self.layout.size

    @property
    def offsets(self) -> list[int]:
        """Each record's position in the segment file."""
        return [self.start + at for at in self.layout.offsets]


class Stamp(NamedTuple):
    """What a commit says of one record beside its place: the entry, its geometry, its checksum
    (None: not checksummed) and its depth in its prefix chain."""

    digest: bytes
    tag: int
    checksum: int | None
    depth: int = 0


class Location(NamedTuple):
    segment: Segment
    offset: int
    size: int
    seq: int
    tag: int
    checksum: int | None
    depth: int = 0

    @classmethod
    def of(cls, segment: Segment, start: int, entry: Entry, seq: int) -> Location:
        checksum = entry.checksum if entry.flags & HAS_SUM else None
        depth = entry.flags >> DEPTH_SHIFT
        return cls(segment, start + entry.offset, entry.size, entry.seq or seq, entry.tag, checksum, depth)

    def entry(self, digest: bytes, offset: int) -> Entry:
        """This record as a commit entry at ``offset`` of a new extent (compaction moves it there),
        keeping its sequence number."""
        flags = (HAS_SUM if self.checksum is not None else 0) | self.depth << DEPTH_SHIFT
        return Entry(digest, offset, self.size, self.tag, flags, self.checksum or 0, self.seq)


class _Aligned:
    """A page-aligned scratch buffer, so O_DIRECT file descriptors can read and write through it."""

    def __init__(self) -> None:
        self._buf = mmap.mmap(-1, mmap.PAGESIZE)

    def view(self, nbytes: int) -> memoryview:
        if len(self._buf) < nbytes:
            self._buf.close()
            self._buf = mmap.mmap(-1, pad(nbytes, mmap.PAGESIZE))
        return memoryview(self._buf)[:nbytes]

    def close(self) -> None:
        self._buf.close()


class SegmentLog:
    """Segments under one storage root, and the index from entry digest to newest location."""

    def __init__(
        self,
        root: str,
        *,
        direct: bool,
        fsync: bool,
        segment_bytes: int,
        tenant: str = "",
        checkpoints: bool = False,
        checkpoint_every: int = checkpoint.EVERY,
    ) -> None:
        self.folder = os.path.join(root, FOLDER)
        self.tenant = tenant
        """Hex name of the deployment whose segments these are; other tenants' are never read or removed."""
        self._suffix = f".{tenant}{SUFFIX}" if tenant else SUFFIX
        self.checkpoint_path = os.path.join(self.folder, f"index.{tenant}.ckpt") if checkpoints else ""
        """Where the index is checkpointed at close and restored from at start ("": never)."""
        self._checkpoint_every = checkpoint_every
        """Records committed between two checkpoints while the log runs (at least; a sixteenth of
        the index when that is more), so a crash costs a restart the scan of that tail only."""
        self._since_checkpoint = 0
        self._checkpointing: threading.Thread | None = None
        self._dead: dict[bytes, int] = {}
        """Family -> sequence of its newest tombstone: older records of the family are evicted."""
        self._tomb_counts: dict[bytes, int] = {}
        """Family -> how many segments hold a tombstone of it."""
        self._tombs: dict[Segment, dict[bytes, int]] = {}
        self.last_swap = 0.0
        """Seconds the last compaction held the index lock (what a concurrent get could wait)."""
        self._direct = direct
        self._fsync = fsync
        self._segment_bytes = segment_bytes
        self._index = Index()
        self._segments: dict[str, Segment] = {}
        self._numbered: dict[int, Segment] = {}
        self._numbers = itertools.count(1)
        self._gone: set[int] = set()
        """Numbers of deleted segments whose records the index still holds: they read as absent,
        and ``_purge`` removes a few with every commit, so deleting a segment never stalls a call
        on a pass over the whole index."""
        self._purging: list[int] = []
        self._purging_numbers: set[int] = set()
        self._purge_mark = -1
        self._reclaiming: tuple[Segment, list[bytes]] | None = None
        """A finished segment of ours mostly superseded, and the digests of its records still to
        move forward (``reclaim``)."""
        self._live: dict[Segment, int] = {}
        """Records of each segment the index points at."""
        self._held: dict[Segment, int] = {}
        """Bytes of those records."""
        self._graveyard: list[Segment] = []
        self._closer = Closer()
        """Closes buried segments' descriptors off the writer's thread."""
        self._writer: Segment | None = None
        self._listing: tuple[int, int, int, int] = (0, 0, 0, 0)
        """(folder inode, folder mtime, when we listed it by the wall clock and by the file
        system's tick), to skip listing an unchanged folder."""
        self._seq = 0
        self.cap = 0
        """Bytes the tenant's segments may take, 0 for no bound: a counted reservation that could
        take them past it is refused (set by a bounded store; the one check every growth passes)."""
        self._lock = threading.RLock()
        self._look = threading.local()
        """This thread's current look (``one_look``): the sizes of the segments it has checked."""
        self._commit_buf = _Aligned()
        self._scan_buf = _Aligned()
        if self.checkpoint_path:
            checkpoint.sweep(self.checkpoint_path)
        self.restored = bool(self.checkpoint_path) and self.restore()
        """Whether the index started from a checkpoint (before any commit of ours, which it would
        otherwise replace)."""
        self._looked_once = False

    # -- files ---------------------------------------------------------------------------------

    def _open(self, path: str, own: bool) -> Segment | None:
        flags = (os.O_RDWR | os.O_CREAT | os.O_EXCL if own else os.O_RDONLY) | (
            os.O_DIRECT if self._direct else 0
        )
        try:
            fd = os.open(path, flags, 0o644)
        except OSError:
            return None
        segment = Segment(path, fd, os.fstat(fd).st_ino, own, number=next(self._numbers))
        self._segments[segment.name] = segment
        self._numbered[segment.number] = segment
        return segment

    def hold(self, segment: Segment) -> bool:
        """Keep ``segment``'s descriptor open for a user outside the log (a NIXL registration) until
        ``let_go``; False when the segment is already retired."""
        with self._lock:
            if segment.retired:
                return False
            segment.holds += 1
            return True

    def let_go(self, segment: Segment) -> None:
        """One ``hold`` fewer; a retired segment nobody holds waits for ``bury``."""
        with self._lock:
            segment.holds -= 1

    def _retire(self, segment: Segment, lingering: bool = False) -> None:
        """Forget a segment now; its file waits for ``bury`` and for its holders to let go.
        ``lingering``: the index still holds records of it, which ``_purge`` removes later."""
        self._segments.pop(segment.name, None)
        if lingering:
            self._gone.add(segment.number)
        else:
            self._numbered.pop(segment.number, None)
        self._live.pop(segment, None)
        self._held.pop(segment, None)
        self._forget_tombs(segment)
        segment.retired = True
        self._graveyard.append(segment)
        if self._writer is segment:
            self._writer = None

    def bury(self) -> None:
        """Close the descriptors of retired segments nobody holds; the caller guarantees that the
        log's own unlocked I/O (the writer's) is not running."""
        with self._lock:
            for segment in [s for s in self._graveyard if s.holds <= 0]:
                self._closer.close(segment.fd, self._deleted_bytes(segment))
                self._graveyard.remove(segment)

    @staticmethod
    def _deleted_bytes(segment: Segment) -> int:
        """What a retired segment's file still takes on disk once we close it: all of it when the
        file was deleted (its last close frees its blocks), nothing while it is still named."""
        try:
            st = os.fstat(segment.fd)
        except OSError:
            return 0
        return st.st_size if st.st_nlink == 0 else 0

    def finish_closing(self) -> bool:
        """Close the deleted segments still being let go now; whether there were any."""
        if not self._closer.pending:
            return False
        self._closer.flush()
        return True

    def _alive(self, segment: Segment) -> int:
        """The segment's size, or -1 when its file is gone or replaced."""
        try:
            st = os.stat(segment.path)
        except OSError:
            return -1
        return st.st_size if st.st_ino == segment.ino else -1

    # -- writing (the caller serialises writers) -----------------------------------------------

    def writable(self, extent: int) -> Segment | None:
        """The segment, sized to hold ``extent`` more bytes: a new one when the current is full or damaged."""
        with self._lock:
            current = self._writer
            if current is not None:
                size = self._alive(current)
                if size < current.scanned or current.scanned + extent > self._segment_bytes > 0:
                    self._stop_writing(current, size)
                    current = None
            if current is None:
                current = self._start_writing()
            return current if current is not None and self._presize(current, extent) else None

    def _stop_writing(self, segment: Segment, size: int) -> None:
        """Finish our full or damaged segment (``size`` bytes on disk, -1 when its file is gone):
        re-index after a loss, then delete it if nothing in it is live, else seal it."""
        if size < 0:
            self._rebuild_after_loss()
        self._writer = None
        if size >= 0 and self._needless(segment):
            self._reclaim(segment)
        elif size >= segment.scanned:
            self._seal(segment)

    def _start_writing(self) -> Segment | None:
        """A new, empty segment of ours, now the one we append to."""
        try:
            os.makedirs(self.folder, exist_ok=True)
        except OSError:
            return None
        name = f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}{self._suffix}"
        self._writer = self._open(os.path.join(self.folder, name), own=True)
        return self._writer

    @staticmethod
    def _presize(segment: Segment, extent: int) -> bool:
        """Grow the file to hold ``extent`` more bytes before writing them: O_DIRECT writes that
        extend a file run one at a time on ext4."""
        try:
            if os.fstat(segment.fd).st_size < segment.scanned + extent:
                os.ftruncate(segment.fd, segment.scanned + extent)
        except OSError:
            return False
        return True

    def _next_seq(self) -> int:
        with self._lock:
            self._seq = max(time.time_ns(), self._seq + 1)
            return self._seq

    def _put_block(self, segment: Segment, start: int, block: bytes) -> bool:
        """Write one commit block (durably first and after, with ``fsync``); True if it all landed."""
        view = self._commit_buf.view(len(block))
        view[:] = block
        try:
            if self._fsync:
                os.fdatasync(segment.fd)
            if os.pwritev(segment.fd, [view], start) != len(block):
                return False
            if self._fsync:
                os.fdatasync(segment.fd)
        except OSError:
            return False
        return True

    def _seal(self, segment: Segment) -> None:
        """Mark a finished segment of ours, so readers stop checking whether it grew."""
        block = encode_commit([], commit_size(0), self._next_seq(), segment.id, SEALED)
        with contextlib.suppress(OSError):
            if os.fstat(segment.fd).st_size < segment.scanned + len(block):
                os.ftruncate(segment.fd, segment.scanned + len(block))
            segment.sealed = self._put_block(segment, segment.scanned, block)

    def reserve(self, layout: Layout, *, counted: bool = False) -> Extent | None:
        """An extent for ``layout`` at the tail of our segment, its bytes already in the file;
        ``counted``: the seal's too, so that every process counting the tenant's bytes counts
        these before a byte of them is written, and refused if that could pass ``cap``."""
        if counted and self.cap and self.tenant_bytes() + self.reservation(layout.size) > self.cap:
            return None
        segment = self.writable(layout.size)
        if segment is None or (counted and not self._presize(segment, self.reservation(layout.size))):
            return None
        return Extent(segment, segment.scanned, layout)

    def _put_commit(self, extent: Extent, entries: Sequence[Entry], seq: int) -> bool:
        """Write ``extent``'s commit block; the caller then moves the segment's cursor to its end."""
        block = encode_commit(entries, extent.size, seq, extent.segment.id)
        return self._put_block(extent.segment, extent.start, block)

    def commit(self, extent: Extent, stamps: Sequence[Stamp]) -> bool:
        """Publish ``extent``, whose records (one per stamp, in its layout's order) are on disk;
        False leaves it unreferenced."""
        layout = extent.layout
        entries = [
            Entry(
                s.digest,
                at,
                size,
                s.tag,
                (HAS_SUM if s.checksum is not None else 0) | min(s.depth, 1 << 23) << DEPTH_SHIFT,
                s.checksum or 0,
            )
            for s, at, size in zip(stamps, layout.offsets, layout.sizes, strict=True)
        ]
        seq = self._next_seq()
        if not self._put_commit(extent, entries, seq):
            return False
        with self._lock:
            segment = extent.segment
            segment.scanned = extent.end
            segment.last, segment.last_seq = extent.start, seq
            if not self._append(segment, extent.start, entries, seq):
                for entry in entries:
                    self._place(entry.digest, Location.of(segment, extent.start, entry, seq))
            self._purge(2 * len(entries) + 32)
            self._since_checkpoint += len(entries)
            if self._checkpoint_due():
                self._checkpoint_in_background()
        return True

    def _append(self, segment: Segment, start: int, entries: Sequence[Entry], seq: int) -> bool:
        """Index a commit of ours whose entries are all new to the index in one step (what
        ``_place`` does for each, where nothing is replaced and no tombstone applies); False, with
        nothing done, for any other commit."""
        digests = [e.digest for e in entries]
        if (
            not digests
            or self._dead
            or len(set(digests)) != len(digests)
            or max(self._index.find_many(digests), default=-1) >= 0
        ):
            return False
        number = segment.number
        self._index.append(
            digests,
            [
                Record(
                    number,
                    start + e.offset,
                    e.size,
                    e.tag,
                    e.checksum if e.flags & HAS_SUM else None,
                    seq,
                    e.flags >> DEPTH_SHIFT,
                )
                for e in entries
            ],
        )
        self._count(segment, len(entries), sum(e.size for e in entries))
        return True

    def _purge(self, most: int) -> None:
        """Remove up to ``most`` records of deleted segments from the index (highest ids first, so
        the ids still to remove never move); a removal by anyone else means listing them again."""
        if not self._gone:
            return
        if not self._purging or self._purge_mark != self._index.removals:
            self._purging_numbers = set(self._gone)
            numbers = np.fromiter(self._purging_numbers, np.uint32, len(self._purging_numbers))
            self._purging = np.flatnonzero(np.isin(self._index.column("segment"), numbers)).tolist()
        for _ in range(min(most, len(self._purging))):
            self._index.remove(self._purging.pop())
        self._purge_mark = self._index.removals
        if not self._purging:
            for number in self._purging_numbers:
                self._numbered.pop(number, None)
            self._gone -= self._purging_numbers

    def _location(self, rid: int) -> Location:
        r = self._index.record(rid)
        return Location(self._numbered[r.segment], r.offset, r.size, r.seq, r.tag, r.checksum, r.depth)

    def _count(self, segment: Segment, records: int, nbytes: int) -> None:
        self._live[segment] = self._live.get(segment, 0) + records
        self._held[segment] = self._held.get(segment, 0) + nbytes

    def _place(self, digest: bytes, loc: Location, moved: bool = False) -> None:
        """Index ``loc`` for ``digest`` if it is the newest version: by sequence, then segment name;
        a copy compaction ``moved`` replaces its source, unless a newer version arrived meanwhile.
        A record its family's tombstone already evicted is not indexed at all."""
        if self._dead and self._dead.get(digest[:8], -1) >= loc.seq:
            return
        rid = self._index.find(digest)
        held = None
        if rid >= 0:
            held = self._location(rid)
            if held.segment.retired:  # a deleted segment's record not purged yet: a new one replaces it
                self._index.remove(rid)
                rid, held = -1, None
            elif (
                (loc.seq < held.seq)
                if moved
                else ((loc.seq, loc.segment.name) <= (held.seq, held.segment.name))
            ):
                return
        self._index.put(
            digest,
            Record(loc.segment.number, loc.offset, loc.size, loc.tag, loc.checksum, loc.seq, loc.depth),
            rid,
        )
        self._count(loc.segment, 1, loc.size)
        if held is not None:
            self._count(held.segment, -1, -held.size)
            if (
                not moved
                and held.segment.own
                and held.segment is not self._writer
                and self._needless(held.segment)
            ):
                self._reclaim(held.segment)

    def _needless(self, segment: Segment) -> bool:
        """Nothing in ``segment`` matters any more: no record in it is live, and no tombstone in
        it still hides a family's records elsewhere."""
        return not self._live.get(segment) and not self._carried(segment)

    def _reclaim(self, segment: Segment) -> None:
        """Delete one of our finished segments that no index entry refers to any more."""
        with contextlib.suppress(OSError):
            os.unlink(segment.path)
        self._retire(segment)

    # -- reading -------------------------------------------------------------------------------

    def _read(self, fd: int, nbytes: int, offset: int) -> bytes:
        view = self._scan_buf.view(pad(nbytes))
        got = os.preadv(fd, [view], offset)
        return bytes(view[: min(got, nbytes)])

    def _scan(self, segment: Segment, size: int) -> None:
        """Index every commit of ``segment`` past what was already read, up to ``size`` bytes."""
        at = segment.scanned
        while at + BLOCK <= size:
            try:
                first = self._read(segment.fd, BLOCK, at)
                head = decode_head(first, segment.id)
                if head is None:
                    break
                block = commit_size(head[0])
                raw = first if block <= len(first) else self._read(segment.fd, block, at)
                decoded = decode_commit(raw, segment.id)
            except OSError:
                break
            if decoded is None:
                break
            entries, extent, seq, flags = decoded
            if flags & SEALED:
                segment.sealed = True
                break
            for entry in entries:
                if entry.flags & DEAD:
                    self._bury_family(segment, entry.digest[:8], entry.seq or seq)
                else:
                    self._place(entry.digest, Location.of(segment, at, entry, seq))
            segment.last, segment.last_seq = at, seq
            at += extent
        segment.scanned = at

    def refresh(self) -> None:
        """Pick up segments and commits other writers added since the last look."""
        with self._lock:
            self._looked_once = True
            if self._folder_changed():
                try:
                    names = sorted(n for n in os.listdir(self.folder) if n.endswith(self._suffix))
                except OSError:
                    names = []
                for name in names:  # first, so what compaction moved is found before its source is missed
                    if name not in self._segments:
                        self._open(os.path.join(self.folder, name), own=False)
                if any(n not in names for n in self._segments):
                    self._rebuild_after_loss()
                    return
            for segment in list(self._segments.values()):
                if segment is self._writer or segment.sealed:
                    continue
                try:
                    size = os.fstat(segment.fd).st_size
                except OSError:
                    continue
                if size > segment.scanned:
                    self._scan(segment, size)

    def _folder_changed(self) -> bool:
        """Whether the folder may hold new or fewer segments since we last listed it.

        Folder mtimes are coarse, so a listing taken in the same tick as the folder's last change
        may miss a second change that kept its stamp; as git treats racily clean index entries,
        such a listing is trusted for nothing. It is trusted once a tick has passed: where this
        kernel's coarse clock stamps the folder (``stamped_by_this_kernel``), when that clock, at
        the file system's granularity, had moved past the stamp when we listed; anywhere else
        (network and cluster file systems stamp with another machine's clock) a second later.
        """
        try:
            st = os.stat(self.folder)
        except OSError:
            return True
        ino, mtime, listed, ticked = self._listing
        if (st.st_ino, st.st_mtime_ns) == (ino, mtime) and (
            listed - mtime > 1_000_000_000 or (ticked > mtime and stamped_by_this_kernel(st.st_dev))
        ):
            return False
        self._listing = (st.st_ino, st.st_mtime_ns, time.time_ns(), coarse_tick(st.st_mtime_ns))
        return True

    def _rebuild_after_loss(self) -> None:
        """A segment vanished: drop every segment gone from disk and index the rest from scratch."""
        for segment in list(self._segments.values()):
            if self._alive(segment) < 0:
                self._retire(segment)
            elif segment is not self._writer:
                segment.scanned, segment.sealed = 0, False
        writer = self._writer
        number = writer.number if writer is not None else 0
        self._index.drop(np.flatnonzero(self._index.column("segment") != number))
        for gone in self._gone:
            self._numbered.pop(gone, None)
        self._gone.clear()
        self._purging = []
        self._live = {writer: len(self._index)} if writer is not None else {}
        self._held = {writer: int(self._index.sizes().sum())} if writer is not None else {}
        for segment in list(self._segments.values()):
            if segment is not writer:
                self._scan(segment, self._alive(segment))

    def one_look(self) -> _Look:
        """Within the block, this thread looks at the disk once: every pool of one call sees the
        others' commits as they stood when it began, and the call pays one look, not one per pool."""
        return _Look(self)

    def _looked(self) -> dict[Segment, int] | None:
        """Segment sizes seen in this thread's current look; None outside one."""
        sizes: dict[Segment, int] | None = getattr(self._look, "sizes", None)
        return sizes

    def known(self, digests: Sequence[bytes]) -> list[Location | None]:
        """The newest committed location of each digest, others' latest commits included."""
        with self._lock:
            if self._looked() is None:
                self.refresh()
            return self._newest(digests)

    def _newest(self, digests: Sequence[bytes]) -> list[Location | None]:
        """Each digest's newest location in the index, unless evicted since (the caller looked)."""
        index = self._index
        rids = index.find_many(digests)
        rows = index.rows([rid for rid in rids if rid >= 0])
        numbered, dead = self._numbered, self._dead
        out: list[Location | None] = []
        for digest, rid in zip(digests, rids):
            if rid < 0:
                out.append(None)
                continue
            number, offset, size, tag, checksum, seq, depth = next(rows)
            segment = numbered[number]
            if segment.retired or (dead and dead.get(digest[:8], -1) >= seq):
                out.append(None)  # what ``_unless_evicted`` drops
            else:
                out.append(Location(segment, offset, size, seq, tag, checksum, depth))
        return out

    def _unless_evicted(self, digest: bytes, loc: Location | None) -> Location | None:
        """``loc``, unless a tombstone evicted it or its segment was deleted."""
        if loc is None or loc.segment.retired:
            return None
        if self._dead and self._dead.get(digest[:8], -1) >= loc.seq:
            return None
        return loc

    def locate(self, digests: Sequence[bytes]) -> list[Location | None]:
        """Like ``known``, but only where the record's whole extent is still on disk."""
        with self._lock:
            sizes = self._looked()
            if sizes is None:
                self.refresh()
                sizes = {}
            found = self._newest(digests)
            for n, loc in enumerate(found):
                if loc is None:
                    continue
                size = sizes.get(loc.segment)
                if size is None:
                    size = sizes[loc.segment] = self._alive(loc.segment)
                if size < 0:
                    sizes.clear()
                    self._rebuild_after_loss()
                    return self.locate(digests)
                if loc.offset + loc.size > size:
                    found[n] = None
            return found

    def count(self) -> int:
        """Entries that would read back now, across every writer."""
        with self._lock:
            self.refresh()
            return sum(loc is not None for loc in self.locate([d for _, d in self._index.digests()]))

    # -- capacity (driven by reference_backend.capacity, under its tenant lock) ----------------

    @staticmethod
    def reservation(extent: int) -> int:
        """The most an append of ``extent`` bytes grows the store: the extent and a new seal block."""
        return extent + BLOCK

    def tenant_bytes(self) -> int:
        """Bytes of this tenant's segment files, whoever wrote them, and of its index checkpoint,
        and of the deleted segments not closed yet (their blocks are not free until then)."""
        total = self._closer.pending
        checkpoint_name = os.path.basename(self.checkpoint_path)
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.folder):
                if entry.name.endswith(self._suffix) or entry.name == checkpoint_name:
                    with contextlib.suppress(OSError):
                        total += entry.stat().st_size
        return total

    def live(self) -> list[tuple[bytes, Location]]:
        """Every record that would read back now, after a look for others' latest commits (a walk
        of the whole index: for tests and tools, never on a call's path)."""
        with self._lock:
            self.refresh()
            out = []
            for rid, digest in self._index.digests():
                loc = self._unless_evicted(digest, self._location(rid))
                if loc is not None:
                    out.append((digest, loc))
            return out

    def _bury_family(self, segment: Segment, family: bytes, seq: int) -> None:
        self._dead[family] = max(seq, self._dead.get(family, -1))
        held = self._tombs.setdefault(segment, {})
        if family not in held:
            self._tomb_counts[family] = self._tomb_counts.get(family, 0) + 1
        held[family] = seq

    def _forget_tombs(self, segment: Segment) -> None:
        """A segment leaves: a family no segment holds a tombstone of any more leaves ``_dead``,
        so it holds what the disk holds, at O(1) a tombstone. Where another segment still holds
        one, the newest sequence stays: a segment is deleted without carrying its tombstone
        forward only when no older segment (no older record of the family) is left."""
        for family in self._tombs.pop(segment, {}):
            left = self._tomb_counts.get(family, 1) - 1
            if left:
                self._tomb_counts[family] = left
            else:
                self._tomb_counts.pop(family, None)
                self._dead.pop(family, None)

    def tombstone(self, families: Sequence[bytes], seqs: Sequence[int] | None = None) -> bool:
        """Evict ``families`` in every process: one commit of tombstones, as many blocks as they
        take. ``seqs``: the tombstones' own sequence numbers, when compaction carries old ones
        forward."""
        if not families:
            return True
        stamp = self._next_seq()
        stamps = list(seqs) if seqs is not None else [stamp] * len(families)
        entries = [Entry(f + bytes(8), 0, 0, 0, DEAD, 0, s) for f, s in zip(families, stamps)]
        extent = self.reserve(Layout((), (), commit_size(len(entries))), counted=True)
        if extent is None or not self._put_commit(extent, entries, stamp):
            return False
        with self._lock:
            extent.segment.scanned = extent.end
            extent.segment.last, extent.segment.last_seq = extent.start, stamp
            for family, seq in zip(families, stamps):
                self._bury_family(extent.segment, family, seq)
        return True

    @property
    def segment_bytes(self) -> int:
        """Size at which a writer starts a new segment."""
        return self._segment_bytes

    def segments(self) -> list[Segment]:
        with self._lock:
            return list(self._segments.values())

    def finished_segments(self) -> list[Segment]:
        """The tenant's segments no writer appends to any more (what eviction may take)."""
        with self._lock:
            self.refresh()
            return [s for s in self._segments.values() if self._alive(s) >= 0 and self._finished(s)]

    def rotate(self) -> bool:
        """Finish the segment being written, so eviction may take it; False when there is none."""
        with self._lock:
            writer = self._writer
            if writer is None:
                return False
            self._stop_writing(writer, self._alive(writer))
            return True

    def segment_numbers(self, digests: Sequence[bytes]) -> list[int]:
        """The number of the segment holding each digest's record (0: none); no look at the disk."""
        with self._lock:
            find, seg = self._index.find, self._index.segment_of
            return [seg(rid) if rid >= 0 else 0 for rid in map(find, digests)]

    def _finished(self, segment: Segment) -> bool:
        """No writer will append to it again: ours and done, sealed, or its writer process is gone."""
        if segment is self._writer:
            return False
        if segment.own or segment.sealed:
            return True
        try:
            os.kill(int(segment.name.split("-")[1]), 0)
        except (ValueError, IndexError, ProcessLookupError):
            return True
        except PermissionError:
            return False
        return False

    @classmethod
    def tombstone_growth(cls, families: int) -> int:
        """The most evicting ``families`` grows the store: one counted commit of their tombstones."""
        return cls.reservation(commit_size(families)) if families else 0

    def held(self, segment: Segment) -> int:
        """Bytes of the records of ``segment`` the index points at."""
        return self._held.get(segment, 0)

    def _carried(self, segment: Segment) -> list[tuple[bytes, int]]:
        """(family, sequence) of the tombstones in ``segment`` that must outlive it: the newest of
        their family, with a segment older than them that may still hold the family's records."""
        tombs = self._tombs.get(segment)
        if not tombs:
            return []
        oldest = min(
            (int(s.name.split("-")[0]) for s in self._segments.values() if s is not segment), default=-1
        )
        return [
            (family, seq)
            for family, seq in tombs.items()
            if self._dead.get(family) == seq and 0 <= oldest < seq
        ]

    def families_in(self, segment: Segment) -> list[bytes]:
        """Every family with a record of ``segment`` in the index: one vectorized pass."""
        with self._lock:
            families = np.unique(self._index.column("family")[self._index.in_segment(segment.number)])
            raw = families.astype("<u8").tobytes()
            return [raw[at : at + 8] for at in range(0, len(raw), 8)]

    def _kept_in(self, segment: Segment, keep: set[bytes]) -> list[tuple[bytes, Location]]:
        """The records of ``segment`` of the families in ``keep`` that would read back now."""
        with self._lock:
            if not keep:
                return []
            wanted = np.frombuffer(b"".join(keep), "<u8")
            rids = self._index.in_segment(segment.number)
            rids = rids[np.isin(self._index.column("family")[rids], wanted)]
            out = []
            for rid in rids.tolist():
                digest = self._index.digest(rid)
                loc = self._unless_evicted(digest, self._location(rid))
                if loc is not None:
                    out.append((digest, loc))
            return out

    def compact(self, segment: Segment, keep: set[bytes]) -> bool:
        """Copy ``segment``'s live records (and tombstones still needed) forward, then delete it.
        ``keep``: the only families whose records may still be live there (the rest were just
        evicted), so the copy looks at those alone instead of every record."""
        moving = self._kept_in(segment, keep)
        if moving and not self._move(moving):
            return False
        needed = self._carried(segment)
        if needed and not self.tombstone([f for f, _ in needed], [s for _, s in needed]):
            return False
        started = time.perf_counter()
        with self._lock:
            with contextlib.suppress(OSError):
                os.unlink(segment.path)
            self._retire(segment, lingering=True)
        self.last_swap = time.perf_counter() - started
        return True

    def reclaim(self, most: int) -> None:
        """Copy up to ``most`` bytes of the live records of a finished segment of ours that is
        less than half live forward, and delete it once none is left: overwrites do not leave
        the store at twice its live bytes, budget or not, and no call pays for a whole segment.
        The caller serialises writers."""
        if self._reclaiming is None or self._reclaiming[0].retired:
            self._reclaiming = self._sparse_segment()
            if self._reclaiming is None:
                return
        segment, digests = self._reclaiming
        group, moved = [], 0
        with self._lock:
            while digests and moved < most:
                digest = digests.pop()
                rid = self._index.find(digest)
                loc = self._unless_evicted(digest, self._location(rid)) if rid >= 0 else None
                if loc is not None and loc.segment is segment:
                    group.append((digest, loc))
                    moved += loc.size
        if group and not self._move(group):
            self._reclaiming = None
            return
        if not digests:
            self._reclaiming = None
            self.compact(segment, keep=set())

    def _sparse_segment(self) -> tuple[Segment, list[bytes]] | None:
        """A finished segment of ours whose indexed records fill less than half of it, with the
        digests of those records; None when there is none."""
        with self._lock:
            for segment in self._segments.values():
                if segment.own and segment is not self._writer and 2 * self.held(segment) < segment.scanned:
                    return segment, [
                        self._index.digest(rid) for rid in self._index.in_segment(segment.number)
                    ]
        return None

    def _move(self, group: list[tuple[bytes, Location]]) -> bool:
        """One extent holding ``group``'s records, each keeping its own sequence number, so a newer
        version written meanwhile still wins."""
        extent = self.reserve(Layout.of([[loc.size for _, loc in group]]), counted=True)
        if extent is None:
            return False
        head = extent.layout.offsets[0]
        entries = [loc.entry(digest, at) for (digest, loc), at in zip(group, extent.layout.offsets)]
        body = extent.size - head
        buf = mmap.mmap(-1, pad(body, mmap.PAGESIZE))
        try:
            view = memoryview(buf)
            for (_, loc), entry in zip(group, entries):
                got = os.preadv(
                    loc.segment.fd, [view[entry.offset - head : entry.offset - head + loc.size]], loc.offset
                )
                if got != loc.size:
                    return False
            if os.pwritev(extent.fd, [view[:body]], extent.start + head) != body:
                return False
            view.release()
        except OSError:
            return False
        finally:
            with contextlib.suppress(BufferError):
                buf.close()
        if not self._put_commit(extent, entries, self._next_seq()):
            return False
        started = time.perf_counter()
        with self._lock:
            extent.segment.scanned = extent.end
            for entry in entries:
                self._place(
                    entry.digest, Location.of(extent.segment, extent.start, entry, entry.seq), moved=True
                )
        self.last_swap = max(self.last_swap, time.perf_counter() - started)
        return True

    # -- checkpoints ---------------------------------------------------------------------------

    def save_checkpoint(self) -> bool:
        """Write the index as it stands (see :mod:`reference_backend.checkpoint`); under a budget
        only where it fits beside the tenant's files, else the stale one is removed."""
        self.wait_checkpoint()
        snapshot = self._snapshot()
        return snapshot is not None and self._write_checkpoint(snapshot)

    def _checkpoint_due(self) -> bool:
        """Whether enough was committed since the last checkpoint (the caller holds the lock)."""
        if not self.checkpoint_path or self._checkpoint_every <= 0:
            return False
        if self._checkpointing is not None and self._checkpointing.is_alive():
            return False
        return self._since_checkpoint >= max(self._checkpoint_every, len(self._index) // checkpoint.SHARE)

    def _checkpoint_in_background(self) -> None:
        """Checkpoint on a thread of its own, so a crash restarts from it and scans only what came
        after. The commit that starts it pays nothing: the thread makes room for the copy first,
        then copies the index under the lock (the one part a concurrent call can wait for)."""
        thread = threading.Thread(target=self._checkpoint_now, name="hicache-checkpoint", daemon=True)
        self._checkpointing = thread
        thread.start()

    def _checkpoint_now(self) -> None:
        spare = spare_records(len(self._index) + self._checkpoint_every)
        snapshot = self._snapshot(spare)
        if snapshot is not None:
            self._write_checkpoint(snapshot)

    def wait_checkpoint(self) -> None:
        """Until the checkpoint being written (if any) is done: while it is, its copy of the
        records holds 48 more bytes an entry."""
        thread = self._checkpointing
        if thread is not None:
            thread.join()
            self._checkpointing = None

    def _snapshot(self, spare: np.ndarray | None = None) -> _Snapshot | None:
        """What a checkpoint saves, copied (the records in one memory copy: the only part a call
        waits for), and, where the log syncs its commits, the descriptors of our segments it names
        (synced before it is written, so it never names bytes a power loss could take back; without
        ``fsync`` a restart's scan of the log trusts unsynced bytes alike); None where it would not
        fit under the budget (the stale one is removed)."""
        with self._lock:
            self._since_checkpoint = 0
            segments = [s for s in self._segments.values() if self._alive(s) >= 0]
            rows = np.array(
                [(s.number, s.ino, s.scanned, s.last, s.last_seq, s.sealed) for s in segments],
                dtype=checkpoint.SEGMENT,
            )
            tombs = np.array(
                [(s.number, f, q) for s in segments for f, q in self._tombs.get(s, {}).items()],
                dtype=checkpoint.TOMB,
            )
            records, shapes = self._index.frozen(spare)
            size = rows.nbytes + tombs.nbytes + records.nbytes + shapes.nbytes + (64 << 10)
            if self.cap and self.tenant_bytes() + size > self.cap:
                with contextlib.suppress(OSError):
                    os.unlink(self.checkpoint_path)
                return None
            # with ``fsync`` every commit was synced already; without it the log promises nothing
            # across a power loss, and a sync here flushed every dirty page of the store at once
            # (ext4 commits its journal with them): the writes beside it stalled, up to 3.7x
            # their p99 at 100k entries (issue 32)
            fds = [os.dup(s.fd) for s in segments if s.own] if self._fsync else []
            return _Snapshot([s.name for s in segments], rows, tombs, records, shapes, fds)

    def _write_checkpoint(self, snap: _Snapshot) -> bool:
        try:
            for fd in snap.fds:
                os.fdatasync(fd)
        except OSError:
            return False
        finally:
            for fd in snap.fds:
                os.close(fd)
        saved = checkpoint.Saved(snap.names, snap.rows, snap.tombs, columns(snap.records, snap.shapes))
        try:
            return checkpoint.save(self.checkpoint_path, saved)
        finally:
            checkpoint.give_back()

    def restore(self) -> bool:
        """Start from the checkpoint where the log agrees with it; False (and an empty index, to
        be built from the log) where it does not.

        Every segment it names that still exists must be the same file (inode), hold at least the
        bytes it scanned, and hold at ``last`` a commit of its own with the sequence number saved:
        those are scanned on from where the checkpoint stopped. A segment it names that is gone
        takes its records with it (the log deletes a segment only once nothing in it is the newest
        of anything, or after moving or evicting what was); segments it does not name are scanned
        whole, as on any look."""
        saved = checkpoint.load(self.checkpoint_path)
        if saved is None:
            return False
        opened: dict[int, Segment] = {}
        for name, row in zip(saved.names, saved.segments):
            path = os.path.join(self.folder, name)
            if not name.endswith(self._suffix) or not os.path.exists(path):
                continue
            segment = self._open(path, own=False)
            if segment is None or not self._agrees(segment, row):
                self._forget_restored(opened, segment)
                return False
            segment.scanned, segment.sealed = int(row["scanned"]), bool(row["sealed"])
            segment.last, segment.last_seq = int(row["last"]), int(row["last_seq"])
            opened[int(row["number"])] = segment
        try:
            index = Index.from_arrays(saved.index)
        except (KeyError, ValueError):
            self._forget_restored(opened, None)
            return False
        numbers = index.column("segment")
        index.drop(np.flatnonzero(~np.isin(numbers, np.fromiter(opened, np.uint32, len(opened)))))
        index.renumber({old: s.number for old, s in opened.items()})
        self._index = index
        sizes, numbers = index.sizes(), index.column("segment")
        for segment in opened.values():
            mine = numbers == segment.number
            self._live[segment] = int(mine.sum())
            self._held[segment] = int(sizes[mine].sum())
        for row in saved.tombs:
            segment = opened.get(int(row["number"]))
            if segment is not None:
                self._bury_family(segment, bytes(row["family"]).ljust(8, b"\x00"), int(row["seq"]))
        return True

    def _agrees(self, segment: Segment, row: np.void) -> bool:
        """Whether ``segment`` is the file the checkpoint scanned, and still holds what it saw."""
        last = int(row["last"])
        if segment.ino != int(row["ino"]) or self._alive(segment) < int(row["scanned"]):
            return False
        if last < 0:
            return True
        try:
            head = decode_head(self._read(segment.fd, BLOCK, last), segment.id)
        except OSError:
            return False
        return head is not None and head[2] == int(row["last_seq"])

    def _forget_restored(self, opened: dict[int, Segment], failed: Segment | None) -> None:
        """Undo a restore the log contradicted: the index is built from the log instead."""
        for segment in [*opened.values(), *([failed] if failed is not None else [])]:
            self._retire(segment)
        self.bury()

    # -- lifecycle -----------------------------------------------------------------------------

    def clear(self) -> None:
        """Delete every segment under the root, whoever wrote it, and the index's checkpoint; the
        descriptors of those still held close at a later ``bury``."""
        self.wait_checkpoint()
        with self._lock:
            if self.checkpoint_path:
                with contextlib.suppress(OSError):
                    os.unlink(self.checkpoint_path)
            self._dead.clear()
            self._tomb_counts.clear()
            self._tombs.clear()
            for segment in list(self._segments.values()):
                self._retire(segment)
            self.bury()
            self._index = Index()
            self._gone.clear()
            self._purging = []
            self._live.clear()
            self._held.clear()
            self._dead.clear()
            self._tomb_counts.clear()
            self._tombs.clear()
            self._listing = (0, 0, 0, 0)
            with contextlib.suppress(OSError):
                for name in os.listdir(self.folder):
                    if name.endswith(self._suffix):
                        with contextlib.suppress(OSError):
                            os.unlink(os.path.join(self.folder, name))

    def close(self) -> None:
        """Seal our segment, checkpoint the index and close every descriptor; the caller
        guarantees that every holder has let go."""
        self.wait_checkpoint()  # before the lock, which a checkpoint thread may be waiting for
        with self._lock:
            writer = self._writer
            if writer is not None and self._alive(writer) >= writer.scanned:
                self._seal(writer)
            if self.checkpoint_path and self._looked_once:
                self.save_checkpoint()
            self._dead.clear()
            self._tomb_counts.clear()
            self._tombs.clear()
            for segment in list(self._segments.values()):
                self._retire(segment)
            self.bury()
            self._closer.flush()
            self._index = Index()
            self._gone.clear()
            self._purging = []
            self._live.clear()
            self._held.clear()
            self._commit_buf.close()
            self._scan_buf.close()


@dataclass(frozen=True)
class _Snapshot:
    """A checkpoint's content, copied under the log's lock, and our segments' descriptors to sync
    before it is written."""

    names: list[str]
    rows: np.ndarray
    tombs: np.ndarray
    records: np.ndarray
    shapes: np.ndarray
    fds: list[int]


class _Look:
    """``SegmentLog.one_look``'s block: the outermost one on a thread refreshes and opens the look,
    inner ones (a call made of calls) join it. A class, not a generator: it runs on every call."""

    __slots__ = ("log", "outer")

    def __init__(self, log: SegmentLog) -> None:
        self.log, self.outer = log, False

    def __enter__(self) -> None:
        if self.log._looked() is None:
            self.log.refresh()
            self.log._look.sizes = {}
            self.outer = True

    def __exit__(self, *exc: object) -> None:
        if self.outer:
            self.log._look.sizes = None
