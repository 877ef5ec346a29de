"""Defect: ``batch_exists`` counts every present key instead of the leading run."""

from __future__ import annotations

from conformance.capabilities import BackendSpec
from conformance.interface import HiCacheStorageExtraInfo, PoolName
from conformance.memory_backend import CAPABILITIES, MemoryBackend


class PartialExistsBackend(MemoryBackend):
    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        return sum(self.present(str(PoolName.KV), k) for k in keys)


SPEC = BackendSpec("broken-partial-exists", PartialExistsBackend, CAPABILITIES)
