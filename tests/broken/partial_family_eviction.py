"""Defect: each pool's record of a key is evicted on its own (as HiCacheFile's LRU and HF3FS's
per-pool LRUs do), so a page can keep its KV and lose its Mamba state, or the other way round."""

from __future__ import annotations

import hashlib

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend
from reference_backend.plan import BatchPlanner


class PoolFamilies(BatchPlanner):
    """Each pool's record of a key in a family of its own."""

    def digest(self, name: str, key: str) -> bytes:
        whole = super().digest(name, key)
        return hashlib.blake2b(whole[:8] + name.encode(), digest_size=8).digest() + whole[8:]


class PartialFamilyEviction(NixlBackend):
    planner_type = PoolFamilies


SPEC = BackendSpec("broken-partial-family-eviction", PartialFamilyEviction, NIXL_CAPABILITIES)
