"""Defect: a deployment's stored bytes are measured as every file under the folder (a ``du`` of
it, as a cleaner that watches a disk measures), so another deployment's files (its segments, its
checkpoint, a pin table sized by its own budget) count against this one's budget, and it evicts
its own entries long before they fill it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class FolderChargedBudget(NixlBackend):
    def __init__(self, config: HiCacheStorageConfig, location: Path) -> None:
        super().__init__(config, location)
        folder = self.log.folder

        def every_file() -> int:
            total = 0
            with contextlib.suppress(OSError):
                for entry in os.scandir(folder):
                    with contextlib.suppress(OSError):
                        total += entry.stat().st_size if entry.is_file() else 0
            return total

        self.log.tenant_bytes = every_file  # type: ignore[method-assign]


SPEC = BackendSpec("broken-folder-charged-budget", FolderChargedBudget, NIXL_CAPABILITIES)
