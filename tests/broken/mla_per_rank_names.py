"""Defect: MLA state is named per TP rank, though SGLang replicates it: only the writer rank
(``is_storage_writer``) stores it, so every other rank misses what the writer stored."""

from __future__ import annotations

from dataclasses import replace

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec
from conformance.model.sharing import entry_identity


class PerRankMlaBackend(MemoryBackend):
    def object_name(self, pool_name: str, key: str) -> ObjectName:
        return entry_identity(replace(self.config, is_mla_model=False), pool_name, key)


SPEC = BackendSpec("broken-mla-per-rank-names", PerRankMlaBackend, CAPABILITIES)
