"""Defect: the store is indexed once, when the instance first looks; other writers stay unseen.

What other processes commit after that first look is invisible until a restart, so ranks that
share a store (MLA's replicated KV) miss each other's entries for the life of the server.
"""

from __future__ import annotations

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from tests.broken import Patched


class StaleIndexBackend(Patched):
    def patch(self) -> None:
        log = self.log
        first_look = log.refresh
        looked: list[bool] = []

        def refresh_once() -> None:
            if not looked:
                looked.append(True)
                first_look()

        log.refresh = refresh_once  # type: ignore[method-assign]


SPEC = BackendSpec("broken-stale-index", StaleIndexBackend, NIXL_CAPABILITIES)
