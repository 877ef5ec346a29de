"""Defect: the NIXL registrations of segments the log retired are never dropped, so eviction
unlinks each victim's file while its descriptor stays open: the folder lists the budget's bytes,
and the disk holds every evicted segment besides, until the instance closes."""

from __future__ import annotations

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.transfer import Lane
from tests.broken import Patched


class UnreleasedSegments(Patched):
    def patch(self) -> None:
        def keep_everything(lane: Lane) -> None:
            del lane

        self._let_go = keep_everything  # type: ignore[method-assign]


SPEC = BackendSpec("broken-unreleased-segments", UnreleasedSegments, NIXL_CAPABILITIES)
