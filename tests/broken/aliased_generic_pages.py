"""Defect: the legacy ``batch_set`` keeps the page tensors it is handed instead of their bytes.

``get_data_page`` may return a view into the host pool (MLA pages are contiguous), so what the
store holds changes as soon as the host slots are reused.
"""

from __future__ import annotations

import torch

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import PoolName


class AliasedGenericPagesBackend(MemoryBackend):
    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.kept: dict[object, torch.Tensor] = {}

    def batch_set(self, keys: list[str], values: list[torch.Tensor]) -> bool:
        for key, value in zip(keys, values):
            self.kept[self.object_name(str(PoolName.KV), key)] = value
        return super().batch_set(keys, values)

    def batch_get(self, keys: list[str], target_locations: list[torch.Tensor]) -> list[torch.Tensor | None]:
        out = super().batch_get(keys, target_locations)
        for i, key in enumerate(keys):
            kept = self.kept.get(self.object_name(str(PoolName.KV), key))
            if out[i] is not None and kept is not None:
                target_locations[i].view(torch.uint8).reshape(-1).copy_(kept.view(torch.uint8).reshape(-1))
        return out


SPEC = BackendSpec("broken-aliased-generic-pages", AliasedGenericPagesBackend, CAPABILITIES)
