"""Defect: every pool is shared across TP ranks as the KV pool is: replicated for an MLA model,
per rank otherwise. Right for each pool kind alone (MLA KV and its DSA indexer are replicated,
Mamba state beside MHA KV is per rank), wrong in the combination Kimi-Linear ships: its KDA state
is TP-sharded beside replicated MLA KV, so every rank's state lands on one shared entry (SGLang's
base controller, which skips the whole backup on non-writer MLA ranks, makes the same mistake;
``HybridCacheController.should_backup`` is its fix)."""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import PoolName
from conformance.model.sharing import entry_identity


class KvKindSharingBackend(MemoryBackend):
    def object_name(self, pool_name: str, key: str) -> ObjectName:
        scope, _, _ = entry_identity(self.config, PoolName.KV, key)
        return (scope, pool_name, key)


SPEC = BackendSpec("broken-kv-kind-sharing", KvKindSharingBackend, CAPABILITIES)
