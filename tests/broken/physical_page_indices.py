"""Defect: a page spans the pool's physical ``page_size`` slots, as before DCP. Under decode
context parallelism SGLang widens an MLA pool (``dcp_size`` slots share a row), so every page the
controller hands over spans ``logical_page_size`` slots and each request is refused. The reference
backend shipped this defect until the suite drew DCP-widened pools."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from reference_backend.interface import page_starts


class PhysicalPageIndicesBackend(MemoryBackend):
    def starts(self, pool: Any, keys: Any, host_indices: Any) -> list[int] | None:
        physical = SimpleNamespace(page_size=pool.page_size, size=pool.size)  # the pool's rows only
        return page_starts(physical, keys, host_indices)


SPEC = BackendSpec("broken-physical-page-indices", PhysicalPageIndicesBackend, CAPABILITIES)
