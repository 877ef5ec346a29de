"""Defect: the budget is counted per process, from the segments this process wrote, so two
processes sharing a store each fill it to the budget."""

from __future__ import annotations

import os
from pathlib import Path

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class PerProcessBudget(NixlBackend):
    def __init__(self, config: HiCacheStorageConfig, location: Path) -> None:
        super().__init__(config, location)
        capacity = self.capacity
        if capacity is not None:
            self.log.cap = 0  # no last check on the growth: the count alone decides
            capacity.stored = lambda: self._own_bytes() + capacity.pins.size  # type: ignore[method-assign]

    def _own_bytes(self) -> int:
        mine = f"-{os.getpid()}-"
        folder = self.log.folder
        return sum(
            os.path.getsize(os.path.join(folder, n))
            for n in os.listdir(folder)
            if mine in n and n.endswith(".seg")
        )


SPEC = BackendSpec("broken-per-process-budget", PerProcessBudget, NIXL_CAPABILITIES)
