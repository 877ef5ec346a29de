"""Defect: a get also writes the page after its target, as an off-by-one scatter would."""

from __future__ import annotations

from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec


class ScribblingGetBackend(MemoryBackend):
    def restore(self, pool: Any, start: int, data: bytes) -> bool:
        ok = super().restore(pool, start, data)
        neighbour = start + pool.page_size
        if ok and neighbour < pool.size:
            super().restore(pool, neighbour, data)
        return ok


SPEC = BackendSpec("broken-scribbling-get", ScribblingGetBackend, CAPABILITIES)
