"""Defect: the legacy ``batch_get`` raises ``KeyError`` for a key it does not hold, instead of None."""

from __future__ import annotations

import torch

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec


class RaisingGenericGetBackend(MemoryBackend):
    def batch_get(self, keys: list[str], target_locations: list[torch.Tensor]) -> list[torch.Tensor | None]:
        for key in keys:
            if not self.exists(key):
                raise KeyError(key)
        return super().batch_get(keys, target_locations)


SPEC = BackendSpec("broken-raising-generic-get", RaisingGenericGetBackend, CAPABILITIES)
