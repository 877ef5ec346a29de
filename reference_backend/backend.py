"""``NixlBackend``: HiCache v2 storage on files through NIXL's POSIX plugin.

Design, in the order a batch meets it:

- **Validation first.** A malformed pool request gets all-False before any file is touched.
- **One record per entry, one extent per batch.** A record holds every region of one page of one
  pool (see :mod:`reference_backend.record`). A batch's records sit
  side by side in one extent of this instance's own segment file, after a commit block that
  publishes them together (see :mod:`reference_backend.log`): no file is created, renamed or
  registered per entry, and nothing is ever rewritten in place.
- **Zero-copy where safe.** A pool whose regions are 4096-aligned (``is_stride_page_aligned``), or
  any pool when I/O is buffered, is registered with NIXL and moved in place. Otherwise its pages
  go through a raw-byte (uint8) staging buffer owned by that pool and that direction.
- **One transfer per batch.** Descriptors of every pool in a ``batch_*_v2`` call go into a single
  NIXL transfer. Only if it fails are pages retried one by one, to give exact per-key results.
  A verified O_DIRECT read of many in-place pages goes as several transfers posted at once, each
  checked as it lands, so the checksum overlaps the I/O still in flight.
- **Nothing torn is visible.** Records are published by their commit only after the transfer
  succeeded; ``exists`` requires the record's whole extent on disk and its geometry; reads check
  the checksum the commit carries.
- **Two lanes.** Sets and gets each own a NIXL agent, a lock and staging buffers, so the
  controller's writer and loader threads never wait on each other.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from reference_backend import agents, hits
from reference_backend.capacity import Capacity
from reference_backend.config import BackendConfig
from reference_backend.interface import (
    HiCacheStorageConfig,
    HiCacheStorageExtraInfo,
    PoolHitPolicy,
    PoolName,
    PoolTransfer,
    PoolTransferResult,
    aligned_empty,
    page_starts,
)
from reference_backend.log import Layout, SegmentLog, Stamp
from reference_backend.naming import Scope, entry_digest, family_digest, scope_for, tenant_name
from reference_backend.record import BLOCK, RecordLayout, checksum_of, layout_from_sizes, meaning_of, pad
from reference_backend.transfer import SegmentFiles

KV = str(PoolName.KV)
READ_CHUNKS = 8
"""O_DIRECT reads of at least twice this many in-place pages go as this many transfers at once,
each checked as it lands while the rest are still in flight (see ``_read_pipelined``)."""


@dataclass
class _Pool:
    """A registered host pool and how its pages travel."""

    name: str
    host: Any
    layout: RecordLayout
    zero_copy: bool
    has_meta: bool
    strides: list[tuple[int, int]] | None = None
    """Per region (address of page 0, bytes between pages), when every page follows that rule."""

    def meta(self, starts: list[int]) -> list[tuple[int, int]]:
        """(address, bytes) of every region of each page, as the host pool reports them."""
        idx = torch.tensor([s + t for s in starts for t in range(self.host.page_size)], dtype=torch.int64)
        ptrs, sizes = self.host.get_page_buffer_meta(idx)
        return list(zip((int(p) for p in ptrs), (int(s) for s in sizes)))

    def regions(self, starts: list[int]) -> list[tuple[int, int]]:
        """(address, bytes) of every region of each page, page by page."""
        if self.strides is None:
            return self.meta(starts)
        ps = self.host.page_size
        rule = list(zip(self.strides, self.layout.region_sizes))
        return [(base + (s // ps) * step, size) for s in starts for (base, step), size in rule]

    def learn_strides(self) -> None:
        """Check, once, that every page's regions sit at a fixed stride; then skip the per-batch query."""
        ps, pages = self.host.page_size, int(self.host.size) // self.host.page_size
        first = self.meta([0])
        step = self.meta([ps]) if pages > 1 else first
        strides = [(p0, p1 - p0) for (p0, _), (p1, _) in zip(first, step)]
        width = len(strides)
        for lo in range(0, pages, 4096):
            chunk = list(range(lo * ps, min(pages, lo + 4096) * ps, ps))
            got = self.meta(chunk)
            for n, start in enumerate(chunk):
                page = start // ps
                for r, ((base, stride), size) in enumerate(zip(strides, self.layout.region_sizes)):
                    if got[n * width + r] != (base + page * stride, size):
                        return
        self.strides = strides


@dataclass
class Item:
    """One page of one pool in a batch."""

    pool: _Pool
    key: str
    start: int
    digest: bytes
    depth: int = 0
    """Place in its prefix chain (``prefix_keys`` before the batch, then its place in the batch)."""
    slot: int = 0
    fd: int = -1
    offset: int = 0
    checksum: int | None = None
    regions: list[tuple[int, int]] = field(default_factory=list)


def _all_or_each(
    items: list[Item],
    attempt: Callable[[list[Item]], bool],
    then: Callable[[Item], bool] = lambda item: True,
) -> dict[int, bool]:
    """Try every item in one ``attempt`` and finish each with ``then``; if that fails, each item on
    its own, finished before the next attempt reuses the staging buffers. A lone item is tried once."""
    if not items:
        return {}
    if attempt(items):
        return {id(i): then(i) for i in items}
    if len(items) == 1:
        return {id(items[0]): False}
    return {id(i): attempt([i]) and then(i) for i in items}


def by_pool(items: list[Item]) -> dict[str, list[Item]]:
    """Items grouped by pool, pools in order of first appearance."""
    groups: dict[str, list[Item]] = {}
    for item in items:
        groups.setdefault(item.pool.name, []).append(item)
    return groups


@dataclass
class Lane:
    """One direction's NIXL agent, lock and per-pool raw-byte staging buffers."""

    agent: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    staging: dict[str, tuple[torch.Tensor, Any]] = field(default_factory=dict)
    files: SegmentFiles | None = None
    """Segment files registered with the agent (file targets only)."""

    def staging_for(self, pool: str, nbytes: int) -> torch.Tensor:
        """This pool's staging buffer, grown (and re-registered) to at least ``nbytes``."""
        held = self.staging.get(pool)
        if held is not None and held[0].numel() >= nbytes:
            return held[0]
        if held is not None:
            self.agent.deregister_memory(held[1])
        buf = aligned_empty((max(nbytes, 2 * (held[0].numel() if held else 0)),), torch.uint8)
        reg = self.agent.register_memory([(buf.data_ptr(), buf.numel(), 0, "")], "DRAM")
        self.staging[pool] = (buf, reg)
        return buf

    def close(self) -> None:
        if self.files is not None:
            self.files.close()
        for _, reg in self.staging.values():
            self.agent.deregister_memory(reg)
        self.staging.clear()


class NixlBackend:
    """HiCache v2 storage backend on NIXL POSIX file targets.

    Its seam, for tests, mutants and benchmarks: ``plan`` (a request's pages as ``Item``s),
    ``lay_out`` (their places in an extent), ``descriptors`` (staging and NIXL rows), ``restorable``
    (a pool's hit policy) and ``lanes`` (each direction's ``Lane``); the rest is private.
    """

    REMOTE = "FILE"
    """NIXL's memory type of the storage side of a transfer."""
    _capacity: Capacity | None = None
    """The tenant's byte budget, where one is set (:mod:`reference_backend.capacity`)."""

    def __init__(
        self,
        storage_config: HiCacheStorageConfig,
        location: str | os.PathLike[str] | dict[str, Any] | None = None,
    ) -> None:
        self.settings = BackendConfig.from_extra(storage_config.extra_config, location)
        self._setup(storage_config, self.settings.verify, "POSIX", self.settings.plugin_params())
        self._read_chunks = READ_CHUNKS if self.settings.direct_io and self.verify else 1
        self.root = str(self.settings.storage_dir)
        os.makedirs(self.root, exist_ok=True)
        budget = self.settings.budget
        tenant = self.settings.tenant if self.settings.tenant is not None else storage_config.model_name
        self._log = SegmentLog(
            self.root,
            direct=self.settings.direct_io,
            fsync=self.settings.fsync,
            # under a budget, segments small enough that compaction can free a sixteenth of it
            segment_bytes=min(self.settings.segment_bytes, max(budget.limit // 16, 1 << 16))
            if budget.limit
            else self.settings.segment_bytes,
            tenant=tenant_name(tenant or ""),
        )
        if budget.limit:
            self._capacity = Capacity(self._log, budget)
        for lane in self.lanes.values():
            lane.files = SegmentFiles(lane.agent, self._log)

    def _setup(
        self, storage_config: HiCacheStorageConfig, verify: bool, plugin: str, params: dict[str, str]
    ) -> None:
        """What every NIXL target shares: two lanes of agents, the pools, and the checksum switch."""
        self.storage_config = storage_config
        self.verify = verify
        self.lanes = {op: Lane(agents.acquire(params, plugin)) for op in ("WRITE", "READ")}
        self._pools: dict[str, _Pool] = {}
        self._dram_regs: list[tuple[Any, Any]] = []
        self._scopes: dict[str, Scope] = {}
        self._closed = False

    # -- registration ------------------------------------------------------------------------

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        self._register(KV, mem_pool_host)

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: PoolName | str) -> None:
        self._register(str(host_pool_name), host_pool)

    def on_host_pools_registered(self) -> None:
        """Pools are prepared as they register; nothing is deferred."""

    def _register(self, name: str, host: Any) -> None:
        if name in self._pools:
            if self._pools[name].host is host:
                return
            raise ValueError(f"pool {name!r} is already registered with another host pool")
        first = torch.arange(host.page_size, dtype=torch.int64)
        try:
            meta = host.get_page_buffer_meta(first)
        except (NotImplementedError, ValueError, AssertionError):
            meta = None
        # DeepSeek-V4's KV anchor (a LogicalHostPool) answers None and its pages are empty: its
        # entries are one-byte markers, so that exists still gates the side pools on the anchor key
        has_meta = meta is not None
        sizes = (
            list(meta[1]) if meta is not None else [host.get_dummy_flat_data_page().view(torch.uint8).numel()]
        )
        if sizes == [0]:
            sizes = [1]
        zero_copy = has_meta and self.moves_in_place(host)
        pool = _Pool(name, host, layout_from_sizes(sizes, meaning_of(host)), zero_copy, has_meta)
        if has_meta:
            pool.learn_strides()
        if zero_copy:
            self._register_spans(pool)
        self._pools[name] = pool
        self._scopes[name] = scope_for(self.storage_config, name)

    def moves_in_place(self, host: Any) -> bool:
        """Zero-copy needs O_DIRECT-legal addresses and lengths, or no O_DIRECT at all."""
        return not self.settings.direct_io or bool(host.is_stride_page_aligned(4096))

    def _register_spans(self, pool: _Pool) -> None:
        """Register each region column of the pool (one contiguous span per column) on both lanes."""
        ps = pool.host.page_size
        regions = pool.regions(list(range(0, int(pool.host.size), ps)))
        columns = len(pool.layout.region_sizes)
        spans = []
        for c in range(columns):
            col = regions[c::columns]
            lo = min(p for p, _ in col)
            hi = max(p + s for p, s in col)
            spans.append((lo, hi - lo, 0, ""))
        for lane in self.lanes.values():
            self._dram_regs.append((lane.agent, lane.agent.register_memory(spans, "DRAM")))

    def transfer_mode(self, pool_name: PoolName | str) -> str:
        """How this pool's pages move: ``zero_copy`` or ``staged``."""
        return "zero_copy" if self._pools[str(pool_name)].zero_copy else "staged"

    # -- planning ----------------------------------------------------------------------------

    def plan(self, name: str, keys: Any, host_indices: Any) -> list[Item] | None:
        pool = self._pools.get(name)
        if pool is None or self._closed:
            return None
        starts = page_starts(pool.host, keys, host_indices)
        if starts is None:
            return None
        return [Item(pool, key, start, self.digest(name, key)) for key, start in zip(keys, starts)]

    def digest(self, name: str, key: str) -> bytes:
        """The 16 bytes that name an entry in the log and its index."""
        return entry_digest(self._scopes[name], name, key)

    # -- the transfer ------------------------------------------------------------------------

    def descriptors(self, lane: Lane, items: list[Item], writing: bool) -> tuple[np.ndarray, np.ndarray]:
        """DRAM and FILE descriptor rows for ``items``, staging raw bytes where needed.

        A staged pool's records sit back to back in its staging buffer; where they also sit back to
        back in the file (always, for a write), they move as one descriptor, and a write's run is
        rounded up to a whole file-system block.
        """
        dram: list[tuple[int, int, int]] = []
        file: list[tuple[int, int, int]] = []
        for group in by_pool(items).values():
            pool = group[0].pool
            size = pool.layout.size
            self._prepare(lane, group, size, writing)
            for n, item in enumerate(group):
                if pool.zero_copy:
                    for (ptr, nbytes), off in zip(item.regions, pool.layout.offsets):
                        dram.append((ptr, nbytes, 0))
                        file.append((item.offset + off, nbytes, item.fd))
                elif file and file[-1][2] == item.fd and n and file[-1][0] + file[-1][1] == item.offset:
                    dram[-1] = (dram[-1][0], dram[-1][1] + size, 0)
                    file[-1] = (file[-1][0], file[-1][1] + size, item.fd)
                else:
                    dram.append((item.slot, size, 0))
                    file.append((item.offset, size, item.fd))
            if writing and not pool.zero_copy:
                whole = pad(file[-1][1], BLOCK)
                dram[-1] = (dram[-1][0], whole, 0)
                file[-1] = (file[-1][0], whole, file[-1][2])
        return np.array(dram, dtype=np.uint64), np.array(file, dtype=np.uint64)

    def _prepare(self, lane: Lane, group: list[Item], slot: int, writing: bool, lead: int = 0) -> None:
        """Give one pool's items their region addresses and staging slots ``slot`` bytes apart (each
        page's bytes ``lead`` bytes into its slot); copy staged pages into them for a write."""
        pool = group[0].pool
        base = 0 if pool.zero_copy else lane.staging_for(pool.name, pad(slot * len(group), BLOCK)).data_ptr()
        regions = pool.regions([i.start for i in group]) if pool.has_meta else []
        per_page = len(pool.layout.region_sizes)
        for n, item in enumerate(group):
            item.slot = base + n * slot + lead
            item.regions = regions[n * per_page : (n + 1) * per_page]
            if writing:
                self._stage_out(item)

    def _payload(self, item: Item) -> list[tuple[int, int]]:
        """Where the page's bytes are, region by region: host memory, or the staging slot."""
        layout = item.pool.layout
        if item.pool.zero_copy:
            return item.regions
        return [(item.slot + off, size) for off, size in zip(layout.offsets, layout.region_sizes)]

    def _stage_out(self, item: Item) -> None:
        """Copy a staged page's raw bytes into its slot."""
        pool = item.pool
        if pool.zero_copy:
            return
        payload = self._payload(item)
        if pool.has_meta:
            for (ptr, size), (dst, _) in zip(item.regions, payload):
                ctypes.memmove(dst, ptr, size)
        else:
            page = pool.host.get_data_page(item.start, flat=True).contiguous().view(torch.uint8)
            ctypes.memmove(payload[0][0], page.data_ptr(), page.numel())

    def _stage_in(self, item: Item) -> bool:
        """Check the checksum the commit promised; for staged pools, scatter bytes into host slots."""
        pool = item.pool
        payload = self._payload(item)
        if item.checksum is not None and self.verify and checksum_of(payload) != item.checksum:
            return False
        if pool.zero_copy:
            return True
        if pool.has_meta:
            for (ptr, size), (src, _) in zip(item.regions, payload):
                ctypes.memmove(ptr, src, size)
        else:
            page = pool.host.get_dummy_flat_data_page()
            raw = page.view(torch.uint8)
            ctypes.memmove(raw.data_ptr(), payload[0][0], raw.numel())
            pool.host.set_from_flat_data_page(item.start, page)
        return True

    def _submit(self, lane: Lane, op: str, items: list[Item]) -> bool:
        """One NIXL transfer covering every item; True when every byte moved."""
        dram, remote = self.descriptors(lane, items, writing=op == "WRITE")
        agent = lane.agent
        handle = None
        try:
            handle = agent.initialize_xfer(
                op, agent.get_xfer_descs(dram, "DRAM"), agent.get_xfer_descs(remote, self.REMOTE), agent.name
            )
            state = agent.transfer(handle)
            self._while_moving(op, items)
            while state == "PROC":
                state = agent.check_xfer_state(handle)
            return bool(state == "DONE")
        except Exception:  # NIXL raises its own binding errors for any I/O failure
            return False
        finally:
            if handle is not None:
                agent.release_xfer_handle(handle)

    def _while_moving(self, op: str, items: list[Item]) -> None:
        """Checksum what is being written while the kernel writes it."""
        if op == "WRITE":
            for item in items:
                item.checksum = checksum_of(self._payload(item)) if self.verify else None

    def _transfer(
        self, lane: Lane, op: str, items: list[Item], then: Callable[[Item], bool] = lambda item: True
    ) -> dict[int, bool]:
        """Move every item in one transfer and finish each with ``then``; on failure, item by item."""
        if op == "READ" and self._read_chunks > 1:
            done = self._read_pipelined(lane, items, then)
            if done is not None:
                return done
        return _all_or_each(items, lambda batch: self._submit(lane, op, batch), then)

    _read_chunks = 1
    """Transfers a verified O_DIRECT read is split into (1: one transfer, checked after it lands)."""

    def _read_pipelined(
        self, lane: Lane, items: list[Item], then: Callable[[Item], bool]
    ) -> dict[int, bool] | None:
        """Post the batch as several transfers at once and finish each one's items as it lands.

        O_DIRECT reads run asynchronously in the kernel, so checking the first transfer's
        checksums overlaps the later ones' I/O instead of following all of it. Staged pages share
        one staging buffer, so they travel together, last. None (every transfer waited for and
        released) when any of them fails or the batch is too small to gain: the caller's
        all-or-each path then reads it again, for exact per-key results.
        """
        moved = [i for i in items if i.pool.zero_copy]
        if len(moved) < 2 * self._read_chunks:
            return None
        step = -(-len(moved) // self._read_chunks)
        chunks = [moved[k : k + step] for k in range(0, len(moved), step)]
        staged = [i for i in items if not i.pool.zero_copy]
        chunks += [staged] if staged else []
        agent = lane.agent
        posted: list[tuple[list[Item], Any, str]] = []
        try:
            for chunk in chunks:
                dram, remote = self.descriptors(lane, chunk, writing=False)
                handle = agent.initialize_xfer(
                    "READ",
                    agent.get_xfer_descs(dram, "DRAM"),
                    agent.get_xfer_descs(remote, self.REMOTE),
                    agent.name,
                )
                posted.append((chunk, handle, "ERR"))
                posted[-1] = (chunk, handle, agent.transfer(handle))
        except Exception:  # NIXL raises its own binding errors for any I/O failure
            posted.append(([], None, "ERR"))
        done: dict[int, bool] = {}
        whole = True
        for chunk, handle, state in posted:
            try:
                while state == "PROC":
                    state = agent.check_xfer_state(handle)
            except Exception:
                state = "ERR"
            whole = whole and state == "DONE"
            if whole:
                done.update({id(i): then(i) for i in chunk})
        for _, handle, _ in posted:
            if handle is not None:
                agent.release_xfer_handle(handle)
        return done if whole else None

    # -- set / get ---------------------------------------------------------------------------

    def _write(self, plans: list[list[Item] | None]) -> list[list[bool]]:
        lane = self.lanes["WRITE"]
        items = [i for plan in plans if plan for i in plan]
        with lane.lock:
            self._let_go(lane)
            self._log.bury()
            stored = self._append(lane, items)
        return [[stored[id(i)] for i in plan] if plan is not None else [] for plan in plans]

    def _append(self, lane: Lane, items: list[Item]) -> dict[int, bool]:
        """Append every item as one extent; on failure, each item as its own, for exact results."""
        return _all_or_each(items, lambda batch: self._append_extent(lane, batch))

    @staticmethod
    def lay_out(items: list[Item]) -> tuple[list[Item], Layout]:
        """``items`` in extent order (pool by pool) and their extent's layout."""
        ordered = [i for group in by_pool(items).values() for i in group]
        return ordered, Layout.of([[i.pool.layout.size for i in g] for g in by_pool(items).values()])

    def _append_extent(self, lane: Lane, items: list[Item]) -> bool:
        """Records after a reserved commit block at the segment's tail, then the commit."""
        items, layout = self.lay_out(items)
        extent = self._capacity.reserve(layout) if self._capacity else self._log.reserve(layout)
        assert lane.files is not None
        if extent is None or not lane.files.register(extent.segment):
            return False
        for item, at in zip(items, extent.offsets):
            item.fd, item.offset = extent.fd, at
        if not self._submit(lane, "WRITE", items):
            return False
        stamps = [Stamp(i.digest, i.pool.layout.tag, i.checksum, i.depth) for i in items]
        return self._log.commit(extent, stamps)

    def _in_chain(self, plans: list[list[Item] | None], extra_info: Any) -> list[list[Item] | None]:
        """Place each page in its prefix chain and, under a budget, count the prefix as used."""
        prefix = list(getattr(extra_info, "prefix_keys", None) or [])
        for plan in plans:
            for n, item in enumerate(plan or []):
                item.depth = len(prefix) + n
        if self._capacity and prefix:
            model = self.storage_config.model_name or ""
            self._capacity.touch_prefix([family_digest(model, k) for k in prefix if isinstance(k, str)])
        return plans

    def _used(self, plans: list[list[Item] | None], results: list[list[bool]]) -> list[list[bool]]:
        """Reads and writes count as use."""
        if self._capacity:
            done = (i.digest[:8] for plan, res in zip(plans, results) for i, ok in zip(plan or [], res) if ok)
            self._capacity.touch(done)
        return results

    def _read(self, plans: list[list[Item] | None]) -> list[list[bool]]:
        lane = self.lanes["READ"]
        items = [i for plan in plans if plan for i in plan]
        with lane.lock:
            self._let_go(lane)
            ready: list[Item] = []
            for item, loc in zip(items, self._log.locate([i.digest for i in items])):
                if loc is None or (loc.size, loc.tag) != (item.pool.layout.size, item.pool.layout.tag):
                    continue
                if lane.files is not None and lane.files.register(loc.segment):
                    item.fd, item.offset, item.checksum = loc.segment.fd, loc.offset, loc.checksum
                    ready.append(item)
            ok = self._transfer(lane, "READ", ready, self._stage_in)
        return [[ok.get(id(i), False) for i in plan] if plan is not None else [] for plan in plans]

    @staticmethod
    def _let_go(lane: Lane) -> None:
        """Deregister the segments the log retired (under the lane's lock: none is in flight)."""
        if lane.files is not None:
            lane.files.drop_retired()

    @staticmethod
    def _failed(keys: Any) -> list[bool]:
        return [False] * (len(keys) if isinstance(keys, list) else 0)

    def batch_set_v1(
        self, keys: list[str], host_indices: torch.Tensor, extra_info: HiCacheStorageExtraInfo | None = None
    ) -> list[bool]:
        plan = self.plan(KV, keys, host_indices)
        if plan is None:
            return self._failed(keys)
        return self._used([plan], self._write(self._in_chain([plan], extra_info)))[0]

    def batch_get_v1(
        self, keys: list[str], host_indices: torch.Tensor, extra_info: HiCacheStorageExtraInfo | None = None
    ) -> list[bool]:
        plan = self.plan(KV, keys, host_indices)
        if plan is None:
            return self._failed(keys)
        return self._used([plan], self._read(self._in_chain([plan], extra_info)))[0]

    def _batch_v2(
        self, transfers: list[PoolTransfer], run: Callable[[list[list[Item] | None]], list[list[bool]]]
    ) -> dict[str, list[bool]]:
        names = [str(t.name) for t in transfers]
        if len(set(names)) != len(names):
            return {n: self._failed(t.keys) for n, t in zip(names, transfers)}
        plans = [self.plan(n, t.keys, t.host_indices) for n, t in zip(names, transfers)]
        results = run(plans)
        return {
            n: (res if plan is not None else self._failed(t.keys))
            for n, t, plan, res in zip(names, transfers, plans, results)
        }

    def batch_set_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        return self._batch_v2(
            transfers, lambda plans: self._used(plans, self._write(self._in_chain(plans, extra_info)))
        )

    def batch_get_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        return self._batch_v2(
            transfers, lambda plans: self._used(plans, self._read(self._in_chain(plans, extra_info)))
        )

    # -- exists ------------------------------------------------------------------------------

    def _present(self, name: str, keys: Iterable[str]) -> list[bool]:
        pool = self._pools.get(name)
        keys = list(keys)
        if pool is None or self._closed:
            return [False for _ in keys]
        named = [isinstance(k, str) for k in keys]
        found = iter(self._stored(pool, [self.digest(name, k) for k, ok in zip(keys, named) if ok]))
        return [ok and next(found) for ok in named]

    def _stored(self, pool: _Pool, digests: list[bytes]) -> list[bool]:
        """Whether each entry is whole on disk, in this pool's geometry."""
        shape = (pool.layout.size, pool.layout.tag)
        return [loc is not None and (loc.size, loc.tag) == shape for loc in self._log.locate(digests)]

    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        present = self._present(KV, keys)
        run = present.index(False) if False in present else len(present)
        if self._capacity and run:
            self._capacity.pin([self.digest(KV, k)[:8] for k in keys[:run]])
        return run

    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        kv = self.batch_exists(keys)
        figures: dict[str, int] = {}
        gates: list[list[bool]] = []
        for t in pool_transfers or []:
            name = str(t.name)
            if PoolHitPolicy(t.hit_policy) is PoolHitPolicy.BLOCK_GROUPS:
                present = self._present(name, list(t.keys or []))
                figure = hits.block_group_pages(t.group_pages, t.block_pages, present)
            else:
                gates.append(self.restorable(t, self._present(name, keys[:kv])))
                figure = hits.longest(gates[-1])
            if figure:
                figures[name] = figure
        return hits.exists_result(kv, figures, gates, KV)

    def restorable(self, t: PoolTransfer, present: list[bool]) -> list[bool]:
        """Per prefix length 0..kv, whether the pool of ``t`` can restore it under its policy."""
        return hits.restorable(PoolHitPolicy(t.hit_policy), len(t.keys or []), present)

    # -- lifecycle ---------------------------------------------------------------------------

    def clear(self) -> bool:
        """Remove every entry of this tenant under the root, whichever writer made it; other
        tenants' segments stay."""
        with self.lanes["WRITE"].lock, self.lanes["READ"].lock:
            self._log.clear()
            for lane in self.lanes.values():
                self._let_go(lane)
            self._log.bury()
        return True

    def stored_object_count(self) -> int:
        """Entries that would read back now, written by any instance of any tenant on this root."""
        every = SegmentLog(self.root, direct=False, fsync=False, segment_bytes=self.settings.segment_bytes)
        try:
            return every.count()
        finally:
            every.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self.lanes["WRITE"].lock, self.lanes["READ"].lock:
            for lane in self.lanes.values():
                lane.close()
            self._close_store()
            for agent, reg in self._dram_regs:
                agent.deregister_memory(reg)
            self._dram_regs.clear()
            self._pools.clear()
        for lane in self.lanes.values():
            agents.release(lane.agent)

    def _close_store(self) -> None:
        """Seal and release the segment log; both lanes are held."""
        self._log.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
