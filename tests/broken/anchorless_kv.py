"""Defect: a KV pool with no bytes gets no entries, though every set says True.

DeepSeek-V4's KV anchor (``LogicalHostPool``) owns page slots and no KV buffer. A backend that
sizes entries by the page and skips empty ones keeps nothing for the anchor keys, so exists,
which gates every side pool on KV, answers zero, and v1 gets fail. Upstream HiCacheNixl writes a
marker object per page for exactly this.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec


class AnchorlessKvBackend(MemoryBackend):
    def _set(self, pool_name: str, keys: Any, host_indices: Any) -> list[bool]:
        pool = self.registered_pools.get(pool_name)
        if pool is not None and isinstance(keys, list) and pool.get_dummy_flat_data_page().numel() == 0:
            return [True] * len(keys)
        return super()._set(pool_name, keys, host_indices)


SPEC = BackendSpec("broken-anchorless-kv", AnchorlessKvBackend, replace(CAPABILITIES))
