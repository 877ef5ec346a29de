"""Validation of batch requests, shared by the backends this project ships.

A malformed request is refused whole, before any I/O: every key gets False and no byte moves.
"""

from __future__ import annotations

from typing import Any

import torch


def page_starts(pool: Any, keys: Any, host_indices: Any) -> list[int] | None:
    """First slot of each page, or None when the request is malformed.

    Keys must be distinct non-empty strings without NUL; ``host_indices`` a 1-D integer tensor of
    whole, in-range pages, one page per key.
    """
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        return None
    if any("\x00" in k for k in keys) or len(set(keys)) != len(keys):
        return None
    if not isinstance(host_indices, torch.Tensor) or host_indices.dim() != 1:
        return None
    if host_indices.dtype not in (torch.int64, torch.int32):
        return None
    page_size = int(pool.page_size)
    if host_indices.numel() != len(keys) * page_size:
        return None
    starts = [int(i) for i in host_indices[::page_size].tolist()]
    if any(s < 0 or s + page_size > int(pool.size) or s % page_size for s in starts):
        return None
    return starts
