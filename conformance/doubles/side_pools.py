"""Doubles of SGLang's side pools: Mamba state, the DSA indexer, generic multi-region pools
(SWA, DeepSeek-V4 compressed) and DeepSeek-V4's paged rows, over
:class:`~conformance.doubles.hostpools.HostPoolDouble`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from conformance.doubles.hostpools import HostPoolDouble, Segment, aligned_empty


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
