"""SGLang's HiCache v2 storage types, as the suite names them, and how a pool's index tensors
address it (``page_span``: slots a page; ``slot_count``: slots in all).

The one definition lives in :mod:`reference_backend.interface`, the small module the suite and the
reference backend share, so that the backend loads without the suite. Only duck typing crosses the
seam: a backend that receives these objects sees the same attributes as SGLang's own. A backend
that insists on SGLang's own classes is wrapped by its factory (the one seam, see
:mod:`conformance.model.capabilities`), which translates there.
"""

from __future__ import annotations

from reference_backend.interface import (
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
