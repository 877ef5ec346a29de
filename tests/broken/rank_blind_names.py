"""Defect: MHA object names leave out the TP rank, so ranks overwrite each other's shards."""

from __future__ import annotations

from conformance.capabilities import BackendSpec
from conformance.memory_backend import CAPABILITIES, MemoryBackend, ObjectName


class RankBlindBackend(MemoryBackend):
    def object_name(self, pool_name: str, key: str) -> ObjectName:
        c = self.config
        return ((c.model_name, c.pp_rank), pool_name, key)


SPEC = BackendSpec("broken-rank-blind-names", RankBlindBackend, CAPABILITIES)
