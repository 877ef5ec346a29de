"""Public: SGLang's HiCache v2 storage types, as a backend under test receives them.

The path a backend's certification glue imports (README, ``docs/certify.md``); the definitions
live in :mod:`conformance.model.interface`.
"""

from conformance.model.interface import (
    HiCacheStorageConfig,
    HiCacheStorageExtraInfo,
    PoolHitPolicy,
    PoolName,
    PoolTransfer,
    PoolTransferResult,
    page_span,
    slot_count,
)

__all__ = [
    "HiCacheStorageConfig",
    "HiCacheStorageExtraInfo",
    "PoolHitPolicy",
    "PoolName",
    "PoolTransfer",
    "PoolTransferResult",
    "page_span",
    "slot_count",
]
