"""Defect: one v2 call moves at most 2,048 page objects; past that, pages answer False, unstored.

Mooncake's TCP transport queues 2,048 transfers per peer and fails the rest of an overfull batch
(finding 24). The answer is honest, yet a long context's side-pool span, which SGLang's controller
hands over in one call, is never kept.
"""

from __future__ import annotations

from typing import Any

from conformance.capabilities import BackendSpec
from conformance.interface import HiCacheStorageExtraInfo, PoolTransfer
from conformance.memory_backend import CAPABILITIES, MemoryBackend

QUEUE = 2048


class BoundedTransferQueueBackend(MemoryBackend):
    _room = QUEUE

    def batch_set_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        self._room = QUEUE
        return super().batch_set_v2(transfers, extra_info)

    def _set(self, pool_name: str, keys: Any, host_indices: Any) -> list[bool]:
        count = len(keys) if isinstance(keys, list) else 0
        queued = min(self._room, count)
        self._room -= queued
        if queued == count:
            return super()._set(pool_name, keys, host_indices)
        page = len(host_indices) // count
        done = super()._set(pool_name, keys[:queued], host_indices[: queued * page]) if queued else []
        return done + [False] * (count - queued)


SPEC = BackendSpec("broken-bounded-transfer-queue", BoundedTransferQueueBackend, CAPABILITIES)
