"""Defect: each pool's record of a key is evicted on its own (as HiCacheFile's LRU and HF3FS's
per-pool LRUs do), so a page can keep its KV and lose its Mamba state, or the other way round."""

from __future__ import annotations

import hashlib

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend
from reference_backend.plan import BatchPlanner, Item
from reference_backend.transfer import Lane


class PoolFamilies(BatchPlanner):
    """Each pool's record of a key in a family of its own."""

    def digests(self, name: str, keys: list[str]) -> list[bytes]:
        return [
            hashlib.blake2b(whole[:8] + name.encode(), digest_size=8).digest() + whole[8:]
            for whole in super().digests(name, keys)
        ]


class PartialFamilyEviction(NixlBackend):
    """Every call in a segment of its own, as per-pool stores keep a key's pools apart: eviction
    then meets a key's pools in different victims, and takes only the one it found."""

    planner_type = PoolFamilies

    def store_extent(self, lane: Lane, items: list[Item]) -> bool | None:
        self.log.rotate()
        return super().store_extent(lane, items)


SPEC = BackendSpec("broken-partial-family-eviction", PartialFamilyEviction, NIXL_CAPABILITIES)
