"""Mutants of the reference backend: each carries one real defect the suite must kill.

``python -m tests.mutants.kill_matrix`` runs the whole suite on every mutant and prints which
property family killed it. A mutant that survives names a missing property.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from conformance.capabilities import BackendSpec
from conformance.interface import HiCacheStorageConfig, HiCacheStorageExtraInfo, PoolName, PoolTransfer
from reference_backend.backend import CAPABILITIES, NixlBackend, _Item, _Lane
from reference_backend.naming import scope_for
from reference_backend.record import UNIT
from tests.broken import in_place_writes, size_blind_exists, unaligned_zero_copy


def _spec(cls: type[NixlBackend]) -> BackendSpec:
    def factory(config: HiCacheStorageConfig, storage_dir: Path) -> NixlBackend:
        return cls(config, storage_dir)

    return BackendSpec(f"mutant-{cls.__name__}", factory, CAPABILITIES)


class StagingInPoolDtype(NixlBackend):
    """Staged bytes pass through a buffer of the pool's dtype, converting values."""

    def _stage_out(self, item: _Item) -> None:
        super()._stage_out(item)
        if item.pool.zero_copy:
            return
        payload = self._payload(item)
        for ptr, size in payload:
            raw = torch.frombuffer((ctypes.c_char * size).from_address(ptr), dtype=torch.uint8).clone()
            typed = raw.to(item.pool.host.dtype).to(torch.uint8)
            ctypes.memmove(ptr, typed.data_ptr(), size)


class SharedStaging(NixlBackend):
    """One staging buffer per direction, shared by every pool of a batch."""

    def __init__(self, config: HiCacheStorageConfig, location: Any = None) -> None:
        super().__init__(config, location)
        for lane in self._lanes.values():
            lane.staging_for = self._shared(lane)  # type: ignore[method-assign,assignment]

    @staticmethod
    def _shared(lane: _Lane) -> Callable[[str, int], torch.Tensor]:
        return lambda pool, nbytes: _Lane.staging_for(lane, "shared", max(nbytes, 1 << 22))


class PoolBlindNames(NixlBackend):
    """Object names leave out the pool: pools sharing a key share a file."""

    def digest(self, name: str, key: str) -> bytes:
        return super().digest(str(PoolName.KV), key)


class RankBlindNames(NixlBackend):
    """Object names leave out the TP rank, so ranks overwrite each other's shards."""

    def _register(self, name: str, host: Any) -> None:
        super()._register(name, host)
        self._scopes[name] = scope_for(replace(self.storage_config, tp_rank=0, tp_size=1), name)


class PipelineBlindNames(NixlBackend):
    """Object names leave out the pipeline stage: two stages' layers of a page share a record."""

    def _register(self, name: str, host: Any) -> None:
        super()._register(name, host)
        self._scopes[name] = scope_for(replace(self.storage_config, pp_rank=0, pp_size=1), name)


class ContextParallelBlindNames(NixlBackend):
    """Object names leave out the attention-CP rank: CP ranks' slices of a page share a record."""

    def _register(self, name: str, host: Any) -> None:
        super()._register(name, host)
        self._scopes[name] = scope_for(replace(self.storage_config, attn_cp_rank=0, attn_cp_size=1), name)


class DcpBlindNames(NixlBackend):
    """MLA object names leave out the DCP shard: each DCP rank's tokens of a page share a record."""

    def _register(self, name: str, host: Any) -> None:
        super()._register(name, host)
        blind = replace(self.storage_config, dcp_rank=0, dcp_size=1, logical_page_size=None)
        self._scopes[name] = scope_for(blind, name)


class PerRankMlaNames(NixlBackend):
    """MLA state is named per TP rank: ranks other than the writer miss what it stored."""

    def _register(self, name: str, host: Any) -> None:
        super()._register(name, host)
        self._scopes[name] = scope_for(replace(self.storage_config, is_mla_model=False), name)


class OffByOneRun(NixlBackend):
    """batch_exists counts one page past the leading run."""

    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        run = super().batch_exists(keys, extra_info)
        return min(len(keys), run + 1)


class TrailingWindowMisread(NixlBackend):
    """TRAILING_PAGES checks one page fewer than the window."""

    @staticmethod
    def _restorable(t: PoolTransfer, present: list[bool]) -> list[bool]:
        shorter = replace(t, keys=(t.keys or [])[1:]) if len(t.keys or []) > 1 else t
        return NixlBackend._restorable(shorter, present)


class StagedOffsetsShifted(NixlBackend):
    """Staged pages are scattered from offsets one unit off, wrapping inside the record."""

    def _stage_in(self, item: _Item) -> bool:
        if item.pool.zero_copy or not item.pool.has_meta:
            return super()._stage_in(item)
        ok = super()._stage_in(item)
        if ok:
            layout = item.pool.layout
            for (ptr, size), off in zip(item.regions, layout.offsets):
                start = (off + UNIT) % layout.size
                ctypes.memmove(ptr, item.slot + start, min(size, layout.size - start))
        return ok


class StaleOverwrite(NixlBackend):
    """A key already on disk is not rewritten: the old bytes stay, and set says True."""

    def _write(self, plans: list[list[_Item] | None]) -> list[list[bool]]:
        fresh = [
            [i for i in plan if self._log.locate([i.digest])[0] is None] if plan is not None else None
            for plan in plans
        ]
        done = super()._write(fresh)
        out: list[list[bool]] = []
        for plan, sub, res in zip(plans, fresh, done):
            if plan is None or sub is None:
                out.append([])
                continue
            by_id = dict(zip(map(id, sub), res))
            out.append([by_id.get(id(i), True) for i in plan])
        return out


class PartialSuccessAllTrue(NixlBackend):
    """Every key of a set is reported stored, whatever happened to it."""

    def _write(self, plans: list[list[_Item] | None]) -> list[list[bool]]:
        return [[True] * len(r) for r in super()._write(plans)]


class GetWritesOutside(NixlBackend):
    """A staged get copies 64 bytes past each region into host memory."""

    def _stage_in(self, item: _Item) -> bool:
        ok = super()._stage_in(item)
        if ok and not item.pool.zero_copy and item.pool.has_meta:
            ptr, size = item.regions[-1]
            ctypes.memmove(ptr + size, item.slot, 64)
        return ok


class NoReadVerification(NixlBackend):
    """Records are neither checksummed nor verified."""

    def __init__(self, config: HiCacheStorageConfig, location: Any = None) -> None:
        super().__init__(config, location)
        self.verify = False


STAGING_IN_POOL_DTYPE = _spec(StagingInPoolDtype)
SHARED_STAGING = _spec(SharedStaging)
POOL_BLIND_NAMES = _spec(PoolBlindNames)
RANK_BLIND_NAMES = _spec(RankBlindNames)
PIPELINE_BLIND_NAMES = _spec(PipelineBlindNames)
CONTEXT_PARALLEL_BLIND_NAMES = _spec(ContextParallelBlindNames)
DCP_BLIND_NAMES = _spec(DcpBlindNames)
PER_RANK_MLA_NAMES = _spec(PerRankMlaNames)
OFF_BY_ONE_RUN = _spec(OffByOneRun)
TRAILING_WINDOW_MISREAD = _spec(TrailingWindowMisread)
STAGED_OFFSETS_SHIFTED = _spec(StagedOffsetsShifted)
STALE_OVERWRITE = _spec(StaleOverwrite)
PARTIAL_SUCCESS_ALL_TRUE = _spec(PartialSuccessAllTrue)
GET_WRITES_OUTSIDE = _spec(GetWritesOutside)
NO_READ_VERIFICATION = _spec(NoReadVerification)
SIZE_BLIND_EXISTS = size_blind_exists.SPEC
UNALIGNED_ZERO_COPY = unaligned_zero_copy.SPEC
IN_PLACE_WRITES = in_place_writes.SPEC

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
]
"""Names of the module attributes above, one mutant each: ``--backend=tests.mutants.catalogue:NAME``."""
