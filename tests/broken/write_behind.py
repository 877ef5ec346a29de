"""Defect: a store queues its pages and returns True; a writer thread copies them out of host
memory a little later, as a write-behind cache does. The controller may reuse those host slots as
soon as the backup returns, so what gets stored is whatever they hold by then."""

from __future__ import annotations

import threading
import time
from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec

DELAY_S = 0.05
"""How long a queued page waits for the writer: far longer than a caller takes to reuse its slots."""


class WriteBehindBackend(MemoryBackend):
    def _write_pages(self, pool_name: str, pool: Any, keys: Any, starts: list[int]) -> list[bool]:
        def write_later() -> None:
            time.sleep(DELAY_S)
            MemoryBackend._write_pages(self, pool_name, pool, keys, starts)

        threading.Thread(target=write_later, daemon=True).start()
        return [True] * len(keys)


SPEC = BackendSpec("broken-write-behind", WriteBehindBackend, CAPABILITIES)
