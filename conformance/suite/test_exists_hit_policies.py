"""``batch_exists`` and ``batch_exists_v2`` answer exactly what the documented semantics say.

The answers are checked against :mod:`conformance.oracle`, a direct statement of the interface's
docstrings, over random presence patterns in every pool.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conformance.geometry import ModelGeometry
from conformance.interface import PoolHitPolicy, PoolName
from conformance.oracle import check_exists_result, expected_exists_v2, leading_run
from conformance.rig import Rig, Target
from conformance.suite._common import GEOMETRIES, HYBRID, ids

PAGES = 8
# Mostly-present pages make long prefixes, where policies disagree; cheap enough to try more.
mostly_present = st.sampled_from([True, True, True, False])
MORE = settings(max_examples=settings().max_examples * 5)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(present=st.lists(mostly_present, min_size=0, max_size=PAGES))
def test_batch_exists_counts_the_leading_run_of_present_keys(
    hicache_target: Target, geometry: ModelGeometry, present: list[bool]
) -> None:
    """batch_exists is the length of the leading run of stored KV keys, gaps and all."""
    keys = [f"run-{i}" for i in range(len(present))]
    with hicache_target.storage() as storage, Rig(hicache_target, geometry, storage, page_num=PAGES) as rig:
        stored = [i for i, flag in enumerate(present) if flag]
        if stored:
            assert rig.set(PoolName.KV, [keys[i] for i in stored], stored) == [True] * len(stored)
        assert rig.backend.batch_exists(keys) == leading_run(present)


@dataclass(frozen=True)
class Presence:
    """Which pages each pool holds: KV, then the geometry's side pools in order."""

    kv: tuple[bool, ...]
    side: tuple[tuple[bool, ...], ...]
    windows: tuple[int, ...]

    def of(self, index: int) -> tuple[bool, ...]:
        return self.side[index] if index < len(self.side) else (True,) * len(self.kv)


@st.composite
def presences(draw: st.DrawFn, side_pools: int = 3) -> Presence:
    n = draw(st.integers(0, PAGES))
    flags = st.lists(mostly_present, min_size=n, max_size=n).map(tuple)
    return Presence(
        kv=draw(flags),
        side=tuple(draw(flags) for _ in range(side_pools)),
        windows=tuple(draw(st.integers(1, 3)) for _ in range(side_pools)),
    )


# A TRAILING_PAGES pool missing the page just before an ALL_PAGES pool's first gap: the usable
# prefix is shorter than every pool's own figure. Random search rarely lands here, so say it.
TRAILING_GAP_BEFORE_ALL_GAP = Presence(
    kv=(True,) * 5,
    side=((True, True, True, False, True), (True,) * 5, (True, True, True, True, False)),
    windows=(1, 1, 1),
)


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@MORE
@given(presence=presences())
@example(presence=TRAILING_GAP_BEFORE_ALL_GAP)
def test_batch_exists_v2_follows_every_pools_hit_policy(
    hicache_target: Target, geometry: ModelGeometry, presence: Presence
) -> None:
    """The usable prefix and each pool's figure match the oracle for ALL, TRAILING and BLOCK_GROUPS.

    Pools whose hit policy the backend does not declare stay out of the query; the rest keep
    their places in the drawn presence, so the explicit example keeps its shape.
    """
    specs = hicache_target.require_side_pools(geometry)
    queryable = hicache_target.queryable_pools(geometry)
    if not queryable:
        policies = sorted({s.hit_policy.value for s in specs})
        pytest.skip(f"backend {hicache_target.spec.name!r} declares none of the hit policies {policies}")
    n = len(presence.kv)
    keys = [f"hp-{i}" for i in range(n)]
    flags = {str(PoolName.KV): presence.kv}
    transfers = []
    for i, spec in enumerate(specs):
        if spec not in queryable:
            continue
        flags[str(spec.name)] = presence.of(i)
        own = (
            keys[max(0, n - presence.windows[i]) :]
            if spec.hit_policy is PoolHitPolicy.TRAILING_PAGES
            else keys
        )
        transfers.append(spec.exists_transfer(own))
    with hicache_target.storage() as storage, Rig(hicache_target, geometry, storage, page_num=PAGES) as rig:
        for name, present in flags.items():
            stored = [i for i, flag in enumerate(present) if flag]
            if stored:
                assert rig.set(PoolName(name), [keys[i] for i in stored], stored) == [True] * len(stored)
        expected = expected_exists_v2(keys, transfers, lambda pool, key: flags[pool][keys.index(key)])
        problems = check_exists_result(rig.backend.batch_exists_v2(keys, transfers), expected)
        assert not problems, "; ".join(problems)
