"""Defect: the legacy calls name an entry by its key alone, so every rank of a deployment shares it
(v1 and v2 keep their ranks apart)."""

from __future__ import annotations

import torch

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec


class RankBlindGenericNamesBackend(MemoryBackend):
    generic = False

    def object_name(self, pool_name: str, key: str) -> ObjectName:
        return ("generic", key) if self.generic else super().object_name(pool_name, key)

    def batch_set(self, keys: list[str], values: list[torch.Tensor]) -> bool:
        self.generic = True
        try:
            return super().batch_set(keys, values)
        finally:
            self.generic = False

    def batch_get(self, keys: list[str], target_locations: list[torch.Tensor]) -> list[torch.Tensor | None]:
        self.generic = True
        try:
            return super().batch_get(keys, target_locations)
        finally:
            self.generic = False

    def exists(self, key: str) -> bool:
        return ("generic", key) in self._store


SPEC = BackendSpec("broken-rank-blind-generic-names", RankBlindGenericNamesBackend, CAPABILITIES)
