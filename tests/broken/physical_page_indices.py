"""Defect: a page spans the pool's physical ``page_size`` slots, as before DCP. Under decode
context parallelism SGLang widens an MLA pool (``dcp_size`` slots share a row), so every page the
controller hands over spans ``logical_page_size`` slots and each request is refused. The reference
backend shipped this defect until the suite drew DCP-widened pools."""

from __future__ import annotations

from typing import Any

import torch

from conformance.capabilities import BackendSpec
from conformance.memory_backend import CAPABILITIES, MemoryBackend


class PhysicalPageIndicesBackend(MemoryBackend):
    def starts(self, pool: Any, keys: Any, host_indices: Any) -> list[int] | None:
        span = int(pool.page_size)
        if not isinstance(keys, list) or not isinstance(host_indices, torch.Tensor):
            return None
        if host_indices.numel() != len(keys) * span:
            return None
        return [int(i) for i in host_indices[::span].tolist()]


SPEC = BackendSpec("broken-physical-page-indices", PhysicalPageIndicesBackend, CAPABILITIES)
