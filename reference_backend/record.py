"""The on-disk record of one entry: a 512-byte header, then each region at a 512-byte offset.

Padding every region to the O_DIRECT unit lets zero-copy regions and staged records share one file
format, so an entry written buffered reads back with O_DIRECT and the other way round. The header
names the entry and its geometry, and carries a CRC-32 of the payload when the writer computed one;
a record whose header disagrees, or whose payload fails its CRC, is treated as absent.
"""

from __future__ import annotations

import ctypes
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

UNIT = 512
MAGIC = b"HCR1"
VERSION = 1
HAS_CRC = 1
# magic, version, region count, flags, entry digest, payload bytes, payload CRC-32
_HEAD = struct.Struct("<4sHHH16sQI")
_CRC_AT = _HEAD.size - 4


def pad(n: int, unit: int = UNIT) -> int:
    return -(-n // unit) * unit


def crc_of(pieces: Sequence[tuple[int, int]]) -> int:
    """CRC-32 over raw memory pieces ``(address, bytes)``, in order."""
    crc = 0
    for address, size in pieces:
        crc = zlib.crc32((ctypes.c_char * size).from_address(address), crc)
    return crc


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

    def header(self, digest: bytes, crc: int | None = None) -> bytes:
        flags = 0 if crc is None else HAS_CRC
        head = _HEAD.pack(MAGIC, VERSION, len(self.region_sizes), flags, digest, self.payload, crc or 0)
        sizes = struct.pack(f"<{len(self.region_sizes)}Q", *self.region_sizes)
        return (head + sizes).ljust(UNIT, b"\x00")

    def read_header(self, header: bytes, digest: bytes) -> tuple[bool, int | None]:
        """(does the header name this entry and geometry, the payload CRC it promises or None)."""
        if len(header) < UNIT:
            return False, None
        flags = struct.unpack_from("<H", header, 8)[0]
        crc = struct.unpack_from("<I", header, _CRC_AT)[0] if flags == HAS_CRC else None
        return header[:UNIT] == self.header(digest, crc), crc


def layout_from_sizes(sizes: Sequence[int]) -> RecordLayout:
    if not sizes or any(s <= 0 for s in sizes):
        raise ValueError("a page needs at least one non-empty region")
    if UNIT - _HEAD.size < 8 * len(sizes):
        raise ValueError("too many regions for one record header")
    return RecordLayout(tuple(int(s) for s in sizes))
