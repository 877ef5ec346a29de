"""Mutants of the reference backend: each carries one real defect the suite must kill.

``python -m tests.mutants.kill_matrix`` runs the whole suite on every mutant and prints which
property family killed it. A mutant that survives names a missing property.
"""

from __future__ import annotations

import ctypes
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import (
    HiCacheStorageConfig,
    HiCacheStorageExtraInfo,
    PoolHitPolicy,
    PoolName,
    PoolTransfer,
    PoolTransferResult,
)
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend
from reference_backend.naming import Scope, scope_for
from reference_backend.plan import BatchPlanner, Item, Run
from reference_backend.pools import Pool
from reference_backend.record import UNIT
from reference_backend.staging import Staging, payload
from reference_backend.transfer import Lane
from tests.broken import (
    in_place_writes,
    lenient_config,
    offset_blind_indices,
    partial_family_eviction,
    per_process_budget,
    size_blind_exists,
    stale_index,
    truthy_strings,
    unaligned_zero_copy,
    unpinned_exists,
)

TRANSFER_QUEUE = 2048
"""Page records one set may move in ``BoundedTransferQueue``: Mooncake's 1,024 queued transfers
per peer plus 1,024 waiting for a place."""


def _spec(cls: type[NixlBackend]) -> BackendSpec:
    def factory(config: HiCacheStorageConfig, storage_dir: Path) -> NixlBackend:
        return cls(config, storage_dir)

    return BackendSpec(f"mutant-{cls.__name__}", factory, NIXL_CAPABILITIES)


class StagingInPoolDtype(NixlBackend):
    """Staged bytes pass through a buffer of the pool's dtype, converting values."""

    def stage(self, lane: Lane, items: list[Item], writing: bool) -> None:
        super().stage(lane, items, writing)
        for item in items if writing else []:
            if item.pool.zero_copy:
                continue
            for ptr, size in payload(item):
                raw = torch.frombuffer((ctypes.c_char * size).from_address(ptr), dtype=torch.uint8).clone()
                typed = raw.to(item.pool.host.dtype).to(torch.uint8)
                ctypes.memmove(ptr, typed.data_ptr(), size)


class _OneBuffer(Staging):
    def buffer(self, pool: str, nbytes: int) -> torch.Tensor:
        return super().buffer("shared", max(nbytes, 1 << 22))


class SharedStaging(NixlBackend):
    """One staging buffer per direction, shared by every pool of a batch."""

    def __init__(self, config: HiCacheStorageConfig, location: Any = None) -> None:
        super().__init__(config, location)
        for lane in self.lanes.values():
            lane.staging = _OneBuffer(lane.agent)


class _PoolBlindNames(BatchPlanner):
    def digests(self, name: str, keys: list[str]) -> list[bytes]:
        return super().digests(str(PoolName.KV), keys)


class _RankBlindNames(BatchPlanner):
    def scope(self, name: str) -> Scope:
        return scope_for(replace(self.storage_config, tp_rank=0, tp_size=1), name)


class _PipelineBlindNames(BatchPlanner):
    def scope(self, name: str) -> Scope:
        return scope_for(replace(self.storage_config, pp_rank=0, pp_size=1), name)


class _ContextParallelBlindNames(BatchPlanner):
    def scope(self, name: str) -> Scope:
        return scope_for(replace(self.storage_config, attn_cp_rank=0, attn_cp_size=1), name)


class _DcpBlindNames(BatchPlanner):
    def scope(self, name: str) -> Scope:
        return scope_for(replace(self.storage_config, dcp_rank=0, dcp_size=1, logical_page_size=None), name)


class _PhysicalPageSpan(BatchPlanner):
    def plan(self, name: str, keys: Any, host_indices: Any) -> list[Item] | None:
        pool = self.pools.get(name)
        physical = (
            pool is not None
            and isinstance(keys, list)
            and isinstance(host_indices, torch.Tensor)
            and host_indices.numel() == len(keys) * int(pool.host.page_size)
        )
        return super().plan(name, keys, host_indices) if physical else None


class _OffsetBlindIndices(BatchPlanner):
    def plan(self, name: str, keys: Any, host_indices: Any) -> list[Item] | None:
        return super().plan(name, keys, offset_blind_indices.from_storage_start(host_indices))


class _PerRankMlaNames(BatchPlanner):
    def scope(self, name: str) -> Scope:
        return scope_for(replace(self.storage_config, is_mla_model=False), name)


class PoolBlindNames(NixlBackend):
    """Object names leave out the pool: pools sharing a key share a file."""

    planner_type = _PoolBlindNames


class RankBlindNames(NixlBackend):
    """Object names leave out the TP rank, so ranks overwrite each other's shards."""

    planner_type = _RankBlindNames


class PipelineBlindNames(NixlBackend):
    """Object names leave out the pipeline stage: two stages' layers of a page share a record."""

    planner_type = _PipelineBlindNames


class ContextParallelBlindNames(NixlBackend):
    """Object names leave out the attention-CP rank: CP ranks' slices of a page share a record."""

    planner_type = _ContextParallelBlindNames


class DcpBlindNames(NixlBackend):
    """MLA object names leave out the DCP shard: each DCP rank's tokens of a page share a record."""

    planner_type = _DcpBlindNames


class PhysicalPageSpan(NixlBackend):
    """A page spans the pool's physical ``page_size`` slots (the reference backend before the suite
    drew DCP-widened pools): under DCP every request is refused."""

    planner_type = _PhysicalPageSpan


class OffsetBlindIndices(NixlBackend):
    """Index tensors are read from the start of their storage, as native code handed
    ``untyped_storage()`` does: every batch the controller slices past the first moves another
    batch's pages."""

    planner_type = _OffsetBlindIndices


class PerRankMlaNames(NixlBackend):
    """MLA state is named per TP rank: ranks other than the writer miss what it stored."""

    planner_type = _PerRankMlaNames


class OffByOneRun(NixlBackend):
    """batch_exists counts one page past the leading run."""

    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        run = super().batch_exists(keys, extra_info)
        return min(len(keys), run + 1)


class TrailingWindowMisread(NixlBackend):
    """TRAILING_PAGES checks one page fewer than the window."""

    def restorable(self, t: PoolTransfer, present: list[bool]) -> list[bool]:
        shorter = replace(t, keys=(t.keys or [])[1:]) if len(t.keys or []) > 1 else t
        return super().restorable(shorter, present)


class StagedOffsetsShifted(NixlBackend):
    """Staged pages are scattered from offsets one unit off, wrapping inside the record."""

    def receive(self, item: Item) -> bool:
        if item.pool.zero_copy or not item.pool.has_meta:
            return super().receive(item)
        ok = super().receive(item)
        if ok:
            layout = item.pool.layout
            for (ptr, size), off in zip(item.regions, layout.offsets):
                start = (off + UNIT) % layout.size
                ctypes.memmove(ptr, item.slot + start, min(size, layout.size - start))
        return ok


class StaleOverwrite(NixlBackend):
    """A key already on disk is not rewritten: the old bytes stay, and set says True."""

    def write(self, items: list[Item]) -> dict[int, bool]:
        done = super().write([i for i in items if self.log.locate([i.digest])[0] is None])
        return {id(i): done.get(id(i), True) for i in items}


class PartialSuccessAllTrue(NixlBackend):
    """Every key of a set is reported stored, whatever happened to it."""

    def write(self, items: list[Item]) -> dict[int, bool]:
        return dict.fromkeys(super().write(items), True)


class GetWritesOutside(NixlBackend):
    """A staged get copies 64 bytes past each region into host memory."""

    def receive(self, item: Item) -> bool:
        ok = super().receive(item)
        if ok and not item.pool.zero_copy and item.pool.has_meta:
            ptr, size = item.regions[-1]
            ctypes.memmove(ptr + size, item.slot, 64)
        return ok


class NoReadVerification(NixlBackend):
    """Records are neither checksummed nor verified."""

    def __init__(self, config: HiCacheStorageConfig, location: Any = None) -> None:
        super().__init__(config, location)
        self.verify = False


class AnchorWithoutMarkers(NixlBackend):
    """A host pool with no bytes (DeepSeek-V4's KV anchor) is never registered: its keys are never
    stored, so nothing gates the side pools."""

    def register(self, name: str, host: Any) -> None:
        if host.get_dummy_flat_data_page().numel() == 0:
            return
        super().register(name, host)


class BoundedSideBatches(NixlBackend):
    """Side-pool v2 batches over 128 pages are dropped and reported stored (HiCacheNixl's bounce
    buffers hold 128 pages; the controller hands side pools over whole)."""

    def batch_set_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        fits = [t for t in transfers if t.name is PoolName.KV or len(t.keys or []) <= 128]
        done = super().batch_set_v2(fits, extra_info)
        return {str(t.name): done.get(str(t.name), [True] * len(t.keys or [])) for t in transfers}


class BoundedTransferQueue(NixlBackend):
    """One set moves at most 2,048 page records; the rest answer False and are never stored
    (Mooncake's TCP transport queue, finding 24): honest, yet a long context is never kept whole."""

    def write(self, items: list[Item]) -> dict[int, bool]:
        return super().write(items[:TRANSFER_QUEUE])


class CappedExists(NixlBackend):
    """Exists looks at the first 128 keys of a span and no further."""

    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        return super().batch_exists(keys[:128], extra_info)


class UnknownPolicyZero(NixlBackend):
    """A hit policy it does not know is answered as no hit, not refused."""

    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        known = {p.value for p in PoolHitPolicy}
        if any(getattr(t.hit_policy, "value", t.hit_policy) not in known for t in pool_transfers or []):
            return PoolTransferResult(0, {})
        return super().batch_exists_v2(keys, pool_transfers, extra_info)


class NoRestorableSet(NixlBackend):
    """restorable_prefix_pages is left None though the capabilities promise it."""

    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        right = super().batch_exists_v2(keys, pool_transfers, extra_info)
        return PoolTransferResult(right.kv_hit_pages, right.extra_pool_hit_pages, None)


class _FormatBlindTags(BatchPlanner):
    def pool(self, name: str, host: Any) -> Pool:
        pool = super().pool(name, host)
        pool.layout = replace(pool.layout, meaning="")
        return pool


class _FirstPoolsKeys(BatchPlanner):
    def v2(self, transfers: list[PoolTransfer], extra_info: Any, run: Run) -> dict[str, list[bool]]:
        if len(transfers) > 1:
            first = list(transfers[0].keys or [])
            transfers = [transfers[0]] + [
                replace(t, keys=first[: len(t.keys or [])]) if len(t.keys or []) <= len(first) else t
                for t in transfers[1:]
            ]
        return super().v2(transfers, extra_info, run)


class FormatBlindTags(NixlBackend):
    """Record tags leave out the element dtype and tokens per page: a restart with another KV dtype
    reads the old pages into the new pool."""

    planner_type = _FormatBlindTags


class FirstPoolsKeys(NixlBackend):
    """A multi-pool v2 batch is planned with the first pool's keys for every pool, as if the key lists
    were equal: a trailing pool's tail lands under the span's first keys."""

    planner_type = _FirstPoolsKeys


STAGING_IN_POOL_DTYPE = _spec(StagingInPoolDtype)
SHARED_STAGING = _spec(SharedStaging)
POOL_BLIND_NAMES = _spec(PoolBlindNames)
RANK_BLIND_NAMES = _spec(RankBlindNames)
PIPELINE_BLIND_NAMES = _spec(PipelineBlindNames)
CONTEXT_PARALLEL_BLIND_NAMES = _spec(ContextParallelBlindNames)
DCP_BLIND_NAMES = _spec(DcpBlindNames)
PER_RANK_MLA_NAMES = _spec(PerRankMlaNames)
PHYSICAL_PAGE_SPAN = _spec(PhysicalPageSpan)
OFFSET_BLIND_INDICES = _spec(OffsetBlindIndices)
OFF_BY_ONE_RUN = _spec(OffByOneRun)
TRAILING_WINDOW_MISREAD = _spec(TrailingWindowMisread)
STAGED_OFFSETS_SHIFTED = _spec(StagedOffsetsShifted)
STALE_OVERWRITE = _spec(StaleOverwrite)
PARTIAL_SUCCESS_ALL_TRUE = _spec(PartialSuccessAllTrue)
GET_WRITES_OUTSIDE = _spec(GetWritesOutside)
NO_READ_VERIFICATION = _spec(NoReadVerification)
ANCHOR_WITHOUT_MARKERS = _spec(AnchorWithoutMarkers)
SIZE_BLIND_EXISTS = size_blind_exists.SPEC
UNALIGNED_ZERO_COPY = unaligned_zero_copy.SPEC
IN_PLACE_WRITES = in_place_writes.SPEC
BOUNDED_SIDE_BATCHES = _spec(BoundedSideBatches)
BOUNDED_TRANSFER_QUEUE = _spec(BoundedTransferQueue)
CAPPED_EXISTS = _spec(CappedExists)
UNKNOWN_POLICY_ZERO = _spec(UnknownPolicyZero)
NO_RESTORABLE_SET = _spec(NoRestorableSet)
FORMAT_BLIND_TAGS = _spec(FormatBlindTags)
FIRST_POOLS_KEYS = _spec(FirstPoolsKeys)
TRUTHY_STRINGS = truthy_strings.SPEC
LENIENT_CONFIG = lenient_config.SPEC
STALE_INDEX = stale_index.SPEC
PARTIAL_FAMILY_EVICTION = partial_family_eviction.SPEC
UNPINNED_READ = unpinned_exists.SPEC
BUDGET_PER_PROCESS = per_process_budget.SPEC

MUTANTS = [
    "STAGING_IN_POOL_DTYPE",
    "SHARED_STAGING",
    "POOL_BLIND_NAMES",
    "RANK_BLIND_NAMES",
    "SIZE_BLIND_EXISTS",
    "OFF_BY_ONE_RUN",
    "TRAILING_WINDOW_MISREAD",
    "STAGED_OFFSETS_SHIFTED",
    "UNALIGNED_ZERO_COPY",
    "STALE_OVERWRITE",
    "PARTIAL_SUCCESS_ALL_TRUE",
    "GET_WRITES_OUTSIDE",
    "NO_READ_VERIFICATION",
    "IN_PLACE_WRITES",
    "PIPELINE_BLIND_NAMES",
    "CONTEXT_PARALLEL_BLIND_NAMES",
    "DCP_BLIND_NAMES",
    "PER_RANK_MLA_NAMES",
    "PHYSICAL_PAGE_SPAN",
    "ANCHOR_WITHOUT_MARKERS",
    "BOUNDED_SIDE_BATCHES",
    "BOUNDED_TRANSFER_QUEUE",
    "CAPPED_EXISTS",
    "TRUTHY_STRINGS",
    "LENIENT_CONFIG",
    "UNKNOWN_POLICY_ZERO",
    "NO_RESTORABLE_SET",
    "FORMAT_BLIND_TAGS",
    "STALE_INDEX",
    "FIRST_POOLS_KEYS",
    "PARTIAL_FAMILY_EVICTION",
    "UNPINNED_READ",
    "BUDGET_PER_PROCESS",
    "OFFSET_BLIND_INDICES",
]
"""Names of the module attributes above, one mutant each: ``--backend=tests.mutants.catalogue:NAME``."""
