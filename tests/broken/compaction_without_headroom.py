"""Defect: a full store that has been overwritten into locks up, refusing every write from then on.

The store keeps its pages in segment files of a fixed size, an eighth of the budget each, and
frees space only a whole segment at a time, oldest first. An overwrite leaves the old record in
its segment, superseded, and a segment holding one is compacted, not evicted: its live records
are copied into a fresh segment before it is deleted. But eviction runs only when a write needs a
segment the budget has no room for, and then there is no room for the copy either. Eviction gives
up instead of evicting the segment's entries, so the write is refused, and so is every later one
that needs a new segment: nothing is ever freed again (issue 32's lock-up, in small). A stream of
fresh writes never overwrites, so it never meets this, and the budget itself always holds.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig

SEGMENTS = 8
"""Segments a budget holds."""
UNBOUNDED_SEGMENT = 4 << 20
"""Segment size without a budget."""


@dataclass(eq=False)
class Segment:
    path: str
    used: int = 0
    live: set[ObjectName] = field(default_factory=set)
    superseded: int = 0
    """Bytes of records a later write of the same entry replaced: what only compaction reclaims."""


@dataclass(frozen=True)
class Record:
    segment: Segment
    offset: int
    size: int


class SegmentStore:
    """One storage folder's segments and index, shared by every instance on it in this process."""

    def __init__(self, folder: Path, budget: int) -> None:
        self.folder = folder
        self.segment_bytes = budget // SEGMENTS if budget else UNBOUNDED_SEGMENT
        self.most = SEGMENTS if budget else None
        self.lock = threading.Lock()
        self.segments: list[Segment] = []
        """Oldest first; the last one is the one being written."""
        self.index: dict[ObjectName, Record] = {}
        self.made = 0

    def write(self, names: list[ObjectName], pages: list[bytes]) -> bool:
        """All of ``pages`` under ``names``, or nothing when no room can be made."""
        if any(len(page) > self.segment_bytes for page in pages):
            return False
        with self.lock:
            if not self._make_room(self._segments_needed(pages)):
                return False
            for name, page in zip(names, pages):
                self._append(name, page)
            return True

    def read(self, name: ObjectName) -> bytes | None:
        with self.lock:
            record = self.index.get(name)
            if record is None:
                return None
            fd = os.open(record.segment.path, os.O_RDONLY)
            try:
                return os.pread(fd, record.size, record.offset)
            finally:
                os.close(fd)

    def clear(self) -> None:
        with self.lock:
            for segment in self.segments:
                os.unlink(segment.path)
            self.segments.clear()
            self.index.clear()

    def _segments_needed(self, pages: list[bytes]) -> int:
        room = self.segment_bytes - self.segments[-1].used if self.segments else 0
        needed = 0
        for page in pages:
            if len(page) > room:
                needed, room = needed + 1, self.segment_bytes
            room -= len(page)
        return needed

    def _make_room(self, needed: int) -> bool:
        """Reclaim the oldest finished segments until ``needed`` new ones fit in the budget."""
        while self.most is not None and len(self.segments) + needed > self.most:
            if len(self.segments) < 2:
                return False  # only the segment being written: nothing finished to reclaim
            oldest = self.segments[0]
            if oldest.live and oldest.superseded:
                if len(self.segments) + 1 > self.most:
                    return False  # the defect: no room for the copy, and no falling back to evicting
                self._compact(oldest)
            self._delete(oldest)  # evicting the entries still in it
        return True

    def _append(self, name: ObjectName, page: bytes) -> None:
        if not self.segments or self.segments[-1].used + len(page) > self.segment_bytes:
            self._new_segment(len(self.segments))
        self._put(self.segments[-1], name, page)

    def _new_segment(self, at: int) -> Segment:
        """An empty segment file, sized whole: the budget is counted in segments."""
        os.makedirs(self.folder, exist_ok=True)
        self.made += 1
        segment = Segment(str(self.folder / f"segment-{self.made:06d}"))
        fd = os.open(segment.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.ftruncate(fd, self.segment_bytes)
        finally:
            os.close(fd)
        self.segments.insert(at, segment)
        return segment

    def _put(self, segment: Segment, name: ObjectName, page: bytes) -> None:
        fd = os.open(segment.path, os.O_WRONLY)
        try:
            os.pwrite(fd, page, segment.used)
        finally:
            os.close(fd)
        old = self.index.get(name)
        if old is not None:
            old.segment.live.discard(name)
            old.segment.superseded += old.size
        self.index[name] = Record(segment, segment.used, len(page))
        segment.live.add(name)
        segment.used += len(page)

    def _compact(self, segment: Segment) -> None:
        """Copy ``segment``'s live records into a fresh segment, kept in its place in the order."""
        copy = self._new_segment(1)
        for name in sorted(segment.live, key=lambda n: self.index[n].offset):
            record = self.index[name]
            fd = os.open(segment.path, os.O_RDONLY)
            try:
                page = os.pread(fd, record.size, record.offset)
            finally:
                os.close(fd)
            del self.index[name]
            self._put(copy, name, page)
        segment.live.clear()

    def _evict(self, keys: set[str]) -> None:
        """Every pool's and rank's record of these keys, wherever it lies: whole entries go."""
        for name in [n for n in self.index if n[2] in keys]:
            self.index.pop(name).segment.live.discard(name)

    def _delete(self, segment: Segment) -> None:
        """Evict every entry with a record in ``segment``, then remove its file."""
        self._evict({name[2] for name in segment.live})
        os.unlink(segment.path)
        self.segments.remove(segment)


_FOLDERS: dict[str, SegmentStore] = {}
_FOLDERS_LOCK = threading.Lock()


class CompactionWithoutHeadroom(MemoryBackend):
    def __init__(self, config: HiCacheStorageConfig, storage_dir: Path) -> None:
        super().__init__(config, storage_dir)
        budget = int((config.extra_config or {}).get("max_size") or 0)
        with _FOLDERS_LOCK:
            self.disk = _FOLDERS.setdefault(str(storage_dir), SegmentStore(storage_dir, budget))

    def present(self, pool_name: str, key: str) -> bool:
        return self.object_name(pool_name, key) in self.disk.index

    def _write_pages(self, pool_name: str, pool: Any, keys: Any, starts: list[int]) -> list[bool]:
        pages = [self.capture(pool, s) for s in starts]
        done = self.disk.write([self.object_name(pool_name, k) for k in keys], pages)
        return [done] * len(keys)

    def _read_pages(self, pool_name: str, pool: Any, keys: Any, starts: list[int]) -> list[bool]:
        pages = [self.disk.read(self.object_name(pool_name, k)) for k in keys]
        return [page is not None and self.restore(pool, start, page) for start, page in zip(starts, pages)]

    def clear(self) -> bool:
        self.disk.clear()
        return True

    def stored_object_count(self) -> int:
        return len(self.disk.index)


SPEC = BackendSpec(
    "broken-compaction-without-headroom",
    CompactionWithoutHeadroom,
    replace(CAPABILITIES, generic_kv=False, stores_files=True, bounded_capacity="max_size"),
)
