"""Defect: a pin never lapses: whatever exists reported stays for good, so a store full of pinned
entries refuses every write from then on, though the backend promises pins of a stated length."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend import capacity
from reference_backend.backend import NixlBackend

FOR_GOOD = 10 * 365 * 86400 * 10**9
"""Ten years, in nanoseconds: a pin's length, in place of the stated one."""


class EverlastingPins(NixlBackend):
    def __init__(self, config: HiCacheStorageConfig, location: Path) -> None:
        super().__init__(config, location)
        if self.capacity is not None:
            pins = self.capacity.pins

            def pin(families: Sequence[bytes]) -> None:
                if families:
                    pins.pin(families, capacity.lease_clock() + FOR_GOOD)

            self.capacity.pin = pin  # type: ignore[method-assign]


SPEC = BackendSpec("broken-everlasting-pins", EverlastingPins, NIXL_CAPABILITIES)
