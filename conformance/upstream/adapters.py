"""``sglang-file`` and ``sglang-nixl``: SGLang's ``HiCacheFile`` and ``HiCacheNixl`` under the suite.

An adapter does translation and nothing else: the suite's types go in as SGLang's own
(``PoolName``, ``PoolHitPolicy``, ``PoolTransfer``, ``HiCacheStorageConfig``, ``HiCacheStorageExtraInfo``
and, for MHA and Mamba, SGLang's real host pools), SGLang's answers come back as plain values.
Malformed input passes through unchanged, so what the backend does with it is its own doing.

The capabilities are what each backend's code does, read from SGLang 0.5.23:

- ``HiCacheFile`` has no v1 methods (the base class's ``batch_set_v1`` returns None; the cache
  controller drives it through the legacy ``batch_set``), takes KV through v2, answers
  ALL_PAGES and TRAILING_PAGES but raises on BLOCK_GROUPS, writes one file per entry through a
  temp file and rename, and keeps nothing in memory that another instance lacks.
- ``HiCacheNixl`` takes KV through v1 only (it ignores KV registered through v2) and side pools
  through v2; it answers ALL_PAGES and TRAILING_PAGES; it writes in place, one file per entry
  (per region in zero-copy mode), buffered or with O_DIRECT.

Neither checks what it reads, so neither claims ``detects_corruption``.

Budgets: HiCacheFile's ``max_size`` (bytes, or ``"200G"``/``"1Gi"``; LRUFileEvictor) is a byte
bound the suite can set, so ``sglang-file`` claims ``bounded_capacity`` and the capacity family
records what it does. HiCacheNixl's L3 cleaner is not a budget the claim can describe: every 30 s,
on TP rank 0, it deletes the oldest-written key groups once the *file system* is more than
``l3_cleaner_high_watermark`` percent full (80 by default, down to the low mark, 70), whoever
wrote them. No setting bounds the bytes of one deployment, and its work depends on how full the
machine's disk is, so the NIXL adapter switches it off in every mode and claims no budget.
"""

from __future__ import annotations

import os
from dataclasses import asdict, replace
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
from conformance.model.sglang import SGLANG_VERSION, sglang
from conformance.upstream.file_defects import SGLANG_FILE_DEFECTS
from conformance.upstream.host_pools import build_pool, upstream_of
from conformance.upstream.nixl_defects import SGLANG_NIXL_DEFECTS, SGLANG_NIXL_INTERMITTENT

STORAGE_DIR_VARIABLES = ("SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR", "SGLANG_HICACHE_NIXL_BACKEND_STORAGE_DIR")


def _enum(kind: Any, value: Any) -> Any:
    """SGLang's member for one of our enum values; anything else unchanged (bad input stays bad)."""
    try:
        return kind(getattr(value, "value", value))
    except (ValueError, TypeError):
        return value


def to_sglang_transfer(t: PoolTransfer) -> Any:
    sg = sglang()
    return sg.PoolTransfer(
        name=_enum(sg.PoolName, t.name),
        host_indices=t.host_indices,
        device_indices=t.device_indices,
        keys=t.keys,
        hit_policy=_enum(sg.PoolHitPolicy, t.hit_policy),
        nodes_to_load=t.nodes_to_load,
        indices_from_pool=None if t.indices_from_pool is None else _enum(sg.PoolName, t.indices_from_pool),
        block_pages=t.block_pages,
        group_pages=t.group_pages,
    )


def to_sglang_extra_info(info: HiCacheStorageExtraInfo | None) -> Any:
    return None if info is None else sglang().HiCacheStorageExtraInfo(info.prefix_keys, info.extra_info)


def to_sglang_config(config: HiCacheStorageConfig) -> Any:
    return sglang().HiCacheStorageConfig(**asdict(config))


def _flags(result: Any) -> dict[str, list[bool]]:
    return {str(name): list(flags) for name, flags in result.items()}


class UpstreamAdapter:
    """Our calls in, SGLang's types out; every answer is SGLang's backend's own."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        self.backend.register_mem_pool_host(upstream_of(mem_pool_host))

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: PoolName) -> None:
        self.backend.register_mem_host_pool_v2(
            upstream_of(host_pool), _enum(sglang().PoolName, host_pool_name)
        )

    def on_host_pools_registered(self) -> None:
        self.backend.on_host_pools_registered()

    def batch_set_v1(
        self, keys: list[str], host_indices: torch.Tensor, extra_info: HiCacheStorageExtraInfo | None = None
    ) -> Any:
        return self.backend.batch_set_v1(keys, host_indices, to_sglang_extra_info(extra_info))

    def batch_get_v1(
        self, keys: list[str], host_indices: torch.Tensor, extra_info: HiCacheStorageExtraInfo | None = None
    ) -> Any:
        return self.backend.batch_get_v1(keys, host_indices, to_sglang_extra_info(extra_info))

    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        return int(self.backend.batch_exists(keys, to_sglang_extra_info(extra_info)))

    def batch_set(self, keys: list[str], values: list[torch.Tensor]) -> Any:
        """The legacy generic calls: flat pages in and out, nothing to translate."""
        return self.backend.batch_set(keys, values)

    def batch_get(self, keys: list[str], target_locations: list[torch.Tensor]) -> Any:
        return self.backend.batch_get(keys, target_locations)

    def exists(self, key: str) -> Any:
        return self.backend.exists(key)

    def batch_set_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        translated = [to_sglang_transfer(t) for t in transfers]
        return _flags(self.backend.batch_set_v2(translated, to_sglang_extra_info(extra_info)))

    def batch_get_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        translated = [to_sglang_transfer(t) for t in transfers]
        return _flags(self.backend.batch_get_v2(translated, to_sglang_extra_info(extra_info)))

    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        translated = None if pool_transfers is None else [to_sglang_transfer(t) for t in pool_transfers]
        result = self.backend.batch_exists_v2(keys, translated, to_sglang_extra_info(extra_info))
        restorable = result.restorable_prefix_pages
        return PoolTransferResult(
            int(result.kv_hit_pages),
            {str(name): int(pages) for name, pages in result.extra_pool_hit_pages.items()},
            None if restorable is None else list(restorable),
        )

    def clear(self) -> Any:
        return self.backend.clear()

    def close(self) -> None:
        """Close, then let go: HiCacheNixl's ``close`` keeps its NIXL agent (and the agent's kernel
        AIO context) until the object is collected, and a run that holds closed instances exhausts
        the machine's ``fs.aio-max-nr`` (see docs/upstream-findings.md)."""
        closer = getattr(self.backend, "close", None)
        if callable(closer):
            closer()
        self.backend = None


def _without_storage_dir_overrides() -> None:
    """The suite chooses every storage location; an inherited override would merge them all."""
    for variable in STORAGE_DIR_VARIABLES:
        if os.environ.get(variable):
            raise RuntimeError(f"unset {variable}: the suite gives each backend instance its own directory")


def file_factory(config: HiCacheStorageConfig, storage_dir: Path) -> UpstreamAdapter:
    _without_storage_dir_overrides()
    return UpstreamAdapter(sglang().HiCacheFile(to_sglang_config(config), file_path=str(storage_dir)))


def nixl_factory(config: HiCacheStorageConfig, storage_dir: Path) -> UpstreamAdapter:
    _without_storage_dir_overrides()
    return UpstreamAdapter(sglang().HiCacheNixl(to_sglang_config(config), file_path=str(storage_dir)))


VERSION = f"sglang {SGLANG_VERSION}"

SHARED_CLAIMS = Capabilities(
    side_pools=SIDE_POOLS,
    hit_policies=frozenset({PoolHitPolicy.ALL_PAGES, PoolHitPolicy.TRAILING_PAGES}),
    persistence=True,
    concurrent=True,
    multiprocess=True,
    stores_files=True,
    shares_folder=True,  # every file name carries the model name, so deployments can share a folder
)
"""What both backends do alike: one file per entry, every side pool, ALL and TRAILING only."""

SGLANG_FILE = BackendSpec(
    "sglang-file",
    file_factory,
    replace(
        SHARED_CLAIMS,
        v1_kv=False,
        generic_kv=True,  # the controller drives HiCacheFile's KV through batch_set/batch_get
        kv_through_v2=True,
        overwrites=False,
        io_modes={"buffered": {}},
        decode_context_parallel=True,  # SGLang runs DCP on HiCacheFile; HiCacheNixl is refused it
        # LRUFileEvictor (off unless set): an LRU per instance over the .bin files whose names end
        # with its rank's suffix, evicting to eviction_ratio (0.9) of max_size before a write
        bounded_capacity="max_size",
        budget_spellings=True,  # LRUFileEvictor reads max_size with human_readable_int
    ),
    version=VERSION,
    build_pool=build_pool,
    known_defects=SGLANG_FILE_DEFECTS,
)

_NIXL_QUIET = {"l3_cleaner_enabled": False}

SGLANG_NIXL = BackendSpec(
    "sglang-nixl",
    nixl_factory,
    replace(
        SHARED_CLAIMS,
        v1_kv=True,
        kv_through_v2=False,
        fills_restorable_prefix=False,  # batch_exists_v2 returns PoolTransferResult(hit, figures)
        io_modes={
            "buffered": {**_NIXL_QUIET, "use_direct_io": False},
            "direct": {**_NIXL_QUIET, "use_direct_io": True},
            "direct-uring": {
                **_NIXL_QUIET,
                "use_direct_io": True,
                "plugin": {"posix": {"active": True, "use_uring": "true"}},
            },
        },
        direct_io_modes=frozenset({"direct", "direct-uring"}),
    ),
    version=VERSION,
    build_pool=build_pool,
    known_defects=SGLANG_NIXL_DEFECTS,
    intermittent_defects=SGLANG_NIXL_INTERMITTENT,
)
