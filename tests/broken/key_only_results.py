"""Defect: a multi-pool call answers by key alone: each side pool's flags in ``batch_get_v2``, and
each side pool's figure in ``batch_exists_v2``, are the KV pool's for the same keys, so a key
present in KV but missing (or removed) from a side pool is reported found there, and the other way
round. Pages a pool really holds are still copied where it has them."""

from __future__ import annotations

from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo, PoolName, PoolTransfer, PoolTransferResult
from conformance.model.oracle import expected_exists_v2

KV = str(PoolName.KV)


class KeyOnlyResultsBackend(MemoryBackend):
    def batch_get_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, Any]:
        answers = super().batch_get_v2(transfers, extra_info)
        for t in transfers:
            if str(t.name) != KV and isinstance(t.keys, list):
                answers[str(t.name)] = [self.present(KV, k) for k in t.keys]
        return answers

    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        expected = expected_exists_v2(keys, pool_transfers or [], lambda pool, key: self.present(KV, key))
        return PoolTransferResult(
            expected.kv_hit_pages, expected.extra_pool_hit_pages, expected.restorable_prefix_pages
        )


SPEC = BackendSpec("broken-key-only-results", KeyOnlyResultsBackend, CAPABILITIES)
