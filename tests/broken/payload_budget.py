"""Defect: the budget counts the records' payload bytes only, not the commit blocks, padding and
seal room the files hold, so the folder grows past it."""

from __future__ import annotations

from pathlib import Path

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class PayloadBudget(NixlBackend):
    def __init__(self, config: HiCacheStorageConfig, location: Path) -> None:
        super().__init__(config, location)
        capacity = self.capacity
        if capacity is not None:
            self.log.cap = 0  # no last check on the growth: the count alone decides
            capacity.stored = lambda: sum(loc.size for _, loc in self.log.live())  # type: ignore[method-assign]


SPEC = BackendSpec("broken-payload-budget", PayloadBudget, NIXL_CAPABILITIES)
