"""Defect: claims persistence, but every instance starts with an empty store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig


class ForgetfulBackend(MemoryBackend):
    def __init__(self, config: HiCacheStorageConfig, storage_dir: Path) -> None:
        super().__init__(config, storage_dir)
        self._store = {}


SPEC = BackendSpec("broken-forgetful", ForgetfulBackend, replace(CAPABILITIES, persistence=True))
