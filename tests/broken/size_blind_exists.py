"""Defect: exists counts any file under an entry's name, as upstream counts O_DIRECT's 0-byte files."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from conformance.capabilities import BackendSpec
from conformance.interface import HiCacheStorageConfig
from reference_backend.backend import CAPABILITIES, NixlBackend
from reference_backend.naming import entry_path


class SizeBlindExistsBackend(NixlBackend):
    def _present(self, name: str, keys: Iterable[str]) -> list[bool]:
        scope = self._scopes[name]
        return [os.path.exists(entry_path(self.root, scope, name, k)) for k in keys]


def _factory(config: HiCacheStorageConfig, storage_dir: Path) -> SizeBlindExistsBackend:
    return SizeBlindExistsBackend(config, storage_dir)


SPEC = BackendSpec("broken-size-blind-exists", _factory, CAPABILITIES)
