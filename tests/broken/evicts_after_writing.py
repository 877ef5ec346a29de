"""Defect: room is made after a write lands, not before it (as a cleaner that runs once a write
has taken the store past its high mark works): every count taken after a write is within the
budget, but while the batch that crosses it is written the folder holds more."""

from __future__ import annotations

from pathlib import Path

from conformance.capabilities import BackendSpec
from conformance.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend
from reference_backend.capacity import TOMB_ROOM
from reference_backend.plan import Item
from reference_backend.transfer import Lane


class EvictsAfterWriting(NixlBackend):
    def __init__(self, config: HiCacheStorageConfig, location: Path) -> None:
        super().__init__(config, location)
        if self.capacity is not None:
            self.log.cap = 0
            self.capacity.make_room = lambda need: True  # type: ignore[method-assign]

    def store_extent(self, lane: Lane, items: list[Item]) -> bool:
        done = super().store_extent(lane, items)
        capacity = self.capacity
        ceiling = capacity.budget.ceiling - TOMB_ROOM if capacity is not None else 0
        if capacity is not None and capacity.stored() > ceiling:
            with capacity._tenant_lock():
                capacity._evict(0, ceiling)
        return done


SPEC = BackendSpec("broken-evicts-after-writing", EvictsAfterWriting, NIXL_CAPABILITIES)
