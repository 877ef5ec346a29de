"""Defect: pages are bounced through a buffer in the pool's dtype, converting values.

Upstream's hybrid PR did this with ``host_pool.dtype``: fine while the page has that dtype, wrong
for a serialised uint8 page of an fp8 pool, and NaN payloads lose their bits on the way.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec


class DtypeStagingBackend(MemoryBackend):
    def capture(self, pool: Any, start: int) -> bytes:
        bounce = pool.get_data_page(start, flat=True).to(torch.float32).to(pool.dtype)
        return bytes(bounce.contiguous().view(torch.uint8).numpy().tobytes())

    def restore(self, pool: Any, start: int, data: bytes) -> bool:
        page = pool.get_dummy_flat_data_page()
        bounce = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(pool.dtype)
        if bounce.numel() != page.numel():
            return False
        page.copy_(bounce.to(torch.float32))
        pool.set_from_flat_data_page(start, page)
        return True


SPEC = BackendSpec("broken-dtype-staging", DtypeStagingBackend, replace(CAPABILITIES))
