"""Backends with one defect each, each in a module of its own with a ``SPEC``."""

from __future__ import annotations

import os
from typing import Any

from conformance.model.interface import HiCacheStorageConfig
from reference_backend.backend import NixlBackend


class Patched(NixlBackend):
    """The reference backend with one of its parts replaced once it is built (``patch``)."""

    def __init__(
        self,
        storage_config: HiCacheStorageConfig,
        location: str | os.PathLike[str] | dict[str, Any] | None = None,
    ) -> None:
        super().__init__(storage_config, location)
        self.patch()

    def patch(self) -> None:
        raise NotImplementedError
