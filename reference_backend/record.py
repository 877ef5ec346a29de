"""The on-disk record of one entry: a 512-byte header, then each region at a 512-byte offset.

Padding every region to the O_DIRECT unit lets zero-copy regions and staged records share one file
format, so an entry written buffered reads back with O_DIRECT and the other way round. The header
names the entry and its geometry, and carries an XXH3-64 checksum of the payload when the writer
computed one (XXH3 runs at memory speed here, about six times zlib's CRC-32, so checking every
byte costs little beside the transfer); a record whose header disagrees, or whose payload fails
its checksum, is treated as absent.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import xxhash

UNIT = 512
MAGIC = b"HCR2"
VERSION = 2
HAS_SUM = 1
# magic, version, region count, flags, entry digest, payload bytes, payload XXH3-64
_HEAD = struct.Struct("<4sHHH16sQQ")
_SUM_AT = _HEAD.size - 8


def pad(n: int, unit: int = UNIT) -> int:
    return -(-n // unit) * unit


def checksum_of(pieces: Sequence[tuple[int, int]]) -> int:
    """XXH3-64 over raw memory pieces ``(address, bytes)``, in order."""
    state = xxhash.xxh3_64()
    for address, size in pieces:
        state.update((ctypes.c_char * size).from_address(address))
    return int(state.intdigest())


@dataclass(frozen=True)
class RecordLayout:
    """Byte offsets of a pool's regions inside its records."""

    region_sizes: tuple[int, ...]

    @property
    def offsets(self) -> tuple[int, ...]:
        out, at = [], UNIT
        for size in self.region_sizes:
            out.append(at)
            at += pad(size)
        return tuple(out)

    @property
    def size(self) -> int:
        return UNIT + sum(pad(s) for s in self.region_sizes)

    @property
    def payload(self) -> int:
        return sum(self.region_sizes)

    def header(self, digest: bytes, checksum: int | None = None) -> bytes:
        flags = 0 if checksum is None else HAS_SUM
        head = _HEAD.pack(MAGIC, VERSION, len(self.region_sizes), flags, digest, self.payload, checksum or 0)
        sizes = struct.pack(f"<{len(self.region_sizes)}Q", *self.region_sizes)
        return (head + sizes).ljust(UNIT, b"\x00")

    def read_header(self, header: bytes, digest: bytes) -> tuple[bool, int | None]:
        """(does the header name this entry and geometry, the payload checksum it promises or None)."""
        if len(header) < UNIT:
            return False, None
        flags = struct.unpack_from("<H", header, 8)[0]
        checksum = struct.unpack_from("<Q", header, _SUM_AT)[0] if flags == HAS_SUM else None
        return header[:UNIT] == self.header(digest, checksum), checksum


def layout_from_sizes(sizes: Sequence[int]) -> RecordLayout:
    if not sizes or any(s <= 0 for s in sizes):
        raise ValueError("a page needs at least one non-empty region")
    if UNIT - _HEAD.size < 8 * len(sizes):
        raise ValueError("too many regions for one record header")
    return RecordLayout(tuple(int(s) for s in sizes))
