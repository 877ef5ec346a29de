"""Defect: object names leave out the attention-CP rank, though each CP rank holds its own slice
of every page: CP ranks with the same TP rank overwrite each other."""

from __future__ import annotations

from dataclasses import replace

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec
from conformance.model.sharing import entry_identity


class ContextParallelBlindBackend(MemoryBackend):
    def object_name(self, pool_name: str, key: str) -> ObjectName:
        return entry_identity(replace(self.config, attn_cp_rank=0, attn_cp_size=1), pool_name, key)


SPEC = BackendSpec("broken-cp-blind-names", ContextParallelBlindBackend, CAPABILITIES)
