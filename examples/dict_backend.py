"""A complete, small HiCache v2 storage backend, and the spec that certifies it.

Copy this file to start a backend of your own. It keeps each page in a dictionary (one per storage
folder, so every rank of a deployment built on one folder shares it), moves KV through the v1
calls and every pool, KV and side pools, through the v2 calls, and answers ``batch_exists_v2`` for
the ALL_PAGES and TRAILING_PAGES hit policies. It claims neither persistence nor files, so its
certificate reads *certified for a subset*. Certify it::

    python -m pytest --backend=examples.dict_backend:SPEC --cert-report=cert

Two helpers of the reference backend's interface module do the parts every backend must get
exactly right: ``page_starts`` refuses malformed requests (keys, index tensors) and gives each
page's first slot, and ``shard`` names the part of a deployment an entry belongs to (SGLang's rule:
the TP rank unless the pool is replicated across ranks, as MLA is; the pipeline stage; the
context-parallel rank).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import torch

from conformance.capabilities import SIDE_POOLS, BackendSpec, Capabilities
from reference_backend.interface import (
    HiCacheStorageConfig,
    PoolHitPolicy,
    PoolName,
    PoolTransfer,
    PoolTransferResult,
    page_starts,
    shard,
)

_FOLDERS: dict[str, dict[tuple[Any, ...], bytes]] = {}
_LOCK = threading.Lock()
KV = str(PoolName.KV)


class DictBackend:
    """Pages in a dictionary shared by every instance built on one storage folder."""

    def __init__(self, config: HiCacheStorageConfig, storage_dir: Path) -> None:
        self.config = config
        with _LOCK:
            self.store = _FOLDERS.setdefault(str(storage_dir), {})
        self.pools: dict[str, Any] = {}

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        self.pools[KV] = mem_pool_host

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: PoolName) -> None:
        self.pools[str(host_pool_name)] = host_pool

    # -- one pool's pages ------------------------------------------------------------------------

    def _name(self, pool: str, key: str) -> tuple[Any, ...]:
        """The entry a key names: the model exactly as given, the pool, its shard, and the key."""
        return (self.config.model_name, pool, shard(self.config, pool), key)

    def _present(self, pool: str, key: str) -> bool:
        return self._name(pool, key) in self.store

    def _set(self, pool: str, keys: Any, host_indices: Any) -> list[bool]:
        host = self.pools.get(pool)
        starts = None if host is None else page_starts(host, keys, host_indices)
        if host is None or starts is None:  # an unregistered pool or a malformed request stores nothing
            return [False] * (len(keys) if isinstance(keys, list) else 0)
        # copy every page before returning: the controller reuses host memory at once
        pages = [host.get_data_page(s, flat=True).contiguous().view(torch.uint8) for s in starts]
        with _LOCK:
            for key, page in zip(keys, pages):
                self.store[self._name(pool, key)] = page.numpy().tobytes()
        return [True] * len(keys)

    def _get(self, pool: str, keys: Any, host_indices: Any) -> list[bool]:
        host = self.pools.get(pool)
        starts = None if host is None else page_starts(host, keys, host_indices)
        if host is None or starts is None:
            return [False] * (len(keys) if isinstance(keys, list) else 0)
        with _LOCK:
            found = [self.store.get(self._name(pool, k)) for k in keys]
        done = []
        for start, data in zip(starts, found):
            page = host.get_dummy_flat_data_page()
            raw = page.view(torch.uint8).reshape(-1)
            if data is None or raw.numel() != len(data):
                done.append(False)  # absent, or stored by a pool of another format
                continue
            if data:  # a pool with no bytes a page (DeepSeek-V4's KV anchor) has nothing to copy
                raw.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
            host.set_from_flat_data_page(start, page)
            done.append(True)
        return done

    # -- v1: KV ----------------------------------------------------------------------------------

    def batch_set_v1(self, keys: list[str], host_indices: torch.Tensor, extra_info: Any = None) -> list[bool]:
        return self._set(KV, keys, host_indices)

    def batch_get_v1(self, keys: list[str], host_indices: torch.Tensor, extra_info: Any = None) -> list[bool]:
        return self._get(KV, keys, host_indices)

    def batch_exists(self, keys: list[str], extra_info: Any = None) -> int:
        """How many keys, from the first, are stored: SGLang loads that prefix."""
        return _leading([self._present(KV, k) for k in keys])

    # -- v2: every pool --------------------------------------------------------------------------

    def batch_set_v2(self, transfers: list[PoolTransfer], extra_info: Any = None) -> dict[str, list[bool]]:
        return {str(t.name): self._set(str(t.name), t.keys, t.host_indices) for t in transfers}

    def batch_get_v2(self, transfers: list[PoolTransfer], extra_info: Any = None) -> dict[str, list[bool]]:
        return {str(t.name): self._get(str(t.name), t.keys, t.host_indices) for t in transfers}

    def batch_exists_v2(
        self, keys: list[str], pool_transfers: list[PoolTransfer] | None = None, extra_info: Any = None
    ) -> PoolTransferResult:
        """The usable prefix: the longest one KV and every queried pool can restore.

        ALL_PAGES: every page up to the prefix is stored. TRAILING_PAGES: the last ``w`` pages
        ending at the prefix are (``w``: the transfer's own key count, at least 1).
        """
        kv_pages = _leading([self._present(KV, k) for k in keys])
        usable = set(range(1, kv_pages + 1))
        hits = {KV: kv_pages} if kv_pages else {}
        for t in pool_transfers or []:
            pool, policy = str(t.name), PoolHitPolicy(t.hit_policy)
            held = [self._present(pool, keys[i]) for i in range(kv_pages)]
            if policy is PoolHitPolicy.ALL_PAGES:
                restorable = set(range(1, _leading(held) + 1))
            elif policy is PoolHitPolicy.TRAILING_PAGES:
                window = max(1, len(t.keys or []))
                restorable = {p for p in range(1, kv_pages + 1) if all(held[max(0, p - window) : p])}
            else:
                raise ValueError(f"hit policy {policy.value} is not supported")
            usable &= restorable
            if restorable:
                hits[pool] = max(restorable)
        return PoolTransferResult(max(usable, default=0), hits, sorted(usable))

    # -- lifecycle -------------------------------------------------------------------------------

    def clear(self) -> bool:
        with _LOCK:
            self.store.clear()
        return True

    def close(self) -> None:
        self.pools.clear()


def _leading(flags: list[bool]) -> int:
    """How many flags are True before the first False."""
    return next((i for i, flag in enumerate(flags) if not flag), len(flags))


def make(config: HiCacheStorageConfig, storage_dir: Path) -> DictBackend:
    """The factory the suite calls: once per instance, on an empty folder of its own (or again on the
    same folder, for another rank of the deployment)."""
    return DictBackend(config, storage_dir)


SPEC = BackendSpec(
    "dict-example",
    make,
    Capabilities(
        v1_kv=True,  # KV through batch_set_v1 / batch_get_v1 / batch_exists
        kv_through_v2=True,  # and through batch_set_v2 / batch_get_v2 beside the side pools
        side_pools=SIDE_POOLS,  # every side pool SGLang has
        hit_policies=frozenset({PoolHitPolicy.ALL_PAGES, PoolHitPolicy.TRAILING_PAGES}),
        concurrent=True,  # one lock: callable from several threads at once
    ),
    version="1.0.0",
)
