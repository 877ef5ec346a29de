"""Defect: the legacy ``batch_exists`` counts every key ``exists`` finds, holes included."""

from __future__ import annotations

from conformance.capabilities import BackendSpec
from conformance.interface import HiCacheStorageExtraInfo
from conformance.memory_backend import CAPABILITIES, MemoryBackend


class CountingGenericExistsBackend(MemoryBackend):
    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        return sum(self.exists(k) for k in keys)


SPEC = BackendSpec("broken-counting-generic-exists", CountingGenericExistsBackend, CAPABILITIES)
