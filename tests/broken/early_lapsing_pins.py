"""Defect: a pin lapses at a quarter of the length the backend states (its length divided where it
should not be), so a flood late in the lease evicts an entry exists reported."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend import capacity
from reference_backend.backend import NixlBackend


class EarlyLapsingPins(NixlBackend):
    def __init__(self, config: HiCacheStorageConfig, location: Path) -> None:
        super().__init__(config, location)
        held = self.capacity
        if held is not None:

            def pin(families: Sequence[bytes]) -> None:
                if families:
                    held.pins.pin(families, capacity.lease_clock() + int(held.budget.pin_seconds * 1e9) // 4)

            held.pin = pin  # type: ignore[method-assign]


SPEC = BackendSpec("broken-early-lapsing-pins", EarlyLapsingPins, NIXL_CAPABILITIES)
