"""Defect: a setting the backend cannot read is ignored, and it runs in its default mode.

``{"use_direct_io": "maybe"}``, an unknown plugin or queue: each should be an error at
construction; here each is POSIX I/O in the default mode (O_DIRECT), and the operator never
learns.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend
from reference_backend.config import BackendConfig


class LenientConfigBackend(NixlBackend):
    def __init__(
        self,
        storage_config: HiCacheStorageConfig,
        location: str | os.PathLike[str] | dict[str, Any] | None = None,
    ) -> None:
        try:
            BackendConfig.from_extra(storage_config.extra_config, location)
        except ValueError:
            storage_config = replace(storage_config, extra_config={})
        super().__init__(storage_config, location)


SPEC = BackendSpec("broken-lenient-config", LenientConfigBackend, NIXL_CAPABILITIES)
