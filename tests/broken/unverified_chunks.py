"""Defect: a read of many pages, cut into pipelined chunks, skips the checksum its one-page read
checks: a damaged record is served as data only in a batch past the chunking threshold."""

from __future__ import annotations

from typing import Any

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend
from reference_backend.plan import Item
from reference_backend.staging import scatter


class UnverifiedChunks(NixlBackend):
    chunked = False

    def read_pipelined(self, lane: Any, items: list[Item]) -> dict[int, bool] | None:
        self.chunked = True
        try:
            return super().read_pipelined(lane, items)
        finally:
            self.chunked = False

    def receive(self, item: Item) -> bool:
        if self.chunked:
            scatter(item)
            return True
        return super().receive(item)


SPEC = BackendSpec("broken-unverified-chunks", UnverifiedChunks, NIXL_CAPABILITIES)
