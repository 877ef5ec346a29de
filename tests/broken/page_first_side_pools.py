"""Defect: every side pool is taken for page-first, page ``p`` being the ``p``-th slice of each buffer.

True of every side pool the suite drew before issue 13 (Mamba, the DSA indexer and the generic
double, all page-first). SGLang gives every host pool the one ``--hicache-mem-layout``, though: an
SWA or draft MHA pool, or the DSA indexer, beside a layer_first KV pool is layer_first too, and
there page ``p`` of a buffer is not one slice. Such a backend stores other pages' bytes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec


def _page_slices(pool: Any, start: int) -> list[torch.Tensor] | None:
    """Page ``start``'s bytes as the ``p``-th equal slice of each of the pool's buffers."""
    buffers = getattr(pool, "get_hybrid_pool_buffer", None)
    if buffers is None:
        return None
    pages = pool.size // pool.page_size
    flats = [b.view(torch.uint8).reshape(-1) for b in buffers() if b.numel()]
    row = start // pool.page_size
    return [f[row * (f.numel() // pages) : (row + 1) * (f.numel() // pages)] for f in flats]


class PageFirstSidePoolsBackend(MemoryBackend):
    def capture(self, pool: Any, start: int) -> bytes:
        slices = _page_slices(pool, start) if pool is not self.registered_pools.get("kv") else None
        if slices is None:
            return super().capture(pool, start)
        return b"".join(bytes(s.numpy().tobytes()) for s in slices)

    def restore(self, pool: Any, start: int, data: bytes) -> bool:
        slices = _page_slices(pool, start) if pool is not self.registered_pools.get("kv") else None
        if slices is None:
            return super().restore(pool, start, data)
        if sum(s.numel() for s in slices) != len(data):
            return False
        at = 0
        for s in slices:
            s.copy_(torch.frombuffer(bytearray(data[at : at + s.numel()]), dtype=torch.uint8))
            at += s.numel()
        return True


SPEC = BackendSpec("broken-page-first-side-pools", PageFirstSidePoolsBackend, replace(CAPABILITIES))
