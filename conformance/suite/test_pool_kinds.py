"""Every pool kind SGLang ships is found once stored, whatever its shape.

A pool without a KV buffer (DeepSeek-V4's logical anchor), a Mamba pool with an empty temporal
state (conv-only models such as LFM2), DeepSeek-V4's compressed, indexer, rope and state rows and
SWA and draft pools in the KV layout: a backend that names or counts a page's parts from what the
kind usually has, rather than from the pool in hand, stores such pages and then never finds them.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conformance.harness.geometry import ModelGeometry
from conformance.harness.rig import Rig, Target
from conformance.model.interface import PoolHitPolicy
from conformance.model.oracle import check_exists_result, expected_exists_v2
from conformance.suite._common import HYBRID, ids, kv_layouts

PAGES = 4


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@given(layout=kv_layouts, pages=st.integers(1, PAGES))
@example(layout="layer_first", pages=PAGES)
def test_every_stored_page_of_every_pool_kind_is_found(
    hicache_target: Target, geometry: ModelGeometry, layout: str, pages: int
) -> None:
    """Pages stored in KV and every side pool are all found by exists and read back, every kind."""
    specs = hicache_target.require_side_pools(geometry)
    hicache_target.require_layout(layout)
    keys = [f"kind-{i}" for i in range(pages)]
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, layout=layout, page_num=PAGES) as rig,
    ):
        for name in rig.pools:
            stored = rig.set(name, keys, range(pages))
            assert stored == [True] * pages, f"{name} ({rig.pool(name).describe()}): set returned {stored}"
        if hicache_target.caps.v1_kv:
            found = rig.backend.batch_exists(keys)
            assert found == pages, f"batch_exists found {found} of {pages} stored KV pages"
        transfers = [
            s.exists_transfer(keys[-1:] if s.hit_policy is PoolHitPolicy.TRAILING_PAGES else keys)
            for s in specs
            if s.hit_policy in hicache_target.caps.hit_policies
        ]
        expected = expected_exists_v2(keys, transfers, lambda pool, key: True)
        problems = check_exists_result(rig.backend.batch_exists_v2(keys, transfers), expected)
        assert not problems, f"every page of every pool is stored, yet: {'; '.join(problems)}"
        for name in rig.pools:
            got = rig.get(name, keys, range(pages))
            assert got == [True] * pages, f"{name} ({rig.pool(name).describe()}): get returned {got}"
