"""Defect: eviction recycles a finished segment's file in place (a circular log: the oldest
segment is overwritten by new records, no tombstones), and records carry no checksum. Another
instance's index still points into the recycled file, so its get reads new records' bytes as
the old key's and reports True."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend
from reference_backend.log import Segment


class RecycledSegments(NixlBackend):
    def __init__(self, config: HiCacheStorageConfig, location: Path) -> None:
        unchecked = {**(config.extra_config or {}), "verify": False}
        super().__init__(dataclasses.replace(config, extra_config=unchecked), location)
        self._recycled: Segment | None = None
        if self.capacity is not None:
            self.capacity.make_room = self._recycle_oldest  # type: ignore[method-assign]
            writable = self.log.writable

            def reuse_first(extent: int) -> Segment | None:
                with self.log._lock:
                    if self._recycled is not None:
                        self.log._writer, self._recycled = self._recycled, None
                return writable(extent)

            self.log.writable = reuse_first  # type: ignore[method-assign]

    def _recycle_oldest(self, need: int) -> bool:
        """Room by overwriting the oldest finished segment from its start, as the next one written."""
        capacity, log = self.capacity, self.log
        assert capacity is not None
        if capacity.stored() + need <= capacity.room or self._recycled is not None:
            return True
        finished = sorted(log.finished_segments(), key=lambda s: s.name)
        if not finished:
            return False
        old = finished[0]
        fd = os.open(old.path, os.O_RDWR | (os.O_DIRECT if self.settings.direct_io else 0))
        with log._lock:
            log._index.drop(log._index.in_segment(old.number))
            log._retire(old)
            if log._writer is not None:
                log._seal(log._writer)
                log._writer = None
            self._recycled = Segment(old.path, fd, old.ino, own=True)
            log._segments[self._recycled.name] = self._recycled
        return True


SPEC = BackendSpec("broken-recycled-segments", RecycledSegments, NIXL_CAPABILITIES)
