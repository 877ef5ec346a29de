"""Benchmark workloads: hybrid batches (KV + Mamba + DSA indexer) at production-like page sizes,
with the reference backend and its baselines set up on the same files and the same memory.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from conformance.doubles.hostpools import HostPoolDouble
from conformance.doubles.kv_pools import MHAHostPool
from conformance.doubles.side_pools import DSAIndexerHostPool, MambaHostPool
from conformance.model.interface import HiCacheStorageConfig, PoolName, PoolTransfer
from reference_backend.backend import NixlBackend
from reference_backend.descriptors import file_rows
from reference_backend.plan import Item

PAGES = 256
BATCHES = (1, 8, 64, 256)


def hybrid_pools(page_num: int = PAGES) -> dict[PoolName, HostPoolDouble]:
    """Page sizes of a Qwen3-Next/DeepSeek-V3.2-like hybrid, one layer group a page.

    KV: 64 tokens x 4 layers x 2 heads x 128 x bf16 = 128 KiB for K and for V (4096-aligned: zero-copy).
    Mamba: fp32 state 4x64x64 plus bf16 conv 768x3 = 70,144 B (staged under O_DIRECT).
    DSA indexer: 4 layers x (64 x 128 fp8 + 64 fp32 scales) = 33,792 B (staged under O_DIRECT).
    """
    return {
        PoolName.KV: MHAHostPool(
            layer_num=4,
            head_num=2,
            head_dim=128,
            page_size=64,
            page_num=page_num,
            dtype=torch.bfloat16,
            layout="page_first",
        ),
        PoolName.MAMBA: MambaHostPool(
            num_layers=1, temporal_shape=(4, 64, 64), conv_shapes=[(768, 3)], size=page_num
        ),
        PoolName.INDEXER: DSAIndexerHostPool(
            layer_num=4, index_head_dim=128, page_size=64, page_num=page_num, store_dtype=torch.bfloat16
        ),
    }


def transfers(pools: dict[PoolName, HostPoolDouble], batch: int, prefix: str = "page") -> list[PoolTransfer]:
    """One hybrid batch: pages 0..batch-1 of every pool, under keys ``prefix-0000``..."""
    keys = [f"{prefix}-{i:04d}" for i in range(batch)]
    return [
        PoolTransfer(
            name=name, keys=keys, host_indices=torch.arange(batch * pool.page_size, dtype=torch.int64)
        )
        for name, pool in pools.items()
    ]


def config(mode: str, queue: str, verify: bool = True) -> HiCacheStorageConfig:
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
        "bench/hybrid",
        extra_config={"use_direct_io": mode == "direct", "queue": queue, "verify": verify},
    )


@dataclass
class Rigged:
    """Our backend on one folder, and the raw transfer its batch reduces to, on other files."""

    backend: NixlBackend
    unverified: NixlBackend
    pools: dict[PoolName, HostPoolDouble]
    root: Path
    mode: str
    queue: str
    raw_fds: list[int] = field(default_factory=list)

    @property
    def direct(self) -> bool:
        return self.mode == "direct"

    def transfers(self, batch: int, prefix: str = "page") -> list[PoolTransfer]:
        return transfers(self.pools, batch, prefix)

    def items_in_one_file(self, batch: int, folder: str) -> list[Item]:
        """The items our batch plans, at the offsets our extent gives them, in one pre-sized file."""
        items: list[Item] = []
        for t in self.transfers(batch):
            plan = self.backend.plan(str(t.name), t.keys, t.host_indices)
            assert plan is not None
            items.extend(plan)
        path = self.root / folder / f"extent-{batch}"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | (os.O_DIRECT if self.direct else 0), 0o644)
        self.raw_fds.append(fd)
        items, layout = self.backend.lay_out(items)
        os.ftruncate(fd, layout.size)
        for item, at in zip(items, layout.offsets):
            item.fd, item.offset = fd, at
        return items

    def raw_plan(self, batch: int, op: str) -> tuple[Any, Any, Any]:
        """The same descriptors our batch submits, on a pre-opened, pre-sized file: the design's limit."""
        lane = self.backend.lanes[op]
        items = self.items_in_one_file(batch, "raw")
        self.backend.stage(lane, items, writing=True)
        dram, file = file_rows(items, writing=True)
        agent = lane.agent
        reg = agent.register_memory([(0, 0, fd, "") for fd in sorted({i.fd for i in items})], "FILE")
        return agent, (agent.get_xfer_descs(dram, "DRAM"), agent.get_xfer_descs(file, "FILE")), reg

    def fresh_plans(self, batch: int, rounds: int) -> tuple[Any, list[tuple[Any, Any]], Any]:
        """Our batch's descriptors, shifted to a new extent of one growing file for every round.

        The limit for writes that never overwrite: what any store pays that keeps old versions
        until a new one is whole. The file is sized up front, outside the timed region.
        """
        lane = self.backend.lanes["WRITE"]
        items = self.items_in_one_file(batch, "fresh")
        extent = self.backend.lay_out(items)[1].size
        os.ftruncate(items[0].fd, extent * rounds)
        agent = lane.agent
        plans = []
        for r in range(rounds):
            for item in items:
                item.offset += extent if r else 0
            self.backend.stage(lane, items, writing=True)
            dram, file = file_rows(items, writing=True)
            plans.append((agent.get_xfer_descs(dram, "DRAM"), agent.get_xfer_descs(file, "FILE")))
        return agent, plans, agent.register_memory([(0, 0, items[0].fd, "")], "FILE")

    def close(self) -> None:
        for fd in self.raw_fds:
            os.close(fd)
        self.backend.close()
        self.unverified.close()


def raw_transfer(agent: Any, op: str, descs: tuple[Any, Any]) -> None:
    handle = agent.initialize_xfer(op, descs[0], descs[1], agent.name)
    state = agent.transfer(handle)
    while state == "PROC":
        os.sched_yield()  # as ours polls (``Posted.wait``)
        state = agent.check_xfer_state(handle)
    agent.release_xfer_handle(handle)
    assert state == "DONE"


def pwritev_plan(rig: Rigged, batch: int) -> list[tuple[int, list[memoryview], int]]:
    """Plain-syscall baseline: one ``pwritev`` per descriptor our batch submits, same memory."""
    items = rig.items_in_one_file(batch, "pwritev")
    rig.backend.stage(rig.backend.lanes["WRITE"], items, writing=True)
    dram, file = file_rows(items, writing=True)
    return [
        (int(fd), [memoryview((ctypes.c_char * int(size)).from_address(int(addr))).cast("B")], int(offset))
        for (addr, size, _), (offset, _, fd) in zip(dram.tolist(), file.tolist())
    ]


def drop_page_cache(root: Path) -> None:
    """Evict every file under ``root`` from the page cache (cold reads without O_DIRECT)."""
    for path in root.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def fill(pools: dict[PoolName, HostPoolDouble]) -> None:
    rng = np.random.default_rng(0)
    for pool in pools.values():
        for buf in pool.backing():
            flat = buf.view(torch.uint8).reshape(-1)
            flat.copy_(torch.from_numpy(rng.integers(0, 256, flat.numel(), dtype=np.uint8)))


UPSTREAM_MODES = {
    ("buffered", "aio"): "buffered",
    ("direct", "aio"): "direct",
    ("direct", "uring"): "direct-uring",
}


class Upstream:
    """SGLang's own backend on the same pools, called as SGLang's cache controller calls it.

    HiCacheNixl takes KV through ``batch_*_v1`` and the side pools through one ``batch_*_v2``
    (its loop over pools is part of what is measured); HiCacheFile takes all three through v2.
    """

    def __init__(self, impl: str, rig: Rigged, folder: Path) -> None:
        from conformance.harness.registry import resolve_backend

        spec = resolve_backend(impl)
        self.impl = impl
        mode = UPSTREAM_MODES[(rig.mode, rig.queue)] if impl == "sglang-nixl" else "buffered"
        cfg = config(rig.mode, rig.queue)
        cfg.extra_config = dict(spec.capabilities.io_modes[mode])
        folder.mkdir(parents=True, exist_ok=True)
        self.backend = spec.factory(cfg, folder)
        self.v1_kv = spec.capabilities.v1_kv
        self.backend.register_mem_pool_host(rig.pools[PoolName.KV])
        for name, pool in rig.pools.items():
            if name is not PoolName.KV or not self.v1_kv:
                self.backend.register_mem_host_pool_v2(pool, name)

    def _split(self, transfers: list[PoolTransfer]) -> tuple[PoolTransfer | None, list[PoolTransfer]]:
        if not self.v1_kv:
            return None, transfers
        return transfers[0], transfers[1:]

    def set(self, transfers: list[PoolTransfer]) -> list[bool]:
        kv, side = self._split(transfers)
        flags = [] if kv is None else list(self.backend.batch_set_v1(kv.keys, kv.host_indices))
        return flags + [f for v in self.backend.batch_set_v2(side).values() for f in v]

    def get(self, transfers: list[PoolTransfer]) -> list[bool]:
        kv, side = self._split(transfers)
        flags = [] if kv is None else list(self.backend.batch_get_v1(kv.keys, kv.host_indices))
        return flags + [f for v in self.backend.batch_get_v2(side).values() for f in v]

    def close(self) -> None:
        self.backend.close()
