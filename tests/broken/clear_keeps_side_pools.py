"""Defect: ``clear`` forgets KV entries but keeps every side pool's."""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import PoolName


class ClearKeepsSidePoolsBackend(MemoryBackend):
    def clear(self) -> bool:
        for name in [n for n in self._store if n[1] == str(PoolName.KV)]:
            del self._store[name]
        return True


SPEC = BackendSpec("broken-clear-keeps-side-pools", ClearKeepsSidePoolsBackend, CAPABILITIES)
