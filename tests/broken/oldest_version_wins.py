"""Defect: after a restart, the oldest stored version of a key is served, not the newest.

Each instance appends to a generation of its own (as a log-structured store gives each writer its
segment), and a lookup tries its own generation, then the others oldest first: one restart is
fine, but after two, what the first instance wrote shadows every later overwrite.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig

_GENERATIONS: dict[str, list[dict[ObjectName, bytes]]] = {}
_LOCK = threading.Lock()


class _Generations(dict[ObjectName, bytes]):
    """One instance's view: writes go to its own generation, reads search the oldest first."""

    def __init__(self, generations: list[dict[ObjectName, bytes]]) -> None:
        super().__init__()
        self.generations = generations
        self.own: dict[ObjectName, bytes] = {}
        generations.append(self.own)

    def __setitem__(self, name: ObjectName, page: bytes) -> None:
        self.own[name] = page

    def get(self, name: ObjectName, default: Any = None) -> Any:
        for generation in [self.own, *self.generations]:
            if name in generation:
                return generation[name]
        return default

    def __contains__(self, name: object) -> bool:
        return any(name in g for g in self.generations)

    def __len__(self) -> int:
        return len(set().union(*self.generations))

    def clear(self) -> None:
        for generation in self.generations:
            generation.clear()


class OldestVersionWinsBackend(MemoryBackend):
    def __init__(self, config: HiCacheStorageConfig, storage_dir: Path) -> None:
        super().__init__(config, storage_dir)
        with _LOCK:
            self._store = _Generations(_GENERATIONS.setdefault(str(storage_dir), []))


SPEC = BackendSpec(
    "broken-oldest-version-wins", OldestVersionWinsBackend, replace(CAPABILITIES, persistence=True)
)
