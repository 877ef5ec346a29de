"""Defect: side-pool bounce buffers hold 128 pages; a larger v2 batch is dropped, reported stored.

SGLang 0.5.23's HiCacheNixl refuses such a batch with a log line; this one is quieter still. The
controller hands side pools over whole, so any span past 128 pages loses its side-pool state.
"""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo, PoolName, PoolTransfer

BOUNCE_PAGES = 128


class BoundedSideBatchesBackend(MemoryBackend):
    def batch_set_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        fits = [t for t in transfers if t.name is PoolName.KV or len(t.keys or []) <= BOUNCE_PAGES]
        done = super().batch_set_v2(fits, extra_info)
        return {str(t.name): done.get(str(t.name), [True] * len(t.keys or [])) for t in transfers}


SPEC = BackendSpec("broken-bounded-side-batches", BoundedSideBatchesBackend, CAPABILITIES)
