"""Registered host pools: the record layout of their pages, and where each page's regions lie.

A host pool tells where a page's regions are through ``get_page_buffer_meta``, one query per
batch. Most pools put every page's regions at a fixed stride; that rule is checked once, at
registration, over every page, and then answers instead of the query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from reference_backend.interface import page_span, slot_count
from reference_backend.record import RecordLayout, layout_from_sizes, meaning_of


@dataclass
class Pool:
    """A registered host pool and how its pages travel."""

    name: str
    host: Any
    layout: RecordLayout
    zero_copy: bool
    has_meta: bool
    span: int
    """Slots one page spans in the indices the controller hands over (``page_span``)."""
    slots: int
    """Slots the controller addresses (``slot_count``); both fixed at registration."""
    strides: list[tuple[int, int]] | None = None
    """Per region (address of page 0, bytes between pages), when every page follows that rule."""

    @classmethod
    def of(cls, name: str, host: Any, in_place: Callable[[Any], bool]) -> Pool:
        """Inspect ``host``: its regions' sizes (its record layout) and, where it reports them, their
        addresses; ``in_place``: whether the target may move a host pool's pages without staging."""
        span, slots = page_span(host), slot_count(host)
        first = torch.arange(span, dtype=torch.int64)
        try:
            meta = host.get_page_buffer_meta(first)
        except (NotImplementedError, ValueError, AssertionError):
            meta = None
        # DeepSeek-V4's KV anchor (a LogicalHostPool) answers None and its pages are empty: its
        # entries are one-byte markers, so that exists still gates the side pools on the anchor key
        has_meta = meta is not None
        # a region of no bytes (lightning attention's empty conv state, which SGLang's MambaPoolHost
        # still reports) holds nothing to move: it is no part of the record, here or in meta()
        sizes = (
            [int(s) for s in meta[1] if int(s)]
            if meta is not None
            else [host.get_dummy_flat_data_page().view(torch.uint8).numel()]
        )
        if sizes in ([0], []):
            sizes = [1]
        zero_copy = has_meta and in_place(host)
        pool = cls(name, host, layout_from_sizes(sizes, meaning_of(host)), zero_copy, has_meta, span, slots)
        if has_meta:
            pool.learn_strides()
        return pool

    def meta(self, starts: list[int]) -> list[tuple[int, int]]:
        """(address, bytes) of every region of each page, as the host pool reports them."""
        span = self.span
        idx = torch.tensor([s + t for s in starts for t in range(span)], dtype=torch.int64)
        ptrs, sizes = self.host.get_page_buffer_meta(idx)
        return [(int(p), int(s)) for p, s in zip(ptrs, sizes) if int(s)]

    def regions(self, starts: list[int]) -> list[tuple[int, int]]:
        """(address, bytes) of every region of each page, page by page."""
        if self.strides is None:
            return self.meta(starts)
        span = self.span
        rule = list(zip(self.strides, self.layout.region_sizes))
        return [(base + (s // span) * step, size) for s in starts for (base, step), size in rule]

    def learn_strides(self) -> None:
        """Check, once, that every page's regions sit at a fixed stride; then skip the per-batch query."""
        ps = self.span
        pages = self.slots // ps
        first = self.meta([0])
        step = self.meta([ps]) if pages > 1 else first
        strides = [(p0, p1 - p0) for (p0, _), (p1, _) in zip(first, step)]
        width = len(strides)
        for lo in range(0, pages, 4096):
            chunk = list(range(lo * ps, min(pages, lo + 4096) * ps, ps))
            got = self.meta(chunk)
            for n, start in enumerate(chunk):
                page = start // ps
                for r, ((base, stride), size) in enumerate(zip(strides, self.layout.region_sizes)):
                    if got[n * width + r] != (base + page * stride, size):
                        return
        self.strides = strides

    def spans(self) -> list[tuple[int, int]]:
        """(address, bytes) of each region column over every page: what NIXL registers to move
        this pool's pages in place."""
        regions = self.regions(list(range(0, self.slots, self.span)))
        columns = len(self.layout.region_sizes)
        out = []
        for c in range(columns):
            col = regions[c::columns]
            lo = min(p for p, _ in col)
            out.append((lo, max(p + s for p, s in col) - lo))
        return out
