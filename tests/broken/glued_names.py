"""Defect: names glued from strings, as upstream HiCacheFile does: ``{key}.{pool}_{model}_{rank}_{size}``.

``/`` in a model becomes ``-``, and nothing stops a key from spelling the glue itself, so KV key
``h.swa`` meets SWA key ``h``, and model ``org/m`` meets ``org-m``.
"""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import PoolName
from reference_backend.interface import shard


class GluedNamesBackend(MemoryBackend):
    def object_name(self, pool_name: str, key: str) -> ObjectName:
        c = self.config
        model = "-".join((c.model_name or "").split("/"))
        # The shard is the rule's own (so only the gluing is wrong), spelled the upstream way.
        suffix = "".join(f"_{part}" for part in shard(c, pool_name) if part != "replicated")
        stem = key if pool_name == str(PoolName.KV) else f"{key}.{pool_name}"
        return (f"{stem}_{model}{suffix}",)


SPEC = BackendSpec("broken-glued-names", GluedNamesBackend, CAPABILITIES)
