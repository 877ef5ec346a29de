"""Defect: ``batch_exists`` counts every present key instead of the leading run."""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo, PoolName


class PartialExistsBackend(MemoryBackend):
    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        return sum(self.present(str(PoolName.KV), k) for k in keys)


SPEC = BackendSpec("broken-partial-exists", PartialExistsBackend, CAPABILITIES)
