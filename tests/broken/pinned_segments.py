"""Defect: a segment holding a pinned record is never evicted, since its spared records are never
copied forward: one pinned entry keeps its whole segment, and once every segment holds one the
store refuses every write although almost none of its bytes is pinned."""

from __future__ import annotations

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from tests.broken import Patched


class PinnedSegments(Patched):
    def patch(self) -> None:
        self.log._move = lambda group: False  # type: ignore[method-assign]


SPEC = BackendSpec("broken-pinned-segments", PinnedSegments, NIXL_CAPABILITIES)
