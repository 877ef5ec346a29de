"""``batch_exists`` and ``batch_exists_v2`` answer exactly what the documented semantics say.

The answers are checked against :mod:`conformance.oracle`, a direct statement of the interface's
docstrings, over random presence patterns in every pool.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.interface import PoolHitPolicy, PoolName, PoolTransfer
from conformance.oracle import check_exists_result, expected_exists_v2, leading_run
from conformance.rig import Rig, Target
from conformance.suite._common import GEOMETRIES, HYBRID, ids

PAGES = 8


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(present=st.lists(st.booleans(), min_size=0, max_size=PAGES))
def test_batch_exists_counts_the_leading_run_of_present_keys(target: Target, geometry, present) -> None:
    """batch_exists is the length of the leading run of stored KV keys, gaps and all."""
    keys = [f"run-{i}" for i in range(len(present))]
    with target.storage() as storage, Rig(target, geometry, storage, page_num=PAGES) as rig:
        stored = [i for i, flag in enumerate(present) if flag]
        if stored:
            assert rig.set(PoolName.KV, [keys[i] for i in stored], stored) == [True] * len(stored)
        assert rig.backend.batch_exists(keys) == leading_run(present)


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@given(data=st.data())
def test_batch_exists_v2_follows_every_pools_hit_policy(target: Target, geometry, data) -> None:
    """The usable prefix and each pool's figure match the oracle for ALL, TRAILING and BLOCK_GROUPS."""
    specs = target.require_side_pools(geometry)
    for spec in specs:
        if spec.hit_policy not in target.caps.hit_policies:
            pytest.skip(f"backend {target.spec.name!r} does not declare hit policy {spec.hit_policy.value}")
    n = data.draw(st.integers(0, PAGES), label="keys")
    keys = [f"hp-{i}" for i in range(n)]
    presence = {
        str(name): data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label=f"{name} present")
        for name in [PoolName.KV, *(s.name for s in specs)]
    }
    transfers = []
    for spec in specs:
        if spec.hit_policy is PoolHitPolicy.TRAILING_PAGES:
            window = data.draw(st.integers(1, max(1, min(3, n))), label=f"{spec.name} window")
            own = keys[max(0, n - window):]
        else:
            own = list(keys)
        transfers.append(PoolTransfer(name=spec.name, keys=own, hit_policy=spec.hit_policy,
                                      block_pages=spec.block_pages, group_pages=spec.group_pages))
    with target.storage() as storage, Rig(target, geometry, storage, page_num=PAGES) as rig:
        for name, flags in presence.items():
            stored = [i for i, flag in enumerate(flags) if flag]
            if stored:
                assert rig.set(PoolName(name), [keys[i] for i in stored], stored) == [True] * len(stored)
        expected = expected_exists_v2(keys, transfers, lambda pool, key: presence[pool][keys.index(key)])
        problems = check_exists_result(rig.backend.batch_exists_v2(keys, transfers), expected)
        assert not problems, "; ".join(problems)
