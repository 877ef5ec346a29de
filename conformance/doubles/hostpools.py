"""In-process doubles of SGLang's host pools, with their real memory layouts.

A storage backend only sees a host pool through a handful of members (``page_size``, ``size``,
``dtype``, ``layout``, ``get_page_buffer_meta``, ``get_data_page``, ``get_dummy_flat_data_page``,
``set_from_flat_data_page``, ``is_stride_page_aligned``). These doubles expose exactly that surface
over CPU tensors laid out as SGLang lays them out, so zero-copy pointers and flat pages mean what
they mean in production. Their own extras (``page_regions``, ``segments``, ``backing``) are for the
suite: they let it write bit patterns into a page and watch every byte of the pool.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from reference_backend.interface import aligned_empty as aligned_empty  # the one definition, re-exported

MISALIGNMENT = 64
"""Offset used for "misaligned" pools: legal for every dtype, never a multiple of 512."""


def store_dtype(dtype: torch.dtype) -> torch.dtype:
    """What SGLang's KV pools keep fp8 in: uint8 (``index_put`` has no fp8 kernels)."""
    return torch.uint8 if dtype in (torch.float8_e5m2, torch.float8_e4m3fn, torch.float8_e4m3fnuz) else dtype


@dataclass(frozen=True)
class Segment:
    """A run of ``nbytes`` bytes inside a page region that holds elements of ``dtype``."""

    dtype: torch.dtype
    nbytes: int


class HostPoolDouble:
    """Common machinery: a pool is a set of backing tensors and, per page, a list of regions.

    Subclasses define ``_page_regions(index)`` (typed tensor views, in ``get_page_buffer_meta``
    order) and the flat-page codec; everything else follows from those.
    """

    kind = "generic"
    page_size: int
    size: int
    dcp_size = 1
    """Under decode context parallelism SGLang widens an MLA pool's addressing: the controller's
    slots (``logical_size``) are ``dcp_size`` per physical row, and a page spans
    ``logical_page_size`` of them. Indices handed in are logical; 1 leaves them physical."""
    dtype: torch.dtype
    layout: str
    misalign: int

    def backing(self) -> list[torch.Tensor]:
        """Every tensor that holds the pool's memory."""
        raise NotImplementedError

    def _page_regions(self, index: int) -> list[torch.Tensor]:
        raise NotImplementedError

    def segments(self) -> list[list[Segment]]:
        """Per region of a page, the typed runs that tile it (for bit-pattern generation)."""
        return [[Segment(r.dtype, r.numel() * r.element_size())] for r in self._page_regions(0)]

    @property
    def page_num(self) -> int:
        return self.size // self.page_size

    @property
    def logical_page_size(self) -> int:
        """Slots one page spans in the indices the controller hands over."""
        return self.page_size * self.dcp_size

    @property
    def logical_size(self) -> int:
        return self.size * self.dcp_size

    def _row(self, index: int) -> int:
        """The physical start of the page at ``index``, as SGLang's DCP pool maps it."""
        if self.dcp_size == 1:
            return index
        self._check_index(index)
        return index // self.dcp_size

    # -- the suite's view -------------------------------------------------------------------

    def page_regions(self, index: int) -> list[torch.Tensor]:
        """The page's regions as uint8 views of pool memory."""
        self._check_index(index)
        return [r.view(torch.uint8).reshape(-1) for r in self._page_regions(index // self.dcp_size)]

    def page_nbytes(self) -> int:
        return sum(r.numel() for r in self.page_regions(0))

    def read_page(self, index: int) -> bytes:
        return b"".join(r.numpy().tobytes() for r in self.page_regions(index))

    def write_page(self, index: int, data: bytes) -> None:
        regions = self.page_regions(index)
        if len(data) != sum(r.numel() for r in regions):
            raise ValueError("page payload has the wrong length")
        start = 0
        for region in regions:
            n = region.numel()
            if n:  # a region of no bytes (lightning's empty conv state) takes none
                region.copy_(torch.frombuffer(bytearray(data[start : start + n]), dtype=torch.uint8))
            start += n

    def snapshot(self) -> list[bytes]:
        """Every byte of the pool, for canary checks."""
        return [t.view(torch.uint8).reshape(-1).numpy().tobytes() for t in self.backing()]

    def fill(self, byte: int) -> None:
        for t in self.backing():
            t.view(torch.uint8).fill_(byte)

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.logical_size or index % self.logical_page_size:
            raise IndexError(f"{index} is not a page start of a pool of {self.logical_size} slots")

    # -- SGLang's surface -------------------------------------------------------------------

    def get_page_buffer_meta(self, indices: torch.Tensor) -> tuple[list[int], list[int]]:
        """Raw addresses and byte lengths of every region of every page in ``indices``."""
        flat = indices.tolist()
        if len(flat) % self.logical_page_size:
            raise ValueError("indices must cover whole pages")
        ptrs: list[int] = []
        sizes: list[int] = []
        for i in range(0, len(flat), self.logical_page_size):
            for region in self._page_regions(self._row(int(flat[i]))):
                ptrs.append(region.data_ptr())
                sizes.append(region.numel() * region.element_size())
        return ptrs, sizes

    def get_data_page(self, index: int, flat: bool = True) -> torch.Tensor:
        page = torch.cat([r.view(torch.uint8).reshape(-1) for r in self._page_regions(self._row(index))])
        return page if flat else page.reshape(1, -1)

    def get_dummy_flat_data_page(self) -> torch.Tensor:
        return torch.zeros(self.page_nbytes(), dtype=torch.uint8)

    def set_from_flat_data_page(self, index: int, data_page: torch.Tensor) -> None:
        flat = data_page.contiguous().view(torch.uint8).reshape(-1)
        start = 0
        for region in self._page_regions(self._row(index)):
            target = region.view(torch.uint8).reshape(-1)
            target.copy_(flat[start : start + target.numel()])
            start += target.numel()
        if start != flat.numel():
            raise ValueError(f"flat page has {flat.numel()} bytes, expected {start}")

    def is_stride_page_aligned(self, page_size_bytes: int = 4096) -> bool:
        """True when every region of every page starts on a ``page_size_bytes`` boundary."""
        for index in (0, self.page_size) if self.page_num > 1 else (0,):
            for region in self._page_regions(index):
                if region.data_ptr() % page_size_bytes:
                    return False
                if (region.numel() * region.element_size()) % page_size_bytes:
                    return False
        return self.layout in ("page_first", "page_first_direct")

    def describe(self) -> str:
        return (
            f"{type(self).__name__}(layout={self.layout}, page_size={self.page_size}, "
            f"pages={self.page_num}, page_bytes={self.page_nbytes()}, misalign={self.misalign}"
            + (f", dcp_size={self.dcp_size})" if self.dcp_size > 1 else ")")
        )
