"""Stored pages come back byte for byte, whatever their dtype and bit patterns.

A backend that stages through a typed buffer, or lets anything convert values, canonicalises NaN
payloads, flushes subnormals or mangles fp8; these properties compare uint8 views only.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conformance.harness.geometry import ModelGeometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import pattern_strides, payload_seeds, render_page
from conformance.model.interface import PoolName
from conformance.suite._common import GEOMETRIES, HYBRID, ids, kv_layouts, misaligns, page_lists

PAGES = 8


def _round_trip(rig: Rig, name: PoolName, src: list[int], dst: list[int], seed: int, stride: int) -> None:
    pool = rig.pool(name)
    keys = [f"page-{i}" for i in range(len(src))]
    written = [render_page(pool, seed, stride, salt=i) for i in range(len(src))]
    for page, data in zip(src, written):
        rig.put(name, page, data)
    assert rig.set(name, keys, src) == [True] * len(keys), f"{name}: set reported a failure"
    pool.fill(0x5A)
    assert rig.get(name, keys, dst) == [True] * len(keys), f"{name}: get reported a failure"
    for i, page in enumerate(dst):
        rig.expect(name, page, written[i], f"key {keys[i]!r}")


@pytest.mark.hicache_requires("v1_kv")
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(
    seed=payload_seeds,
    stride=pattern_strides,
    layout=kv_layouts,
    misalign=misaligns,
    pages=page_lists(PAGES),
    data=st.data(),
)
def test_kv_pages_round_trip_byte_for_byte_through_v1(
    hicache_target: Target,
    geometry: ModelGeometry,
    seed: int,
    stride: int,
    layout: str,
    misalign: int,
    pages: list[int],
    data: st.DataObject,
) -> None:
    """KV pages stored with batch_set_v1 read back bit-identical, into other slots too."""
    hicache_target.require_layout(layout)
    dst = data.draw(st.permutations(range(PAGES)).map(lambda p: p[: len(pages)]), label="dst")
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, layout=layout, misalign=misalign, page_num=PAGES) as rig,
    ):
        _round_trip(rig, PoolName.KV, pages, dst, seed, stride)


@pytest.mark.hicache_requires("kv_through_v2")
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(
    seed=payload_seeds, stride=pattern_strides, layout=kv_layouts, misalign=misaligns, pages=page_lists(PAGES)
)
def test_kv_pages_round_trip_byte_for_byte_through_v2(
    hicache_target: Target,
    geometry: ModelGeometry,
    seed: int,
    stride: int,
    layout: str,
    misalign: int,
    pages: list[int],
) -> None:
    """KV pages moved as a v2 PoolTransfer read back bit-identical (upstream NIXL returns False)."""
    hicache_target.require_layout(layout)
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, layout=layout, misalign=misalign, page_num=PAGES) as rig,
    ):
        pool = rig.pool(PoolName.KV)
        keys = [f"v2-{p}" for p in pages]
        written = [render_page(pool, seed, stride, salt=p) for p in pages]
        for page, payload in zip(pages, written):
            rig.put(PoolName.KV, page, payload)
        assert rig.backend.batch_set_v2([rig.transfer(PoolName.KV, keys, pages)])["kv"] == [True] * len(keys)
        pool.fill(0x5A)
        assert rig.backend.batch_get_v2([rig.transfer(PoolName.KV, keys, pages)])["kv"] == [True] * len(keys)
        for page, payload in zip(pages, written):
            rig.expect(PoolName.KV, page, payload)


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@given(
    seed=payload_seeds,
    stride=pattern_strides,
    layout=kv_layouts,
    misalign=misaligns,
    pages=page_lists(PAGES),
    order=st.permutations(range(PAGES)),
)
# side pools in layer_first (SWA and draft MHA pools, the DSA indexer, DeepSeek-V4's rows), pages
# out of order: a backend that takes every side pool for page-first must meet this case
@example(seed=1, stride=1, layout="layer_first", misalign=0, pages=[1, 0], order=list(range(PAGES))[::-1])
def test_side_pool_pages_round_trip_byte_for_byte_through_v2(
    hicache_target: Target,
    geometry: ModelGeometry,
    seed: int,
    stride: int,
    layout: str,
    misalign: int,
    pages: list[int],
    order: list[int],
) -> None:
    """Side-pool pages of every kind SGLang ships, in the layout it gives them, read back bit-identical."""
    specs = hicache_target.require_side_pools(geometry)
    hicache_target.require_layout(layout)
    dst = order[: len(pages)]
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, layout=layout, misalign=misalign, page_num=PAGES) as rig,
    ):
        for spec in specs:
            _round_trip(rig, spec.name, pages, dst, seed, stride)
