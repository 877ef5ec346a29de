"""Defect: a finished segment is never compacted while any of its records is live: overwritten
versions stay on disk beside a few live records, the store fills with garbage, and eviction takes
live entries to make room though they fill a small share of the budget."""

from __future__ import annotations

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from tests.broken import Patched


class UnreclaimedOverwrites(Patched):
    def patch(self) -> None:
        self.log.reclaim = lambda most: None  # type: ignore[method-assign]


SPEC = BackendSpec("broken-unreclaimed-overwrites", UnreclaimedOverwrites, NIXL_CAPABILITIES)
