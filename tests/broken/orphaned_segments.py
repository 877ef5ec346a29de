"""Defect: a segment another process was writing counts as in use until it is sealed, so the
segment a killed writer left open is never evicted: each crash keeps a share of the budget for
good, and once crashes have taken it all, every write is refused."""

from __future__ import annotations

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.log import Segment
from tests.broken import Patched


class OrphanedSegments(Patched):
    def patch(self) -> None:
        log = self.log

        def finished(segment: Segment) -> bool:
            return segment is not log._writer and (segment.own or segment.sealed)

        log._finished = finished  # type: ignore[method-assign]


SPEC = BackendSpec("broken-orphaned-segments", OrphanedSegments, NIXL_CAPABILITIES)
