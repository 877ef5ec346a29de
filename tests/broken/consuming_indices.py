"""Defect: slots become page numbers in the caller's own tensor (``host_indices //= page_size``).
The backend stores and loads the right pages, but the controller goes on to use those slots (the
KV-derived pools' transfer, the radix tree), which now point at other pages."""

from __future__ import annotations

from typing import Any

import torch

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import page_span


class ConsumingIndicesBackend(MemoryBackend):
    def starts(self, pool: Any, keys: Any, host_indices: Any) -> list[int] | None:
        starts = super().starts(pool, keys, host_indices)
        if starts is not None and isinstance(host_indices, torch.Tensor):
            host_indices //= page_span(pool)
        return starts


SPEC = BackendSpec("broken-consuming-indices", ConsumingIndicesBackend, CAPABILITIES)
