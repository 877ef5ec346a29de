"""Defect: the legacy ``batch_set`` zips keys with pages, so a short list stores part of the batch
and reports success (HiCacheFile's own ``batch_set`` does this)."""

from __future__ import annotations

import torch

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec


class ZippingGenericSetBackend(MemoryBackend):
    def batch_set(self, keys: list[str], values: list[torch.Tensor]) -> bool:
        return all(super(ZippingGenericSetBackend, self).batch_set([k], [v]) for k, v in zip(keys, values))


SPEC = BackendSpec("broken-zipping-generic-set", ZippingGenericSetBackend, CAPABILITIES)
