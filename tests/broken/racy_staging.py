"""Defect: one staging buffer serves every thread, with no lock around the I/O that reads it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig


class RacyStagingBackend(MemoryBackend):
    def __init__(self, config: HiCacheStorageConfig, storage_dir: Path) -> None:
        super().__init__(config, storage_dir)
        self._staging = bytearray(1 << 16)

    def capture(self, pool: Any, start: int) -> bytes:
        page = pool.get_data_page(start, flat=True).contiguous().view(torch.uint8).numpy().tobytes()
        self._staging[: len(page)] = page
        time.sleep(0)  # the I/O that would read the staging buffer happens here
        return bytes(self._staging[: len(page)])


SPEC = BackendSpec("broken-racy-staging", RacyStagingBackend, CAPABILITIES)
