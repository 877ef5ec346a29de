"""The scale sweep: how the reference backend's cost grows with what it holds (issue 32).

``python -m tests.benchmarks.scale [--quick] [--out DIR]`` fills one store to N entries of one
16 KiB KV page each (64-page ``batch_set_v2`` calls of fresh keys, the same host pages every time)
and at each N measures, through the backend's public API only (the limit alone asks its log where
the records lie):

1. **per call**, on 64 pages: ``batch_get_v2`` of random stored keys, ``batch_set_v2`` of fresh
   keys, ``batch_exists`` and ``batch_exists_v2`` of stored keys (median and p99 of many calls);
2. **the limit**: what NIXL alone takes to move the same bytes, timed in the same rounds as ours
   (:class:`tests.benchmarks.contenders.Limit`, no backend around it). A limit read is one NIXL
   READ of exactly the 64 records a timed ``batch_get_v2`` reads: their segment files, offsets and
   sizes, into the same host pages. A limit write is one NIXL WRITE of 64 fresh pages from the
   same host pages into never-written space of a file of its own, paired with each timed
   ``batch_set_v2``. A 100k store does not fit the CPU's caches and a 1k one does: that part of
   a call's growth is the machine's, and the limit pays it too, so ours over the limit, and how
   that ratio grows, is what the backend adds;
3. **a restart**: a fresh process constructs a backend on the same folder and makes its first
   ``batch_exists`` and ``batch_get_v2``, each timed; its RSS growth over N is what the index
   costs per entry;
4. **a byte budget** of half of what the fill writes (``pin_seconds`` 0): a fill of N entries
   in a child process, each write timed: those below the budget against those past it, which
   must evict, and the batches refused all False (a store that locks up). A wall-clock cap per N
   and per write kills the child, so that a lock-up cannot hang the sweep;
5. **growth**: each figure at N over the same figure at the smallest N, against the issue's
   targets (per-call medians, and ours over the limit, at most 1.3x; an evicting write at most 2x
   one that is not).

Tables go to the console; with ``--out DIR``, ``DIR/scale.md`` and ``DIR/scale.png`` (default
``docs/bench``). Stores live in a temporary folder (``--tmp``: on the disk to measure), removed
at the end. ``--quick`` (1k, 10k, 100k) takes at most 10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.metadata
import json
import math
import os
import platform
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TextIO, TypeVar

import numpy as np
import torch

from conformance.doubles.kv_pools import MHAHostPool
from conformance.model.interface import HiCacheStorageConfig, PoolName, PoolTransfer
from reference_backend.backend import NixlBackend
from reference_backend.log import Location
from reference_backend.record import checksum_of, layout_from_sizes
from tests.benchmarks.contenders import Limit, LimitPlan, Rig
from tests.benchmarks.models import Workload
from tests.benchmarks.paired import Interval, median_interval, ratios, write_back

REPO = Path(__file__).resolve().parents[2]
BATCH = 64
PAGE_TOKENS = 64
HEAD_DIM = 64
PAGE_BYTES = 2 * PAGE_TOKENS * HEAD_DIM * 2
"""K and V of 64 tokens, one layer, one head of 64 bf16: 16 KiB a page."""
HOST = torch.arange(BATCH * PAGE_TOKENS, dtype=torch.int64)
OPS = ("batch_get_v2", "batch_set_v2", "batch_exists", "batch_exists_v2")
LIMITED = ("batch_get_v2", "batch_set_v2")
"""The ops timed against the limit: the ones that move pages (an exists moves none)."""
KV = str(PoolName.KV)
TARGET_GROWTH = 1.3
TARGET_EVICTION = 2.0
TARGET_RESTART_S = 1.0
TARGET_ENTRY_BYTES = 64
BELOW, EVICTING, BETWEEN = "below", "evicting", "between"
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Plan:
    """What one sweep measures."""

    sizes: tuple[int, ...]
    calls: int
    """Timed calls of each op at each N."""
    budget_sizes: tuple[int, ...]
    budget_calls: int
    """Writes past the budget the budgeted fill goes on to at least, to time them."""
    budget_seconds: float
    """Wall-clock cap of the budgeted part at one N (the child is killed, the figures kept)."""
    write_cap: float
    """Seconds one budgeted write may take before the child is killed as stuck."""
    low_watermark: float = 100.0
    """Percent of the budget eviction goes down to; 100: every write past the budget must evict."""
    probe_timeout: float = 600.0


FULL = Plan(
    sizes=(1_000, 10_000, 100_000, 300_000, 1_000_000),
    calls=200,
    budget_sizes=(1_000, 10_000, 100_000, 300_000, 1_000_000),
    budget_calls=200,
    budget_seconds=300.0,
    write_cap=90.0,
)
QUICK = Plan(
    sizes=(1_000, 10_000, 100_000),
    calls=200,
    budget_sizes=(1_000, 10_000, 100_000),
    budget_calls=200,
    budget_seconds=150.0,
    write_cap=90.0,
)


# -- the rig: one KV pool of 16 KiB pages, keys by number ----------------------------------------


def kv_pool() -> MHAHostPool:
    """64 host pages of 16 KiB (MHA, page_first), random bytes: every write reuses them."""
    pool = MHAHostPool(
        layer_num=1,
        head_num=1,
        head_dim=HEAD_DIM,
        page_size=PAGE_TOKENS,
        page_num=BATCH,
        dtype=torch.bfloat16,
        layout="page_first",
    )
    flat = pool.kv_buffer.view(torch.uint8).reshape(-1)
    flat.copy_(torch.from_numpy(np.random.default_rng(0).integers(0, 256, flat.numel(), dtype=np.uint8)))
    assert pool.page_nbytes() == PAGE_BYTES
    return pool


def storage_config(folder: Path, extra: dict[str, Any] | None = None) -> HiCacheStorageConfig:
    """Buffered I/O (set: O_DIRECT is the default since issue 30), checksums on, as issue 32
    measured; ``extra`` adds the budget."""
    return HiCacheStorageConfig(
        0,
        1,
        0,
        1,
        0,
        1,
        False,
        False,
        True,
        "bench/scale",
        extra_config={"storage_dir": str(folder), "use_direct_io": False, **(extra or {})},
    )


def open_backend(folder: Path, pool: MHAHostPool, extra: dict[str, Any] | None = None) -> NixlBackend:
    backend = NixlBackend(storage_config(folder, extra), folder)
    backend.register_mem_host_pool_v2(pool, PoolName.KV)
    return backend


def key(i: int) -> str:
    return f"scale-{i:09d}"


def keys(ids: Sequence[int]) -> list[str]:
    return [key(int(i)) for i in ids]


def transfers(ids: Sequence[int]) -> list[PoolTransfer]:
    """One KV batch: host pages 0.. under the keys of ``ids``."""
    return [PoolTransfer(name=PoolName.KV, keys=keys(ids), host_indices=HOST[: len(ids) * PAGE_TOKENS])]


def pages_ok(result: dict[str, list[bool]]) -> int:
    return sum(sum(bool(v) for v in flags) for flags in result.values())


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder``: what the store keeps on disk."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Store:
    """One backend on one folder, and which keys it holds. Every write is of fresh keys, numbered
    in order, so what is stored is always the run of ids ``[first, next)``."""

    def __init__(self, folder: Path, pool: MHAHostPool, extra: dict[str, Any] | None = None) -> None:
        self.folder = folder
        self.backend = open_backend(folder, pool, extra)
        self.first = self.next = 0

    @property
    def count(self) -> int:
        return self.next - self.first

    def fresh(self, n: int = BATCH) -> list[int]:
        return list(range(self.next, self.next + n))

    def stored(self, rng: np.random.Generator, n: int = BATCH) -> list[int]:
        """``n`` distinct stored ids, drawn at random."""
        return [self.first + int(i) for i in rng.choice(self.count, size=min(n, self.count), replace=False)]

    def write(self, ids: list[int]) -> None:
        """Store fresh ``ids`` (the next ones); a refused page is a broken sweep, not a figure."""
        done = pages_ok(self.backend.batch_set_v2(transfers(ids)))
        if done != len(ids):
            raise RuntimeError(f"batch_set_v2 stored {done} of {len(ids)} pages at {self.count} entries")
        self.next += len(ids)

    def fill_to(self, n: int) -> float:
        """Write 64-page batches of fresh keys until ``n`` entries are stored; seconds taken."""
        started = time.perf_counter()
        while self.count < n:
            self.write(self.fresh(min(BATCH, n - self.count)))
        return time.perf_counter() - started

    def write_back(self) -> None:
        """Flush the store's dirty pages (untimed): a fill's writeback is not the next call's cost."""
        write_back([str(p) for p in self.folder.rglob("*") if p.is_file()])

    def reset(self) -> None:
        self.backend.clear()
        self.first = self.next

    def close(self) -> None:
        self.backend.close()

    def reopen(self, pool: MHAHostPool) -> None:
        """A new backend on the folder (after ``close``, which checkpoints the index)."""
        self.backend = open_backend(self.folder, pool)


# -- figures --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    """Median and p99 of some calls, in microseconds."""

    median_us: float
    p99_us: float
    calls: int

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Stat | None:
        if not seconds:
            return None
        us = np.asarray(seconds, dtype=np.float64) * 1e6
        return cls(float(np.median(us)), float(np.percentile(us, 99)), len(us))


@dataclass
class Against:
    """One op of ours against the limit at one N, both timed in the same rounds."""

    ours: Stat
    limit: Stat
    ratio: Interval
    """Ours over the limit: the median of the per-round ratios (:func:`round_ratios`), with its
    distribution-free 95% interval (``paired.median_interval``)."""

    @classmethod
    def of(cls, ours: Sequence[float], limit: Sequence[float]) -> Against:
        """From paired times: ``ours[k]`` and ``limit[k]`` ran back to back, ours first when ``k``
        is even."""
        a, b = Stat.of(ours), Stat.of(limit)
        if a is None or b is None or len(ours) != len(limit):
            raise ValueError(f"{len(ours)} calls of ours against {len(limit)} of the limit")
        return cls(a, b, median_interval(round_ratios(ours, limit)))


@dataclass
class Calls:
    """Per-call figures of the unbounded store at ``n`` entries."""

    n: int
    fill_seconds: float
    fill_rate: float
    """Entries a second the fill up to ``n`` stored (from what the previous N left)."""
    entry_bytes: float
    """Bytes on disk per stored entry after the fill (what the budgeted part takes half of)."""
    ops: dict[str, Stat]
    failures: int
    """Calls that did not find or move all 64 pages (0 unless the backend is broken)."""
    limits: dict[str, Against] = field(default_factory=dict)
    """The ops of :data:`LIMITED` against the limit."""


@dataclass
class Restart:
    """A fresh process on the store of ``n`` entries: construction, then its first calls."""

    n: int
    construct_ms: float = 0.0
    """``NixlBackend(...)`` and registering the pool."""
    first_exists_ms: float = 0.0
    first_get_ms: float = 0.0
    second_exists_ms: float = 0.0
    crash_exists_ms: float = 0.0
    """Construction and the first batch_exists with no checkpoint, as after a crash: the index
    is built from the segment log."""
    rss_growth: int = 0
    """RSS after the first calls less RSS after imports and pool setup."""
    ok: bool = True
    error: str = ""

    @property
    def entry_bytes(self) -> float:
        return self.rss_growth / self.n


@dataclass
class Budgeted:
    """A fill of ``n`` entries under a budget of half of what it writes."""

    n: int
    budget: int
    below: Stat | None = None
    evicting: Stat | None = None
    writes: int = 0
    refused: int = 0
    """Writes past the budget that stored no page (the lock-up)."""
    partial: int = 0
    seconds: float = 0.0
    status: str = "ok"


@dataclass
class Sweep:
    plan: Plan
    calls: dict[int, Calls] = field(default_factory=dict)
    restarts: dict[int, Restart] = field(default_factory=dict)
    budgeted: dict[int, Budgeted] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)


def store_rate(entries: int, seconds: float) -> float:
    return entries / seconds if entries > 0 and seconds > 0 else 0.0


def timed(call: Callable[[T], R], arg: T) -> tuple[float, R]:
    """Seconds ``call(arg)`` took, and what it returned: the arguments are built before the clock."""
    started = time.perf_counter()
    value = call(arg)
    return time.perf_counter() - started, value


# -- 1. per call -----------------------------------------------------------------------------------


def measure_reads(store: Store, calls: int, rng: np.random.Generator) -> tuple[dict[str, list[float]], int]:
    """``calls`` of get, exists and exists_v2 on 64 random stored keys each, interleaved in a
    rotating order so that a change in the machine's load falls on all three, and none always runs
    right after the same other. Each call draws its own keys: two calls on the same keys would
    find the second one's work done by the first (digests, caches). Arguments built before any timing."""
    backend = store.backend
    gets = [transfers(store.stored(rng)) for _ in range(calls)]
    looks = [keys(store.stored(rng)) for _ in range(calls)]
    looks_v2 = [keys(store.stored(rng)) for _ in range(calls)]
    times: dict[str, list[float]] = {op: [] for op in OPS if op != "batch_set_v2"}
    failures = 0

    def get(batch: list[PoolTransfer]) -> bool:
        return pages_ok(backend.batch_get_v2(batch)) == BATCH

    def exists(names: list[str]) -> bool:
        return backend.batch_exists(names) == BATCH

    def exists_v2(names: list[str]) -> bool:
        return backend.batch_exists_v2(names, []).kv_hit_pages == BATCH

    for turn, (batch, names, names_v2) in enumerate(zip(gets, looks, looks_v2)):
        steps: list[tuple[str, Callable[[], bool]]] = [
            ("batch_get_v2", partial(get, batch)),
            ("batch_exists", partial(exists, names)),
            ("batch_exists_v2", partial(exists_v2, names_v2)),
        ]
        for op, call in steps[turn % 3 :] + steps[: turn % 3]:  # no op always follows the same one
            started = time.perf_counter()
            ok = call()
            times[op].append(time.perf_counter() - started)
            failures += not ok
    return times, failures


def measure_sets(store: Store, n: int, calls: int, limit: Limit) -> tuple[list[float], list[float], int]:
    """``calls`` writes of 64 fresh keys at ``n`` entries, each paired with a limit write of the
    same host pages (:func:`paired_calls`). They come in rounds that grow the store by at most a
    quarter; before the next round it is cleared and filled back to ``n`` (untimed), so that 200
    writes at 1k are 200 writes at 1k-1.25k, not at 1k-13.8k. The limit's file is written back
    with the store (untimed), so neither leaves the other a backlog of dirty pages.

    Every limit write goes to space of its file never written before, as ours' appends do; the
    descriptors are laid out and the file grown (a hole) before the clock."""
    per_round = max(1, min(calls, n // BATCH // 4))
    ours: list[float] = []
    raw: list[float] = []
    failures = 0
    at = limit_warm_write(limit)
    while len(ours) < calls:
        if store.count > n:
            store.reset()
            store.fill_to(n)
            store.write_back()
            write_back([limit.path])
        for _ in range(min(per_round, calls - len(ours))):
            batch = transfers(store.fresh())
            plan = limit.plan(batch, at)
            at += plan.extent
            limit.grow(at)
            ok = paired_calls(
                len(ours),
                partial(timed, store.backend.batch_set_v2, batch),
                partial(limit_move, limit, "WRITE", plan),
                ours,
                raw,
            )
            failures += pages_ok(ok) != BATCH
            store.next += BATCH
    return ours, raw, failures


# -- 2. the limit ------------------------------------------------------------------------------------


def open_limit(store: Store, pool: MHAHostPool, folder: Path) -> Limit:
    """Raw NIXL (``contenders.Limit``: an agent of its own, no backend) on the same host pool, in
    the store's I/O mode and queue, with a file of its own under ``folder`` for fresh writes."""
    settings = store.backend.settings
    mode = "direct" if settings.direct_io else "buffered"
    rig = Rig(Workload("scale", "", "", ()), {PoolName.KV: pool}, folder, mode, settings.queue)
    staged = {PoolName.KV} if store.backend.transfer_mode(KV) == "staged" else set()
    return Limit(rig, staged)


def limit_move(limit: Limit, op: str, plan: LimitPlan) -> tuple[float, bool]:
    """One timed limit transfer: seconds, and whether every byte moved."""
    return timed(partial(limit.move, op), plan)


def limit_warm_write(limit: Limit) -> int:
    """One untimed limit write at the start of its file (a new agent's first transfer sets things
    up); where the next fresh write may go."""
    plan = limit.plan(transfers(list(range(BATCH))))
    limit.grow(plan.extent)
    if not limit.move("WRITE", plan):
        raise RuntimeError("the limit's first write failed")
    return plan.extent


def record_plan(store: Store, limit: Limit, ids: list[int]) -> tuple[LimitPlan, list[Location]]:
    """One raw NIXL read of exactly the records ``batch_get_v2(transfers(ids))`` reads: host rows
    as ``Limit.plan`` lays out those host pages, file rows at each record's regions in its
    segment file (the backend's own descriptor), as the record format places them.

    In-place pools only (buffered I/O, as the sweep runs): a staged read lands in a staging buffer
    laid out as the limit's own file, not as the store's records."""
    backend = store.backend
    found = backend.log.locate([backend.digest(KV, k) for k in keys(ids)])
    if any(loc is None for loc in found):
        raise RuntimeError(f"{sum(loc is None for loc in found)} of {len(ids)} stored records not found")
    located = [loc for loc in found if loc is not None]
    host = limit.plan(transfers(ids))
    if host.copies:
        raise ValueError("the limit reads stored records in place only: run the sweep with buffered I/O")
    per_page = len(host.dram) // len(ids)
    layout = layout_from_sizes([int(size) for size in host.dram[:per_page, 1]])
    if any(loc.size != layout.size for loc in located):
        raise RuntimeError(f"records of {sorted({loc.size for loc in located})} bytes, not {layout.size}")
    file = [
        (loc.offset + offset, size, loc.segment.fd)
        for loc in located
        for offset, size in zip(layout.offsets, layout.region_sizes)
    ]
    return LimitPlan(host.dram, np.array(file, dtype=np.uint64), 0), located


@contextlib.contextmanager
def segment_files(limit: Limit, plans: Sequence[LimitPlan]) -> Iterator[None]:
    """Register with the limit's agent the segment files ``plans`` read (as ours' read lane has
    them registered), for one measurement only: a clear after it may close those descriptors and
    hand their numbers to new files."""
    regs: list[Any] = []
    try:
        for fd in sorted({int(fd) for plan in plans for fd in plan.file[:, 2]}):
            regs.append(limit.agent.register_memory([(0, 0, fd, "")], "FILE"))
        yield
    finally:
        for reg in regs:
            limit.agent.deregister_memory(reg)


def check_limit_read(limit: Limit, plan: LimitPlan, records: list[Location]) -> None:
    """One untimed limit read, its bytes checked against the checksum each record's commit carries:
    the limit moves the very records ours reads, not just as many bytes."""
    if not limit.move("READ", plan):
        raise RuntimeError("the limit's first read failed")
    per_page = len(plan.dram) // len(records)
    for page, loc in enumerate(records):
        rows = plan.dram[page * per_page : (page + 1) * per_page]
        if loc.checksum is not None and checksum_of([(int(a), int(b)) for a, b, _ in rows]) != loc.checksum:
            raise RuntimeError(f"the limit read record {page} of {len(records)} wrong")


def paired_calls(
    k: int,
    call: Callable[[], tuple[float, R]],
    limit: Callable[[], tuple[float, bool]],
    ours: list[float],
    raw: list[float],
) -> R:
    """Pair ``k``: ours and the limit back to back, ours first when ``k`` is even and second when
    it is odd; their seconds appended to ``ours`` and ``raw``; what ours returned. A limit that
    fails is a broken sweep, not a figure."""
    if k % 2:
        raw_seconds, moved = limit()
        seconds, value = call()
    else:
        seconds, value = call()
        raw_seconds, moved = limit()
    if not moved:
        raise RuntimeError("a limit transfer failed")
    ours.append(seconds)
    raw.append(raw_seconds)
    return value


def round_ratios(ours: Sequence[float], limit: Sequence[float]) -> list[float]:
    """Per-round ratios of ours over the limit, a round being two pairs in opposite orders (pairs
    ``2j``, ours first, and ``2j+1``, the limit first), its ratio the geometric mean of the two
    pairs'. Whatever the first call of a pair leaves the second (a read's records in the CPU's
    caches, a write's dirty pages) then counts once for each side. An odd last pair is a round."""
    each = ratios(ours, limit)
    rounds = [math.sqrt(a * b) for a, b in zip(each[0::2], each[1::2])]
    return rounds + each[len(rounds) * 2 :]


def measure_get_limit(
    store: Store, limit: Limit, calls: int, rng: np.random.Generator
) -> tuple[list[float], list[float], int]:
    """``calls`` pairs of a ``batch_get_v2`` of 64 random stored keys and a limit read of exactly
    the records it reads (:func:`paired_calls`); a pair's keys are drawn for it alone.

    These gets are calls of their own, apart from :func:`measure_reads`' (whose gets always read
    records nobody read just before them, as before the limit was added): here half of ours' calls
    come second, on records the limit has just moved, and half of the limit's come second on ours',
    so that the two sides meet the same caches. Records are located, and their descriptors laid
    out, before any timing; one more batch is read untimed first, and checked."""
    batches = [store.stored(rng) for _ in range(calls + 1)]
    planned = [record_plan(store, limit, ids) for ids in batches]
    gets = [transfers(ids) for ids in batches[1:]]
    ours: list[float] = []
    raw: list[float] = []
    failures = 0
    with segment_files(limit, [plan for plan, _ in planned]):
        check_limit_read(limit, *planned[0])
        for k, (get, (plan, _)) in enumerate(zip(gets, planned[1:])):
            moved = paired_calls(
                k,
                partial(timed, store.backend.batch_get_v2, get),
                partial(limit_move, limit, "READ", plan),
                ours,
                raw,
            )
            failures += pages_ok(moved) != BATCH
    return ours, raw, failures


# -- 3. restart --------------------------------------------------------------------------------------


def _child(flag: str) -> list[str]:
    return [sys.executable, "-m", "tests.benchmarks.scale", flag]


def restart_probe(folder: Path, n: int, exists_ids: list[int], get_ids: list[int], timeout: float) -> Restart:
    """Run :func:`probe_restart` in a fresh process on ``folder`` (holding ``n`` entries)."""
    spec = {"folder": str(folder), "n": n, "exists": exists_ids, "get": get_ids}
    try:
        done = subprocess.run(
            _child("--probe-restart"),
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return Restart(n, ok=False, error=f"timed out after {timeout:.0f} s")
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        return Restart(n, ok=False, error=f"exit {done.returncode}: {done.stderr.strip()[-300:]}")
    return Restart(**json.loads(lines[-1]))


def probe_restart(spec: dict[str, Any]) -> dict[str, Any]:
    """In the fresh process: pool first (its memory is not the index), then each step timed."""
    pool = kv_pool()
    exists_keys, get_batch = keys(spec["exists"]), transfers(spec["get"])
    second_keys = list(reversed(exists_keys))
    gc.collect()
    rss_before = rss_bytes()
    folder = Path(spec["folder"])
    construct, backend = timed(lambda f: open_backend(f, pool), folder)
    first_exists, hits = timed(backend.batch_exists, exists_keys)
    first_get, moved = timed(backend.batch_get_v2, get_batch)
    second_exists, _ = timed(backend.batch_exists, second_keys)
    got = pages_ok(moved)
    rss_after = rss_bytes()
    backend.close()
    checkpoint = Path(backend.log.checkpoint_path)
    saved = checkpoint.read_bytes()
    checkpoint.unlink()
    crash, crashed = timed(lambda f: open_backend(f, pool), folder)
    crash_exists, _ = timed(crashed.batch_exists, exists_keys)
    crashed.close()
    checkpoint.write_bytes(saved)
    error = "" if hits == len(exists_keys) and got == len(spec["get"]) else f"exists {hits}, get {got} pages"
    return {
        "n": spec["n"],
        "construct_ms": construct * 1e3,
        "first_exists_ms": first_exists * 1e3,
        "first_get_ms": first_get * 1e3,
        "second_exists_ms": second_exists * 1e3,
        "crash_exists_ms": (crash + crash_exists) * 1e3,
        "rss_growth": rss_after - rss_before,
        "ok": not error,
        "error": error,
    }


# -- 4. under a budget ---------------------------------------------------------------------------------


def phase(index: int, entry_bytes: float, budget: int) -> str:
    """Where the ``index``-th write of a budgeted fill falls: wholly below 90% of the budget
    (nothing to evict), or begun once the fill had written the whole budget (the store is full: it
    must evict), or between. The first write, which makes the store's files, is in neither."""
    before = index * BATCH * entry_bytes
    if index and before + BATCH * entry_bytes <= 0.9 * budget:
        return BELOW
    return EVICTING if before >= budget else BETWEEN


def budget_extra(budget: int, low_watermark: float) -> dict[str, Any]:
    return {
        "max_size": budget,
        "pin_seconds": 0,
        "l3_cleaner_high_watermark": 100,
        "l3_cleaner_low_watermark": low_watermark,
    }


def probe_budget(spec: dict[str, Any], out: TextIO) -> None:
    """In the child: write 64 fresh keys at a time until ``n`` were written and ``calls`` writes
    went past the budget; one JSON line per write (seconds, pages stored), flushed as it ends."""
    pool = kv_pool()
    folder = Path(spec["folder"])
    backend = open_backend(folder, pool, budget_extra(spec["budget"], spec["low_watermark"]))
    print(json.dumps({"ready": True}), file=out, flush=True)
    index = past = 0
    while index * BATCH < spec["n"] or past < spec["calls"]:
        seconds, stored = timed(backend.batch_set_v2, transfers(range(index * BATCH, (index + 1) * BATCH)))
        print(json.dumps({"s": seconds, "ok": pages_ok(stored)}), file=out, flush=True)
        past += phase(index, spec["entry_bytes"], spec["budget"]) == EVICTING
        index += 1
    backend.close()


def _lines(stream: TextIO, into: queue.Queue[str | None]) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def budgeted_fill(folder: Path, n: int, entry_bytes: float, plan: Plan) -> Budgeted:
    """Run :func:`probe_budget` in a child and classify its writes; kill it at the caps."""
    budget = int(n * entry_bytes / 2)
    result = Budgeted(n, budget)
    spec = {
        "folder": str(folder),
        "n": n,
        "budget": budget,
        "entry_bytes": entry_bytes,
        "calls": plan.budget_calls,
        "low_watermark": plan.low_watermark,
    }
    times: list[tuple[float, int]] = []
    with tempfile.TemporaryFile("w+") as errors:
        child = subprocess.Popen(
            _child("--probe-budget"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            cwd=REPO,
        )
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps(spec))
        child.stdin.close()
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=_lines, args=(child.stdout, lines), daemon=True)
        reader.start()
        started = last = time.monotonic()
        ready = False
        while True:
            now = time.monotonic()
            if now - started > plan.budget_seconds:
                result.status = f"timed out after {plan.budget_seconds:.0f} s" + (
                    f" (a write in flight for {now - last:.1f} s)" if ready else ""
                )
                break
            if ready and now - last > plan.write_cap:
                result.status = f"a write ran past {plan.write_cap:.0f} s: killed"
                break
            with contextlib.suppress(queue.Empty):
                line = lines.get(timeout=1.0)
                if line is None:
                    break
                record = json.loads(line)
                last = time.monotonic()
                if record.get("ready"):
                    ready = True
                    continue
                times.append((float(record["s"]), int(record["ok"])))
        if child.poll() is None:
            child.kill()
        child.wait()
        reader.join(timeout=10)
        if result.status == "ok" and child.returncode:
            errors.seek(0)
            result.status = f"child failed (exit {child.returncode}): {errors.read().strip()[-300:]}"
    result.seconds = time.monotonic() - started
    result.writes = len(times)
    below = [s for i, (s, _) in enumerate(times) if phase(i, entry_bytes, budget) == BELOW]
    past = [(s, ok) for i, (s, ok) in enumerate(times) if phase(i, entry_bytes, budget) != BELOW]
    evicting = [s for i, (s, _) in enumerate(times) if phase(i, entry_bytes, budget) == EVICTING]
    result.below, result.evicting = Stat.of(below), Stat.of(evicting)
    result.refused = sum(ok == 0 for _, ok in past)
    result.partial = sum(0 < ok < BATCH for _, ok in past)
    return result


# -- the sweep ---------------------------------------------------------------------------------------------


def sweep(plan: Plan, root: Path, log: Callable[[str], None] = print) -> Sweep:
    """Every N of ``plan`` on one growing store under ``root``, then the budgeted fills, each on
    its own folder; every folder is removed once measured. Each N has a limit of its own (a new
    file for its fresh writes), closed and removed with its N."""
    result = Sweep(plan)
    rng = np.random.default_rng(32)
    pool = kv_pool()
    folder = root / "unbounded"
    store = Store(folder, pool)
    try:
        for n in plan.sizes:
            before = store.count
            fill = store.fill_to(n)
            entry_bytes = folder_bytes(folder) / store.count
            store.write_back()
            limit = open_limit(store, pool, root / f"limit-{n}")
            try:
                reads, failures = measure_reads(store, plan.calls, rng)
                got, got_limit, got_failures = measure_get_limit(store, limit, plan.calls, rng)
                exists_ids, get_ids = store.stored(rng), store.stored(rng)
                store.close()  # a clean shutdown: the index is checkpointed beside the log
                restart = restart_probe(folder, n, exists_ids, get_ids, plan.probe_timeout)
                store.reopen(pool)
                sets, set_limit, set_failures = measure_sets(store, n, plan.calls, limit)
            finally:
                limit.close()
                shutil.rmtree(root / f"limit-{n}", ignore_errors=True)
            ops = {op: Stat.of(reads.get(op, sets)) for op in OPS}
            ops_done = {k: v for k, v in ops.items() if v}
            calls = Calls(
                n,
                fill,
                store_rate(n - before, fill),
                entry_bytes,
                ops_done,
                failures + got_failures + set_failures,
                {"batch_get_v2": Against.of(got, got_limit), "batch_set_v2": Against.of(sets, set_limit)},
            )
            result.calls[n], result.restarts[n] = calls, restart
            log(one_line(calls, restart))
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)
    for n in plan.budget_sizes:
        measured = [m for m in plan.sizes if m <= n] or list(plan.sizes[:1])
        entry_bytes = result.calls[measured[-1]].entry_bytes
        where = root / f"budget-{n}"
        try:
            result.budgeted[n] = budgeted_fill(where, n, entry_bytes, plan)
        finally:
            shutil.rmtree(where, ignore_errors=True)
        log(one_line_budget(result.budgeted[n]))
    return result


# -- report ------------------------------------------------------------------------------------------------


def label(n: int) -> str:
    for unit, name in ((1_000_000, "M"), (1_000, "k")):
        if n >= unit and n % (unit // 10) == 0:
            return f"{n / unit:g}{name}"
    return str(n)


@dataclass
class Table:
    """Figures with N across, as the issue states them."""

    title: str
    columns: list[str]
    rows: list[tuple[str, list[str]]] = field(default_factory=list)

    def add(self, name: str, cells: Sequence[str]) -> None:
        self.rows.append((name, list(cells)))

    def markdown(self) -> list[str]:
        return [
            f"### {self.title}",
            "",
            "| " + " | ".join(self.columns) + " |",
            "|---|" + "---:|" * (len(self.columns) - 1),
            *(f"| {name} | " + " | ".join(cells) + " |" for name, cells in self.rows),
            "",
        ]


def _num(value: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if value is None else fmt.format(value)


def _ms(us: float | None) -> str:
    if us is None:
        return "-"
    return f"{us / 1e6:.2f} s" if us >= 1e6 else f"{us / 1e3:.2f} ms" if us >= 1e4 else f"{us:,.0f} us"


def calls_table(data: Sweep) -> Table:
    sizes = sorted(data.calls)
    table = Table(
        "Per call, 64 pages of 16 KiB, no budget (buffered I/O, checksums on)", ["", *map(label, sizes)]
    )
    for op in OPS:
        for stat in ("median", "p99"):
            table.add(
                f"{op} {stat}",
                [_ms(getattr(data.calls[n].ops.get(op), f"{stat}_us", None)) for n in sizes],
            )
    table.add("fill, entries/s", [_num(data.calls[n].fill_rate) for n in sizes])
    table.add("bytes on disk per entry", [_num(data.calls[n].entry_bytes) for n in sizes])
    table.add("calls that missed a page", [str(data.calls[n].failures) for n in sizes])
    return table


def limit_table(data: Sweep) -> Table:
    """Ours against the limit at each N, and how their ratio grows: the backend's own growth."""
    sizes = [n for n in sorted(data.calls) if data.calls[n].limits]
    table = Table(
        "Against the limit: one raw NIXL transfer of the same 64 pages, no backend (paired rounds)",
        ["", *map(label, sizes)],
    )
    for op in LIMITED:
        against = [data.calls[n].limits.get(op) for n in sizes]
        first = next((a for a in against if a), None)
        table.add(f"{op}: ours median", [_ms(a.ours.median_us) if a else "-" for a in against])
        table.add(f"{op}: limit median", [_ms(a.limit.median_us) if a else "-" for a in against])
        table.add(f"{op}: ours / limit", [f"{a.ratio.median:.2f}x" if a else "-" for a in against])
        table.add(f"{op}: ours / limit, 95% interval", [_interval(a.ratio) if a else "-" for a in against])
        table.add(
            f"{op}: ours / limit, growth from {label(sizes[0])}" if sizes else f"{op}: ours / limit, growth",
            [f"{a.ratio.median / first.ratio.median:.2f}x" if a and first else "-" for a in against],
        )
        table.add(f"{op}: rounds", [str(a.ratio.n) if a else "0" for a in against])
    return table


def _interval(ratio: Interval) -> str:
    """``low-high x``, and the coverage the interval really has where too few rounds give 95%."""
    text = f"{ratio.low:.2f}-{ratio.high:.2f}x"
    return text if ratio.coverage >= 0.95 else f"{text} ({ratio.coverage:.0%})"


def restart_table(data: Sweep) -> Table:
    sizes = sorted(data.restarts)
    rs = [data.restarts[n] for n in sizes]
    table = Table(
        "After a restart: a fresh process on the same folder, after a clean close (from the checkpoint)",
        ["", *map(label, sizes)],
    )
    table.add("construct + register", [_ms(r.construct_ms * 1e3) if r.ok else r.error for r in rs])
    table.add("first batch_exists (64 stored)", [_ms(r.first_exists_ms * 1e3) for r in rs])
    table.add("first batch_get_v2 (64 stored)", [_ms(r.first_get_ms * 1e3) for r in rs])
    table.add("second batch_exists", [_ms(r.second_exists_ms * 1e3) for r in rs])
    table.add(
        "no checkpoint (a crash): construct + first batch_exists", [_ms(r.crash_exists_ms * 1e3) for r in rs]
    )
    table.add("RSS growth, MiB", [f"{r.rss_growth / 2**20:.1f}" for r in rs])
    table.add("RSS growth / N, bytes per entry", [_num(r.entry_bytes) for r in rs])
    first = rs[0]
    table.add(
        "marginal bytes per entry (vs smallest N)",
        ["-"] + [_num((r.rss_growth - first.rss_growth) / (r.n - first.n)) for r in rs[1:]],
    )
    return table


def budget_table(data: Sweep) -> Table:
    sizes = sorted(data.budgeted)
    bs = [data.budgeted[n] for n in sizes]
    low = data.plan.low_watermark
    table = Table(
        f"Under a byte budget of half of what the fill writes (pin_seconds 0, eviction down to {low:g}%)",
        ["entries written", *map(label, sizes)],
    )
    table.add("budget, MB", [f"{b.budget / 1e6:.1f}" for b in bs])
    table.add("writes timed (of 64 fresh keys)", [str(b.writes) for b in bs])
    for name, pick in (("below the budget", "below"), ("past it (must evict)", "evicting")):
        stats: list[Stat | None] = [getattr(b, pick) for b in bs]
        table.add(f"{name}: writes", [str(s.calls) if s else "0" for s in stats])
        table.add(f"{name}: median", [_ms(s.median_us) if s else "-" for s in stats])
        table.add(f"{name}: p99", [_ms(s.p99_us) if s else "-" for s in stats])
    for stat in ("median", "p99"):
        table.add(f"evicting / below, {stat}", [_ratio(b.evicting, b.below, stat) for b in bs])
    table.add("batches refused all False", [str(b.refused) for b in bs])
    table.add("batches partly stored", [str(b.partial) for b in bs])
    table.add("seconds", [f"{b.seconds:.0f}" for b in bs])
    table.add("status", [b.status for b in bs])
    return table


def _ratio(over: Stat | None, under: Stat | None, stat: str) -> str:
    if over is None or under is None:
        return "-"
    return f"{getattr(over, f'{stat}_us') / getattr(under, f'{stat}_us'):.2f}x"


def growth_rows(data: Sweep) -> dict[str, dict[int, float]]:
    """Each figure by N, for growth ratios and the chart."""
    rows: dict[str, dict[int, float]] = {}
    for op in OPS:
        for stat in ("median", "p99"):
            rows[f"{op} {stat}"] = {
                n: getattr(c.ops[op], f"{stat}_us") for n, c in data.calls.items() if op in c.ops
            }
    for op in LIMITED:
        rows[f"limit {op} median"] = {
            n: c.limits[op].limit.median_us for n, c in data.calls.items() if op in c.limits
        }
        rows[f"{op} / limit, per-round ratio"] = {
            n: c.limits[op].ratio.median for n, c in data.calls.items() if op in c.limits
        }
    rows["restart: construct + first batch_exists"] = {
        n: (r.construct_ms + r.first_exists_ms) * 1e3 for n, r in data.restarts.items() if r.ok
    }
    rows["restart: first batch_get_v2"] = {n: r.first_get_ms * 1e3 for n, r in data.restarts.items() if r.ok}
    for pick, name in (
        ("below", "budgeted write below the budget"),
        ("evicting", "budgeted write that evicts"),
    ):
        for stat in ("median", "p99"):
            rows[f"{name}, {stat}"] = {
                n: getattr(getattr(b, pick), f"{stat}_us")
                for n, b in data.budgeted.items()
                if getattr(b, pick) is not None
            }
    return rows


def growth_table(data: Sweep) -> Table:
    sizes = sorted(set(data.calls) | set(data.budgeted))
    table = Table(
        "Growth: each figure at N over the same figure at the smallest N", ["", *map(label, sizes), "target"]
    )
    for name, by_n in growth_rows(data).items():
        if not by_n:
            continue
        base = by_n[min(by_n)]
        target = f"≤ {TARGET_GROWTH}x" if has_growth_target(name) else ""
        table.add(name, [f"{by_n[n] / base:.2f}x" if n in by_n else "-" for n in sizes] + [target])
    return table


def has_growth_target(name: str) -> bool:
    """The issue's per-call target (flat from 1k to 1M) reads on ours' medians and on ours over the
    limit; the limit's own growth is the machine's, and has none."""
    return name.split()[0] in OPS and (name.endswith("median") or name.endswith("ratio"))


def targets(data: Sweep) -> list[str]:
    """The issue's targets at what this sweep reached."""
    out: list[str] = []
    sizes = sorted(data.calls)
    lo, hi = sizes[0], sizes[-1]
    for op in OPS:
        a, b = data.calls[lo].ops.get(op), data.calls[hi].ops.get(op)
        if a and b:
            g = b.median_us / a.median_us
            out.append(
                f"- {op} median, {label(lo)} -> {label(hi)}: {g:.2f}x ({_met(g <= TARGET_GROWTH)} ≤ 1.3x)"
            )
    for op in LIMITED:
        x, y = data.calls[lo].limits.get(op), data.calls[hi].limits.get(op)
        if x and y:
            g = y.ratio.median / x.ratio.median
            out.append(
                f"- {op} / limit (median of per-round ratios), {label(lo)} -> {label(hi)}:"
                f" {x.ratio.median:.2f}x -> {y.ratio.median:.2f}x, growth {g:.2f}x"
                f" ({_met(g <= TARGET_GROWTH)} ≤ 1.3x); the limit itself grew"
                f" {y.limit.median_us / x.limit.median_us:.2f}x"
            )
    for n, bud in sorted(data.budgeted.items()):
        if bud.evicting and bud.below:
            p50 = bud.evicting.median_us / bud.below.median_us
            p99 = bud.evicting.p99_us / bud.below.p99_us
            ok = p50 <= TARGET_EVICTION and p99 <= TARGET_EVICTION
            out.append(
                f"- {label(n)}: an evicting write is {p50:.2f}x (p50) and {p99:.2f}x (p99) one below the"
                f" budget ({_met(ok)} ≤ 2x)"
            )
        else:
            out.append(f"- {label(n)}: no evicting write measured ({bud.status})")
        out.append(
            f"- {label(n)}: {bud.refused} batches refused all False past the budget ({_met(not bud.refused)}"
            " none); " + bud.status
        )
    r = data.restarts[hi]
    if r.ok:
        first = (r.construct_ms + r.first_exists_ms) / 1e3
        out.append(
            f"- restart at {label(hi)}: construct + first batch_exists {first:.2f} s"
            f" ({_met(first <= TARGET_RESTART_S)} ≤ 1 s, the target is at 1M)"
        )
        if len(sizes) > 1:
            marginal = (r.rss_growth - data.restarts[lo].rss_growth) / (r.n - lo)
            out.append(
                f"- index memory: {marginal:.0f} bytes per entry marginal, {lo}..{hi}"
                f" ({_met(marginal <= TARGET_ENTRY_BYTES)} ≤ 64)"
            )
    return out


def _met(ok: bool) -> str:
    return "met:" if ok else "**not met**:"


def one_line(calls: Calls, restart: Restart) -> str:
    parts = [f"{label(calls.n)}: fill {calls.fill_seconds:.1f} s"]
    parts += [f"{op} {_ms(s.median_us)} (p99 {_ms(s.p99_us)})" for op, s in calls.ops.items()]
    parts += [
        f"{op} vs limit {_ms(a.ours.median_us)} / {_ms(a.limit.median_us)} = {a.ratio.median:.2f}x"
        for op, a in calls.limits.items()
    ]
    if restart.ok:
        parts.append(
            f"restart: construct {restart.construct_ms:.1f} ms,"
            f" first exists {restart.first_exists_ms:.1f} ms, first get {restart.first_get_ms:.1f} ms,"
            f" RSS {restart.entry_bytes:.0f} B/entry"
        )
    else:
        parts.append(f"restart failed: {restart.error}")
    return "; ".join(parts)


def one_line_budget(b: Budgeted) -> str:
    def s(x: Stat | None) -> str:
        return f"{_ms(x.median_us)} (p99 {_ms(x.p99_us)}, {x.calls} writes)" if x else "-"

    return (
        f"budget {label(b.n)} ({b.budget / 1e6:.1f} MB): below {s(b.below)}; evicting {s(b.evicting)};"
        f" refused {b.refused}, partial {b.partial}; {b.seconds:.0f} s, {b.status}"
    )


def tables(data: Sweep) -> list[Table]:
    out = [calls_table(data), limit_table(data), restart_table(data)]
    if data.budgeted:
        out.append(budget_table(data))
    out.append(growth_table(data))
    return out


METHOD = " ".join(
    (
        "How: one KV pool of 16 KiB pages (MHA page_first, 1 layer, 1 head of 64, bf16), default config;",
        "the store is filled with 64-page batch_set_v2 calls of fresh keys from the same host pages, and",
        "its dirty pages are written back (untimed). Gets, exists and exists_v2 each name their own 64",
        "random stored keys, in a rotating order; a set names 64 fresh ones, in rounds that grow the store",
        "by at most a quarter (refilled untimed). A restart runs in a fresh process: RSS growth is RSS",
        "after its first calls less RSS after imports and pool setup. The budgeted fill runs in a child",
        "process: a write is *below* when the fill stays under 90% of the budget with it (the first write,",
        "which makes the files, aside), *past* (it must evict) once the fill had written the whole budget",
        "before it.",
        "The limit (tests.benchmarks.contenders.Limit) is one NIXL transfer on an agent of its own",
        "with no backend around it: no names, index, checksum or commit. A limit read moves exactly",
        "the 64 records of one batch_get_v2 (located untimed through the backend's log: the same",
        "segment files, offsets and sizes) into the same 64 host pages; one untimed read per N is",
        "checked against the records' checksums. A limit write moves the same 64 host pages to",
        "never-written space of a file of its own. Ours and the limit run back to back, ours first in",
        "even pairs and second in odd ones, on the same records; a round is two pairs in opposite",
        "orders, its ratio the geometric mean of theirs, so that what the first call leaves the second",
        "(the records in the CPU's caches) counts once for each side; ours / limit is the median of",
        "the per-round ratios. The gets paired with the limit are calls of their own (the get above",
        "keeps its rotation); the sets are the sets above, each paired with a limit write.",
    )
)


def markdown(data: Sweep) -> str:
    env, plan = data.environment, data.plan
    lines = [
        "# Scale sweep: cost against entries stored",
        "",
        *(f"- {k}: {v}" for k, v in env.items()),
        f"- plan: N {', '.join(map(label, plan.sizes))}; {plan.calls} calls per op and N;"
        f" budgeted N {', '.join(map(label, plan.budget_sizes))}, capped at {plan.budget_seconds:.0f} s each"
        f" and {plan.write_cap:.0f} s a write",
        "",
        METHOD,
        "",
        "## Targets (issue 32)",
        "",
        *targets(data),
        "",
    ]
    for table in tables(data):
        lines += table.markdown()
    return "\n".join(lines)


def chart(data: Sweep, out: Path) -> None:
    """Medians against N, log-log: per-call cost (ours, the limit, budgeted writes), ours over the
    limit, and a restart's first calls."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = growth_rows(data)
    fig, axes = plt.subplots(1, 3, figsize=(19, 5))
    panels: tuple[tuple[Any, str, Callable[[str], bool]], ...] = (
        (axes[0], "per call, 64 pages: median us per op", lambda k: k.endswith("median")),
        (axes[1], "ours / limit: median of per-round ratios", lambda k: k.endswith("ratio")),
        (axes[2], "restart: first calls (us)", lambda k: k.startswith("restart")),
    )
    for ax, title, pick in panels:
        for name, by_n in rows.items():
            if pick(name) and by_n:
                xs = sorted(by_n)
                style = "--" if name.startswith("budgeted") else ":" if name.startswith("limit") else "-"
                ax.plot(xs, [by_n[n] for n in xs], style, marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("entries stored (N)")
        ax.set_title(title)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.suptitle("Reference backend at scale: 16 KiB pages, 64-page batches, buffered I/O")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def environment(root: Path, label_text: str | None) -> dict[str, Any]:
    from tests.benchmarks.run import file_system

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in ln
        ),
        platform.processor(),
    )
    env: dict[str, Any] = {"run": label_text} if label_text else {}
    env.update(
        {
            "commit": commit or "unknown",
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "machine": f"{cpu}, {os.cpu_count()} cores, kernel {platform.release()}",
            "file system": file_system(root),
            "NIXL": importlib.metadata.version("nixl"),
            "load average before": [round(x, 1) for x in os.getloadavg()],
        }
    )
    return env


def write_report(data: Sweep, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.md").write_text(markdown(data))
    chart(data, out / "scale.png")


@contextlib.contextmanager
def scratch(parent: Path | None) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="hicache-scale-", dir=parent))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="N up to 100k: at most 10 minutes on 2 cores")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "bench", help="folder for scale.md/.png")
    parser.add_argument("--tmp", type=Path, default=None, help="where the stores go (a temp folder under it)")
    parser.add_argument("--sizes", type=int, nargs="+", help="N to sweep (default: the plan's)")
    parser.add_argument(
        "--budget-sizes", type=int, nargs="*", help="N of the budgeted part (default: the plan's)"
    )
    parser.add_argument("--calls", type=int, help="timed calls per op and N")
    parser.add_argument(
        "--low-watermark", type=float, help="percent eviction goes down to (100: every write)"
    )
    parser.add_argument("--label", help="a line naming the run in the report")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--probe-restart", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--probe-budget", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("NIXL_LOG_LEVEL", "WARN")
    if args.probe_restart:
        print(json.dumps(probe_restart(json.loads(sys.stdin.read()))), flush=True)
        return 0
    if args.probe_budget:
        probe_budget(json.loads(sys.stdin.read()), sys.stdout)
        return 0
    plan = QUICK if args.quick else FULL
    plan = replace(
        plan,
        sizes=tuple(args.sizes) if args.sizes else plan.sizes,
        budget_sizes=tuple(args.budget_sizes) if args.budget_sizes is not None else plan.budget_sizes,
        calls=args.calls or plan.calls,
        low_watermark=args.low_watermark if args.low_watermark is not None else plan.low_watermark,
    )
    started = time.perf_counter()
    with scratch(args.tmp) as root:
        env = environment(root, args.label)
        data = sweep(plan, root)
    env["seconds"] = round(time.perf_counter() - started, 1)
    env["load average after"] = [round(x, 1) for x in os.getloadavg()]
    data.environment = env
    print()
    for table in tables(data):
        print("\n".join(table.markdown()))
    print("\n".join(targets(data)))
    if args.json:
        args.json.write_text(json.dumps(asdict(data), indent=1))
    if args.out:
        write_report(data, args.out)
        print(f"wrote {args.out}/scale.md and scale.png", file=sys.stderr)
    print(f"sweep took {env['seconds']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
