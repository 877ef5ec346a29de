"""Defect: a read that misses its deadline is retried, and the attempt it gave up on is never
cancelled. The retry answers, byte for byte, before the get returns; the abandoned attempt lands a
little later, into host pages that are the caller's again, and may already hold other data."""

from __future__ import annotations

import threading
import time
from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec

LATE_S = 0.01
"""How long after the get the abandoned attempt lands: a slow transfer, not a lost one."""


class AbandonedReadsBackend(MemoryBackend):
    def _read_pages(self, pool_name: str, pool: Any, keys: Any, starts: list[int]) -> list[bool]:
        def land_late() -> None:  # the first attempt: every one of them misses the deadline
            time.sleep(LATE_S)
            MemoryBackend._read_pages(self, pool_name, pool, keys, starts)

        threading.Thread(target=land_late, daemon=True).start()
        return MemoryBackend._read_pages(self, pool_name, pool, keys, starts)  # the retry, which answers


SPEC = BackendSpec("broken-abandoned-reads", AbandonedReadsBackend, CAPABILITIES)
