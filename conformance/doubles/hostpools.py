"""In-process doubles of SGLang's host pools, with their real memory layouts.

A storage backend only sees a host pool through a handful of members (``page_size``, ``size``,
``dtype``, ``layout``, ``get_page_buffer_meta``, ``get_data_page``, ``get_dummy_flat_data_page``,
``set_from_flat_data_page``, ``is_stride_page_aligned``). These doubles expose exactly that surface
over CPU tensors laid out as SGLang lays them out, so zero-copy pointers and flat pages mean what
they mean in production. Their own extras (``page_regions``, ``segments``, ``backing``) are for the
suite: they let it write bit patterns into a page and watch every byte of the pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


class MHAHostPool(HostPoolDouble):
    """``MHATokenToKVPoolHost``: one buffer with a K half and a V half."""

    kind = "mha"

    def __init__(
        self,
        *,
        layer_num: int,
        head_num: int,
        head_dim: int,
        page_size: int,
        page_num: int,
        dtype: torch.dtype,
        layout: str,
        misalign: int = 0,
    ) -> None:
        self.layer_num, self.head_num, self.head_dim = layer_num, head_num, head_dim
        # the layer range SGLang's HostKVCache carries (AIBrix reads it at construction); no draft layers
        self.start_layer, self.end_layer, self.target_layer_num = 0, layer_num, layer_num
        self.value_dtype, dtype = dtype, store_dtype(dtype)
        self.page_size, self.size, self.dtype, self.layout = (
            page_size,
            page_size * page_num,
            dtype,
            layout,
        )
        self.misalign = misalign
        dims: tuple[int, ...]
        if layout == "layer_first":
            dims = (2, layer_num, self.size, head_num, head_dim)
        elif layout == "page_first":
            dims = (2, self.size, layer_num, head_num, head_dim)
        elif layout == "page_first_direct":
            dims = (2, page_num, layer_num, page_size, head_num, head_dim)
        else:
            raise ValueError(f"unsupported MHA layout {layout!r}")
        self.kv_buffer = aligned_empty(dims, dtype, misalign)

    def backing(self) -> list[torch.Tensor]:
        return [self.kv_buffer]

    def segments(self) -> list[list[Segment]]:
        """Bit patterns in the value dtype (fp8 too), though SGLang stores fp8 as uint8."""
        return [[Segment(self.value_dtype, s.nbytes) for s in region] for region in super().segments()]

    def get_hybrid_pool_buffer(self) -> list[torch.Tensor]:
        """The K and V halves, as upstream's ``k_buffer``/``v_buffer``."""
        return [self.kv_buffer[0], self.kv_buffer[1]]

    def get_ksize_per_token(self) -> int:
        return self.layer_num * self.head_num * self.head_dim * self.dtype.itemsize

    def _page_regions(self, index: int) -> list[torch.Tensor]:
        ps = self.page_size
        if self.layout == "layer_first":
            return [
                self.kv_buffer[kv, layer, index : index + ps]
                for layer in range(self.layer_num)
                for kv in (0, 1)
            ]
        if self.layout == "page_first":
            return [self.kv_buffer[kv, index : index + ps] for kv in (0, 1)]
        return [self.kv_buffer[kv, index // ps] for kv in (0, 1)]

    def _flat_view(self, index: int) -> torch.Tensor:
        ps = self.page_size
        if self.layout == "layer_first":
            return self.kv_buffer[:, :, index : index + ps]
        if self.layout == "page_first":
            return self.kv_buffer[:, index : index + ps]
        return self.kv_buffer[:, index // ps : index // ps + 1]

    def get_data_page(self, index: int, flat: bool = True) -> torch.Tensor:
        page = self._flat_view(index)
        return page.flatten() if flat else page

    def get_dummy_flat_data_page(self) -> torch.Tensor:
        shape = (2, self.layer_num, self.page_size, self.head_num, self.head_dim)
        return torch.zeros(shape, dtype=self.dtype).flatten()

    def set_from_flat_data_page(self, index: int, data_page: torch.Tensor) -> None:
        target = self._flat_view(index)
        target.copy_(data_page.reshape(target.shape))


class MLAHostPool(HostPoolDouble):
    """``MLATokenToKVPoolHost``: one latent buffer, no V half."""

    kind = "mla"

    def __init__(
        self,
        *,
        layer_num: int,
        kv_cache_dim: int,
        page_size: int,
        page_num: int,
        dtype: torch.dtype,
        layout: str,
        misalign: int = 0,
        dcp_size: int = 1,
    ) -> None:
        self.layer_num, self.kv_cache_dim, self.dcp_size = layer_num, kv_cache_dim, dcp_size
        self.value_dtype, dtype = dtype, store_dtype(dtype)
        self.page_size, self.size, self.dtype, self.layout = (
            page_size,
            page_size * page_num,
            dtype,
            layout,
        )
        self.misalign = misalign
        dims: tuple[int, ...]
        if layout == "layer_first":
            dims = (layer_num, self.size, 1, kv_cache_dim)
        elif layout == "page_first":
            dims = (self.size, layer_num, 1, kv_cache_dim)
        elif layout == "page_first_direct":
            dims = (page_num, layer_num, page_size, 1, kv_cache_dim)
        else:
            raise ValueError(f"unsupported MLA layout {layout!r}")
        self.kv_buffer = aligned_empty(dims, dtype, misalign)

    def backing(self) -> list[torch.Tensor]:
        return [self.kv_buffer]

    def get_ksize_per_token(self) -> int:
        return self.layer_num * self.kv_cache_dim * self.dtype.itemsize

    def segments(self) -> list[list[Segment]]:
        """Bit patterns in the value dtype (fp8 too), though SGLang stores fp8 as uint8."""
        return [[Segment(self.value_dtype, s.nbytes) for s in region] for region in super().segments()]

    def _page_regions(self, index: int) -> list[torch.Tensor]:
        ps = self.page_size
        if self.layout == "layer_first":
            return [self.kv_buffer[layer, index : index + ps] for layer in range(self.layer_num)]
        if self.layout == "page_first":
            return [self.kv_buffer[index : index + ps]]
        return [self.kv_buffer[index // ps]]

    def _flat_view(self, index: int) -> torch.Tensor:
        ps = self.page_size
        if self.layout == "layer_first":
            return self.kv_buffer[:, index : index + ps]
        if self.layout == "page_first":
            return self.kv_buffer[index : index + ps]
        return self.kv_buffer[index // ps : index // ps + 1]

    def get_data_page(self, index: int, flat: bool = True) -> torch.Tensor:
        page = self._flat_view(self._row(index))
        return page.flatten() if flat else page

    def get_dummy_flat_data_page(self) -> torch.Tensor:
        shape = (self.layer_num, self.page_size, 1, self.kv_cache_dim)
        return torch.zeros(shape, dtype=self.dtype).flatten()

    def set_from_flat_data_page(self, index: int, data_page: torch.Tensor) -> None:
        target = self._flat_view(self._row(index))
        target.copy_(data_page.reshape(target.shape))


class MambaHostPool(HostPoolDouble):
    """``MambaPoolHost``: one slot a page; fp32 temporal state plus bf16 conv states.

    Its flat page is the uint8 serialisation of temporal then conv_0..N-1, and its ``dtype`` is
    the conv dtype, as upstream's: a backend that stages in ``dtype`` converts values.
    """

    kind = "mamba"

    def __init__(
        self,
        *,
        num_layers: int,
        temporal_shape: Sequence[int],
        conv_shapes: Sequence[Sequence[int]],
        size: int,
        layout: str = "page_first",
        temporal_dtype: torch.dtype = torch.float32,
        conv_dtype: torch.dtype = torch.bfloat16,
        misalign: int = 0,
    ) -> None:
        if layout not in ("page_first", "page_first_direct"):
            raise ValueError("Mamba host pools accept only the page_first layouts")
        self.page_size, self.size, self.layout = 1, size, layout
        self.dtype = conv_dtype
        self.misalign = misalign
        self.temporal_buffer = aligned_empty((size, num_layers, 1, *temporal_shape), temporal_dtype, misalign)
        self.conv_buffer = [
            aligned_empty((size, num_layers, 1, *shape), conv_dtype, misalign) for shape in conv_shapes
        ]

    def backing(self) -> list[torch.Tensor]:
        return [self.temporal_buffer, *self.conv_buffer]

    def _page_regions(self, index: int) -> list[torch.Tensor]:
        """Temporal then conv_0..N-1; a conv-only model's empty temporal state is no region, as
        upstream's ``get_page_buffer_meta`` drops it, while an empty conv state (lightning
        attention's: ``conv_kernel`` 1) stays a region of zero bytes, as upstream keeps it."""
        temporal = self.temporal_buffer[index]
        return [temporal] * bool(temporal.numel()) + [buf[index] for buf in self.conv_buffer]

    def get_hybrid_pool_buffer(self) -> list[torch.Tensor]:
        return self.backing()

    def get_ksize_per_token(self) -> int:
        return self.page_nbytes()


class DSAIndexerHostPool(HostPoolDouble):
    """The DSA indexer host pool: per page and layer, fp8 keys then their fp32 block scales.

    The buffer is uint8 (``indexer_dtype``) while ``dtype`` is the KV store dtype. Its layout is the
    anchor MLA pool's, layer_first too; there, as upstream's, ``get_page_buffer_meta`` refuses and
    a backend must move the page through ``get_data_page``/``set_from_flat_data_page``.
    """

    kind = "dsa_indexer"
    SCALE_BLOCK = 128

    def __init__(
        self,
        *,
        layer_num: int,
        index_head_dim: int,
        page_size: int,
        page_num: int,
        store_dtype: torch.dtype,
        layout: str = "page_first",
        misalign: int = 0,
    ) -> None:
        if layout not in ("layer_first", "page_first", "page_first_direct"):
            raise ValueError(f"unsupported DSA indexer layout {layout!r}")
        self.layer_num, self.index_head_dim = layer_num, index_head_dim
        self.page_size, self.size, self.layout = page_size, page_size * page_num, layout
        self.dtype = store_dtype
        self.misalign = misalign
        self.payload_bytes = page_size * index_head_dim
        self.scale_bytes = page_size * (index_head_dim // self.SCALE_BLOCK) * 4
        self.stride = self.payload_bytes + self.scale_bytes
        dims = (
            (layer_num, page_num, self.stride)
            if layout == "layer_first"
            else (page_num, layer_num, 1, self.stride)
        )
        self.buffer = aligned_empty(dims, torch.uint8, misalign)

    def backing(self) -> list[torch.Tensor]:
        return [self.buffer]

    def get_hybrid_pool_buffer(self) -> list[torch.Tensor]:
        return [self.buffer]

    def get_ksize_per_token(self) -> int:
        return self.layer_num * self.stride // self.page_size

    def _page_regions(self, index: int) -> list[torch.Tensor]:
        if self.layout == "layer_first":
            return [self.buffer[layer, index // self.page_size] for layer in range(self.layer_num)]
        return [self.buffer[index // self.page_size]]

    def get_page_buffer_meta(self, indices: torch.Tensor) -> tuple[list[int], list[int]]:
        if self.layout == "layer_first":
            raise ValueError(f"Unsupported layout: {self.layout}")
        return super().get_page_buffer_meta(indices)

    def segments(self) -> list[list[Segment]]:
        per_layer = [
            Segment(torch.float8_e4m3fn, self.payload_bytes),
            Segment(torch.float32, self.scale_bytes),
        ]
        if self.layout == "layer_first":
            return [per_layer for _ in range(self.layer_num)]
        return [per_layer * self.layer_num]


class MultiRegionHostPool(HostPoolDouble):
    """A generic side pool (SWA, DeepSeek-V4 compressed pools): N regions a page, mixed dtypes."""

    kind = "multi_region"

    def __init__(
        self,
        *,
        regions: Sequence[tuple[torch.dtype, Sequence[int]]],
        page_size: int,
        page_num: int,
        dtype: torch.dtype | None = None,
        layout: str = "page_first",
        misalign: int = 0,
    ) -> None:
        if not regions:
            raise ValueError("a side pool needs at least one region")
        self.page_size, self.size, self.layout = page_size, page_size * page_num, layout
        self.dtype = dtype if dtype is not None else regions[0][0]
        self.misalign = misalign
        self.buffers = [
            aligned_empty((page_num, *shape), region_dtype, misalign) for region_dtype, shape in regions
        ]

    def backing(self) -> list[torch.Tensor]:
        return list(self.buffers)

    def _page_regions(self, index: int) -> list[torch.Tensor]:
        return [buf[index // self.page_size] for buf in self.buffers]

    def get_size_per_token(self) -> int:
        """A page's bytes a token, as every SGLang host pool reports them (backends size files by it)."""
        return self.page_nbytes() // self.page_size

    def get_ksize_per_token(self) -> int:
        """All of it: a side pool's page is one payload with no K and V halves, as in SGLang's
        Mamba, MLA and indexer pools (HF3FS and Mooncake call this at registration)."""
        return self.get_size_per_token()


class DeepSeekV4PagedHostPool(HostPoolDouble):
    """DeepSeek-V4's ``DeepSeekV4PagedHostPool`` and ``DeepSeekV4StateHostPool``: raw uint8 rows.

    A page is ``item_bytes`` a layer (compressed KV, indexer, rope or ring-buffer state rows);
    ``layer_first`` keeps one buffer a layer, so a page is one region a layer there, while the
    page-first layouts hold all layers of a page in one region. ``item_dtypes`` says which typed
    runs tile an item, for bit patterns only: the pool itself is bytes (``dtype`` is uint8).
    """

    kind = "dsv4_paged"

    def __init__(
        self,
        *,
        layer_num: int,
        item_bytes: int,
        page_size: int,
        page_num: int,
        layout: str,
        item_dtypes: Sequence[tuple[torch.dtype, int]] = (),
        misalign: int = 0,
    ) -> None:
        self.layer_num, self.item_bytes = layer_num, item_bytes
        self.page_size, self.size, self.layout = page_size, page_size * page_num, layout
        self.dtype = torch.uint8
        self.misalign = misalign
        runs = list(item_dtypes) or [(torch.uint8, item_bytes)]
        if sum(n for _, n in runs) != item_bytes:
            raise ValueError(f"item_dtypes cover {sum(n for _, n in runs)} of {item_bytes} bytes")
        self.item_runs = [Segment(d, n) for d, n in runs]
        self.kv_buffer: torch.Tensor | list[torch.Tensor]
        if layout == "layer_first":
            self.kv_buffer = [
                aligned_empty((page_num, item_bytes), torch.uint8, misalign) for _ in range(layer_num)
            ]
        elif layout == "page_first":
            self.kv_buffer = aligned_empty((page_num, layer_num, item_bytes), torch.uint8, misalign)
        elif layout == "page_first_direct":
            self.kv_buffer = aligned_empty((page_num, layer_num, 1, item_bytes), torch.uint8, misalign)
        else:
            raise ValueError(f"unsupported DeepSeek-V4 layout {layout!r}")

    def backing(self) -> list[torch.Tensor]:
        return list(self.kv_buffer) if isinstance(self.kv_buffer, list) else [self.kv_buffer]

    def _page_regions(self, index: int) -> list[torch.Tensor]:
        row = index // self.page_size
        if isinstance(self.kv_buffer, list):
            return [layer[row] for layer in self.kv_buffer]
        return [self.kv_buffer[row]]

    def segments(self) -> list[list[Segment]]:
        per_layer = list(self.item_runs)
        if self.layout == "layer_first":
            return [per_layer for _ in range(self.layer_num)]
        return [per_layer * self.layer_num]

    def get_hybrid_pool_buffer(self) -> list[torch.Tensor]:
        return self.backing()

    def get_ksize_per_token(self) -> int:
        return self.item_bytes


class LogicalAnchorHostPool(HostPoolDouble):
    """DeepSeek-V4's ``LogicalHostPool``: the KV anchor that owns page slots and no bytes.

    Its ``get_page_buffer_meta`` answers None, its pages are empty uint8 tensors and, as upstream's,
    it has no ``is_stride_page_aligned`` at all: a backend must notice the missing KV buffer
    (``kv_buffer is None``) and keep a per-page marker so that exists can gate the side pools.
    """

    kind = "logical_anchor"
    kv_buffer = None

    def __init__(self, *, page_size: int, page_num: int, layout: str, misalign: int = 0) -> None:
        self.page_size, self.size, self.layout = page_size, page_size * page_num, layout
        self.dtype = torch.uint8
        self.misalign = misalign
        self.layer_num = 0

    def backing(self) -> list[torch.Tensor]:
        return []

    def _page_regions(self, index: int) -> list[torch.Tensor]:
        return []

    def get_page_buffer_meta(self, indices: torch.Tensor) -> None:  # type: ignore[override]
        return None

    def get_data_page(self, index: int, flat: bool = True) -> torch.Tensor:
        return torch.empty(0, dtype=torch.uint8)

    def get_dummy_flat_data_page(self) -> torch.Tensor:
        return torch.empty(0, dtype=torch.uint8)

    def set_from_flat_data_page(self, index: int, data_page: torch.Tensor) -> None:
        """Nothing to restore: the anchor holds no bytes."""

    @property
    def is_stride_page_aligned(self) -> Any:
        """Absent, as on upstream's ``LogicalHostPool`` (``hasattr`` is False)."""
        raise AttributeError("LogicalHostPool has no is_stride_page_aligned")

    def get_ksize_per_token(self) -> int:
        return 0
