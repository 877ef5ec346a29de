"""The log's index: entry digest -> its newest record, in flat arrays, whatever the store holds.

A dict of one object per entry costs ~360 bytes an entry and a garbage collector's walk of every
one; a store of 10 million pages cannot afford either. Records here are a struct of arrays, dense
in ``[0, len)``: the digest as two 64-bit words (the family, then the rest), the log's number for
the segment, the record's shape (an index into a small table of (size, tag) pairs: every record of
one pool shares one), its flags (checksummed, depth in its prefix chain), offset, checksum and
sequence number: 48 bytes. A table of 32-bit slots (record id + 1; 0 is empty), linear probing from
a hash of the digest, at most 70% full, finds them: 6 to 12 more bytes an entry, and a lookup
touches one or two slots whatever the count. Removing a record moves the last one into its place,
and the probe run it leaves is mended by shifting later entries back, so nothing is ever marked
deleted and nothing is left to sweep.

Lookups run one digest at a time over memoryviews (a batch of 64 costs about as much as numpy's
per-call overhead would); whole-index work (a segment's records, growth, a checkpoint) is
vectorized.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import DTypeLike

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
"""One record, column by column: 48 bytes."""
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


_CHUNK = 1 << 16
"""Records a rehash places per vectorized round: its scratch arrays stay small and are reused."""


def _zeros(count: int, kind: DTypeLike) -> np.ndarray:
    """A zeroed array in memory of its own (an anonymous map): given back to the kernel whole
    when dropped, where the C heap would keep a large freed block resident."""
    dtype = np.dtype(kind)
    if count * dtype.itemsize < mmap.PAGESIZE:
        return np.zeros(count, dtype)
    return np.frombuffer(mmap.mmap(-1, count * dtype.itemsize), dtype)


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

    def __init__(self) -> None:
        self._n = 0
        self._cols: dict[str, np.ndarray] = {name: _zeros(0, kind) for name, kind in FIELDS}
        self._views: dict[str, memoryview] = {}
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
        return self._table.nbytes + sum(c.itemsize for c in self._cols.values()) * self._n

    # -- storage -------------------------------------------------------------------------------

    def _reserve(self, records: int) -> None:
        """Room for ``records`` records, growing the columns by half again at least."""
        have = len(self._cols["seq"])
        if records <= have:
            return
        size = max(records, have + have // 2, 1024)
        for name, column in self._cols.items():
            grown = _zeros(size, column.dtype)
            grown[: self._n] = column[: self._n]
            self._cols[name] = grown
        self._views = {name: column.data for name, column in self._cols.items()}

    def _rehash(self, slots: int) -> None:
        """A new table of ``slots`` slots holding every record: vectorized linear probing."""
        table = _zeros(slots, np.uint32)
        mask = slots - 1
        for start in range(0, self._n, _CHUNK):
            end = min(start + _CHUNK, self._n)
            ids = np.arange(start + 1, end + 1, dtype=np.uint32)
            pos = _homes(self._cols["family"][start:end], self._cols["rest"][start:end], mask)
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
        family, rest = _DIGEST.unpack(digest)
        slots, fam, res, mask = self._slots, self._views["family"], self._views["rest"], self._mask
        at = _home(family, rest, mask)
        while True:
            held = slots[at]
            if not held:
                return -1
            if res[held - 1] == rest and fam[held - 1] == family:
                return int(held) - 1
            at = (at + 1) & mask

    def record(self, rid: int) -> Record:
        v = self._views
        size, tag = self._shapes[v["shape"][rid]]
        flags = v["flags"][rid]
        checksum = v["checksum"][rid] if flags & SUMMED else None
        return Record(v["segment"][rid], v["offset"][rid], size, tag, checksum, v["seq"][rid], flags >> 1)

    def digest(self, rid: int) -> bytes:
        return _DIGEST.pack(self._views["family"][rid], self._views["rest"][rid])

    def segment_of(self, rid: int) -> int:
        return int(self._views["segment"][rid])

    def seq_of(self, rid: int) -> int:
        return int(self._views["seq"][rid])

    def put(self, digest: bytes, record: Record, rid: int = -1) -> int:
        """Store ``record`` for ``digest``: over record ``rid`` (its current one), or as a new one.
        Returns the record id."""
        if rid < 0:
            self._reserve(self._n + 1)
            if 10 * (self._n + 1) > 7 * len(self._table):
                self._rehash(2 * len(self._table))
            rid = self._n
            self._n += 1
            family, rest = _DIGEST.unpack(digest)
            v = self._views
            v["family"][rid], v["rest"][rid] = family, rest
            at = _home(family, rest, self._mask)
            while self._slots[at]:
                at = (at + 1) & self._mask
            self._slots[at] = rid + 1
        self._write(rid, record)
        return rid

    def _write(self, rid: int, r: Record) -> None:
        v = self._views
        v["segment"][rid] = r.segment
        v["offset"][rid] = r.offset
        v["shape"][rid] = self.shape(r.size, r.tag)
        v["flags"][rid] = (SUMMED if r.checksum is not None else 0) | min(r.depth, DEPTH_LIMIT) << 1
        v["checksum"][rid] = r.checksum or 0
        v["seq"][rid] = r.seq

    def remove(self, rid: int) -> None:
        """Forget record ``rid``: the last record takes its id, and its probe run is mended."""
        self._unslot(rid)
        last = self._n - 1
        if rid != last:
            self._unslot(last)
            for column in self._cols.values():
                column[rid] = column[last]
            self._slot(rid)
        self._n = last

    def _home(self, rid: int) -> int:
        return _home(self._views["family"][rid], self._views["rest"][rid], self._mask)

    def _slot(self, rid: int) -> None:
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
        view = self._cols[name][: self._n]
        view.flags.writeable = False
        return view

    def in_segment(self, number: int) -> np.ndarray:
        """Ids of the records in segment ``number``."""
        return np.flatnonzero(self._cols["segment"][: self._n] == number)

    def sizes(self, rids: np.ndarray | None = None) -> np.ndarray:
        """Each record's size (every record's when ``rids`` is None)."""
        table = np.asarray([s for s, _ in self._shapes] or [0], dtype=np.int64)
        shape = self._cols["shape"][: self._n]
        sizes: np.ndarray = table[shape if rids is None else shape[rids]]
        return sizes

    def drop(self, rids: Sequence[int] | np.ndarray) -> None:
        """Forget many records at once: one pass over the columns and a rebuilt table when they
        are many, one removal each when few."""
        rids = np.unique(np.asarray(rids, dtype=np.int64))
        if len(rids) < 64 or len(rids) * 16 < self._n:
            for rid in rids[::-1]:  # highest first: a removal moves only the last record
                self.remove(int(rid))
            return
        keep = np.ones(self._n, bool)
        keep[rids] = False
        kept = int(keep.sum())
        for column in self._cols.values():
            column[:kept] = column[: self._n][keep]
        self._n = kept
        self._rehash(len(self._table))

    def renumber(self, mapping: dict[int, int]) -> None:
        """Give segments new numbers (a checkpoint's to the log's)."""
        if not mapping:
            return
        old = np.fromiter(mapping, np.uint32, len(mapping))
        new = np.fromiter(mapping.values(), np.uint32, len(mapping))
        seg = self._cols["segment"][: self._n]
        order = np.argsort(old)
        at = np.searchsorted(old[order], seg)
        at[at >= len(old)] = 0
        matched = old[order][at] == seg
        seg[matched] = new[order][at[matched]]

    def digests(self) -> Iterator[tuple[int, bytes]]:
        """(record id, digest) of every record; the caller must not change the index meanwhile."""
        fam, rest = self._cols["family"], self._cols["rest"]
        for rid in range(self._n):
            yield rid, _DIGEST.pack(int(fam[rid]), int(rest[rid]))

    # -- checkpoints ---------------------------------------------------------------------------

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything the index holds, as arrays a checkpoint saves."""
        out = {name: column[: self._n] for name, column in self._cols.items()}
        out["shapes"] = np.asarray(self._shapes, dtype=np.int64).reshape(-1, 2)
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Index:
        """An index holding what ``arrays`` saved; ValueError when they do not fit together."""
        index = cls()
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
        index._cols = {}
        for name, kind in FIELDS:
            index._cols[name] = _zeros(max(count, 1024), kind)
            index._cols[name][:count] = arrays[name]
        index._views = {name: column.data for name, column in index._cols.items()}
        index._n = count
        index._rehash(slots)
        return index
