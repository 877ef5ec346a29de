"""``NixlBackend``: HiCache v2 storage on files through NIXL's POSIX plugin.

A batch reads in one direction, each step its own module:

1. **Plan** (:mod:`~reference_backend.plan`): a malformed pool request gets all-False before any
   file is touched; the rest become items, one page of one pool each, named by entry digest.
2. **Extent** (:mod:`~reference_backend.log`): a write reserves one extent of this instance's own
   segment file for the whole batch, every record's position fixed once. A record holds every
   region of one page of one pool (:mod:`~reference_backend.record`); no file is created, renamed
   or registered per entry, and nothing is ever rewritten in place. A read locates each record.
3. **Staging** (:mod:`~reference_backend.staging`): a pool whose regions are 4096-aligned
   (``is_stride_page_aligned``), or any pool when I/O is buffered, moves in place; the others go
   through a raw-byte staging buffer owned by that pool and that direction.
4. **Descriptors** (:mod:`~reference_backend.descriptors`): the rows of every pool of the batch.
5. **One transfer** (:mod:`~reference_backend.transfer`, with the NIXL registrations): only if it
   fails are pages retried one by one, for exact per-key results. A write checksums its pages
   while the kernel writes them. A verified read of many pages goes as several transfers, so the
   checksum overlaps the I/O: under O_DIRECT they are posted at once and each is checked as it
   lands; buffered, each is checked on a helper thread while the next one copies.
6. **Commit**: records are published by their commit only after the transfer succeeded;
   ``exists`` requires the record's whole extent on disk and its geometry; reads check the
   checksum the commit carries.

Sets and gets each own a lane (a NIXL agent, a lock, staging buffers), so the controller's writer
and loader threads never wait on each other.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch

from reference_backend import agents, hits
from reference_backend.capacity import Capacity
from reference_backend.config import BackendConfig
from reference_backend.descriptors import file_rows
from reference_backend.interface import (
    HiCacheStorageConfig,
    HiCacheStorageExtraInfo,
    PoolHitPolicy,
    PoolName,
    PoolTransfer,
    PoolTransferResult,
)
from reference_backend.log import Layout, Segment, SegmentLog, Stamp
from reference_backend.naming import tenant_name
from reference_backend.plan import BatchPlanner, Item, by_pool
from reference_backend.pools import Pool
from reference_backend.staging import checksum, clear_tail, gather, intact, place, scatter
from reference_backend.transfer import Lane, SegmentFiles, all_or_each, cut, overlapped, pipelined

KV = str(PoolName.KV)
DIRECT_SHARES = (1.0,) * 8
"""How a verified O_DIRECT read of many pages is cut, as shares of its bytes: the kernel moves
every chunk at once, so the chunks are equal and each is checked as it lands."""
BUFFERED_SHARES = tuple(0.6**k for k in range(6))
"""How a verified buffered read is cut: its chunks copy one by one, each checked on a helper
thread while the next copies. XXH3 runs at about 1.5x the copy's speed, so each chunk is 0.6 of
the one before: its check ends about when the next chunk lands, and the last chunk, whose check
nothing overlaps, holds 3% of the bytes. Measured against eight equal chunks, ratio to raw
NIXL at 64 real pages: DeepSeek-V3 0.90 -> 0.93-0.94, Llama-3-70B 0.90 -> 0.94, Qwen3-Next
0.80 -> 0.84. More chunks cost more: NIXL pays about 0.1 ms a transfer of that size."""
MIN_CHUNK_BYTES = 512 << 10
"""A verified read is cut only into chunks of at least this: a NIXL transfer costs about 0.1 ms,
what checking about 1 MB takes, so much smaller chunks cost more than their overlap saves (64
pages of 16 KiB cut six ways took 1.78 ms a get, in one transfer 0.89 ms; raw NIXL 0.33), while
the scaled hybrid's 23 MB keeps all six (at 2 MiB it kept four, and its warm get fell from 0.61 to
0.56 of raw NIXL: the last chunk's check, which nothing overlaps, grew)."""
HANDOFF_PAGES = 16
"""Buffered verified writes of at least this many pages checksum them on a helper thread beside
the copy; below it the handoff costs more than it overlaps."""


def checksums(items: list[Item], verify: bool = True) -> list[int | None]:
    """Each page's checksum where its bytes are now (None for all when not verifying)."""
    return [checksum(i) if verify else None for i in items]


class NixlBackend:
    """HiCache v2 storage backend on NIXL POSIX file targets.

    Its seam, for tests, mutants and benchmarks: ``planner`` (pools and requests as ``Item``s; a
    subclass may set ``planner_type``), ``lay_out``, ``stage``, ``transfer``, ``store``, ``write``,
    ``read``, ``receive``, ``stored``, ``restorable``, ``lanes``, ``log`` and ``capacity``.
    """

    REMOTE = "FILE"
    """NIXL's memory type of the storage side of a transfer."""
    planner_type: type[BatchPlanner] = BatchPlanner
    min_chunk_bytes = MIN_CHUNK_BYTES
    capacity: Capacity | None = None
    """The tenant's byte budget, where one is set (:mod:`reference_backend.capacity`)."""

    def __init__(
        self,
        storage_config: HiCacheStorageConfig,
        location: str | os.PathLike[str] | dict[str, Any] | None = None,
    ) -> None:
        self.settings = BackendConfig.from_extra(storage_config.extra_config, location)
        self.storage_config = storage_config
        self.verify = self.settings.verify
        shares = DIRECT_SHARES if self.settings.direct_io else BUFFERED_SHARES
        self.read_shares = shares if self.verify else ()
        """How a read of many pages is cut into transfers (none: one transfer, checked after it
        lands)."""
        self.planner = self.planner_type(storage_config, self.moves_in_place)
        self.root = str(self.settings.storage_dir)
        os.makedirs(self.root, exist_ok=True)
        budget = self.settings.budget
        tenant = self.settings.tenant if self.settings.tenant is not None else storage_config.model_name
        self.log = SegmentLog(
            self.root,
            direct=self.settings.direct_io,
            fsync=self.settings.fsync,
            # under a budget, segments small enough that compaction can free a sixteenth of it
            segment_bytes=min(self.settings.segment_bytes, max(budget.limit // 16, 1 << 16))
            if budget.limit
            else self.settings.segment_bytes,
            tenant=tenant_name(tenant or ""),
            checkpoints=True,
            checkpoint_every=self.settings.checkpoint_records,
        )
        if budget.limit:
            self.capacity = Capacity(self.log, budget)
        params = self.settings.plugin_params()
        self.lanes: dict[str, Lane] = {}
        for op in ("WRITE", "READ"):
            agent = agents.acquire(params, "POSIX")
            self.lanes[op] = Lane(agent, files=SegmentFiles(agent, self.log))

    # -- registration ------------------------------------------------------------------------

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        self.register(KV, mem_pool_host)

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: PoolName | str) -> None:
        self.register(str(host_pool_name), host_pool)

    def on_host_pools_registered(self) -> None:
        """Pools are prepared as they register; nothing is deferred."""

    def register(self, name: str, host: Any) -> None:
        """Prepare a host pool; one that moves in place is registered with both lanes' agents."""
        pool = self.planner.register(name, host)
        if pool is not None and pool.zero_copy:
            spans = pool.spans()
            for lane in self.lanes.values():
                lane.register_spans(spans)

    def moves_in_place(self, host: Any) -> bool:
        """Zero-copy needs O_DIRECT-legal addresses and lengths, or no O_DIRECT at all."""
        return not self.settings.direct_io or bool(host.is_stride_page_aligned(4096))

    def transfer_mode(self, pool_name: PoolName | str) -> str:
        """How this pool's pages move: ``zero_copy`` or ``staged``."""
        return self.planner.transfer_mode(str(pool_name))

    def plan(self, name: str, keys: Any, host_indices: Any) -> list[Item] | None:
        return self.planner.plan(name, keys, host_indices)

    def digest(self, name: str, key: str) -> bytes:
        return self.planner.digest(name, key)

    # -- the steps of a batch ----------------------------------------------------------------

    @staticmethod
    def lay_out(items: list[Item]) -> tuple[list[Item], Layout]:
        """``items`` in extent order (pool by pool) and their extent's layout."""
        groups = list(by_pool(items).values())
        return [i for g in groups for i in g], Layout.of([[i.pool.layout.size for i in g] for g in groups])

    def stage(self, lane: Lane, items: list[Item], writing: bool) -> None:
        """Give items their host regions and staging slots; copy a write's staged pages in."""
        for group in by_pool(items).values():
            place(lane.staging, group, group[0].pool.layout.size)
            if writing:
                for item in group:
                    gather(item)
                clear_tail(group)

    def transfer(self, lane: Lane, op: str, items: list[Item]) -> bool:
        """Stage and move located items in one NIXL transfer; True when every byte moved. A write
        checksums its pages while they move: after posting them under O_DIRECT (the kernel writes
        meanwhile), on the lane's helper thread when a buffered post makes the copy itself."""
        writing = op == "WRITE"
        self.stage(lane, items, writing)
        beside = writing and self.verify and not self.settings.direct_io and len(items) >= HANDOFF_PAGES
        sums = lane.helper().submit(checksums, items) if beside else None
        try:
            with lane.post(op, *file_rows(items, writing), self.REMOTE) as moving:
                if writing:
                    for item, value in zip(items, sums.result() if sums else checksums(items, self.verify)):
                        item.checksum = value
                return moving.wait()
        except Exception:  # NIXL raises its own binding errors for any I/O failure
            if sums is not None:  # the helper reads host memory the caller may reuse once we return
                with contextlib.suppress(Exception):
                    sums.result()
            return False

    def read_pipelined(self, lane: Lane, items: list[Item]) -> dict[int, bool] | None:
        """Move the batch as several transfers and check each one's items while the rest move.

        O_DIRECT reads run asynchronously in the kernel: every transfer is posted at once, and
        checking the first overlaps the later ones' I/O. A buffered read is a copy NIXL makes
        inside the post: the transfers go one by one, each checked on a helper thread while the
        next copies, so a verified read costs about one pass over the bytes, not two. Staged
        pages share one staging buffer, so they travel together, last. None when any transfer
        fails or the batch is too small to gain: the all-or-each path then reads it again, for
        exact results.
        """
        if len(items) < 4:  # two chunks of two pages at least
            return None
        moved = [i for i in items if i.pool.zero_copy]
        shares = self.shares_for(sum(i.pool.layout.size for i in moved))
        if len(moved) < 2 * len(shares) or len(shares) < 2:
            return None
        chunks = cut(moved, shares, lambda i: i.pool.layout.size)
        staged = [i for i in items if not i.pool.zero_copy]
        chunks += [staged] if staged else []

        def rows(chunk: list[Item]) -> tuple[Any, Any]:
            self.stage(lane, chunk, writing=False)
            return file_rows(chunk, writing=False)

        chunked = pipelined if self.settings.direct_io else overlapped
        return chunked(lane, "READ", chunks, rows, self.REMOTE, self.receive)

    def shares_for(self, nbytes: int) -> tuple[float, ...]:
        """The leading ``read_shares`` whose smallest chunk of ``nbytes`` is ``min_chunk_bytes``
        at least."""
        shares = self.read_shares
        while len(shares) > 1 and nbytes * shares[-1] < self.min_chunk_bytes * sum(shares):
            shares = shares[:-1]
        return shares

    def receive(self, item: Item) -> bool:
        """Finish a read page: check the checksum its commit promised, then scatter staged bytes."""
        if self.verify and not intact(item):
            return False
        scatter(item)
        return True

    # -- set / get ---------------------------------------------------------------------------

    def write(self, items: list[Item]) -> dict[int, bool]:
        """Store a batch on the write lane; first let go of the segments the log retired."""
        lane = self.lanes["WRITE"]
        with lane.lock:
            self._let_go(lane)
            self.log.bury()
            if self.capacity:
                self.capacity.arrive(i.digest[:8] for i in items)
            done = self.store(lane, items)
            # budget or not: under one, eviction takes whole segments, live records and all, so a
            # store left full of overwritten versions would evict live entries to make room
            self.log.reclaim(sum(i.pool.layout.size for i in items))
            return done

    def store(self, lane: Lane, items: list[Item]) -> dict[int, bool]:
        """Append every item as one extent; on failure, each item as its own, for exact results.
        A batch the budget refuses is refused whole, in one decision: retrying it page by page
        would run eviction again for every page."""
        refused = False

        def attempt(batch: list[Item]) -> bool:
            nonlocal refused
            if refused:
                return False
            done = self.store_extent(lane, batch)
            refused = done is None
            return bool(done)

        return all_or_each(items, attempt)

    def store_extent(self, lane: Lane, items: list[Item]) -> bool | None:
        """Reserve an extent, move the records into it, then commit it; None when the budget
        refused the extent."""
        items, layout = self.lay_out(items)
        if self.capacity:
            extent = self.capacity.reserve(layout)
            if extent is None:
                return None
        else:
            extent = self.log.reserve(layout)
        if extent is None or lane.files is None or not lane.files.register(extent.segment):
            return False
        for item, at in zip(items, extent.offsets):
            item.fd, item.offset = extent.fd, at
        if not self.transfer(lane, "WRITE", items):
            return False
        return self.log.commit(
            extent, [Stamp(i.digest, i.pool.layout.tag, i.checksum, i.depth) for i in items]
        )

    def read(self, items: list[Item]) -> dict[int, bool]:
        """Locate each item's newest whole record of its geometry and read them on the read lane."""
        lane = self.lanes["READ"]
        with lane.lock:
            self._let_go(lane)
            ready: list[Item] = []
            shapes: dict[str, tuple[int, int]] = {}  # per pool, and each segment registered once a call
            usable: dict[Segment, bool] = {}
            for item, loc in zip(items, self.log.locate([i.digest for i in items])):
                if loc is None:
                    continue
                shape = shapes.get(item.pool.name)
                if shape is None:
                    layout = item.pool.layout
                    shape = shapes[item.pool.name] = (layout.size, layout.tag)
                if (loc.size, loc.tag) != shape:
                    continue
                segment = loc.segment
                ok = usable.get(segment)
                if ok is None:
                    ok = usable[segment] = lane.files is not None and lane.files.register(segment)
                if ok:
                    item.fd, item.offset, item.checksum = segment.fd, loc.offset, loc.checksum
                    ready.append(item)
            done = self.read_pipelined(lane, ready) if self.read_shares else None
            if done is None:
                done = all_or_each(ready, lambda batch: self.transfer(lane, "READ", batch), self.receive)
            return done

    @staticmethod
    def _let_go(lane: Lane) -> None:
        """Deregister the segments the log retired (under the lane's lock: none is in flight)."""
        if lane.files is not None:
            lane.files.drop_retired()

    def _counted(
        self, items: list[Item], prefix: list[str], run: Callable[[list[Item]], dict[int, bool]]
    ) -> dict[int, bool]:
        """Reads and writes count as use; under the chain policy, so does the prefix before them.

        All at one instant, taken once the transfer is done (so no earlier than the records' commit
        sequence, which also counts as use): a call's pages and its prefix share one last use, and
        the chain policy's depth order decides among them, tail first."""
        done = run(items)
        if self.capacity:
            at = time.time_ns()
            if prefix and self.capacity.counts_prefix and KV in self.planner.scopes:
                self.capacity.touch(self.planner.digests(KV, [k for k in prefix if isinstance(k, str)]), at)
            self.capacity.touch([i.digest for i in items if done.get(id(i))], at)
        return done

    def batch_set_v1(
        self, keys: list[str], host_indices: torch.Tensor, extra_info: HiCacheStorageExtraInfo | None = None
    ) -> list[bool]:
        return self.planner.v1(keys, host_indices, extra_info, lambda i, p: self._counted(i, p, self.write))

    def batch_get_v1(
        self, keys: list[str], host_indices: torch.Tensor, extra_info: HiCacheStorageExtraInfo | None = None
    ) -> list[bool]:
        return self.planner.v1(keys, host_indices, extra_info, lambda i, p: self._counted(i, p, self.read))

    def batch_set_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        return self.planner.v2(transfers, extra_info, lambda i, p: self._counted(i, p, self.write))

    def batch_get_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        return self.planner.v2(transfers, extra_info, lambda i, p: self._counted(i, p, self.read))

    # -- exists ------------------------------------------------------------------------------

    def stored(self, pool: Pool, digests: list[bytes]) -> list[bool]:
        """Whether each entry is whole on disk, in this pool's geometry."""
        shape = (pool.layout.size, pool.layout.tag)
        return [loc is not None and (loc.size, loc.tag) == shape for loc in self.log.locate(digests)]

    def _present(self, name: str, keys: Iterable[Any]) -> list[bool]:
        return self.planner.present(name, keys, self.stored)

    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        with self.log.one_look():
            run = hits.leading_run(self._present(KV, keys))
        if self.capacity and run:
            self.capacity.pin([d[:8] for d in self.planner.digests(KV, keys[:run])])
        return run

    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        with self.log.one_look():  # every pool answers from the same look at the disk
            return hits.answer(
                self.batch_exists(keys), keys, pool_transfers or [], self._present, self.restorable
            )

    def restorable(self, t: PoolTransfer, present: list[bool]) -> list[bool]:
        """Per prefix length 0..kv, whether the pool of ``t`` can restore it under its policy."""
        return hits.restorable(PoolHitPolicy(t.hit_policy), len(t.keys or []), present)

    # -- lifecycle ---------------------------------------------------------------------------

    def clear(self) -> bool:
        """Remove every entry of this tenant under the root, whichever writer made it; other
        tenants' segments stay."""
        with self.lanes["WRITE"].lock, self.lanes["READ"].lock:
            self.log.clear()
            for lane in self.lanes.values():
                self._let_go(lane)
            self.log.bury()
        return True

    def stored_object_count(self) -> int:
        """Entries that would read back now, written by any instance of any tenant on this root."""
        every = SegmentLog(self.root, direct=False, fsync=False, segment_bytes=self.settings.segment_bytes)
        try:
            return every.count()
        finally:
            every.close()

    def close(self) -> None:
        if self.planner.closed:
            return
        self.planner.closed = True
        with self.lanes["WRITE"].lock, self.lanes["READ"].lock:
            for lane in self.lanes.values():
                lane.close()
            self.log.close()
            self.planner.close()
            if self.capacity:
                self.capacity.pins.close()
        for lane in self.lanes.values():
            agents.release(lane.agent)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
