"""Defect: a store copies each page from its first slot for twice the page's length (a span
counted in the wrong unit), so the next slot's bytes ride along into the entry's file. A get
copies back the page's own length, so every round trip reads back byte for byte; the other
request's KV stays on disk."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig, page_span, slot_count


class NeighbourReadingStore(MemoryBackend):
    """One file per entry under the storage folder."""

    def __init__(self, config: HiCacheStorageConfig, storage_dir: Path) -> None:
        super().__init__(config, storage_dir)
        self.folder = Path(storage_dir)

    def path(self, pool_name: str, key: str) -> Path:
        return self.folder / hashlib.sha256(repr(self.object_name(pool_name, key)).encode()).hexdigest()

    def present(self, pool_name: str, key: str) -> bool:
        return self.path(pool_name, key).is_file()

    def _write_pages(self, pool_name: str, pool: Any, keys: Any, starts: list[int]) -> list[bool]:
        for key, start in zip(keys, starts):
            after = start + page_span(pool)  # the slot after the page: read as if part of it
            tail = self.capture(pool, after) if after < slot_count(pool) else b""
            self.path(pool_name, key).write_bytes(self.capture(pool, start) + tail)
        return [True] * len(keys)

    def _read_pages(self, pool_name: str, pool: Any, keys: Any, starts: list[int]) -> list[bool]:
        size = len(self.capture(pool, 0)) if starts else 0
        done = []
        for key, start in zip(keys, starts):
            path = self.path(pool_name, key)
            done.append(path.is_file() and self.restore(pool, start, path.read_bytes()[:size]))
        return done

    def clear(self) -> bool:
        for path in self.folder.iterdir():
            path.unlink()
        return True

    def stored_object_count(self) -> int:
        return sum(1 for _ in self.folder.iterdir())


SPEC = BackendSpec(
    "broken-neighbour-reading-store",
    NeighbourReadingStore,
    dataclasses.replace(CAPABILITIES, stores_files=True),
)
