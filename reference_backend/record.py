"""The on-disk record of one entry: a 512-byte header, then each region at a 512-byte offset.

Padding every region to the O_DIRECT unit lets zero-copy regions and staged records share one file
format, so an entry written buffered reads back with O_DIRECT and the other way round. The header
names the entry and its geometry; a record whose header disagrees is treated as absent.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

UNIT = 512
MAGIC = b"HCR1"
_HEAD = struct.Struct("<4sHH16sQ")  # magic, version, region count, entry digest, payload bytes
VERSION = 1


def pad(n: int, unit: int = UNIT) -> int:
    return -(-n // unit) * unit


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

    def header(self, digest: bytes) -> bytes:
        head = _HEAD.pack(MAGIC, VERSION, len(self.region_sizes), digest, self.payload)
        sizes = struct.pack(f"<{len(self.region_sizes)}Q", *self.region_sizes)
        return (head + sizes).ljust(UNIT, b"\x00")

    def header_matches(self, header: bytes | memoryview, digest: bytes) -> bool:
        return bytes(header[:UNIT]) == self.header(digest)


def layout_from_sizes(sizes: Sequence[int]) -> RecordLayout:
    if not sizes or any(s <= 0 for s in sizes):
        raise ValueError("a page needs at least one non-empty region")
    if UNIT - _HEAD.size < 8 * len(sizes):
        raise ValueError("too many regions for one record header")
    return RecordLayout(tuple(int(s) for s in sizes))
