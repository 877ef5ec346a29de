"""What the reference backend and the conformance suite both speak: the one module they share.

- SGLang's HiCache v2 storage types, mirrored without an SGLang dependency. Names, values and
  field order follow ``sglang.srt.mem_cache.hicache_storage`` (0.5.23), so a backend written
  against SGLang can be handed to the suite unchanged, and ours reads SGLang's own objects by value.
- What a valid batch request is (:func:`page_starts`): a malformed one is refused whole, before any I/O.
- Which ranks share a stored entry (:func:`rank_replicated`, :func:`shard`): SGLang's sharing rule,
  stated once; :mod:`conformance.model.sharing` builds the suite's deployment shapes on it and says
  where upstream states it.
- Page-aligned host memory (:func:`aligned_empty`), which O_DIRECT transfers need.

It imports torch and nothing else of either package, so loading the backend never loads the suite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import torch

ALIGNMENT = 4096
"""O_DIRECT's alignment for addresses, lengths and file offsets."""


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
    """How a side pool shrinks the KV hit in ``batch_exists_v2`` (see :mod:`conformance.model.oracle`)."""

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


def page_span(pool: Any) -> int:
    """Slots one page spans in the indices the controller hands over. Under decode context
    parallelism SGLang widens an MLA pool: ``dcp_size`` slots share a physical row, and a page
    spans ``logical_page_size`` of them, addressed ``get_page_buffer_meta`` and ``get_data_page``
    take as they are."""
    return int(getattr(pool, "logical_page_size", pool.page_size))


def slot_count(pool: Any) -> int:
    """Slots the controller addresses in ``pool`` (``logical_size`` under DCP)."""
    return int(getattr(pool, "logical_size", pool.size))


def page_starts(pool: Any, keys: Any, host_indices: Any) -> list[int] | None:
    """First slot of each page of ``pool``, or None when the request is malformed (see
    :func:`request_starts`)."""
    return request_starts(keys, host_indices, page_span(pool), slot_count(pool))


def request_starts(keys: Any, host_indices: Any, span: int, slots: int) -> list[int] | None:
    """First slot of each page, or None when the request is malformed.

    Keys must be distinct non-empty strings without NUL; ``host_indices`` a 1-D integer tensor of
    whole, in-range pages of ``span`` slots out of ``slots``, one page per key.
    """
    if not isinstance(keys, list) or not isinstance(host_indices, torch.Tensor):
        return None
    try:
        joined = "".join(keys)  # a TypeError where a key is no string
    except TypeError:
        return None
    if "\x00" in joined or not all(keys) or len(set(keys)) != len(keys):
        return None
    if host_indices.dim() != 1 or host_indices.dtype not in _INDEX_TYPES:
        return None
    if host_indices.numel() != len(keys) * span:
        return None
    starts = _every(host_indices, span)
    if starts and (min(starts) < 0 or max(starts) + span > slots):
        return None
    if span > 1 and any(s % span for s in starts):
        return None
    return starts


_INDEX_TYPES = (torch.int64, torch.int32)


def _every(indices: torch.Tensor, step: int) -> list[int]:
    """Every ``step``-th index as Python ints: through a NumPy view where the tensor has one (a
    tensor slice alone costs more than the rest of a one-page request's checks)."""
    try:
        out: list[int] = indices.numpy()[::step].tolist()
    except (RuntimeError, TypeError):  # on a device, or part of an autograd graph
        out = indices[::step].tolist()
    return out


def aligned_empty(
    shape: Sequence[int], dtype: torch.dtype, misalign: int = 0, alignment: int = ALIGNMENT
) -> torch.Tensor:
    """A tensor whose first byte sits ``misalign`` bytes past an ``alignment`` boundary.

    The torch CPU allocator promises 64 bytes only, so over-allocate and slice.
    """
    nbytes = dtype.itemsize
    for dim in shape:
        nbytes *= dim
    raw = torch.empty(nbytes + 2 * alignment, dtype=torch.uint8)
    start = (misalign - raw.data_ptr()) % alignment
    return raw[start : start + nbytes].view(dtype).reshape(tuple(shape))


def rank_replicated(config: HiCacheStorageConfig, pool: PoolName | str) -> bool:
    """Whether every TP rank holds the same bytes of ``pool``: MLA state is, Mamba state never."""
    return bool(config.is_mla_model) and str(pool) != str(PoolName.MAMBA)


def shard(config: HiCacheStorageConfig, pool: PoolName | str) -> tuple[str, ...]:
    """The parts of the config that pick ``pool``'s shard, each spelled unambiguously."""
    parts = [f"pp{config.pp_rank}-{config.pp_size}", f"cp{config.attn_cp_rank}-{config.attn_cp_size}"]
    if config.dcp_size > 1:
        parts.append(
            f"dcp{config.dcp_rank}-{config.dcp_size}-tp{config.tp_size}-page{config.logical_page_size}"
        )
    parts.append("replicated" if rank_replicated(config, pool) else f"tp{config.tp_rank}-{config.tp_size}")
    return tuple(parts)
