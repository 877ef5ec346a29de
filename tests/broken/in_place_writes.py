"""Defect: records are written in place under their final name, with no temp file and rename."""

from __future__ import annotations

import os
from pathlib import Path

from conformance.capabilities import BackendSpec
from conformance.interface import HiCacheStorageConfig
from reference_backend.backend import CAPABILITIES, NixlBackend, _Item


class InPlaceWritesBackend(NixlBackend):
    def _open_for_write(self, item: _Item) -> bool:
        try:
            os.makedirs(os.path.dirname(item.path), exist_ok=True)
            item.fd = os.open(item.path, self._open_flags(os.O_WRONLY | os.O_CREAT), 0o644)
            os.ftruncate(item.fd, item.pool.layout.size)
            return True
        except OSError:
            return False

    def _publish(self, item: _Item, moved: bool) -> bool:
        os.close(item.fd)
        item.fd = -1
        return moved


def _factory(config: HiCacheStorageConfig, storage_dir: Path) -> InPlaceWritesBackend:
    return InPlaceWritesBackend(config, storage_dir)


SPEC = BackendSpec("broken-in-place-writes", _factory, CAPABILITIES)
