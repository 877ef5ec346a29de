"""Defect: exists takes no pin, so a flood between exists and get evicts what exists reported,
though the backend promises a pin length."""

from __future__ import annotations

from pathlib import Path

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class UnpinnedExists(NixlBackend):
    def __init__(self, config: HiCacheStorageConfig, location: Path) -> None:
        super().__init__(config, location)
        if self.capacity is not None:
            self.capacity.pin = lambda families: None  # type: ignore[method-assign]


SPEC = BackendSpec("broken-unpinned-exists", UnpinnedExists, NIXL_CAPABILITIES)
