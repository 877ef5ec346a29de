"""Defect: MLA object names leave out the DCP shard: each DCP rank holds every ``dcp_size``-th token
of a page, yet all of them write one shared name, as before DCP existed."""

from __future__ import annotations

from dataclasses import replace

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec
from conformance.model.sharing import entry_identity


class DecodeContextParallelBlindBackend(MemoryBackend):
    def object_name(self, pool_name: str, key: str) -> ObjectName:
        blind = replace(self.config, dcp_rank=0, dcp_size=1, logical_page_size=None)
        return entry_identity(blind, pool_name, key)


SPEC = BackendSpec("broken-dcp-blind-names", DecodeContextParallelBlindBackend, CAPABILITIES)
