"""The host-pool doubles keep SGLang's memory layouts and surface, or the suite proves nothing."""

from __future__ import annotations

import pytest
import torch

from conformance.doubles.hostpools import MISALIGNMENT, aligned_empty
from conformance.doubles.kv_pools import MHAHostPool
from conformance.doubles.side_pools import MambaHostPool
from conformance.harness.geometry import all_geometries

CASES = [
    (g.family, spec, layout, misalign)
    for g in all_geometries()
    for spec in g.pools
    for layout in spec.layouts
    for misalign in (0, MISALIGNMENT)
]
IDS = [f"{f}-{s.name}-{lay}-{m}" for f, s, lay, m in CASES]


@pytest.mark.parametrize(("family", "spec", "layout", "misalign"), CASES, ids=IDS)
def test_buffer_meta_points_at_exactly_the_page_regions(family, spec, layout, misalign) -> None:
    pool = spec.build(layout=layout, misalign=misalign, page_num=4)
    page = 2 * pool.page_size
    indices = torch.arange(page, page + pool.page_size)
    if spec.kind == "logical_anchor":  # DeepSeek-V4's KV anchor: no bytes, no meta
        assert pool.get_page_buffer_meta(indices) is None and pool.page_nbytes() == 0
        assert not hasattr(pool, "is_stride_page_aligned")
        return
    if spec.kind == "dsa_indexer" and layout == "layer_first":  # SGLang moves these pages flat only
        with pytest.raises(ValueError):
            pool.get_page_buffer_meta(indices)
        return
    ptrs, sizes = pool.get_page_buffer_meta(indices)
    regions = pool.page_regions(page)
    assert ptrs == [r.data_ptr() for r in regions]
    assert sizes == [r.numel() for r in regions]
    assert sum(sizes) == pool.page_nbytes()


@pytest.mark.parametrize(("family", "spec", "layout", "misalign"), CASES, ids=IDS)
def test_a_flat_page_moves_one_page_and_nothing_else(family, spec, layout, misalign) -> None:
    pool = spec.build(layout=layout, misalign=misalign, page_num=4)
    ps = pool.page_size
    payload = bytes(range(256)) * (pool.page_nbytes() // 256) + bytes(pool.page_nbytes() % 256)
    pool.write_page(ps, payload)
    flat = pool.get_data_page(ps, flat=True).clone()
    assert flat.dtype == pool.get_dummy_flat_data_page().dtype
    assert flat.numel() == pool.get_dummy_flat_data_page().numel()
    before = pool.snapshot()
    pool.set_from_flat_data_page(3 * ps, flat)
    assert pool.read_page(3 * ps) == payload
    changed = sum(sum(x != y for x, y in zip(b, a)) for b, a in zip(before, pool.snapshot()))
    assert changed <= pool.page_nbytes()
    assert pool.read_page(0) == b"\xa5" * pool.page_nbytes()
    assert pool.read_page(2 * ps) == b"\xa5" * pool.page_nbytes()


def test_mamba_pages_serialise_as_uint8_while_dtype_is_the_conv_dtype() -> None:
    pool = MambaHostPool(num_layers=1, temporal_shape=(2, 8, 8), conv_shapes=[(32, 3)], size=4)
    assert pool.get_dummy_flat_data_page().dtype is torch.uint8
    assert pool.dtype is torch.bfloat16
    assert pool.page_nbytes() == 2 * 8 * 8 * 4 + 32 * 3 * 2 == 704


def test_mha_page_first_pointers_follow_upstreams_formula() -> None:
    pool = MHAHostPool(
        layer_num=3,
        head_num=2,
        head_dim=16,
        page_size=4,
        page_num=5,
        dtype=torch.float16,
        layout="page_first",
    )
    base, item = pool.kv_buffer.data_ptr(), 2
    ptrs, sizes = pool.get_page_buffer_meta(torch.arange(8, 12))
    k = base + 8 * 3 * 2 * 16 * item
    v = k + 3 * pool.size * 2 * 16 * item
    assert ptrs == [k, v]
    assert sizes == [3 * item * 4 * 2 * 16] * 2


@pytest.mark.parametrize("misalign", [0, 64, 512])
def test_aligned_empty_places_the_first_byte_as_asked(misalign: int) -> None:
    t = aligned_empty((3, 5), torch.float32, misalign)
    assert t.data_ptr() % 4096 == misalign
    assert t.shape == (3, 5)


def test_stride_alignment_needs_an_aligned_base_and_a_4096_multiple_stride() -> None:
    def mha(head_dim: int, misalign: int, layout: str = "page_first") -> MHAHostPool:
        return MHAHostPool(
            layer_num=1,
            head_num=1,
            head_dim=head_dim,
            page_size=8,
            page_num=4,
            dtype=torch.bfloat16,
            layout=layout,
            misalign=misalign,
        )

    assert mha(256, 0).is_stride_page_aligned(4096)
    assert not mha(256, 64).is_stride_page_aligned(4096)
    assert not mha(32, 0).is_stride_page_aligned(4096)
    assert mha(32, 0).is_stride_page_aligned(512)
    assert not mha(256, 0, "layer_first").is_stride_page_aligned(4096)
