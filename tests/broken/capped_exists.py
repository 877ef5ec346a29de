"""Defect: exists looks at the first 128 keys of a span (one buffer's worth) and stops there."""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo, PoolTransfer, PoolTransferResult

QUERY_PAGES = 128


class CappedExistsBackend(MemoryBackend):
    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        return super().batch_exists(keys[:QUERY_PAGES], extra_info)

    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        return super().batch_exists_v2(keys[:QUERY_PAGES], pool_transfers, extra_info)


SPEC = BackendSpec("broken-capped-exists", CappedExistsBackend, CAPABILITIES)
