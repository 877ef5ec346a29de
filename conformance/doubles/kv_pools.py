"""Doubles of SGLang's KV host pools: MHA (K and V halves), MLA (one latent buffer) and
DeepSeek-V4's logical anchor (page slots, no bytes), over
:class:`~conformance.doubles.hostpools.HostPoolDouble`.
"""

from __future__ import annotations

from typing import Any

import torch

from conformance.doubles.hostpools import HostPoolDouble, Segment, aligned_empty, store_dtype


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
