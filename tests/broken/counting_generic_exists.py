"""Defect: the legacy ``batch_exists`` counts every key ``exists`` finds, holes included."""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo


class CountingGenericExistsBackend(MemoryBackend):
    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        return sum(self.exists(k) for k in keys)


SPEC = BackendSpec("broken-counting-generic-exists", CountingGenericExistsBackend, CAPABILITIES)
