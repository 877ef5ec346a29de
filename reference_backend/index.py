"""The log's index: entry digest -> its newest record, in flat arrays, whatever the store holds.

A dict of one object per entry costs ~360 bytes an entry and a garbage collector's walk of every
one; a store of 10 million pages cannot afford either. Records here are rows of one array, dense
in ``[0, len)``, each read whole (a lookup touches the table and one record's cache line, where a
column per field would touch eight): the digest as two 64-bit words (the family, then the rest),
offset, checksum, sequence number, the log's number for the segment, the record's shape (an index
into a small table of (size, tag) pairs: every record of one pool shares one) and its flags
(checksummed, depth in its prefix chain): 48 bytes. A table of 32-bit slots (record id + 1; 0 is
empty), linear probing from a hash of the digest, at most 70% full, finds them: 6 to 12 more bytes
an entry, and a lookup touches one or two slots whatever the count. Removing a record moves the
last one into its place, and the probe run it leaves is mended by shifting later entries back, so
nothing is ever marked deleted and nothing is left to sweep.

Two implementations of the probing share these arrays. The native one (``_index_native``, C++
built at install where a compiler is found) probes a whole batch in one call; the pure-Python one
probes one digest at a time with ``struct`` over the array's bytes (a batch of 64 costs about as
much as numpy's per-call overhead would). They leave the arrays byte for byte the same, so either
may serve an index the other filled. An index takes the native one when it imported, unless
``HICACHE_NATIVE=0``; ``HICACHE_NATIVE=1`` requires it. Whole-index work (a segment's records, a
checkpoint) is vectorized numpy in both.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import DTypeLike

from reference_backend.native import chosen

FIELDS: tuple[tuple[str, str], ...] = (
    ("family", "<u8"),
    ("rest", "<u8"),
    ("offset", "<u8"),
    ("checksum", "<u8"),
    ("seq", "<u8"),
    ("segment", "<u4"),
    ("shape", "<u2"),
    ("flags", "<u2"),
)
"""One record, field by field: 48 bytes, one cache line's worth read together."""
RECORD = np.dtype(list(FIELDS))
_ROW = struct.Struct("<QQQQQIHH")
"""A record's bytes, as ``RECORD`` lays them out."""
SUMMED = 1
"""``flags`` bit: the record carries a checksum."""
DEPTH_LIMIT = (1 << 15) - 1
"""Depths are kept up to this: the eviction policy only compares them."""
_DIGEST = struct.Struct("<QQ")
_SHAPES_LIMIT = 1 << 16
_MIN_SLOTS = 1 << 10
_MIX = 0x9E3779B97F4A7C15
"""Fibonacci hashing: both words are multiplied in, so digests that are not uniformly random (a
test's, a tool's) still spread over the table."""
_WORD = (1 << 64) - 1

try:
    from reference_backend import _index_native
except ImportError as missing:  # built at install only where a compiler was found
    _NATIVE_MISSING = str(missing)
else:
    _NATIVE_MISSING = ""


def _use_native(native: bool | None) -> bool:
    """Whether an index takes the native implementation (:func:`reference_backend.native.chosen`)."""
    return chosen(native, _NATIVE_MISSING, "the native index")


def _home(family: int, rest: int, mask: int) -> int:
    """The slot a digest's probe starts at: the top bits of ((family * MIX) ^ rest) * MIX, as many
    as the table has slots (the top bits of a product depend on every bit of its factors)."""
    return int(((family * _MIX & _WORD) ^ rest) * _MIX & _WORD) >> (64 - mask.bit_length())


def _homes(family: np.ndarray, rest: np.ndarray, mask: int) -> np.ndarray:
    """``_home`` of many digests (numpy's uint64 products wrap as ``& _WORD`` does)."""
    mix = np.uint64(_MIX)
    mixed = ((family * mix) ^ rest) * mix
    homes: np.ndarray = (mixed >> np.uint64(64 - mask.bit_length())).astype(np.int64)
    return homes


_GATHER = 16
"""From this many records, ``records`` gathers rows with numpy: below it, one unpack each costs less."""
_CHUNK = 1 << 16
"""Records a rehash places per vectorized round: its scratch arrays stay small and are reused."""


def _zeros(count: int, kind: DTypeLike) -> np.ndarray:
    """A zeroed array in memory of its own (an anonymous map): given back to the kernel whole
    when dropped, where the C heap would keep a large freed block resident."""
    dtype = np.dtype(kind)
    if count * dtype.itemsize < mmap.PAGESIZE:
        return np.zeros(count, dtype)
    return np.frombuffer(mmap.mmap(-1, count * dtype.itemsize), dtype)


def spare_records(count: int) -> np.ndarray:
    """Room for ``count`` records in a map of its own, its pages faulted in now (``MAP_POPULATE``):
    a thread makes it before it takes a lock to copy the index, so that the copy under the lock is
    a plain memory copy (a page fault costs 3 us here: 36 ms of faults at a million records)."""
    nbytes = max(count, 1) * np.dtype(RECORD).itemsize
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=flags), RECORD)


def columns(records: np.ndarray, shapes: np.ndarray) -> dict[str, np.ndarray]:
    """Records as one array per field (views: saving writes them out without a copy of the
    whole), and the shapes: what a checkpoint saves."""
    out = {name: records[name] for name, _ in FIELDS}
    out["shapes"] = shapes
    return out


class Record(NamedTuple):
    """One record as the log reads it back."""

    segment: int
    offset: int
    size: int
    tag: int
    checksum: int | None
    seq: int
    depth: int


def words(digest: bytes) -> tuple[int, int]:
    """A 16-byte digest as (family, rest) words."""
    family, rest = _DIGEST.unpack(digest)
    return family, rest


class Index:
    """Newest record per digest. Not thread-safe: the log calls it under its lock."""

    def __init__(self, native: bool | None = None) -> None:
        self.native = _use_native(native)
        """Whether the native implementation probes this index (see the module's docstring)."""
        self._n = 0
        self.removals = 0
        """Counts calls that removed records (record ids past the removed ones may have moved)."""
        self._recs = _zeros(0, RECORD)
        self._raw = memoryview(b"")
        self._shapes: list[tuple[int, int]] = []
        self._shape_ids: dict[tuple[int, int], int] = {}
        self._table = _zeros(_MIN_SLOTS, np.uint32)
        self._slots = self._table.data
        self._mask = _MIN_SLOTS - 1
        self._reserve(_MIN_SLOTS // 2)

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Memory the index's records and table take: the columns' spare room past the last record
        is never written, so the kernel never backs it with memory."""
        return self._table.nbytes + RECORD.itemsize * self._n

    # -- storage -------------------------------------------------------------------------------

    def _reserve(self, records: int) -> None:
        """Room for ``records`` records, growing the array by half again at least."""
        have = len(self._recs)
        if records <= have:
            return
        size = max(records, have + have // 2, 1024)
        grown = _zeros(size, RECORD)
        grown[: self._n] = self._recs[: self._n]
        self._recs = grown
        self._raw = grown.view(np.uint8).data

    def _rehash(self, slots: int) -> None:
        """A new table of ``slots`` slots holding every record: vectorized linear probing."""
        table = _zeros(slots, np.uint32)
        mask = slots - 1
        if self.native:
            _index_native.rehash(table.data, self._raw, self._n, _CHUNK)
            self._table, self._mask, self._slots = table, mask, table.data
            return
        for start in range(0, self._n, _CHUNK):
            end = min(start + _CHUNK, self._n)
            ids = np.arange(start + 1, end + 1, dtype=np.uint32)
            pos = _homes(self._recs["family"][start:end], self._recs["rest"][start:end], mask)
            pending = np.arange(end - start)
            while pending.size:
                free = table[pos[pending]] == 0
                tried = pending[free]
                table[pos[tried]] = ids[tried]  # of several aiming at one slot, one wins
                won = table[pos[tried]] == ids[tried]
                pending = np.concatenate([pending[~free], tried[~won]])
                pos[pending] = (pos[pending] + 1) & mask
        self._table, self._mask = table, mask
        self._slots = table.data

    def shape(self, size: int, tag: int) -> int:
        """The id of a (size, tag) pair, made on first use."""
        key = (size, tag)
        found = self._shape_ids.get(key)
        if found is None:
            if len(self._shapes) >= _SHAPES_LIMIT:
                raise ValueError("more than 65536 distinct record shapes in one store")
            found = self._shape_ids[key] = len(self._shapes)
            self._shapes.append(key)
        return found

    # -- one record at a time ------------------------------------------------------------------

    def find(self, digest: bytes) -> int:
        """The record id of ``digest``, or -1."""
        if self.native:
            return _index_native.find(self._slots, self._raw, digest)
        family, rest = _DIGEST.unpack(digest)
        slots, raw, mask, unpack = self._slots, self._raw, self._mask, _DIGEST.unpack_from
        at = _home(family, rest, mask)
        while True:
            held = slots[at]
            if not held:
                return -1
            if unpack(raw, (held - 1) * 48) == (family, rest):
                return int(held) - 1
            at = (at + 1) & mask

    def find_many(self, digests: Sequence[bytes]) -> list[int]:
        """Each digest's record id, or -1: one call for a batch where the index is native."""
        if self.native:
            return _index_native.find_many(self._slots, self._raw, digests)
        return list(map(self.find, digests))

    def record(self, rid: int) -> Record:
        _, _, offset, checksum, seq, segment, shape, flags = _ROW.unpack_from(self._raw, rid * 48)
        size, tag = self._shapes[shape]
        return Record(segment, offset, size, tag, checksum if flags & SUMMED else None, seq, flags >> 1)

    def rows(self, rids: Sequence[int]) -> Iterator[tuple[int, int, int, int, int | None, int, int]]:
        """``record`` of each id as a plain tuple (``Record``'s fields, in order); from
        ``_GATHER`` ids the rows are gathered in one step and read column by column."""
        if len(rids) < _GATHER:
            return map(self.record, rids)
        rows = self._recs[np.asarray(rids, dtype=np.int64)]
        shapes = np.asarray(self._shapes, dtype=np.int64).reshape(-1, 2)[rows["shape"]]
        flags = rows["flags"]
        checksums = [
            checksum if summed else None
            for checksum, summed in zip(rows["checksum"].tolist(), (flags & SUMMED).astype(bool).tolist())
        ]
        return zip(
            rows["segment"].tolist(),
            rows["offset"].tolist(),
            shapes[:, 0].tolist(),
            shapes[:, 1].tolist(),
            checksums,
            rows["seq"].tolist(),
            (flags >> 1).tolist(),
        )

    def digest(self, rid: int) -> bytes:
        return bytes(self._raw[rid * 48 : rid * 48 + 16])

    def segment_of(self, rid: int) -> int:
        return int(self._recs["segment"][rid])

    def put(self, digest: bytes, record: Record, rid: int = -1) -> int:
        """Store ``record`` for ``digest``: over record ``rid`` (its current one), or as a new one.
        Returns the record id."""
        family, rest = _DIGEST.unpack(digest)
        shape = self.shape(record.size, record.tag)
        flags = (SUMMED if record.checksum is not None else 0) | min(record.depth, DEPTH_LIMIT) << 1
        fresh = rid < 0
        if fresh:
            self._reserve(self._n + 1)
            if 10 * (self._n + 1) > 7 * len(self._table):
                self._rehash(2 * len(self._table))
            rid = self._n
        _ROW.pack_into(
            self._raw,
            rid * 48,
            family,
            rest,
            record.offset,
            record.checksum or 0,
            record.seq,
            record.segment,
            shape,
            flags,
        )
        if fresh:
            self._n += 1
            self._slot(rid)
        return rid

    def append(self, digests: Sequence[bytes], records: Sequence[Record]) -> None:
        """Store ``records`` for ``digests``, none of which the index holds and no two alike (a
        commit's fresh entries): their rows written as columns in one step, then slotted in order."""
        count = len(digests)
        if not count:
            return
        first = self._n
        self._reserve(first + count)
        slots = len(self._table)
        while 10 * (first + count) > 7 * slots:
            slots *= 2
        words = np.frombuffer(b"".join(digests), dtype="<u8").reshape(count, 2)
        rows = self._recs[first : first + count]
        rows["family"], rows["rest"] = words[:, 0], words[:, 1]
        rows["offset"] = [r.offset for r in records]
        rows["checksum"] = [r.checksum or 0 for r in records]
        rows["seq"] = [r.seq for r in records]
        rows["segment"] = [r.segment for r in records]
        rows["shape"] = [self.shape(r.size, r.tag) for r in records]
        rows["flags"] = [
            (SUMMED if r.checksum is not None else 0) | min(r.depth, DEPTH_LIMIT) << 1 for r in records
        ]
        self._n = first + count
        if slots != len(self._table):
            self._rehash(slots)  # places every record, the new ones included
            return
        for rid in range(first, first + count):
            self._slot(rid)

    def remove(self, rid: int) -> None:
        """Forget record ``rid``: the last record takes its id, and its probe run is mended."""
        self.removals += 1
        last = self._n - 1
        if self.native:
            _index_native.remove(self._slots, self._raw, rid, last)
            self._n = last
            return
        self._unslot(rid)
        if rid != last:
            self._unslot(last)
            self._raw[rid * 48 : rid * 48 + 48] = self._raw[last * 48 : last * 48 + 48]
            self._slot(rid)
        self._n = last

    def _home(self, rid: int) -> int:
        family, rest = _DIGEST.unpack_from(self._raw, rid * 48)
        return _home(family, rest, self._mask)

    def _slot(self, rid: int) -> None:
        """Give record ``rid``, its row written, the first empty slot of its probe run."""
        if self.native:
            _index_native.slot(self._slots, self._raw, rid)
            return
        at = self._home(rid)
        while self._slots[at]:
            at = (at + 1) & self._mask
        self._slots[at] = rid + 1

    def _unslot(self, rid: int) -> None:
        """Empty ``rid``'s slot and shift the rest of its probe run back (no tombstones)."""
        slots, mask = self._slots, self._mask
        at = self._home(rid)
        while slots[at] != rid + 1:
            at = (at + 1) & mask
        hole, at = at, (at + 1) & mask
        while slots[at]:
            home = self._home(slots[at] - 1)
            # the entry at ``at`` may fill the hole unless its home lies cyclically in (hole, at]
            if (at - home) & mask >= (at - hole) & mask:
                slots[hole] = slots[at]
                hole = at
            at = (at + 1) & mask
        slots[hole] = 0

    # -- whole-index work (vectorized) ---------------------------------------------------------

    def column(self, name: str) -> np.ndarray:
        """A read-only view of one column over the live records."""
        view = self._recs[name][: self._n]
        view.flags.writeable = False
        return view

    def in_segment(self, number: int) -> np.ndarray:
        """Ids of the records in segment ``number``."""
        return np.flatnonzero(self._recs["segment"][: self._n] == number)

    def sizes(self, rids: np.ndarray | None = None) -> np.ndarray:
        """Each record's size (every record's when ``rids`` is None)."""
        table = np.asarray([s for s, _ in self._shapes] or [0], dtype=np.int64)
        shape = self._recs["shape"][: self._n]
        sizes: np.ndarray = table[shape if rids is None else shape[rids]]
        return sizes

    def drop(self, rids: Sequence[int] | np.ndarray) -> None:
        """Forget many records at once: one pass over the columns and a rebuilt table when they
        are many, one removal each when few."""
        rids = np.unique(np.asarray(rids, dtype=np.int64))
        self.removals += 1
        if len(rids) < 64 or len(rids) * 16 < self._n:
            for rid in rids[::-1]:  # highest first: a removal moves only the last record
                self.remove(int(rid))
            return
        keep = np.ones(self._n, bool)
        keep[rids] = False
        kept = int(keep.sum())
        self._recs[:kept] = self._recs[: self._n][keep]
        self._n = kept
        self._rehash(len(self._table))

    def renumber(self, mapping: dict[int, int]) -> None:
        """Give segments new numbers (a checkpoint's to the log's)."""
        if not mapping:
            return
        old = np.fromiter(mapping, np.uint32, len(mapping))
        new = np.fromiter(mapping.values(), np.uint32, len(mapping))
        seg = self._recs["segment"][: self._n]
        order = np.argsort(old)
        at = np.searchsorted(old[order], seg)
        at[at >= len(old)] = 0
        matched = old[order][at] == seg
        seg[matched] = new[order][at[matched]]

    def digests(self) -> Iterator[tuple[int, bytes]]:
        """(record id, digest) of every record; the caller must not change the index meanwhile."""
        for rid in range(self._n):
            yield rid, self.digest(rid)

    # -- checkpoints ---------------------------------------------------------------------------

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything the index holds, as arrays a checkpoint saves."""
        return columns(*self.frozen())

    def frozen(self, spare: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """A copy of the records (one memory copy: the part a checkpoint of a running log makes
        under its lock), into ``spare`` where it has room (:func:`spare_records`), and of the
        shapes; :func:`columns` turns them into what is saved."""
        shapes = np.asarray(self._shapes, dtype=np.int64).reshape(-1, 2)
        if spare is None or len(spare) < self._n:
            spare = _zeros(self._n, RECORD)  # a map of its own either way: all goes back when dropped
        records = spare[: self._n]
        records[:] = self._recs[: self._n]
        return records, shapes

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], native: bool | None = None) -> Index:
        """An index holding what ``arrays`` saved; ValueError when they do not fit together."""
        index = cls(native)
        count = len(arrays["seq"])
        if any(len(arrays[name]) != count or arrays[name].dtype != np.dtype(kind) for name, kind in FIELDS):
            raise ValueError("checkpoint columns differ in length or type")
        shapes = [(int(s), int(t)) for s, t in arrays["shapes"]]
        if count and int(arrays["shape"].max()) >= len(shapes):
            raise ValueError("checkpoint names a shape it does not hold")
        index._shapes = shapes
        index._shape_ids = {s: i for i, s in enumerate(shapes)}
        slots = _MIN_SLOTS
        while 10 * count > 7 * slots:
            slots *= 2
        index._recs = _zeros(max(count, 1024), RECORD)
        index._raw = index._recs.view(np.uint8).data
        for name, _ in FIELDS:
            index._recs[name][:count] = arrays[name]
        index._n = count
        index._rehash(slots)
        return index
