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
    dram: list[tuple[int, int, int]] = []
    file: list[tuple[int, int, int]] = []
    for group in by_pool(items).values():
        pool = group[0].pool
        size = pool.layout.size
        for n, item in enumerate(group):
            if pool.zero_copy:
                for (ptr, nbytes), off in zip(item.regions, pool.layout.offsets):
                    dram.append((ptr, nbytes, 0))
                    file.append((item.offset + off, nbytes, item.fd))
            elif file and file[-1][2] == item.fd and n and file[-1][0] + file[-1][1] == item.offset:
                dram[-1] = (dram[-1][0], dram[-1][1] + size, 0)
                file[-1] = (file[-1][0], file[-1][1] + size, item.fd)
            else:
                dram.append((item.slot, size, 0))
                file.append((item.offset, size, item.fd))
        if writing and not pool.zero_copy:
            whole = pad(file[-1][1], BLOCK)
            dram[-1] = (dram[-1][0], whole, 0)
            file[-1] = (file[-1][0], whole, file[-1][2])
    return np.array(dram, dtype=np.uint64), np.array(file, dtype=np.uint64)
