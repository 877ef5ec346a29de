"""Defect: every deployment in a folder is one tenant, as upstream's file backends treat a folder
(HiCacheFile's and HiCacheNixl's ``clear()``, HiCacheNixl's cleaner): entries stay apart by name,
but the segments, the budget, eviction and ``clear()`` are the folder's, so one model's
``clear()`` or flood removes another's entries."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class FolderWideTenancy(NixlBackend):
    def __init__(self, config: HiCacheStorageConfig, location: Path) -> None:
        shared = {**(config.extra_config or {}), "tenant": "the-folder"}
        super().__init__(dataclasses.replace(config, extra_config=shared), location)


SPEC = BackendSpec("broken-folder-wide-tenancy", FolderWideTenancy, NIXL_CAPABILITIES)
