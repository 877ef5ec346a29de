"""Defect: a store queues its pages and returns True; they are copied out of host memory later, when
the next read or lookup flushes the queue, as a write-behind cache does. The controller may reuse
those host slots as soon as the backup returns, so what gets stored is whatever they hold by then.

The copy waits for the next call rather than a timer, so the defect shows the same way on every
run, however loaded the machine: a timer raced the caller, and a replay could fail another way."""

from __future__ import annotations

import threading
from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec


class WriteBehindBackend(MemoryBackend):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._queued: list[tuple[str, Any, Any, list[int]]] = []
        self._queue_lock = threading.Lock()

    def _write_pages(self, pool_name: str, pool: Any, keys: Any, starts: list[int]) -> list[bool]:
        with self._queue_lock:
            self._queued.append((pool_name, pool, list(keys), list(starts)))
        return [True] * len(keys)

    def _flush(self) -> None:
        with self._queue_lock:
            queued, self._queued = self._queued, []
        for pool_name, pool, keys, starts in queued:
            MemoryBackend._write_pages(self, pool_name, pool, keys, starts)

    def _read_pages(self, pool_name: str, pool: Any, keys: Any, starts: list[int]) -> list[bool]:
        self._flush()
        return super()._read_pages(pool_name, pool, keys, starts)

    def present(self, pool_name: str, key: str) -> bool:
        self._flush()
        return super().present(pool_name, key)


SPEC = BackendSpec("broken-write-behind", WriteBehindBackend, CAPABILITIES)
