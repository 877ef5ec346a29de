"""Which ranks share a stored entry, and which rank writes it: SGLang 0.5.23's rule, stated once.

Everything in the suite that needs "the same entry" (the oracle's dictionary, the stateful model,
the in-memory model backend, the reference backend's names, the broken backends' correct parts)
asks this module, or the rule it builds on: :func:`~reference_backend.interface.shard`, in the
module the suite shares with the reference backend (which must load without the suite). What
SGLang 0.5.23 does, read from its code:

- ``mem_cache/hicache_storage.py``, ``HiCacheStorageConfig``: ``dcp_size > 1`` is valid only for
  MLA, with ``tp_size % dcp_size == 0``, ``tp_rank % dcp_size == dcp_rank`` (DCP groups are
  contiguous within TP) and a positive ``logical_page_size`` that ``dcp_size`` divides; anything
  else raises ``ValueError``. ``is_storage_writer`` is ``not is_mla_model or tp_rank == dcp_rank``:
  every rank writes TP-sharded state, and replicated (MLA) state is written by the first DCP
  group only (rank 0 without DCP).
- ``managers/cache_controller.py``, ``_generate_storage_config``: ``is_mla_model`` means
  "rank-replicated" (MLA and DeepSeek-V4's compressed MLA pools); ``tp_rank``/``tp_size`` are the
  attention-TP coordinates under DP attention, with ``dp_rank`` beside them; ``attn_cp_rank/size``
  come from the attention-CP group; ``logical_page_size`` is the controller's page size when
  ``dcp_size > 1`` and None otherwise. ``backup_skip`` is ``not is_storage_writer``: a non-writer
  rank never backs KV up, and readers on every rank fetch the writer's entry.
- ``mem_cache/hybrid_cache/hybrid_cache_controller.py``, ``should_backup``: on a non-writer rank
  Mamba (KDA) state is still backed up, because it is TP-sharded even when the KV is replicated;
  Mooncake alone also keys an MHA draft pool per rank. The suite's geometries have no MHA draft on
  an MLA target, so here every pool but Mamba follows the model's replication.
- ``HiCacheFile`` (``hicache_storage.py``): suffix ``_{model}_{tp_rank}_{tp_size}`` (TP-sharded) or
  ``_{model}`` (MLA), then ``_{pp_size}_{pp_rank}`` when ``pp_size > 1``, ``_cp{rank}_{size}`` when
  ``attn_cp_size > 1`` ("each CP rank holds a disjoint slice of every page"), and under DCP
  ``_tp{tp_size}_dcp{dcp_rank}_{dcp_size}_page{logical_page_size}`` ("equivalent MLA shards in
  different DCP groups share a file"). Mamba keys take the TP suffix even for MLA.
- ``mem_cache/storage/mooncake_store/mooncake_store.py``: the same dimensions (MHA suffix
  ``{tp_rank}[_{pp_rank}]``, MLA suffix ``[{pp_rank}]`` or ``dcp{dcp_rank}_cp{cp_rank}[_{pp_rank}]``
  under DCP, with a prefix naming ``tp_size``, ``dcp_size``, ``logical_page_size``, ``pp_size``
  and ``attn_cp_size``); Mamba and MHA SWA/draft use the per-rank suffix. With ``tp_lcm_size``
  and the ``page_head`` layout (``should_split_heads``) it splits MHA heads onto
  ``tp_lcm_size`` virtual ranks so that deployments of different TP sizes share; neither
  HiCacheFile nor HiCacheNixl reads these two fields, and the suite draws no ``page_head`` pool.
- ``mem_cache/storage/nixl/hicache_nixl.py``: suffix ``_{model}_{tp_rank}_{tp_size}`` or
  ``_{model}`` (MLA), Mamba on the TP suffix, and ``backup_skip = is_mla_model and tp_rank != 0``;
  it reads neither PP, CP nor DCP (see ``docs/upstream-findings.md``).
- ``mem_cache/hicache_key_scheme.py`` (the opt-in ``unified`` scheme) names what an object holds,
  a layer range by head range, instead of who wrote it; the default scheme above is what the
  suite certifies.

So an entry is named by the model (exactly as given: ``org/m`` and ``org-m`` are two models), the
pool, the key, and the shard: the pipeline stage (rank and size), the attention-CP rank (and
size), the DCP shard (with ``tp_size`` and the logical page size, as upstream keys it) and, unless
the pool is replicated, the TP rank and size. ``dp_rank`` is no part of it: DP-attention groups
with the same attention-TP rank hold the same heads of the same tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from conformance.model.interface import HiCacheStorageConfig, PoolName
from reference_backend.interface import rank_replicated, shard

EntryIdentity = tuple[tuple[str | None, tuple[str, ...]], str, str]


@dataclass(frozen=True)
class Shape:
    """A rank's place in a deployment: the ``HiCacheStorageConfig`` fields that pick its shard.

    Validation is SGLang's own (``HiCacheStorageConfig.__post_init__``) plus positive sizes; ranks
    outside their size are allowed, as upstream allows them, so adversarial splits such as rank 11
    of 2 can be named.
    """

    tp_rank: int = 0
    tp_size: int = 1
    pp_rank: int = 0
    pp_size: int = 1
    attn_cp_rank: int = 0
    attn_cp_size: int = 1
    dcp_rank: int = 0
    dcp_size: int = 1
    logical_page_size: int | None = None

    def __post_init__(self) -> None:
        for name in ("tp_size", "pp_size", "attn_cp_size", "dcp_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if not 0 <= self.dcp_rank < self.dcp_size:
            raise ValueError(f"dcp_rank {self.dcp_rank} is outside dcp_size {self.dcp_size}")
        if self.dcp_size == 1:
            return
        if self.tp_size % self.dcp_size or not 0 <= self.tp_rank < self.tp_size:
            raise ValueError(f"DCP needs tp_size divisible by dcp_size and a rank inside it: {self}")
        if self.tp_rank % self.dcp_size != self.dcp_rank:
            raise ValueError(f"DCP groups are contiguous within TP: tp_rank % dcp_size != dcp_rank in {self}")
        if not self.logical_page_size or self.logical_page_size % self.dcp_size:
            raise ValueError(f"DCP needs a positive logical page size that dcp_size divides: {self}")

    @classmethod
    def of(cls, config: HiCacheStorageConfig) -> Shape:
        """The shape a config describes."""
        return cls(**{f.name: getattr(config, f.name) for f in fields(cls)})

    def config_fields(self) -> dict[str, Any]:
        """Keyword arguments for ``HiCacheStorageConfig``."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def label(self) -> str:
        """A short spelling for failure messages: ``tp1/4 pp0/2 cp1/2 dcp1/2@64``."""
        text = f"tp{self.tp_rank}/{self.tp_size} pp{self.pp_rank}/{self.pp_size}"
        text += f" cp{self.attn_cp_rank}/{self.attn_cp_size}"
        if self.dcp_size > 1:
            text += f" dcp{self.dcp_rank}/{self.dcp_size}@{self.logical_page_size}"
        return text


def entry_identity(config: HiCacheStorageConfig, pool: PoolName | str, key: str) -> EntryIdentity:
    """Which stored entry a (config, pool, key) names: equal exactly when SGLang shares the entry."""
    return ((config.model_name, shard(config, pool)), str(pool), key)


def is_storage_writer(config: HiCacheStorageConfig, pool: PoolName | str) -> bool:
    """Whether this rank backs ``pool`` up: every rank for sharded state, the first DCP group
    (rank 0 without DCP) for replicated state; the others read what it wrote."""
    return not rank_replicated(config, pool) or config.tp_rank == config.dcp_rank


def fit(shape: Shape, dcp: bool) -> Shape:
    """``shape`` without its DCP fields unless ``dcp`` (the model runs under DCP)."""
    if dcp or shape.dcp_size == 1:
        return shape
    return Shape(**{**shape.config_fields(), "dcp_rank": 0, "dcp_size": 1, "logical_page_size": None})


def writer_of(shape: Shape) -> Shape:
    """The rank whose replicated entries ``shape`` reads: same stage, CP and DCP rank, TP rank = DCP rank."""
    return Shape(**{**shape.config_fields(), "tp_rank": shape.dcp_rank})
