"""A small, correct in-memory backend: the suite's model implementation and a quick target.

It keeps each page as the raw bytes of the pool's flat page, keyed by the entry SGLang's
sharing rule names (:func:`conformance.model.sharing.entry_identity`). Instances built on the same
storage location share one store, so the suite can restart it or add a second TP rank within a process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from conformance.model.capabilities import SIDE_POOLS, BackendSpec, Capabilities
from conformance.model.interface import (
    HiCacheStorageConfig,
    HiCacheStorageExtraInfo,
    PoolHitPolicy,
    PoolName,
    PoolTransfer,
    PoolTransferResult,
)
from conformance.model.oracle import expected_exists_v2, leading_run
from conformance.model.sharing import entry_identity
from reference_backend.interface import page_starts

ObjectName = tuple[Any, ...]
PageWork = Callable[[str, Any, Any, list[int]], list[bool]]
"""What a store or a load does once its request is valid: (pool name, pool, keys, page starts) ->
a result per key. Subclasses change this, not the validation around it."""

_STORES: dict[str, dict[ObjectName, bytes]] = {}
_STORES_LOCK = threading.Lock()


class MemoryBackend:
    """HiCache v2 storage in a process-wide dictionary."""

    def __init__(self, config: HiCacheStorageConfig, storage_dir: Path) -> None:
        self.config = config
        with _STORES_LOCK:
            self._store = _STORES.setdefault(str(storage_dir), {})
        self._lock = threading.Lock()
        self.registered_pools: dict[str, Any] = {}

    # -- registration ------------------------------------------------------------------------

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        self.registered_pools[str(PoolName.KV)] = mem_pool_host

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: PoolName) -> None:
        self.registered_pools[str(host_pool_name)] = host_pool

    def on_host_pools_registered(self) -> None:
        """Nothing to finalise: the store needs no up-front geometry."""

    # -- naming ------------------------------------------------------------------------------

    def object_name(self, pool_name: str, key: str) -> ObjectName:
        """The entry SGLang's sharing rule names (:mod:`conformance.model.sharing`): (scope, pool, key)."""
        return entry_identity(self.config, pool_name, key)

    # -- page codec --------------------------------------------------------------------------

    @staticmethod
    def page_bytes(page: torch.Tensor) -> bytes:
        return bytes(page.contiguous().view(torch.uint8).numpy().tobytes())

    @staticmethod
    def fill_page(page: torch.Tensor, data: bytes) -> bool:
        """Copy ``data`` into a flat page of exactly its size; False, untouched, for any other size."""
        raw = page.view(torch.uint8).reshape(-1)
        if raw.numel() != len(data):
            return False
        if data:  # a KV anchor's page (DeepSeek-V4's LogicalHostPool) holds no bytes
            raw.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
        return True

    def capture(self, pool: Any, start: int) -> bytes:
        return self.page_bytes(pool.get_data_page(start, flat=True))

    def restore(self, pool: Any, start: int, data: bytes) -> bool:
        page = pool.get_dummy_flat_data_page()
        if not self.fill_page(page, data):
            return False
        pool.set_from_flat_data_page(start, page)
        return True

    # -- the store ---------------------------------------------------------------------------

    def present(self, pool_name: str, key: str) -> bool:
        return self.object_name(pool_name, key) in self._store

    def starts(self, pool: Any, keys: Any, host_indices: Any) -> list[int] | None:
        """Each key's first slot in ``pool``, or None for a malformed request."""
        return page_starts(pool, keys, host_indices)

    def _set(self, pool_name: str, keys: Any, host_indices: Any) -> list[bool]:
        return self._validated(pool_name, keys, host_indices, self._write_pages)

    def _get(self, pool_name: str, keys: Any, host_indices: Any) -> list[bool]:
        return self._validated(pool_name, keys, host_indices, self._read_pages)

    def _validated(
        self,
        pool_name: str,
        keys: Any,
        host_indices: Any,
        then: Callable[[str, Any, Any, list[int]], list[bool]],
    ) -> list[bool]:
        """``then(pool_name, pool, keys, starts)`` for a well-formed request to a registered pool;
        all False, untouched, for any other."""
        pool = self.registered_pools.get(pool_name)
        starts = None if pool is None else self.starts(pool, keys, host_indices)
        if starts is None:
            return [False] * (len(keys) if isinstance(keys, list) else 0)
        return then(pool_name, pool, keys, starts)

    def _write_pages(self, pool_name: str, pool: Any, keys: Any, starts: list[int]) -> list[bool]:
        pages = [self.capture(pool, s) for s in starts]
        with self._lock:
            for key, page in zip(keys, pages):
                self._store[self.object_name(pool_name, key)] = page
        return [True] * len(keys)

    def _read_pages(self, pool_name: str, pool: Any, keys: Any, starts: list[int]) -> list[bool]:
        with self._lock:
            pages = [self._store.get(self.object_name(pool_name, k)) for k in keys]
        return [page is not None and self.restore(pool, start, page) for start, page in zip(starts, pages)]

    # -- v1 ----------------------------------------------------------------------------------

    def batch_set_v1(
        self,
        keys: list[str],
        host_indices: torch.Tensor,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> list[bool]:
        return self._set(str(PoolName.KV), keys, host_indices)

    def batch_get_v1(
        self,
        keys: list[str],
        host_indices: torch.Tensor,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> list[bool]:
        return self._get(str(PoolName.KV), keys, host_indices)

    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        return leading_run([self.present(str(PoolName.KV), k) for k in keys])

    # -- the legacy generic calls -------------------------------------------------------------

    def batch_set(self, keys: list[str], values: list[torch.Tensor]) -> bool:
        """Flat KV data pages, as the controller's legacy path hands them over: all stored, or none."""
        pool = self.registered_pools.get(str(PoolName.KV))
        if pool is None or not isinstance(keys, list) or not isinstance(values, list):
            return False
        size = pool.get_dummy_flat_data_page().view(torch.uint8).numel()
        if len(keys) != len(values) or len(set(keys)) != len(keys):
            return False
        if not all(isinstance(k, str) for k in keys):
            return False
        pages = [self.page_bytes(v) for v in values]
        if any(len(page) != size for page in pages):
            return False
        with self._lock:
            for key, page in zip(keys, pages):
                self._store[self.object_name(str(PoolName.KV), key)] = page
        return True

    def batch_get(self, keys: list[str], target_locations: list[torch.Tensor]) -> list[torch.Tensor | None]:
        """Each stored page copied into its target; None for a key not stored (or a misfit target)."""
        if len(keys) != len(target_locations):
            raise ValueError(f"{len(keys)} keys and {len(target_locations)} target pages")
        with self._lock:
            pages = [self._store.get(self.object_name(str(PoolName.KV), k)) for k in keys]
        return [
            target if page is not None and self.fill_page(target, page) else None
            for page, target in zip(pages, target_locations)
        ]

    def exists(self, key: str) -> bool:
        return self.present(str(PoolName.KV), key)

    # -- v2 ----------------------------------------------------------------------------------

    def batch_set_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        return {str(t.name): self._set(str(t.name), t.keys, t.host_indices) for t in transfers}

    def batch_get_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        return {str(t.name): self._get(str(t.name), t.keys, t.host_indices) for t in transfers}

    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        expected = expected_exists_v2(keys, pool_transfers or [], self.present)
        return PoolTransferResult(
            expected.kv_hit_pages, expected.extra_pool_hit_pages, expected.restorable_prefix_pages
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def clear(self) -> bool:
        with self._lock:
            self._store.clear()
        return True

    def close(self) -> None:
        self.registered_pools.clear()

    def stored_object_count(self) -> int:
        return len(self._store)


CAPABILITIES = Capabilities(
    v1_kv=True,
    generic_kv=True,
    kv_through_v2=True,
    side_pools=SIDE_POOLS,
    hit_policies=frozenset(PoolHitPolicy),
    persistence=False,
    concurrent=True,
    reports_transfer_mode=False,
    enumerates_objects=True,
    decode_context_parallel=True,
    refuses_per_pool=True,  # each transfer's request is checked and answered on its own
)

SPEC = BackendSpec("memory", MemoryBackend, CAPABILITIES, version="0.1.0")
