"""Defect: a hit policy the backend does not implement counts as no hit, silently.

It declares ALL_PAGES and TRAILING_PAGES only, and answers a BLOCK_GROUPS (or unknown) pool with
zero pages, as SGLang 0.5.23's HiCacheFile and HiCacheNixl do: the controller cannot tell "not
stored" from "not understood".
"""

from __future__ import annotations

from dataclasses import replace

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec
from conformance.model.interface import (
    HiCacheStorageExtraInfo,
    PoolHitPolicy,
    PoolTransfer,
    PoolTransferResult,
)

DECLARED = frozenset({PoolHitPolicy.ALL_PAGES, PoolHitPolicy.TRAILING_PAGES})


class SilentPoliciesBackend(MemoryBackend):
    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        known = [t for t in pool_transfers or [] if t.hit_policy in DECLARED]
        if len(known) < len(pool_transfers or []):
            return PoolTransferResult(0, {})
        return super().batch_exists_v2(keys, known, extra_info)


SPEC = BackendSpec(
    "broken-silent-policies", SilentPoliciesBackend, replace(CAPABILITIES, hit_policies=DECLARED)
)
