"""Defect: the legacy calls make keys file-name safe by turning ``/`` into ``_``, so ``a/b`` is ``a_b``."""

from __future__ import annotations

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend, ObjectName
from conformance.model.capabilities import BackendSpec


class SanitisedGenericNamesBackend(MemoryBackend):
    def object_name(self, pool_name: str, key: str) -> ObjectName:
        return super().object_name(pool_name, key.replace("/", "_"))


SPEC = BackendSpec("broken-sanitised-generic-names", SanitisedGenericNamesBackend, CAPABILITIES)
