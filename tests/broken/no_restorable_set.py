"""Defect: ``restorable_prefix_pages`` is left None, yet the backend claims to fill it.

SGLang's controller then takes every prefix up to the hit as restorable and may load a TRAILING
pool's state for a length where none exists.
"""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo, PoolTransfer, PoolTransferResult


class NoRestorableSetBackend(MemoryBackend):
    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        right = super().batch_exists_v2(keys, pool_transfers, extra_info)
        return PoolTransferResult(right.kv_hit_pages, right.extra_pool_hit_pages, None)


SPEC = BackendSpec("broken-no-restorable-set", NoRestorableSetBackend, CAPABILITIES)
