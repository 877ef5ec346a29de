"""A complete, small HiCache v2 storage backend, and the spec that certifies it.

Copy this file to start a backend of your own: it keeps each KV page in a dictionary (one per
storage folder, so every rank of a deployment built on one folder shares it), moves KV through the
v1 calls, and claims nothing else, so its certificate reads *certified for a subset*. Certify it::

    python -m pytest --backend=examples.kv_dict_backend:SPEC --cert-report=cert

Two helpers of the reference backend do the parts every backend must get exactly right:
``page_starts`` refuses malformed requests (keys, index tensors) and gives each page's first slot,
and ``shard`` names the part of a deployment an entry belongs to (SGLang's rule: the TP rank
unless the pool is replicated across ranks, as MLA is; the pipeline stage; the context-parallel
rank).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import torch

from conformance.capabilities import BackendSpec, Capabilities
from reference_backend.interface import HiCacheStorageConfig, PoolName, page_starts, shard

_FOLDERS: dict[str, dict[tuple[Any, ...], bytes]] = {}
_LOCK = threading.Lock()


class KVDictBackend:
    """KV pages in a dictionary shared by every instance built on one storage folder."""

    def __init__(self, config: HiCacheStorageConfig, storage_dir: Path) -> None:
        self.config = config
        with _LOCK:
            self.store = _FOLDERS.setdefault(str(storage_dir), {})
        self.kv_pool: Any = None

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        self.kv_pool = mem_pool_host

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: PoolName) -> None:
        """Side pools are not claimed: nothing of theirs is stored."""

    def _name(self, key: str) -> tuple[Any, ...]:
        """The entry a key names: the model exactly as given, its shard, and the key."""
        return (self.config.model_name, shard(self.config, PoolName.KV), key)

    def batch_set_v1(self, keys: list[str], host_indices: torch.Tensor, extra_info: Any = None) -> list[bool]:
        starts = None if self.kv_pool is None else page_starts(self.kv_pool, keys, host_indices)
        if starts is None:  # a malformed request stores nothing
            return [False] * (len(keys) if isinstance(keys, list) else 0)
        # copy every page before returning: the controller reuses host memory at once
        pages = [self.kv_pool.get_data_page(s, flat=True).contiguous().view(torch.uint8) for s in starts]
        with _LOCK:
            for key, page in zip(keys, pages):
                self.store[self._name(key)] = page.numpy().tobytes()
        return [True] * len(keys)

    def batch_get_v1(self, keys: list[str], host_indices: torch.Tensor, extra_info: Any = None) -> list[bool]:
        starts = None if self.kv_pool is None else page_starts(self.kv_pool, keys, host_indices)
        if starts is None:
            return [False] * (len(keys) if isinstance(keys, list) else 0)
        with _LOCK:
            found = [self.store.get(self._name(k)) for k in keys]
        done = []
        for start, data in zip(starts, found):
            page = self.kv_pool.get_dummy_flat_data_page()
            raw = page.view(torch.uint8).reshape(-1)
            if data is None or raw.numel() != len(data):
                done.append(False)  # absent, or stored by a pool of another format
                continue
            if data:  # a pool with no bytes a page (DeepSeek-V4's KV anchor) has nothing to copy
                raw.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
            self.kv_pool.set_from_flat_data_page(start, page)
            done.append(True)
        return done

    def batch_exists(self, keys: list[str], extra_info: Any = None) -> int:
        """How many keys, from the first, are stored: SGLang loads that prefix."""
        with _LOCK:
            for count, key in enumerate(keys):
                if self._name(key) not in self.store:
                    return count
        return len(keys)

    def clear(self) -> bool:
        with _LOCK:
            self.store.clear()
        return True

    def close(self) -> None:
        self.kv_pool = None


def make(config: HiCacheStorageConfig, storage_dir: Path) -> KVDictBackend:
    """The factory the suite calls: once per instance, on an empty folder of its own (or again on the
    same folder, for another rank of the deployment)."""
    return KVDictBackend(config, storage_dir)


SPEC = BackendSpec(
    "kv-dict",
    make,
    Capabilities(v1_kv=True, concurrent=True),  # KV through v1, from several threads at once
    version="1.0.0",
)
