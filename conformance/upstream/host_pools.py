"""SGLang's real host pools, for the pool kinds that build on a CPU (MHA KV and Mamba state).

Each class is one of the suite's doubles whose memory SGLang's own pool object also owns: the
suite writes patterns and watches canaries through the double, while the backend under test is
handed ``upstream`` (the real ``MHATokenToKVPoolHost`` or ``MambaPoolHost``) and sees SGLang's
pointer arithmetic, flat-page codec and alignment answer, not ours. The one thing swapped in is
the backing buffer, allocated by the suite at the alignment a property asks for; SGLang reads
``kv_buffer`` (``temporal_buffer``/``conv_buffer``) afresh on every storage call, so the swap is
what a pool allocated at that address would be. Other kinds stay doubles (see ``SPEC_POOLS``).
"""

from __future__ import annotations

from typing import Any

import torch

from conformance.geometry import PoolSpec, dtype_named
from conformance.hostpools import HostPoolDouble, MambaHostPool, MHAHostPool
from conformance.upstream.loader import sglang

SPEC_POOLS = frozenset({"mha", "mamba"})
"""Pool kinds built as SGLang's own objects; the rest (MLA, DSA indexer, generic) are doubles."""


class _Delegating(HostPoolDouble):
    """SGLang's surface answers from the real pool; the suite's extras from the shared memory."""

    upstream: Any

    def get_page_buffer_meta(self, indices: torch.Tensor) -> tuple[list[int], list[int]]:
        ptrs, sizes = self.upstream.get_page_buffer_meta(indices)
        return list(ptrs), list(sizes)

    def get_data_page(self, index: int, flat: bool = True) -> torch.Tensor:
        page: torch.Tensor = self.upstream.get_data_page(index, flat=flat)
        return page

    def get_dummy_flat_data_page(self) -> torch.Tensor:
        page: torch.Tensor = self.upstream.get_dummy_flat_data_page()
        return page

    def set_from_flat_data_page(self, index: int, data_page: torch.Tensor) -> None:
        self.upstream.set_from_flat_data_page(index, data_page)

    def is_stride_page_aligned(self, page_size_bytes: int = 4096) -> bool:
        return bool(self.upstream.is_stride_page_aligned(page_size_bytes))

    def describe(self) -> str:
        return f"{type(self.upstream).__name__} (SGLang {sglang().version}) over " + super().describe()


class UpstreamMHAPool(_Delegating, MHAHostPool):
    """``MHATokenToKVPoolHost`` built from a real CPU ``MHATokenToKVPool``."""

    def __init__(self, spec: PoolSpec, *, layout: str, misalign: int, page_num: int) -> None:
        p = spec.params
        dtype = dtype_named(p["dtype"])
        super().__init__(
            layer_num=p["layer_num"],
            head_num=p["head_num"],
            head_dim=p["head_dim"],
            page_size=p["page_size"],
            page_num=page_num,
            dtype=dtype,
            layout=layout,
            misalign=misalign,
        )
        sg = sglang()
        device_pool = sg.MHATokenToKVPool(
            size=p["page_size"],
            page_size=p["page_size"],
            dtype=dtype,
            head_num=p["head_num"],
            head_dim=p["head_dim"],
            layer_num=p["layer_num"],
            device="cpu",
            enable_memory_saver=False,
        )
        self.upstream = sg.MHATokenToKVPoolHost(
            device_pool._mha_buffer_info(),
            1.0,
            0,
            p["page_size"],
            layout,
            pin_memory=False,
            device="cpu",
            device_capacity_tokens=0,  # no device pool to be smaller than
            start_layer=0,
            end_layer=p["layer_num"],
            host_token_capacity=self.size,
        )
        if tuple(self.upstream.kv_buffer.shape) != tuple(self.kv_buffer.shape):
            raise AssertionError(f"SGLang lays this pool out as {tuple(self.upstream.kv_buffer.shape)}")
        self.upstream.kv_buffer = self.kv_buffer


class UpstreamMambaPool(_Delegating, MambaHostPool):
    """``MambaPoolHost`` built from a hand-made ``MambaStateBufferInfo`` of CPU tensors."""

    def __init__(self, spec: PoolSpec, *, layout: str, misalign: int, page_num: int) -> None:
        p = spec.params
        temporal_dtype, conv_dtype = dtype_named(p["temporal_dtype"]), dtype_named(p["conv_dtype"])
        super().__init__(
            num_layers=p["num_layers"],
            temporal_shape=p["temporal_shape"],
            conv_shapes=p["conv_shapes"],
            size=page_num,
            layout=layout,
            temporal_dtype=temporal_dtype,
            conv_dtype=conv_dtype,
            misalign=misalign,
        )
        sg = sglang()
        layers, slots = p["num_layers"], 1
        info = sg.MambaStateBufferInfo(
            temporal=torch.zeros((layers, slots, *p["temporal_shape"]), dtype=temporal_dtype),
            conv=tuple(torch.zeros((layers, slots, *shape), dtype=conv_dtype) for shape in p["conv_shapes"]),
        )
        # SGLang sizes the pool as device_capacity * ratio slots plus one padding slot
        self.upstream = sg.MambaPoolHost(
            info, 1.0, 0, device_capacity=page_num - 1, pin_memory=False, device="cpu", layout=layout
        )
        if self.upstream.size != page_num:
            raise AssertionError(f"SGLang sized the Mamba pool at {self.upstream.size} slots, not {page_num}")
        self.upstream.temporal_buffer = self.temporal_buffer
        self.upstream.conv_buffer = list(self.conv_buffer)
        self.upstream.kv_buffer = [self.temporal_buffer, *self.conv_buffer]


def build_pool(spec: PoolSpec, *, layout: str, misalign: int = 0, page_num: int = 8) -> HostPoolDouble:
    """SGLang's own pool where it builds on a CPU, the suite's double elsewhere."""
    if spec.kind not in SPEC_POOLS:
        return spec.build(layout=layout, misalign=misalign, page_num=page_num)
    pool: HostPoolDouble
    if spec.kind == "mha":
        pool = UpstreamMHAPool(spec, layout=layout, misalign=misalign, page_num=page_num)
    else:
        pool = UpstreamMambaPool(spec, layout=layout, misalign=misalign, page_num=page_num)
    pool.fill(0xA5)
    return pool


def upstream_of(pool: Any) -> Any:
    """What SGLang's backend is handed: the real pool where there is one."""
    return getattr(pool, "upstream", pool)
