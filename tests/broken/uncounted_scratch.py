"""Defect: each batch is first copied to a scratch file beside the segments, which the budget does
not count, and removed once the batch is committed: every count taken after a write is within
the budget, but while a batch is written the folder holds the budget and the batch."""

from __future__ import annotations

import os

from conformance.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend
from reference_backend.plan import Item
from reference_backend.transfer import Lane


class UncountedScratch(NixlBackend):
    def store_extent(self, lane: Lane, items: list[Item]) -> bool:
        os.makedirs(self.log.folder, exist_ok=True)
        scratch = os.path.join(self.log.folder, f"scratch-{os.getpid()}")
        with open(scratch, "wb") as f:
            f.truncate(sum(item.pool.layout.size for item in items))
        try:
            return super().store_extent(lane, items)
        finally:
            os.unlink(scratch)


SPEC = BackendSpec("broken-uncounted-scratch", UncountedScratch, NIXL_CAPABILITIES)
