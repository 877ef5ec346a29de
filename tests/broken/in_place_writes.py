"""Defect: a stored entry is overwritten where it lies instead of appended, so a writer killed
mid-batch leaves the only committed version torn."""

from __future__ import annotations

from pathlib import Path

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend
from reference_backend.plan import Item
from reference_backend.transfer import Lane


class InPlaceWritesBackend(NixlBackend):
    def store(self, lane: Lane, items: list[Item]) -> dict[int, bool]:
        stored: list[Item] = []
        for item, loc in zip(items, self.log.locate([i.digest for i in items])):
            if (
                loc is not None
                and loc.size == item.pool.layout.size
                and lane.files is not None
                and lane.files.register(loc.segment)
            ):
                item.fd, item.offset = loc.segment.fd, loc.offset
                stored.append(item)
        moved = self.transfer(lane, "WRITE", stored) if stored else True
        result = dict.fromkeys(map(id, stored), moved)
        result.update(super().store(lane, [i for i in items if id(i) not in result]))
        return result


def _factory(config: HiCacheStorageConfig, storage_dir: Path) -> InPlaceWritesBackend:
    return InPlaceWritesBackend(config, storage_dir)


SPEC = BackendSpec("broken-in-place-writes", _factory, NIXL_CAPABILITIES)
