"""Defect: exists trusts the index without checking the record is still on disk, as upstream counts
O_DIRECT's 0-byte files."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from conformance.capabilities import BackendSpec
from conformance.interface import HiCacheStorageConfig
from reference_backend.backend import CAPABILITIES, NixlBackend


class SizeBlindExistsBackend(NixlBackend):
    def _present(self, name: str, keys: Iterable[str]) -> list[bool]:
        keys = list(keys)
        if name not in self._pools:
            return [False] * len(keys)
        return [loc is not None for loc in self._log.known([self.digest(name, k) for k in keys])]


def _factory(config: HiCacheStorageConfig, storage_dir: Path) -> SizeBlindExistsBackend:
    return SizeBlindExistsBackend(config, storage_dir)


SPEC = BackendSpec("broken-size-blind-exists", _factory, CAPABILITIES)
