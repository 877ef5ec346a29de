"""Defect: exists counts any file under an entry's name, as upstream counts O_DIRECT's 0-byte files."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from conformance.capabilities import BackendSpec
from conformance.interface import HiCacheStorageConfig
from reference_backend.backend import CAPABILITIES, NixlBackend


class SizeBlindExistsBackend(NixlBackend):
    def _present(self, name: str, keys: Iterable[str]) -> list[bool]:
        return [name in self._scopes and os.path.exists(self.entry_file(name, k)) for k in keys]


def _factory(config: HiCacheStorageConfig, storage_dir: Path) -> SizeBlindExistsBackend:
    return SizeBlindExistsBackend(config, storage_dir)


SPEC = BackendSpec("broken-size-blind-exists", _factory, CAPABILITIES)
