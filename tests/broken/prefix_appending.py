"""Defect: the backend extends ``extra_info.prefix_keys`` with the batch's keys to track its chain.
The controller builds the next batch's prefix from that same list (``prefix_keys + batch_hashes``),
so every later batch's prefix carries an earlier batch's keys twice."""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageExtraInfo


class PrefixAppendingBackend(MemoryBackend):
    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        if extra_info is not None and extra_info.prefix_keys is not None:
            extra_info.prefix_keys.extend(keys)
        return super().batch_exists(keys, extra_info)


SPEC = BackendSpec("broken-prefix-appending", PrefixAppendingBackend, CAPABILITIES)
