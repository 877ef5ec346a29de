"""The contenders of one workload: ours, the raw NIXL limit, and SGLang's HiCacheNixl, on one rig.

A rig is one model's host pools, one I/O mode and one queue. Every contender reads and writes the
same host memory; each has its own folder on the same file system.

The limit is what NIXL itself does with the batch's bytes and nothing else: one transfer between
the host pages and one pre-opened file, one descriptor per page region where the host memory can
be moved in place (ours moves it in place there too), and where O_DIRECT forbids that (a region
not 4096-aligned), a copy through an aligned staging buffer, as any O_DIRECT writer must. It pays
the descriptor lists, the transfer and its release; no names, no index, no checksum, no commit.
"""

from __future__ import annotations

import ctypes
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from conformance.doubles.hostpools import HostPoolDouble
from conformance.model.interface import HiCacheStorageConfig, PoolName, PoolTransfer
from reference_backend import agents
from reference_backend.backend import NixlBackend
from tests.benchmarks.models import Workload
from tests.benchmarks.paired import write_back

BLOCK = 4096
QUEUE_PARAMS = {"aio": {}, "uring": {"use_uring": "true"}}
UPSTREAM_MODES = {
    ("buffered", "aio"): "buffered",
    ("direct", "aio"): "direct",
    ("direct", "uring"): "direct-uring",
}


def pad(n: int, to: int = BLOCK) -> int:
    return -(-n // to) * to


def storage_config(workload: Workload, extra: dict[str, Any]) -> HiCacheStorageConfig:
    is_mla = any(p.kind == "mla" for p in workload.pools)
    return HiCacheStorageConfig(
        0, 1, 0, 1, 0, 1, is_mla, False, True, f"bench/{workload.name}", extra_config=extra
    )


def files_under(folder: Path, since_ns: int = 0) -> list[str]:
    """Every regular file under ``folder`` modified at or after ``since_ns``."""
    found: list[str] = []
    stack = [str(folder)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False) and entry.stat().st_mtime_ns >= since_ns:
                    found.append(entry.path)
    return found


def drop_cache(paths: list[str]) -> None:
    """Write back and evict files from the page cache: cold reads without O_DIRECT, a clean slate
    for writes."""
    write_back(paths)
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@dataclass
class Rig:
    """One workload's pools in one I/O mode and queue, and the folders its contenders use."""

    workload: Workload
    pools: dict[PoolName, HostPoolDouble]
    root: Path
    mode: str
    queue: str

    @property
    def direct(self) -> bool:
        return self.mode == "direct"

    def keys(self, label: str, batch: int) -> list[str]:
        return [f"{label}-{i:05d}" for i in range(batch)]

    def transfers(self, label: str, batch: int, first_page: int = 0, slot: int = 0) -> list[PoolTransfer]:
        return self.workload.transfers(self.pools, self.keys(label, batch), first_page, slot)

    def folder(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path


ExistsQuery = tuple[list[str], list[PoolTransfer]]
"""``batch_exists_v2``'s arguments: the KV keys and each side pool's query."""


def exists_query(transfers: list[PoolTransfer]) -> ExistsQuery:
    """The exists query a batch's transfers make, built once, outside any timing, as the cache
    controller builds its own."""
    keys = list(transfers[0].keys or [])
    return keys, [PoolTransfer(name=t.name, keys=t.keys, hit_policy=t.hit_policy) for t in transfers[1:]]


class Ours:
    """The reference backend, checksum on or off."""

    def __init__(self, rig: Rig, verify: bool = True) -> None:
        self.name = "ours" if verify else "ours-nosum"
        self.folder = rig.folder(self.name)
        extra = {
            "use_direct_io": rig.direct,
            "queue": rig.queue,
            "verify": verify,
            "storage_dir": str(self.folder),
        }
        self.backend = NixlBackend(storage_config(rig.workload, extra), self.folder)
        for name, pool in rig.pools.items():
            self.backend.register_mem_host_pool_v2(pool, name)

    def staged(self, pool: PoolName) -> bool:
        return self.backend.transfer_mode(pool) == "staged"

    def set(self, transfers: list[PoolTransfer]) -> bool:
        return all(all(v) for v in self.backend.batch_set_v2(transfers).values())

    def get(self, transfers: list[PoolTransfer]) -> bool:
        return all(all(v) for v in self.backend.batch_get_v2(transfers).values())

    def exists(self, query: ExistsQuery) -> bool:
        keys, side = query
        return self.backend.batch_exists_v2(keys, side).kv_hit_pages == len(keys)

    def clear(self) -> None:
        self.backend.clear()

    def close(self) -> None:
        self.backend.close()


class Upstream:
    """SGLang 0.5.23's HiCacheNixl on the same pools, called as its cache controller calls it:
    KV through ``batch_*_v1``, the side pools through one ``batch_*_v2``."""

    name = "hicache-nixl"

    def __init__(self, rig: Rig) -> None:
        from conformance.upstream.adapters import SGLANG_NIXL

        self.folder = rig.folder(self.name)
        extra = dict(SGLANG_NIXL.capabilities.io_modes[UPSTREAM_MODES[(rig.mode, rig.queue)]])
        self.backend = SGLANG_NIXL.factory(storage_config(rig.workload, extra), self.folder)
        self.backend.register_mem_pool_host(rig.pools[PoolName.KV])
        for name, pool in rig.pools.items():
            if name is not PoolName.KV:
                self.backend.register_mem_host_pool_v2(pool, name)

    def set(self, transfers: list[PoolTransfer]) -> bool:
        kv, side = transfers[0], transfers[1:]
        ok = all(self.backend.batch_set_v1(kv.keys, kv.host_indices))
        return ok and all(all(v) for v in self.backend.batch_set_v2(side).values()) if side else ok

    def get(self, transfers: list[PoolTransfer]) -> bool:
        kv, side = transfers[0], transfers[1:]
        ok = all(self.backend.batch_get_v1(kv.keys, kv.host_indices))
        return ok and all(all(v) for v in self.backend.batch_get_v2(side).values()) if side else ok

    def exists(self, query: ExistsQuery) -> bool:
        keys, side = query
        return int(self.backend.batch_exists_v2(keys, side).kv_hit_pages) == len(keys)

    def clear(self) -> None:
        self.backend.clear()

    def close(self) -> None:
        self.backend.close()


@dataclass
class LimitPlan:
    """One batch as raw descriptors: host side, file side (offsets from the extent's start), and
    the staged copies a write does before the transfer and a read after it."""

    dram: np.ndarray
    file: np.ndarray
    extent: int
    copies: list[tuple[int, int, int]] = field(default_factory=list)
    """(host address, staging address, bytes)."""


class Limit:
    """Raw NIXL on one pre-opened file: the limit any backend built on it can reach."""

    name = "limit"

    def __init__(self, rig: Rig, staged: set[PoolName]) -> None:
        api = agents.nixl_api()
        self.agent = api.nixl_agent(f"bench-limit-{uuid.uuid4().hex[:8]}", api.nixl_agent_config(backends=[]))
        self.agent.create_backend("POSIX", dict(QUEUE_PARAMS[rig.queue]))
        self.rig = rig
        self.staged = staged
        self.path = str(rig.folder(self.name) / "extent")
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | (os.O_DIRECT if rig.direct else 0), 0o644)
        spans = [
            (t.data_ptr(), t.numel() * t.element_size(), 0, "")
            for pool in rig.pools.values()
            for t in pool.backing()
        ]
        self.regs = [self.agent.register_memory(spans, "DRAM")]
        self.regs.append(self.agent.register_memory([(0, 0, self.fd, "")], "FILE"))
        self.staging: dict[PoolName, torch.Tensor] = {}

    def plan(self, transfers: list[PoolTransfer], base: int = 0) -> LimitPlan:
        dram: list[tuple[int, int, int]] = []
        file: list[tuple[int, int, int]] = []
        copies: list[tuple[int, int, int]] = []
        at = base
        for t in transfers:
            pool = self.rig.pools[PoolName(t.name)]
            assert t.host_indices is not None
            ptrs, sizes = pool.get_page_buffer_meta(t.host_indices)
            at = pad(at)
            if PoolName(t.name) in self.staged:
                buf = self._staging(PoolName(t.name), pad(sum(sizes)))
                dst = buf.data_ptr()
                for ptr, size in zip(ptrs, sizes):
                    copies.append((int(ptr), dst, int(size)))
                    dst += int(size)
                whole = pad(sum(sizes))
                dram.append((buf.data_ptr(), whole, 0))
                file.append((at, whole, self.fd))
                at += whole
            else:
                for ptr, size in zip(ptrs, sizes):
                    dram.append((int(ptr), int(size), 0))
                    file.append((at, int(size), self.fd))
                    at += int(size)
        rows = np.array(dram, dtype=np.uint64), np.array(file, dtype=np.uint64)
        return LimitPlan(*rows, pad(at) - base, copies)

    def _staging(self, name: PoolName, nbytes: int) -> torch.Tensor:
        held = self.staging.get(name)
        if held is None or held.numel() < nbytes:
            held = _aligned(nbytes)
            self.regs.append(self.agent.register_memory([(held.data_ptr(), nbytes, 0, "")], "DRAM"))
            self.staging[name] = held
        return held

    def move(self, op: str, plan: LimitPlan) -> bool:
        """One transfer of ``plan`` (with its staging copies): what the limit times."""
        if op == "WRITE":
            for host, staged, size in plan.copies:
                ctypes.memmove(staged, host, size)
        agent = self.agent
        handle = agent.initialize_xfer(
            op, agent.get_xfer_descs(plan.dram, "DRAM"), agent.get_xfer_descs(plan.file, "FILE"), agent.name
        )
        try:
            state = agent.transfer(handle)
            while state == "PROC":
                os.sched_yield()  # as ours polls (``Posted.wait``)
                state = agent.check_xfer_state(handle)
        finally:
            agent.release_xfer_handle(handle)
        if op == "READ":
            for host, staged, size in plan.copies:
                ctypes.memmove(host, staged, size)
        return bool(state == "DONE")

    def exists(self) -> bool:
        """What NIXL answers about one file: the least a lookup on it can cost."""
        return self.agent.query_memory([(0, 0, 0, self.path)], "POSIX", "FILE")[0] is not None

    def grow(self, nbytes: int) -> None:
        """Make the file at least ``nbytes`` long, outside any timing: what is added is a hole."""
        if os.fstat(self.fd).st_size < nbytes:
            os.ftruncate(self.fd, nbytes)

    def close(self) -> None:
        for reg in self.regs:
            self.agent.deregister_memory(reg)
        os.close(self.fd)


def _aligned(nbytes: int) -> torch.Tensor:
    """A uint8 buffer whose first byte sits on a 4096-byte boundary (O_DIRECT needs it)."""
    raw = torch.empty(nbytes + BLOCK, dtype=torch.uint8)
    skip = -raw.data_ptr() % BLOCK
    return raw[skip : skip + nbytes]
