"""A bounded store: the byte budget, what is in use, and what goes first when space runs out.

**Budget.** ``max_size`` (bytes, or human-readable as HiCacheFile reads it: ``1048576``,
``"200G"``, ``"1Gi"``) bounds the bytes of one tenant's files under the storage folder, across
every process and rank that shares the folder. ``l3_cleaner_high_watermark`` and
``l3_cleaner_low_watermark`` (percent, HiCacheNixl's spellings) are of that budget: a write that
would take the store past the high mark (100 by default) first evicts down to the low mark (90);
without ``max_size`` they are percent of the file system, as upstream's cleaner reads them. One
lock file per tenant serialises admission across processes; the bytes a writer is admitted for
are on disk (its segment is sized) before the lock is let go, so every process counts them.

**Whole entries.** An entry is every pool's record of one key, for every rank: a *family*, the
first 8 bytes of every record digest (:func:`reference_backend.naming.family_digest`). Eviction
writes a tombstone for the family, which every process applies to records older than it, and then
compacts: segments that are finished and mostly dead have their live records copied forward
(keeping their sequence numbers, so a newer version written meanwhile still wins) and are
deleted. Records being written are in no finished segment, so they are never victims, and
neither is an entry the instance's current or previous write named: the controller writes an
entry in calls (KV pages, then each side pool's), and pages written after a tombstone would
outlive it. Every step eviction takes is checked first against the limit (the log's ``cap``), so
the store never holds more than the budget, not even between a compaction's copy and its delete.

**In use.** An entry ``exists`` reports is pinned for ``pin_seconds`` (30 by default) in a table
every process of the tenant reads before it evicts. A get that races an eviction reads the
segment through a descriptor it holds, so it gets the whole record or, once the index has
dropped it, False.

**Least useful first** (``eviction_policy``, ``chain`` by default): families by last use, reads
and writes counting, where a write or read that names ``prefix_keys`` uses the whole prefix too;
among equally recent ones, deeper pages first, so what stays is still a usable prefix. ``lru``
(last use only) and ``fifo`` (write order, upstream's cleaner) are there to be measured against.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from reference_backend.log import Extent, Layout, Segment, SegmentLog

POLICIES = ("chain", "lru", "fifo")
_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)")
PIN = np.dtype([("family", "<u8"), ("until", "<i8")])
"""One slot of the pin table: a family and the wall-clock nanosecond its pin runs out."""
TOMB_ROOM = 4 * 4096
"""Bytes kept below the limit for the tombstones (a block each) that eviction writes before it
can free anything: writes are admitted up to the high watermark less this."""


def parse_size(value: Any) -> int:
    """Bytes from HiCacheFile's spellings: an integer, SI (``25.6k``) or IEC (``1Gi``, integers only)
    suffixes, case-sensitive; None, empty or 0 mean no budget. Unlike HiCacheFile, which disables
    eviction on a typo, anything else is refused."""
    if value is None or isinstance(value, bool):
        if value is None:
            return 0
        raise ValueError(f"max_size must be a size, not {value!r}")
    if isinstance(value, (int, float)):
        if value < 0 or math.isnan(value):
            raise ValueError(f"max_size must not be negative, not {value!r}")
        return int(value)
    text = str(value).strip()
    if not text or text == "0":
        return 0
    match = _SIZE.fullmatch(text)
    if match:
        number, suffix = match.groups()
        if suffix in _IEC:
            if "." in number:
                raise ValueError(f"max_size: no decimals with IEC suffixes ({value!r})")
            return int(number) * _IEC[suffix]
        return int(Decimal(number) * _SI[suffix])
    if text.isdigit():
        return int(text)
    raise ValueError(f"max_size must be bytes, or like '200G' or '1Gi' (case-sensitive), not {value!r}")


def _percent(value: Any, name: str) -> float:
    try:
        share = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a percentage, not {value!r}") from None
    if not 0 < share <= 100:
        raise ValueError(f"{name} must be in (0, 100], not {value!r}")
    return share / 100


@dataclass(frozen=True)
class Budget:
    """How many bytes one tenant may keep, and how eviction behaves; ``limit`` 0 is unbounded."""

    limit: int = 0
    high: float = 1.0
    low: float = 0.9
    pin_seconds: float = 30.0
    policy: str = "chain"

    @property
    def ceiling(self) -> int:
        """Stored bytes a write may take the tenant to."""
        return int(self.limit * self.high)

    @property
    def floor(self) -> int:
        """Stored bytes eviction brings the tenant down to once it starts."""
        return int(self.limit * self.low)

    @classmethod
    def from_extra(cls, extra: dict[str, Any], folder: str) -> Budget:
        """Read ``max_size``, the cleaner's watermarks, ``pin_seconds`` and ``eviction_policy``."""
        limit = parse_size(extra.get("max_size"))
        high = _percent(extra.get("l3_cleaner_high_watermark", 100), "l3_cleaner_high_watermark")
        low = _percent(extra.get("l3_cleaner_low_watermark", min(90, high * 100)), "l3_cleaner_low_watermark")
        if low > high:
            raise ValueError("l3_cleaner_low_watermark must not exceed l3_cleaner_high_watermark")
        watermarked = "l3_cleaner_high_watermark" in extra or "l3_cleaner_low_watermark" in extra
        enabled = extra.get("l3_cleaner_enabled", True)
        if not limit and watermarked and enabled:
            os.makedirs(folder, exist_ok=True)
            st = os.statvfs(folder)
            limit = st.f_blocks * st.f_frsize
        pin = float(extra.get("pin_seconds", 30.0))
        if not 0 <= pin < 3600:
            raise ValueError(f"pin_seconds must be in [0, 3600), not {pin!r}")
        policy = str(extra.get("eviction_policy", "chain"))
        if policy not in POLICIES:
            raise ValueError(f"eviction_policy must be one of {POLICIES}, not {policy!r}")
        return cls(limit, high, low, pin, policy)


@dataclass
class Family:
    """What the evictor knows of one entry: its bytes, when it was last written and used, its depth."""

    size: int = 0
    reclaimable: int = 0
    """Bytes of it in finished segments: what evicting it lets compaction free now."""
    written: int = 0
    used: int = 0
    depth: int = 0


def eviction_order(families: dict[bytes, Family], policy: str) -> list[bytes]:
    """Families, first victim first."""
    if policy == "fifo":
        return sorted(families, key=lambda f: (families[f].written, f))
    if policy == "lru":
        return sorted(families, key=lambda f: (families[f].used, f))
    return sorted(families, key=lambda f: (families[f].used, -families[f].depth, f))


class PinTable:
    """Pins every process of a tenant sees: a small file of (family, until) slots under its own lock."""

    def __init__(self, path: str, slots: int) -> None:
        self.path, self.slots = path, slots

    @property
    def size(self) -> int:
        return self.slots * PIN.itemsize

    @contextlib.contextmanager
    def _locked(self) -> Iterator[int]:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_size != self.size:
                os.ftruncate(fd, self.size)
            yield fd
        finally:
            os.close(fd)

    def _read(self, fd: int) -> np.ndarray:
        return np.frombuffer(bytearray(os.pread(fd, self.size, 0).ljust(self.size, b"\0")), dtype=PIN)

    def pin(self, families: Iterable[bytes], until: int) -> None:
        """Pin each family until ``until``; a full table takes no more (the entry is still served)."""
        wanted = {int.from_bytes(f, "little") for f in families}
        if not wanted:
            return
        with self._locked() as fd:
            table = self._read(fd)
            now = time.time_ns()
            held = np.isin(table["family"], list(wanted)) & (table["until"] > now)
            table["until"][held] = np.maximum(table["until"][held], until)
            wanted -= {int(f) for f in table["family"][held]}
            free = [int(i) for i in np.flatnonzero(table["until"] <= now)]
            for index, family in zip(free, wanted):
                table[index] = (family, until)
            os.pwrite(fd, table.tobytes(), 0)

    def pinned(self) -> set[bytes]:
        """Families whose pin has not run out."""
        if not os.path.exists(self.path):
            return set()
        with self._locked() as fd:
            table = self._read(fd)
        live = table["family"][table["until"] > time.time_ns()]
        return {int(f).to_bytes(8, "little") for f in live}


class Capacity:
    """One backend instance's side of its tenant's budget: admission, use, pins and eviction."""

    def __init__(self, log: SegmentLog, budget: Budget) -> None:
        self.log, self.budget = log, budget
        self._uses: dict[bytes, int] = {}
        self._latest: frozenset[bytes] = frozenset()
        self._arriving: frozenset[bytes] = frozenset()
        self._uses_lock = threading.Lock()
        folder = log.folder
        self._lock_path = os.path.join(folder, f"capacity.{log.tenant}.lock")
        slots = max(64, min(1 << 16, budget.limit // 1024 // PIN.itemsize))
        self.pins = PinTable(os.path.join(folder, f"pins.{log.tenant}"), slots)
        if self.enabled:
            log.cap = budget.limit - self.pins.size
        self.last_pause = 0.0
        """Seconds the last compaction held the log's index lock (what a concurrent get could wait)."""

    @property
    def enabled(self) -> bool:
        return self.budget.limit > 0

    # -- use -----------------------------------------------------------------------------------

    def touch(self, families: Iterable[bytes], at: int | None = None) -> None:
        """Families read or written now count as used (``at``: one instant for a whole call)."""
        if not self.enabled:
            return
        when = at if at is not None else time.time_ns()
        with self._uses_lock:
            for family in families:
                self._uses[family] = when

    def touch_prefix(self, families: Sequence[bytes], at: int | None = None) -> None:
        """The chain policy counts a batch's prefix as used with it: a head outlives its tails."""
        if self.budget.policy == "chain":
            self.touch(families, at)

    def arrive(self, families: Iterable[bytes]) -> None:
        """A write of ``families`` begins: they and the previous write's are never its victims. The
        controller writes an entry in calls (KV pages, then each side pool's), so a tombstone
        between two of them would leave the pages written after it alive: half an entry."""
        batch = frozenset(families)
        self._arriving, self._latest = self._latest | batch, batch

    def pin(self, families: Sequence[bytes]) -> None:
        """What exists just reported stays for ``pin_seconds``, whoever evicts."""
        if self.enabled and families and self.budget.pin_seconds > 0:
            self.pins.pin(families, time.time_ns() + int(self.budget.pin_seconds * 1e9))

    # -- admission -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _tenant_lock(self) -> Iterator[None]:
        os.makedirs(self.log.folder, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def reserve(self, layout: Layout) -> Extent | None:
        """An extent for ``layout``, sized on disk within the budget, or None when even evicting
        every unpinned entry leaves no room."""
        if not self.enabled:
            return self.log.reserve(layout)
        try:
            with self._tenant_lock():
                if not self.make_room(self.log.reservation(layout.size)):
                    return None
                return self.log.reserve(layout, counted=True)
        except OSError:
            return None

    def stored(self) -> int:
        """The tenant's bytes on disk: its segments, and its pin table whether made yet or not."""
        return self.log.tenant_bytes() + self.pins.size

    def make_room(self, need: int) -> bool:
        """Under the tenant lock: evict and compact until ``need`` more bytes fit under the ceiling,
        which keeps ``TOMB_ROOM`` below the limit for the tombstones eviction itself writes."""
        ceiling = self.budget.ceiling - TOMB_ROOM
        total = self.stored()
        return total + need <= ceiling or self._evict(total, need, ceiling)

    def _evict(self, total: int, need: int, ceiling: int) -> bool:
        """Evict and compact what finished segments hold until ``need`` fits under ``ceiling``:
        the bytes of segments still being written cannot come back yet, so evicting what lies
        there frees nothing now, and an entry whose pages are still arriving is never split
        (:meth:`arrive`). Every step's growth is checked against the limit first; ``total``: the
        stored bytes now."""
        goal = max(0, min(self.budget.floor, ceiling) - need)
        pinned = self.pins.pinned()
        finished = {segment for segment, _, _ in self.log.compactable()}
        families = self._families(finished)
        spared = pinned | self._arriving
        order = [f for f in eviction_order(families, self.budget.policy) if f not in spared]
        order = [f for f in order if families[f].reclaimable]
        while total > goal:
            segment = self._worth_compacting(total)
            if segment is None and order:
                doomed: list[bytes] = []
                freed = 0
                while (
                    order
                    and freed < total - goal
                    and total + self.log.tombstone_growth(len(doomed) + 1) <= self.budget.limit
                ):
                    doomed.append(order.pop(0))
                    freed += families[doomed[-1]].reclaimable
                if not doomed or not self.log.tombstone(doomed):
                    break
                total = self.stored()
                continue
            if segment is None or not self.log.compact(segment):
                break
            self.last_pause = max(self.last_pause, self.log.last_swap)
            total = self.stored()
        return self.stored() + need <= ceiling  # looking for work may itself have deleted dead segments

    def _families(self, finished: set[Segment]) -> dict[bytes, Family]:
        families: dict[bytes, Family] = {}
        with self._uses_lock:
            uses = dict(self._uses)
        for digest, loc in self.log.live():
            family = families.setdefault(digest[:8], Family())
            family.size += loc.size
            family.reclaimable += loc.size if loc.segment in finished else 0
            family.written = max(family.written, loc.seq)
            family.depth = max(family.depth, loc.depth)
        for key, family in families.items():
            family.used = max(family.written, uses.get(key, 0))
        return families

    def _worth_compacting(self, total: int) -> Segment | None:
        """A finished segment to compact: the one compacting grows the store least, if that frees
        at least half the segment and fits beside the store within the limit."""
        best = None
        for segment, size, growth in self.log.compactable():
            if growth and (2 * growth > size or total + growth > self.budget.limit):
                continue
            if best is None or growth < best[1]:
                best = (segment, growth)
        return None if best is None else best[0]
