"""NIXL descriptor rows of a file batch: host side (DRAM) and file side, one row each per run.

A zero-copy pool's regions each get a row, at their record's offsets in the file. A staged pool's
records sit back to back in its staging buffer; where they also sit back to back in the file
(always, for a write), they move as one row, and a write's run is rounded up to a whole
file-system block. The items must already be placed (``staging.place``) and located.
"""

from __future__ import annotations

import numpy as np

from reference_backend.plan import Item, by_pool
from reference_backend.record import BLOCK, pad


def file_rows(items: list[Item], writing: bool) -> tuple[np.ndarray, np.ndarray]:
    """(DRAM rows, FILE rows) moving ``items`` between memory and their records."""
    # flat triples, (address, bytes, 0) and (offset, bytes, fd): NumPy reads a flat list of ints
    # about three times faster than a list of tuples
    dram: list[int] = []
    file: list[int] = []
    for group in by_pool(items).values():
        pool = group[0].pool
        if pool.zero_copy:
            offsets = pool.layout.offsets
            for item in group:
                for (ptr, nbytes), off in zip(item.regions, offsets):
                    dram += (ptr, nbytes, 0)
                    file += (item.offset + off, nbytes, item.fd)
            continue
        size = pool.layout.size
        for n, item in enumerate(group):
            if n and file[-1] == item.fd and file[-3] + file[-2] == item.offset:
                dram[-2] += size
                file[-2] += size
            else:
                dram += (item.slot, size, 0)
                file += (item.offset, size, item.fd)
        if writing:
            dram[-2] = file[-2] = pad(file[-2], BLOCK)
    return _rows(dram), _rows(file)


def _rows(flat: list[int]) -> np.ndarray:
    return np.array(flat, dtype=np.uint64).reshape(-1, 3)
