"""Defects of one kind: the memory backend with keys normalized before they name an entry.

Each module beside this one (``case_folded_names``, ``nfc_names``, ``stripped_names``,
``hex_parsed_names``, ``unified_separator_names``) is one such backend, one normalization each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec


def normalising(name: str, normalise: Callable[[str], str]) -> BackendSpec:
    """The memory backend with ``normalise`` applied to every key it names an entry by."""

    class NormalisingBackend(MemoryBackend):
        def object_name(self, pool_name: str, key: Any) -> ObjectName:
            return super().object_name(pool_name, normalise(key) if isinstance(key, str) else key)

    NormalisingBackend.__name__ = NormalisingBackend.__qualname__ = f"{name.title().replace('-', '')}Backend"
    return BackendSpec(f"broken-{name}", NormalisingBackend, CAPABILITIES)
