"""Defect: requests are not validated; pages are paired with keys by ``zip`` and trusted."""

from __future__ import annotations

from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec


class NoValidationBackend(MemoryBackend):
    def _set(self, pool_name: str, keys: Any, host_indices: Any) -> list[bool]:
        pool = self.registered_pools[pool_name]
        starts = [int(i) for i in host_indices[:: pool.page_size].tolist()]
        for key, start in zip(keys, starts):
            self._store[self.object_name(pool_name, key)] = self.capture(pool, start)
        return [True] * len(keys)


SPEC = BackendSpec("broken-no-validation", NoValidationBackend, CAPABILITIES)
