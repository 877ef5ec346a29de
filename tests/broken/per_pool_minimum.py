"""Defect: ``batch_exists_v2`` takes the minimum of each pool's best prefix, as upstream NIXL does.

With a TRAILING_PAGES pool holding pages 3 and 5 of 5 and an ALL_PAGES pool holding 4, the
minimum says 4, yet no Mamba state exists for page 4: the prefix is not restorable.
"""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo, PoolTransfer, PoolTransferResult


class PerPoolMinimumBackend(MemoryBackend):
    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        right = super().batch_exists_v2(keys, pool_transfers, extra_info)
        hits = dict(right.extra_pool_hit_pages)
        gating = [
            hits.get(str(t.name), 0) for t in pool_transfers or [] if t.hit_policy.value != "block_groups"
        ]
        return PoolTransferResult(min([hits.get("kv", 0), *gating]), hits)


SPEC = BackendSpec("broken-per-pool-minimum", PerPoolMinimumBackend, CAPABILITIES)
