"""Defect: ``batch_exists`` takes its process down (as a native crash or a hang that is killed
would): the property it was running must be certified as failed, never as passed."""

from __future__ import annotations

import os

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo


class DyingProcessBackend(MemoryBackend):
    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        os._exit(17)


SPEC = BackendSpec("broken-dying-process", DyingProcessBackend, CAPABILITIES)
