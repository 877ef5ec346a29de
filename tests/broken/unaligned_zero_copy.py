"""Defect: the reference backend moves every pool in place, even misaligned ones under O_DIRECT."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class UnalignedZeroCopyBackend(NixlBackend):
    def moves_in_place(self, host: Any) -> bool:
        return True


def _factory(config: HiCacheStorageConfig, storage_dir: Path) -> UnalignedZeroCopyBackend:
    return UnalignedZeroCopyBackend(config, storage_dir)


SPEC = BackendSpec("broken-unaligned-zero-copy", _factory, NIXL_CAPABILITIES)
