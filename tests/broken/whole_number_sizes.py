"""Defect: a budget's size is read as a whole number of its unit, the decimals dropped (an
``int()`` of the number before the suffix), so ``0.262144M`` is a budget of 0, which means none:
the store grows without bound, though ``262.144k`` and ``256Ki`` are read right."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend

UNITS = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


class WholeNumberSizes(NixlBackend):
    def __init__(self, config: HiCacheStorageConfig, location: Path) -> None:
        extra = dict(config.extra_config or {})
        size = extra.get("max_size")
        found = re.fullmatch(r"(\d+)(?:\.\d+)?(Ki|Mi|Gi|Ti|k|M|G|T)", size) if isinstance(size, str) else None
        if found:
            extra["max_size"] = int(found.group(1)) * UNITS[found.group(2)]
        super().__init__(dataclasses.replace(config, extra_config=extra), location)


SPEC = BackendSpec("broken-whole-number-sizes", WholeNumberSizes, NIXL_CAPABILITIES)
