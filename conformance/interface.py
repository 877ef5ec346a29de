"""SGLang's HiCache v2 storage types and backend contract, mirrored without an SGLang dependency.

Names, values and field order follow ``sglang.srt.mem_cache.hicache_storage`` (0.5.23), so that a
backend written against SGLang can be handed to this suite unchanged. Only duck typing crosses the
seam: a backend that receives these objects sees the same attributes as SGLang's own. A backend
that insists on SGLang's own classes is wrapped by its factory (the one seam, see
:mod:`conformance.capabilities`), which translates there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

import torch


class PoolName(str, Enum):
    """Every pool name SGLang knows; ``str()`` gives the value, as upstream's ``__str__`` does."""

    KV = "kv"
    MAMBA = "mamba"
    SWA = "swa"
    AUXILIARY_SWA = "auxiliary_swa"
    INDEXER = "indexer"
    DEEPSEEK_V4_C1 = "deepseek_v4_c1"
    DEEPSEEK_V4_C1_INDEXER = "deepseek_v4_c1_indexer"
    DEEPSEEK_V4_C1_INDEXER_SCALE = "deepseek_v4_c1_indexer_scale"
    DEEPSEEK_V4_C2 = "deepseek_v4_c2"
    DEEPSEEK_V4_C2_INDEXER = "deepseek_v4_c2_indexer"
    DEEPSEEK_V4_C2_INDEXER_SCALE = "deepseek_v4_c2_indexer_scale"
    DEEPSEEK_V4_C4 = "deepseek_v4_c4"
    DEEPSEEK_V4_C4_INDEXER = "deepseek_v4_c4_indexer"
    DEEPSEEK_V4_C4_INDEXER_SCALE = "deepseek_v4_c4_indexer_scale"
    DEEPSEEK_V4_C128 = "deepseek_v4_c128"
    DEEPSEEK_V4_C4_ROPE = "deepseek_v4_c4_rope"
    DEEPSEEK_V4_C128_ROPE = "deepseek_v4_c128_rope"
    DEEPSEEK_V4_C4_STATE = "deepseek_v4_c4_state"
    DEEPSEEK_V4_C4_INDEXER_STATE = "deepseek_v4_c4_indexer_state"
    DEEPSEEK_V4_C128_STATE = "deepseek_v4_c128_state"
    DRAFT = "draft"
    DRAFT_INDEXER = "draft_indexer"
    DRAFT_SWA = "draft_swa"

    def __str__(self) -> str:
        return self.value


class PoolHitPolicy(str, Enum):
    """How a side pool shrinks the KV hit in ``batch_exists_v2`` (see :mod:`conformance.oracle`)."""

    ALL_PAGES = "all_pages"
    TRAILING_PAGES = "trailing_pages"
    BLOCK_GROUPS = "block_groups"


@dataclass
class PoolTransfer:
    """One pool's share of a v2 batch; host<->storage uses only ``host_indices`` and ``keys``."""

    name: PoolName
    host_indices: torch.Tensor | None = None
    device_indices: torch.Tensor | None = None
    keys: list[str] | None = None
    hit_policy: PoolHitPolicy = PoolHitPolicy.ALL_PAGES
    nodes_to_load: list[Any] | None = None
    indices_from_pool: PoolName | None = None
    block_pages: int = 0
    group_pages: int = 0


@dataclass
class PoolTransferResult:
    """What ``batch_exists_v2`` answers: the usable KV prefix and each pool's own figure."""

    kv_hit_pages: int
    extra_pool_hit_pages: dict[str, int]
    restorable_prefix_pages: list[int] | None = None


@dataclass
class HiCacheStorageExtraInfo:
    prefix_keys: list[str] | None = None
    extra_info: dict[str, Any] | None = None


@dataclass
class HiCacheStorageConfig:
    tp_rank: int
    tp_size: int
    pp_rank: int
    pp_size: int
    attn_cp_rank: int
    attn_cp_size: int
    is_mla_model: bool
    enable_storage_metrics: bool
    is_page_first_layout: bool
    model_name: str | None
    tp_lcm_size: int | None = None
    should_split_heads: bool = False
    dp_rank: int = 0
    extra_config: dict[str, Any] | None = field(default=None)
    dcp_size: int = 1
    dcp_rank: int = 0
    logical_page_size: int | None = None


@runtime_checkable
class HostPool(Protocol):
    """The storage-facing surface of SGLang's host pools (``pool_host/*.py``)."""

    page_size: int
    size: int
    dtype: torch.dtype
    layout: str

    def get_page_buffer_meta(self, indices: torch.Tensor) -> tuple[list[int], list[int]]: ...

    def get_data_page(self, index: int, flat: bool = True) -> torch.Tensor: ...

    def get_dummy_flat_data_page(self) -> torch.Tensor: ...

    def set_from_flat_data_page(self, index: int, data_page: torch.Tensor) -> None: ...

    def is_stride_page_aligned(self, page_size_bytes: int = 4096) -> bool: ...


@runtime_checkable
class HiCacheStorageV2(Protocol):
    """The backend contract the cache controller relies on (v1 KV plus v2 hybrid pools)."""

    def register_mem_pool_host(self, mem_pool_host: Any) -> None: ...

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: PoolName) -> None: ...

    def batch_set_v1(
        self,
        keys: list[str],
        host_indices: torch.Tensor,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> list[bool]: ...

    def batch_get_v1(
        self,
        keys: list[str],
        host_indices: torch.Tensor,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> list[bool]: ...

    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int: ...

    def batch_set_v2(
        self,
        transfers: list[PoolTransfer],
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> dict[str, list[bool]]: ...

    def batch_get_v2(
        self,
        transfers: list[PoolTransfer],
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> dict[str, list[bool]]: ...

    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult: ...

    def clear(self) -> Any: ...

    def close(self) -> None: ...
