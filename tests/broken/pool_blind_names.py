"""Defect: object names leave out the pool, so pools sharing a key share an object."""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec


class PoolBlindBackend(MemoryBackend):
    def object_name(self, pool_name: str, key: str) -> ObjectName:
        scope, _pool, key = super().object_name(pool_name, key)
        return (scope, key)


SPEC = BackendSpec("broken-pool-blind-names", PoolBlindBackend, CAPABILITIES)
