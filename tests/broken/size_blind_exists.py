"""Defect: exists trusts the index without checking the record is still on disk, as upstream counts
O_DIRECT's 0-byte files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class SizeBlindExistsBackend(NixlBackend):
    def stored(self, pool: Any, digests: list[bytes]) -> list[bool]:
        return [loc is not None for loc in self.log.known(digests)]


def _factory(config: HiCacheStorageConfig, storage_dir: Path) -> SizeBlindExistsBackend:
    return SizeBlindExistsBackend(config, storage_dir)


SPEC = BackendSpec("broken-size-blind-exists", _factory, NIXL_CAPABILITIES)
