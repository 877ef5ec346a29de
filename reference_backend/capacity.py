"""A bounded store: the byte budget, what is in use, and what goes first when space runs out.

**Budget.** ``max_size`` (bytes, or human-readable as HiCacheFile reads it: ``1048576``,
``"200G"``, ``"1Gi"``) bounds the bytes of one tenant's files under the storage folder, across
every process and rank that shares the folder. ``l3_cleaner_high_watermark`` and
``l3_cleaner_low_watermark`` (percent, HiCacheNixl's spellings) are of that budget: no write takes
the store past the high mark (100 by default), and past the low mark (90) each write also evicts a
slice of the next victim segment (see **Whole segments**);
without ``max_size`` they are percent of the file system, as upstream's cleaner reads them. One
lock file per tenant serialises admission across processes; the bytes a writer is admitted for
are on disk (its segment is sized) before the lock is let go, so every process counts them.

**Whole entries.** An entry is every pool's record of one key, for every rank: a *family*, the
first 8 bytes of every record digest (:func:`reference_backend.naming.family_digest`). Eviction
writes a tombstone for the family, which every process applies to records older than it.
Records being written are in no finished segment, so they are never victims, and neither is an
entry the instance's current or previous write named: the controller writes an entry in calls
(KV pages, then each side pool's), and pages written after a tombstone would outlive it. Every
step eviction takes is checked first against the limit (the log's ``cap``), so the store never
holds more than the budget, not even between a copy and a delete.

**Whole segments.** Eviction frees a finished segment at a time: every family with a record in
it is tombstoned in one commit, the records that may not go are copied forward, and the file is
deleted. Its cost is what that segment holds, never a walk of the index, and it always frees
space: room for one segment's tombstones (``Capacity.headroom``) is kept below the ceiling, so a
full store, however fragmented, can always make room for a write that fits once unpinned entries
go. A batch that cannot fit is refused whole, in one decision.

**In use.** An entry ``exists`` reports is pinned for ``pin_seconds`` (30 by default) in a table
every process of the tenant maps; a pin and a check of one are O(1). Eviction copies a pinned
entry's records forward instead of evicting them. A get that races an eviction reads the segment
through a descriptor it holds, so it gets the whole record or, once the index has dropped it,
False.

**Least useful first** (``eviction_policy``, ``chain`` by default): the victim is the finished
segment whose records were used least recently (reads and writes counting), where under
``chain`` a read or write that names ``prefix_keys`` uses the prefix's records too, so a chain's
head outlives segments of its tails. ``lru`` (the call's own records only) and ``fifo`` (the
oldest segment) are there to be measured against.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import mmap
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np

from reference_backend.log import Extent, Layout, Segment, SegmentLog
from reference_backend.record import UNIT

POLICIES = ("chain", "lru", "fifo")
_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)")
PIN = np.dtype([("family", "<u8"), ("until", "<i8")])
"""One slot of the pin table: a family and the wall-clock nanosecond its pin runs out."""
PIN_BYTES = 2048
"""Budget bytes per pin table slot (0.8% of the budget): half the smallest entry SGLang's pools
store in practice (a 4 KiB KV page), so the table is at most half full when every entry is
pinned. At one slot per 16 KiB, a store of small entries pinned whole dropped most pins silently
and evicted entries exists had just reported."""
TOMB_ROOM = 4 * 4096
"""Bytes kept below the limit beside one segment's tombstones (``Capacity.headroom``): the seal
and commit blocks eviction itself may write before it frees anything."""


def lease_clock() -> int:
    """The wall clock, in nanoseconds, that every pin is taken and checked by: one place, so a test
    can run it forward instead of waiting a pin out (the ``lease_clock`` capability names it)."""
    return time.time_ns()


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


class PinTable:
    """Pins every process of a tenant sees: a file of (family, until) slots, probed from a hash of
    the family, under its own lock. A pin and a pin check are O(1) each, whatever the table holds:
    the file is mapped once, never read or rewritten whole."""

    PROBES = 32
    """Slots a family may sit past its home; a family that finds none free is not pinned (it is
    still served, it just may be evicted)."""

    def __init__(self, path: str, slots: int) -> None:
        self.path, self.slots = path, 1 << max(6, (slots - 1).bit_length())
        self._fd = -1
        self._map: mmap.mmap | None = None
        self._table: np.ndarray | None = None

    @property
    def size(self) -> int:
        return self.slots * PIN.itemsize

    def _open(self) -> np.ndarray:
        if self._table is None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            with _flocked(fd):
                if os.fstat(fd).st_size != self.size:
                    os.ftruncate(fd, self.size)
            self._fd, self._map = fd, mmap.mmap(fd, self.size)
            self._table = np.frombuffer(self._map, dtype=PIN)
        return self._table

    def _probe(self, table: np.ndarray, family: int, now: int, claim: bool) -> int:
        """The slot holding ``family``; with ``claim``, else the first free or lapsed one on its
        run; -1 when neither is found."""
        fam, until = table["family"], table["until"]
        home = (family * 0x9E3779B97F4A7C15 >> 32) & (self.slots - 1)
        free = -1
        for step in range(self.PROBES):
            at = (home + step) & (self.slots - 1)
            held = int(fam[at])
            if held == family:
                return at
            if free < 0 and (held == 0 or int(until[at]) <= now):
                free = at
            if held == 0:
                break
        return free if claim else -1

    def pin(self, families: Iterable[bytes], until: int) -> None:
        """Pin each family until ``until`` (a held pin only ever lengthens)."""
        wanted = [int.from_bytes(f, "little") or 1 for f in families]
        if not wanted:
            return
        table = self._open()
        with _flocked(self._fd):
            now = lease_clock()
            for family in wanted:
                at = self._probe(table, family, now, claim=True)
                if at >= 0:
                    if int(table["family"][at]) != family:
                        table["until"][at] = 0
                        table["family"][at] = family
                    table["until"][at] = max(int(table["until"][at]), until)

    def pinned(self, families: Iterable[bytes]) -> set[bytes]:
        """Those of ``families`` whose pin has not run out."""
        if self._table is None and not os.path.exists(self.path):
            return set()
        table = self._open()
        out = set()
        with _flocked(self._fd):
            now = lease_clock()
            for raw in families:
                at = self._probe(table, int.from_bytes(raw, "little") or 1, now, claim=False)
                if at >= 0 and int(table["until"][at]) > now:
                    out.add(raw)
        return out

    def close(self) -> None:
        self._table = None
        if self._map is not None:
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


@contextlib.contextmanager
def _flocked(fd: int) -> Iterator[None]:
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


@dataclass
class Doomed:
    """A victim segment being evicted slice by slice: its families, how many are tombstoned, and
    those spared (pinned, or arriving), whose records are copied forward before it goes."""

    victim: Segment
    families: list[bytes]
    done: int = 0
    spared: set[bytes] = field(default_factory=set)


class Capacity:
    """One backend instance's side of its tenant's budget: admission, use, pins and eviction.

    Eviction frees whole segments: the victim is the finished segment used least recently (by
    the policy), every family with a record in it is tombstoned (its records elsewhere go with
    it), what may not go (pinned, or part of the write arriving) is copied forward, and the file
    is deleted. Each step costs what one segment holds, never a walk of the index, and always
    frees space: the tombstones and the copy are bounded by ``headroom``, kept free below the
    ceiling, so a full store can always make room for a write that fits once unpinned entries go.
    """

    def __init__(self, log: SegmentLog, budget: Budget) -> None:
        self.log, self.budget = log, budget
        self._latest: frozenset[bytes] = frozenset()
        self._arriving: frozenset[bytes] = frozenset()
        self._used: dict[int, int] = {}
        """Segment number -> the last use of a record in it this instance saw (others' writes
        count by their commit's sequence; the map holds only segments that exist)."""
        self._uses_lock = threading.Lock()
        self._doomed: Doomed | None = None
        """The victim being evicted slice by slice, if any."""
        folder = log.folder
        self._lock_path = os.path.join(folder, f"capacity.{log.tenant}.lock")
        # a slot for every PIN_BYTES of budget: a store whose every entry exists has just reported
        # (a prefetch of all of it) finds a slot for each within PinTable.PROBES
        slots = max(64, min(1 << 16, budget.limit // PIN_BYTES))
        self.pins = PinTable(os.path.join(folder, f"pins.{log.tenant}"), slots)
        self.headroom = TOMB_ROOM + log.tombstone_growth(-(-log.segment_bytes // UNIT))
        """Bytes kept free below the ceiling: the tombstones of one segment's families, so that
        evicting a segment never waits for room it cannot get."""
        if self.enabled:
            log.cap = budget.limit - self.pins.size
        self.last_pause = 0.0
        """Seconds the last compaction held the log's index lock (what a concurrent get could wait)."""

    @property
    def enabled(self) -> bool:
        return self.budget.limit > 0

    # -- use -----------------------------------------------------------------------------------

    def touch(self, digests: Sequence[bytes], at: int | None = None) -> None:
        """Records read or written now count as used, and so do their segments."""
        if not self.enabled or not digests:
            return
        when = at if at is not None else time.time_ns()
        numbers = self.log.segment_numbers(digests)
        with self._uses_lock:
            for number in numbers:
                if number and self._used.get(number, 0) < when:
                    self._used[number] = when

    @property
    def counts_prefix(self) -> bool:
        """The chain policy counts a batch's prefix as used with it: a head outlives its tails."""
        return self.budget.policy == "chain"

    def arrive(self, families: Iterable[bytes]) -> None:
        """A write of ``families`` begins: they and the previous write's are never its victims. The
        controller writes an entry in calls (KV pages, then each side pool's), so a tombstone
        between two of them would leave the pages written after it alive: half an entry."""
        batch = frozenset(families)
        self._arriving, self._latest = self._latest | batch, batch

    def pin(self, families: Sequence[bytes]) -> None:
        """What exists just reported stays for ``pin_seconds``, whoever evicts."""
        if self.enabled and families and self.budget.pin_seconds > 0:
            self.pins.pin(families, lease_clock() + int(self.budget.pin_seconds * 1e9))

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

    @property
    def room(self) -> int:
        """The most a write may take the tenant's files to."""
        return self.budget.ceiling - self.headroom

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

    @property
    def soft(self) -> int:
        """Past this, each write also evicts a slice of the next victim: the low watermark, at
        least a segment below ``room``, so a victim is done before the room runs out."""
        return min(self.budget.floor, self.room - self.log.segment_bytes)

    def make_room(self, need: int) -> bool:
        """Under the tenant lock: make ``need`` more bytes fit under the ceiling (less the
        headroom). Past ``soft``, a write evicts a slice of a victim proportional to its own size,
        so eviction's cost is spread over the writes instead of falling on one; only a write that
        finds no room evicts whole segments before it goes on. It gives up once a victim for every
        segment there was has freed nothing: what is left is pinned, and each victim's spared
        records, copied forward, would only make the next."""
        total = self.stored()
        if total + need > self.room and self.log.finish_closing():  # deleted, not closed yet
            total = self.stored()
        tried: set[Segment] = set()
        fruitless, patience = 0, len(self.log.segments()) + 1
        while total + need > self.room and fruitless <= patience:
            if not self._step(need, tried):
                break
            before, total = total, self.stored()
            fruitless = fruitless + 1 if total >= before else 0
        if total + need > self.room:
            return False
        if total + need > self.soft:
            self._step(need)
        return True

    def _step(self, need: int, tried: set[Segment] | None = None) -> bool:
        """Tombstone the next slice of the victim's families (all of them where ``tried`` is
        given: a write that must make room now, and the victims it already took); once none is
        left, move what was spared and delete the victim. False when no victim is left or the
        log refused a tombstone."""
        if self._doomed is None or self._doomed.victim.retired:
            victim = self._victim(tried or set(), rotate=tried is not None)
            if victim is None:
                return False
            self._doomed = Doomed(victim, self.log.families_in(victim))
        doomed = self._doomed
        left = doomed.families[doomed.done :]
        share = -(-len(doomed.families) * 2 * need // self.log.segment_bytes)
        chunk = left if tried is not None else left[: max(64, share)]
        spared = self.pins.pinned(chunk) | (self._arriving & set(chunk))
        if not self.log.tombstone([f for f in chunk if f not in spared]):
            return False
        doomed.spared |= spared
        doomed.done += len(chunk)
        if doomed.done < len(doomed.families):
            return True
        self._doomed = None
        if tried is not None:
            tried.add(doomed.victim)  # if its spared records cannot move, the next victim is tried
        self.log.compact(doomed.victim, doomed.spared)
        self.last_pause = max(self.last_pause, self.log.last_swap)
        return True

    def _victim(self, tried: set[Segment], rotate: bool) -> Segment | None:
        """The finished segment to evict next: least recently used by the policy (``fifo``: the
        oldest). With none finished, and ``rotate``, the segment being written is finished first."""
        finished = [s for s in self.log.finished_segments() if s not in tried]
        if not finished and rotate and self.log.rotate():
            finished = [s for s in self.log.finished_segments() if s not in tried]
        if not finished:
            return None
        with self._uses_lock:
            self._used = {
                s.number: self._used[s.number] for s in self.log.segments() if s.number in self._used
            }
            used = dict(self._used)
        if self.budget.policy == "fifo":
            return min(finished, key=lambda s: s.name)
        return min(finished, key=lambda s: (max(used.get(s.number, 0), s.last_seq), s.name))
