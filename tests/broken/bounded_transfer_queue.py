"""Defect: one v2 call moves at most 2,048 page objects; past that, pages answer False, unstored.

Mooncake's TCP transport queues 2,048 transfers per peer and fails the rest of an overfull batch
(finding 24). The answer is honest, yet a long context's side-pool span, which SGLang's controller
hands over in one call, is never kept.
"""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo, PoolTransfer

QUEUE = 2048


class BoundedTransferQueueBackend(MemoryBackend):
    def batch_set_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        room, done = QUEUE, {}
        for t in transfers:
            keys = t.keys or []
            queued = min(room, len(keys))
            room -= queued
            if queued == len(keys) or t.host_indices is None:  # all fits, or malformed: as the model
                done[str(t.name)] = self._set(str(t.name), t.keys, t.host_indices)
                continue
            page = len(t.host_indices) // len(keys)
            stored = self._set(str(t.name), keys[:queued], t.host_indices[: queued * page]) if queued else []
            done[str(t.name)] = stored + [False] * (len(keys) - queued)
        return done


SPEC = BackendSpec("broken-bounded-transfer-queue", BoundedTransferQueueBackend, CAPABILITIES)
