"""NIXL registrations of segment files.

NIXL agents are not thread-safe, so only the lane that owns an agent registers with it, under the
lane's lock; each registration holds its segment's descriptor open in the log until it is let go.
"""

from __future__ import annotations

import contextlib
from typing import Any

from reference_backend.log import Segment, SegmentLog


class SegmentFiles:
    """One agent's registrations of segment files, each holding its segment's descriptor open in
    the log while registered."""

    def __init__(self, agent: Any, log: SegmentLog) -> None:
        self.agent, self.log = agent, log
        self._regs: dict[Segment, Any] = {}

    def register(self, segment: Segment) -> bool:
        """Register ``segment`` once; False when it is retired or NIXL refuses it."""
        if segment in self._regs:
            return True
        if not self.log.hold(segment):
            return False
        try:
            self._regs[segment] = self.agent.register_memory([(0, 0, segment.fd, "")], "FILE")
        except Exception:  # NIXL refused the file: that segment is unusable, not the backend
            self.log.let_go(segment)
            return False
        return True

    def drop_retired(self) -> None:
        """Deregister the segments the log retired, so that it may close them."""
        for segment in [s for s in self._regs if s.retired]:
            self._drop(segment)

    def close(self) -> None:
        for segment in list(self._regs):
            self._drop(segment)

    def _drop(self, segment: Segment) -> None:
        with contextlib.suppress(Exception):
            self.agent.deregister_memory(self._regs.pop(segment))
        self.log.let_go(segment)
