"""Defect: the index tensor is read from the start of its storage, as a backend that hands
``untyped_storage()`` (or its pointer) to native code does. The controller slices each batch out
of its operation's tensor, so every batch after the first moves another batch's pages."""

from __future__ import annotations

from typing import Any

import torch

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec


def from_storage_start(host_indices: Any) -> Any:
    """A 1-D index tensor as the defect reads it: its length, from its storage's first element."""
    if not isinstance(host_indices, torch.Tensor) or host_indices.dim() != 1:
        return host_indices
    blind = torch.empty(0, dtype=host_indices.dtype)
    return blind.set_(host_indices.untyped_storage(), 0, host_indices.shape, (1,))


class OffsetBlindIndicesBackend(MemoryBackend):
    def starts(self, pool: Any, keys: Any, host_indices: Any) -> list[int] | None:
        return super().starts(pool, keys, from_storage_start(host_indices))


SPEC = BackendSpec("broken-offset-blind-indices", OffsetBlindIndicesBackend, CAPABILITIES)
