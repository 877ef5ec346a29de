"""The on-disk record of one entry: each region of one page, every region at a 512-byte offset.

Padding every region to the O_DIRECT unit lets zero-copy regions and staged records share one file
format, so an entry written buffered reads back with O_DIRECT and the other way round. A record
carries no header: what names it (entry digest, geometry tag, checksum) lives in the commit that
publishes it (see :mod:`reference_backend.log`). That keeps every I/O of a batch a whole number of
file-system blocks, which ext4 needs to run O_DIRECT writes in parallel: a 512-byte header per
record made it serialise every write of the batch.

The checksum is XXH3-64 of the payload. It runs at memory speed here, about six times zlib's
CRC-32, so checking every byte costs little beside the transfer.
"""

from __future__ import annotations

import ctypes
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import xxhash

UNIT = 512
BLOCK = 4096


def pad(n: int, unit: int = UNIT) -> int:
    return -(-n // unit) * unit


def checksum_of(pieces: Sequence[tuple[int, int]]) -> int:
    """XXH3-64 over raw memory pieces ``(address, bytes)``, in order. One piece (a page of one
    region: most pools) is hashed in one call, without a hasher object: a third less per page."""
    if len(pieces) == 1:
        address, size = pieces[0]
        return int(xxhash.xxh3_64_intdigest((ctypes.c_char * size).from_address(address)))
    state = xxhash.xxh3_64()
    for address, size in pieces:
        state.update((ctypes.c_char * size).from_address(address))
    return int(state.intdigest())


@dataclass(frozen=True)
class RecordLayout:
    """Byte offsets of a pool's regions inside its records."""

    region_sizes: tuple[int, ...]
    meaning: str = ""
    """What the bytes hold (element dtype, tokens per page): same-sized pages of another KV dtype
    or page size are another format, and must never read back as this one."""

    # cached: every item of every batch asks for these, and the layout never changes
    @cached_property
    def offsets(self) -> tuple[int, ...]:
        out, at = [], 0
        for size in self.region_sizes:
            out.append(at)
            at += pad(size)
        return tuple(out)

    @cached_property
    def size(self) -> int:
        return sum(pad(s) for s in self.region_sizes)

    @cached_property
    def tag(self) -> int:
        """A 32-bit fingerprint of the geometry, so a record never reads back into another shape."""
        shape = struct.pack(f"<{len(self.region_sizes)}Q", *self.region_sizes)
        return zlib.crc32(shape + self.meaning.encode())


def layout_from_sizes(sizes: Sequence[int], meaning: str = "") -> RecordLayout:
    if not sizes or any(s <= 0 for s in sizes):
        raise ValueError("a page needs at least one non-empty region")
    return RecordLayout(tuple(int(s) for s in sizes), meaning)


def meaning_of(host: Any) -> str:
    """A host pool's element dtype and tokens per page, the part of its format sizes do not show."""
    return f"{getattr(host, 'dtype', '')}/{getattr(host, 'page_size', '')}"
