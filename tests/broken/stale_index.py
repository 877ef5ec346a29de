"""Defect: the store is indexed once, when the instance first looks; other writers stay unseen.

What other processes commit after that first look is invisible until a restart, so ranks that
share a store (MLA's replicated KV) miss each other's entries for the life of the server.
"""

from __future__ import annotations

import os
from typing import Any

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class StaleIndexBackend(NixlBackend):
    def __init__(
        self,
        storage_config: HiCacheStorageConfig,
        location: str | os.PathLike[str] | dict[str, Any] | None = None,
    ) -> None:
        super().__init__(storage_config, location)
        log = self.log
        first_look = log.refresh
        looked: list[bool] = []

        def refresh_once() -> None:
            if not looked:
                looked.append(True)
                first_look()

        log.refresh = refresh_once  # type: ignore[method-assign]


SPEC = BackendSpec("broken-stale-index", StaleIndexBackend, NIXL_CAPABILITIES)
