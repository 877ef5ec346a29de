"""Defect: object names leave out the pipeline stage, as HiCacheNixl's do: two stages of one
deployment hold different layers of a page under one name, and the later stage's write wins."""

from __future__ import annotations

from dataclasses import replace

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec
from conformance.model.sharing import entry_identity


class PipelineBlindBackend(MemoryBackend):
    def object_name(self, pool_name: str, key: str) -> ObjectName:
        return entry_identity(replace(self.config, pp_rank=0, pp_size=1), pool_name, key)


SPEC = BackendSpec("broken-pp-blind-names", PipelineBlindBackend, CAPABILITIES)
