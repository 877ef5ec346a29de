"""Defect: eviction takes the oldest segment whatever was read since (a cleaner that looks at
write times alone), though the backend claims that reads count: the pages every request reads,
a shared system prompt's, are the first to go."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class AgeOnlyEviction(NixlBackend):
    def __init__(
        self,
        storage_config: HiCacheStorageConfig,
        location: str | os.PathLike[str] | dict[str, Any] | None = None,
    ) -> None:
        extra = {**(storage_config.extra_config or {}), "eviction_policy": "fifo"}
        super().__init__(dataclasses.replace(storage_config, extra_config=extra), location)


SPEC = BackendSpec("broken-age-only-eviction", AgeOnlyEviction, NIXL_CAPABILITIES)
