"""Defect: ``batch_exists`` never returns, joining a thread that never ends, in a call no signal
interrupts: the property must fail at its time limit, and the run must go on without it."""

from __future__ import annotations

import threading

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo


class HangingExistsBackend(MemoryBackend):
    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        never = threading.Thread(target=threading.Event().wait, daemon=True)
        never.start()
        never.join()
        return 0


SPEC = BackendSpec("broken-hanging-exists", HangingExistsBackend, CAPABILITIES)
