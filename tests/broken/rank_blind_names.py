"""Defect: MHA object names leave out the TP rank, so ranks overwrite each other's shards."""

from __future__ import annotations

from dataclasses import replace

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec
from conformance.model.sharing import entry_identity


class RankBlindBackend(MemoryBackend):
    def object_name(self, pool_name: str, key: str) -> ObjectName:
        return entry_identity(replace(self.config, tp_rank=0, tp_size=1), pool_name, key)


SPEC = BackendSpec("broken-rank-blind-names", RankBlindBackend, CAPABILITIES)
