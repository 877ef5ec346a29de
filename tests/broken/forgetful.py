"""Defect: claims persistence, but every instance starts with an empty store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from conformance.capabilities import BackendSpec
from conformance.interface import HiCacheStorageConfig
from conformance.memory_backend import CAPABILITIES, MemoryBackend


class ForgetfulBackend(MemoryBackend):
    def __init__(self, config: HiCacheStorageConfig, storage_dir: Path) -> None:
        super().__init__(config, storage_dir)
        self._store = {}


SPEC = BackendSpec("broken-forgetful", ForgetfulBackend, replace(CAPABILITIES, persistence=True))
