"""Staging: where a page's bytes wait between host memory and a transfer.

A pool that moves in place needs none: its transfer reads and writes host memory. Any other pool's
pages go through a raw-byte (uint8) buffer owned by that pool and that direction, each page in a
slot of its own: ``place`` gives every item its slot (and its host regions), ``gather`` copies a
page into its slot before a write, ``scatter`` copies it out after a read. ``payload`` says where
a page's bytes are for the transfer and the checksum, whichever way it moves.
"""

from __future__ import annotations

import ctypes
from typing import Any

import torch

from reference_backend.interface import aligned_empty
from reference_backend.plan import Item
from reference_backend.record import BLOCK, checksum_of, pad


class Staging:
    """One direction's raw-byte staging buffers, one per pool, registered with that direction's agent."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.held: dict[str, tuple[torch.Tensor, Any]] = {}
        """Pool name -> (buffer, its NIXL registration)."""

    def buffer(self, pool: str, nbytes: int) -> torch.Tensor:
        """This pool's staging buffer, grown (and re-registered) to at least ``nbytes``."""
        held = self.held.get(pool)
        if held is not None and held[0].numel() >= nbytes:
            return held[0]
        if held is not None:
            self.agent.deregister_memory(held[1])
        # zeroed: a record's padding (between regions, and up to the block a write rounds up to)
        # is written from this buffer, and must never carry whatever the allocator left in it
        buf = aligned_empty((max(nbytes, 2 * (held[0].numel() if held else 0)),), torch.uint8).zero_()
        reg = self.agent.register_memory([(buf.data_ptr(), buf.numel(), 0, "")], "DRAM")
        self.held[pool] = (buf, reg)
        return buf

    def close(self) -> None:
        for _, reg in self.held.values():
            self.agent.deregister_memory(reg)
        self.held.clear()


def place(staging: Staging, group: list[Item], slot: int, lead: int = 0) -> None:
    """Give one pool's items their host regions and, for a staged pool, slots ``slot`` bytes apart
    in its staging buffer (each page's bytes ``lead`` bytes into its slot)."""
    pool = group[0].pool
    base = 0 if pool.zero_copy else staging.buffer(pool.name, pad(slot * len(group), BLOCK)).data_ptr()
    regions = pool.regions([i.start for i in group]) if pool.has_meta else []
    per_page = len(pool.layout.region_sizes)
    for n, item in enumerate(group):
        item.slot = base + n * slot + lead
        item.regions = regions[n * per_page : (n + 1) * per_page]


def clear_tail(group: list[Item]) -> None:
    """Zero a staged write's bytes from its last record to the block boundary the write rounds up
    to: they may hold a page of an earlier, larger batch, which has no place in this extent."""
    pool = group[0].pool
    if pool.zero_copy:
        return
    end = group[-1].slot + pool.layout.size
    ctypes.memset(end, 0, pad(end - group[0].slot, BLOCK) - (end - group[0].slot))


def payload(item: Item) -> list[tuple[int, int]]:
    """Where the page's bytes are, region by region: host memory, or the staging slot."""
    layout = item.pool.layout
    if item.pool.zero_copy:
        return item.regions
    return [(item.slot + off, size) for off, size in zip(layout.offsets, layout.region_sizes)]


def gather(item: Item) -> None:
    """Copy a staged page's raw bytes from host memory into its slot."""
    pool = item.pool
    if pool.zero_copy:
        return
    into = payload(item)
    if pool.has_meta:
        for (ptr, size), (dst, _) in zip(item.regions, into):
            ctypes.memmove(dst, ptr, size)
    else:
        page = pool.host.get_data_page(item.start, flat=True).contiguous().view(torch.uint8)
        ctypes.memmove(into[0][0], page.data_ptr(), page.numel())


def scatter(item: Item) -> None:
    """Copy a staged page's raw bytes from its slot into host memory."""
    pool = item.pool
    if pool.zero_copy:
        return
    came = payload(item)
    if pool.has_meta:
        for (ptr, size), (src, _) in zip(item.regions, came):
            ctypes.memmove(ptr, src, size)
    else:
        page = pool.host.get_dummy_flat_data_page()
        raw = page.view(torch.uint8)
        ctypes.memmove(raw.data_ptr(), came[0][0], raw.numel())
        pool.host.set_from_flat_data_page(item.start, page)


def checksum(item: Item) -> int:
    """XXH3-64 of the page's bytes where they are now."""
    return checksum_of(payload(item))


def intact(item: Item) -> bool:
    """Whether the page's bytes match the checksum its record carries (none carried: True)."""
    return item.checksum is None or checksum(item) == item.checksum
