"""A fresh instance on the same storage sees exactly what the last one stored."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.harness.geometry import ModelGeometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import payload_seeds, render_page
from conformance.model.interface import PoolName
from conformance.suite._common import HYBRID, ids

PAGES = 4


@pytest.mark.hicache_requires("persistence")
@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@given(seed=payload_seeds)
def test_a_restarted_backend_reads_back_what_it_stored(
    hicache_target: Target, geometry: ModelGeometry, seed: int
) -> None:
    """Close, reopen on the same folder: exists counts the same and every page reads back exact."""
    keys = [f"persist-{i}" for i in range(PAGES)]
    with hicache_target.storage() as storage:
        with Rig(hicache_target, geometry, storage, page_num=PAGES) as first:
            written = {}
            for n, name in enumerate(first.pools):
                written[name] = [
                    render_page(first.pool(name), seed, 3, salt=n * 10 + i) for i in range(PAGES)
                ]
                for page, data in enumerate(written[name]):
                    first.put(name, page, data)
                assert first.set(name, keys, range(PAGES)) == [True] * PAGES
        with Rig(hicache_target, geometry, storage, page_num=PAGES) as second:
            assert second.backend.batch_exists(keys) == PAGES
            transfers = [s.exists_transfer(keys) for s in hicache_target.queryable_pools(geometry)]
            assert second.backend.batch_exists_v2(keys, transfers).kv_hit_pages == PAGES
            for name in second.pools:
                assert second.get(name, keys, range(PAGES)) == [True] * PAGES
                for page in range(PAGES):
                    second.expect(name, page, written[name][page], "after a restart")
            assert PoolName.KV in second.pools
