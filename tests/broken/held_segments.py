"""Defect: a segment is judged alive by the descriptor the instance holds, not by its name in the
folder, so a segment another process deleted (its clear(), its eviction) goes on serving its
records from the unlinked file: KV cleared after a weight update is still served, and the disk
space of every deleted segment stays taken while the instance runs."""

from __future__ import annotations

import os

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.log import Segment
from tests.broken import Patched


class HeldSegments(Patched):
    def patch(self) -> None:
        def alive(segment: Segment) -> int:
            try:
                return os.fstat(segment.fd).st_size
            except OSError:
                return -1

        self.log._alive = alive  # type: ignore[method-assign]


SPEC = BackendSpec("broken-held-segments", HeldSegments, NIXL_CAPABILITIES)
