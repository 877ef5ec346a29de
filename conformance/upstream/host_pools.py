"""SGLang's real host pools, for every pool kind that builds on a CPU.

Each class is one of the suite's doubles whose memory SGLang's own pool object also owns: the
suite writes patterns and watches canaries through the double, while the backend under test is
handed ``upstream`` (the real ``MHATokenToKVPoolHost``, ``MLATokenToKVPoolHost``,
``MambaPoolHost``, ``DSAIndexerPoolHost``, ``DeepSeekV4PagedHostPool``,
``DeepSeekV4StateHostPool`` or ``LogicalHostPool``) and sees SGLang's pointer arithmetic,
flat-page codec and alignment answer, not ours. The one thing swapped in is the backing buffer,
allocated by the suite at the alignment a property asks for; SGLang reads its buffers afresh on
every storage call, so the swap is what a pool allocated at that address would be. The device
side each constructor reads (device buffers, state pools, a DSA indexer's declaration) is made of
CPU tensors of the geometry's shapes. Only the generic ``multi_region`` double stands for no
SGLang class (see ``SPEC_POOLS``).
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import torch

from conformance.doubles.hostpools import HostPoolDouble
from conformance.doubles.kv_pools import LogicalAnchorHostPool, MHAHostPool, MLAHostPool
from conformance.doubles.side_pools import DeepSeekV4PagedHostPool, DSAIndexerHostPool, MambaHostPool
from conformance.harness.geometry import PoolSpec, dtype_named
from conformance.model.sglang import sglang

SPEC_POOLS = frozenset({"mha", "mla", "mamba", "dsa_indexer", "dsv4_paged", "dsv4_state", "logical_anchor"})
"""Pool kinds built as SGLang's own objects; ``multi_region`` (no SGLang class) stays a double."""


def _module(name: str) -> Any:
    sglang()  # the stand-ins the import chain needs
    return importlib.import_module(f"sglang.srt.mem_cache.{name}")


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

    def get_ksize_per_token(self) -> int:
        return int(self.upstream.get_ksize_per_token())

    def describe(self) -> str:
        return f"{type(self.upstream).__name__} (SGLang {sglang().version}) over " + super().describe()


class UpstreamMHAPool(_Delegating, MHAHostPool):
    """``MHATokenToKVPoolHost`` built from a real CPU ``MHATokenToKVPool`` (KV, SWA, draft)."""

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

    def get_hybrid_pool_buffer(self) -> list[torch.Tensor]:
        return list(self.upstream.get_hybrid_pool_buffer())


class UpstreamMLAPool(_Delegating, MLAHostPool):
    """``MLATokenToKVPoolHost`` built from a real CPU ``MLATokenToKVPool``'s buffer info."""

    def __init__(
        self, spec: PoolSpec, *, layout: str, misalign: int, page_num: int, dcp_size: int = 1
    ) -> None:
        p = spec.params
        dtype = dtype_named(p["dtype"])
        super().__init__(
            layer_num=p["layer_num"],
            kv_cache_dim=p["kv_cache_dim"],
            page_size=p["page_size"],
            page_num=page_num,
            dtype=dtype,
            layout=layout,
            misalign=misalign,
            dcp_size=dcp_size,
        )
        rope = 64 if p["kv_cache_dim"] > 64 else 0
        device_pool = _module("memory_pool").MLATokenToKVPool(
            size=p["page_size"],
            page_size=p["page_size"],
            dtype=dtype,
            kv_lora_rank=p["kv_cache_dim"] - rope,
            qk_rope_head_dim=rope,
            layer_num=p["layer_num"],
            device="cpu",
            enable_memory_saver=False,
        )
        self.upstream = _module("pool_host.mla").MLATokenToKVPoolHost(
            device_pool.get_device_pool_infos()[0].buffer_info,
            1.0,
            0,
            self.logical_page_size,  # SGLang hands it the widened page and divides by dcp_size
            layout,
            pin_memory=False,
            device="cpu",
            dcp_size=dcp_size,
            device_capacity_tokens=0,
            start_layer=0,
            end_layer=p["layer_num"],
            target_layer_num=p["layer_num"],
            override_kv_cache_dim=device_pool.kv_cache_dim,
            host_token_capacity=self.size,
        )
        if tuple(self.upstream.kv_buffer.shape) != tuple(self.kv_buffer.shape):
            raise AssertionError(f"SGLang lays this pool out as {tuple(self.upstream.kv_buffer.shape)}")
        self.upstream.kv_buffer = self.kv_buffer
        if getattr(self.upstream, "data_refs", None):
            # per-layer views, as SGLang takes them: page-major buffers through a transpose
            rows = self.kv_buffer.transpose(0, 1) if layout == "page_first" else self.kv_buffer
            self.upstream.data_refs = [rows[i] for i in range(self.layer_num)]


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

    def get_hybrid_pool_buffer(self) -> list[torch.Tensor]:
        return list(self.upstream.get_hybrid_pool_buffer())


class UpstreamDSAIndexerPool(_Delegating, DSAIndexerHostPool):
    """``DSAIndexerPoolHost`` from a declaration whose device pool is a CPU stand-in of the indexer's
    buffers; its anchor is the geometry's page size and the layout SGLang gives the MLA KV pool."""

    def __init__(self, spec: PoolSpec, *, layout: str, misalign: int, page_num: int) -> None:
        p = spec.params
        super().__init__(
            layer_num=p["layer_num"],
            index_head_dim=p["index_head_dim"],
            page_size=p["page_size"],
            page_num=page_num,
            store_dtype=dtype_named(p["store_dtype"]),
            layout=layout,
            misalign=misalign,
        )
        sg, decls = sglang(), _module("pool_host.host_pool_decl")
        device = SimpleNamespace(
            store_dtype=self.dtype,
            start_layer=0,
            end_layer=self.layer_num,
            layer_num=self.layer_num,
            layer_shard_enabled=False,
            device="cpu",
            index_k_with_scale_buffer=[torch.zeros((page_num, self.stride), dtype=torch.uint8)]
            * self.layer_num,
        )
        decl = decls.HostPoolDecl(
            pool_name=sg.PoolName(str(spec.name)),
            device_pool=device,
            indices_from_pool=sg.PoolName.KV,
            layout_source=sg.PoolName.KV,
            storage_info=decls.HostPoolStorageInfo(
                bytes_per_token_per_layer=self.stride // self.page_size, dtype=torch.uint8
            ),
            host_pool_builder=None,
        )
        anchor = SimpleNamespace(page_size=self.page_size, layout=layout, size=self.size, page_num=page_num)
        self.upstream = _module("pool_host.dsa").DSAIndexerPoolHost(
            decl, anchor, pin_memory=False, device="cpu"
        )
        self.upstream.index_k_with_scale_buffer = self.buffer
        if layout == "layer_first":
            self.upstream.index_k_data_refs = [self.buffer[i] for i in range(self.layer_num)]

    def get_hybrid_pool_buffer(self) -> list[torch.Tensor]:
        return list(self.upstream.get_hybrid_pool_buffer())


class UpstreamDeepSeekV4Pool(_Delegating, DeepSeekV4PagedHostPool):
    """``DeepSeekV4PagedHostPool`` (``dsv4_paged``) or ``DeepSeekV4StateHostPool`` (``dsv4_state``,
    over CPU stand-ins of its compress-state pools: ``ring_size`` slots of ``slot_bytes`` a page)."""

    def __init__(self, spec: PoolSpec, *, layout: str, misalign: int, page_num: int) -> None:
        p = spec.params
        state = spec.kind == "dsv4_state"
        item_bytes = p["ring_size"] * p["slot_bytes"] if state else p["item_bytes"]
        super().__init__(
            layer_num=p["layer_num"],
            item_bytes=item_bytes,
            page_size=p["page_size"],
            page_num=page_num,
            layout=layout,
            item_dtypes=[(dtype_named(d), n) for d, n in p.get("item_dtypes", [])],
            misalign=misalign,
        )
        host = _module("memory_pool_host")
        if state:
            slots = torch.zeros((page_num * p["ring_size"], p["slot_bytes"]), dtype=torch.uint8)
            pools = [
                SimpleNamespace(kv_score_buffer=SimpleNamespace(kv_score=slots), ring_size=p["ring_size"])
                for _ in range(self.layer_num)
            ]
            self.upstream = host.DeepSeekV4StateHostPool(
                str(spec.name), pools, page_num, self.page_size, layout=layout, device="cpu", pin_memory=False
            )
        else:
            rows = [torch.zeros((page_num, item_bytes), dtype=torch.uint8) for _ in range(self.layer_num)]
            self.upstream = host.DeepSeekV4PagedHostPool(
                str(spec.name),
                rows,
                item_bytes,
                page_num,
                self.page_size,
                layout=layout,
                device="cpu",
                pin_memory=False,
            )
        self.upstream.kv_buffer = self.kv_buffer
        if isinstance(self.kv_buffer, list):
            self.upstream.data_refs = list(self.kv_buffer)

    def get_hybrid_pool_buffer(self) -> list[torch.Tensor]:
        return list(self.upstream.get_hybrid_pool_buffer())


class UpstreamAnchorPool(LogicalAnchorHostPool):
    """DeepSeek-V4's ``LogicalHostPool``: nothing to share, so the backend gets the real object."""

    def __init__(self, spec: PoolSpec, *, layout: str, misalign: int, page_num: int) -> None:
        super().__init__(
            page_size=spec.params["page_size"], page_num=page_num, layout=layout, misalign=misalign
        )
        self.upstream = _module("memory_pool_host").LogicalHostPool(self.size, self.page_size, layout=layout)

    def describe(self) -> str:
        return f"LogicalHostPool (SGLang {sglang().version}) over " + super().describe()


_UPSTREAM: dict[str, type[HostPoolDouble]] = {
    "mha": UpstreamMHAPool,
    "mla": UpstreamMLAPool,
    "mamba": UpstreamMambaPool,
    "dsa_indexer": UpstreamDSAIndexerPool,
    "dsv4_paged": UpstreamDeepSeekV4Pool,
    "dsv4_state": UpstreamDeepSeekV4Pool,
    "logical_anchor": UpstreamAnchorPool,
}


def build_pool(
    spec: PoolSpec, *, layout: str, misalign: int = 0, page_num: int = 8, dcp_size: int = 1
) -> HostPoolDouble:
    """SGLang's own pool where it builds on a CPU, the suite's double elsewhere."""
    cls = _UPSTREAM.get(spec.kind)
    dcp = {"dcp_size": dcp_size} if dcp_size > 1 else {}
    if cls is None:
        return spec.build(layout=layout, misalign=misalign, page_num=page_num, **dcp)
    pool = cls(spec, layout=layout, misalign=misalign, page_num=page_num, **dcp)  # type: ignore[call-arg]
    pool.fill(0xA5)
    return pool


def upstream_of(pool: Any) -> Any:
    """What SGLang's backend is handed: the real pool where there is one."""
    return getattr(pool, "upstream", pool)
