"""Defect: boolean settings are read with ``bool()``, so the JSON string "false" means True.

SGLang 0.5.23's HiCacheNixl reads ``use_direct_io`` this way: a user who writes
``{"use_direct_io": "false"}`` gets O_DIRECT, and pools it cannot move in place are staged.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class TruthyStringsBackend(NixlBackend):
    def __init__(
        self,
        storage_config: HiCacheStorageConfig,
        location: str | os.PathLike[str] | dict[str, Any] | None = None,
    ) -> None:
        extra = dict(storage_config.extra_config or {})
        if "use_direct_io" in extra:
            extra["use_direct_io"] = bool(extra["use_direct_io"])
        super().__init__(replace(storage_config, extra_config=extra), location)


SPEC = BackendSpec("broken-truthy-strings", TruthyStringsBackend, NIXL_CAPABILITIES)
