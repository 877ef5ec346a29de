"""``batch_exists`` and ``batch_exists_v2`` answer exactly what the documented semantics say.

The answers are checked against :mod:`conformance.model.oracle`, a direct statement of the interface's
docstrings, over random presence patterns in every pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conformance.harness.geometry import ModelGeometry, load_geometry
from conformance.harness.rig import Rig, Target
from conformance.model.interface import PoolHitPolicy, PoolName, PoolTransfer
from conformance.model.oracle import check_exists_result, expected_exists_v2, leading_run
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

    def window(self, index: int) -> int:
        """A TRAILING pool's window; pools past the drawn ones (DeepSeek-V4 has eight) get one page."""
        return self.windows[index] if index < len(self.windows) else 1


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
# Two TRAILING_PAGES pools of different windows, each holding a prefix the other cannot restore
# (Inkling's SWA and Mamba pools): each pool's own figure is 3 or 4, their common prefix only 1.
TRAILING_WINDOWS_DISAGREE = Presence(
    kv=(True,) * 4,
    side=((True, True, True, False), (True, False, True, True), (True,) * 4),
    windows=(1, 2, 1),
)


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@MORE
@given(presence=presences())
@example(presence=TRAILING_GAP_BEFORE_ALL_GAP)
@example(presence=TRAILING_WINDOWS_DISAGREE)
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
            keys[max(0, n - presence.window(i)) :]
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


UNKNOWN_POLICY = "no_such_policy"
"""A hit policy no SGLang version defines, so every backend has one policy it must refuse."""


def test_a_hit_policy_the_backend_does_not_declare_is_refused_never_answered_zero(
    hicache_target: Target,
) -> None:
    """Asked about a hit policy it does not declare, batch_exists_v2 raises, never a silent zero."""
    target = hicache_target
    geometry = load_geometry("adversarial")
    pool = target.require_side_pools(geometry)[0]
    undeclared: list[PoolHitPolicy | str] = [p for p in PoolHitPolicy if p not in target.caps.hit_policies]
    keys = [f"policy-{i}" for i in range(4)]
    answered = []
    with target.storage() as storage, Rig(target, geometry, storage, page_num=len(keys)) as rig:
        for name in (PoolName.KV, pool.name):  # every page present: any honest figure is non-zero
            assert rig.set(name, keys, range(len(keys))) == [True] * len(keys)
        for policy in [*undeclared, UNKNOWN_POLICY]:
            transfer = PoolTransfer(
                name=pool.name,
                keys=keys,
                hit_policy=cast(PoolHitPolicy, policy),
                block_pages=2,
                group_pages=2,
            )
            try:
                result = rig.backend.batch_exists_v2(keys, [transfer])
            except Exception:  # any exception is a refusal; which one is the backend's to choose
                continue
            answered.append(f"{getattr(policy, 'value', policy)!r} -> {result}")
    assert not answered, "undeclared hit policies were answered instead of refused: " + "; ".join(answered)


TRAILING = [g for g in HYBRID if any(p.hit_policy is PoolHitPolicy.TRAILING_PAGES for p in g.side_pools)]


@pytest.mark.hicache_requires("fills_restorable_prefix")
@pytest.mark.parametrize("geometry", TRAILING, ids=ids(TRAILING))
@given(
    pages=st.integers(1, PAGES),
    gap=st.integers(0, PAGES - 1),
    window=st.integers(1, 3),
)
@example(pages=5, gap=3, window=1)
def test_a_trailing_pool_query_fills_the_restorable_prefix_set(
    hicache_target: Target, geometry: ModelGeometry, pages: int, gap: int, window: int
) -> None:
    """With a TRAILING_PAGES pool queried, restorable_prefix_pages is given, never None, and is right."""
    target = hicache_target
    trailing = [p for p in target.queryable_pools(geometry) if p.hit_policy is PoolHitPolicy.TRAILING_PAGES]
    if not trailing:
        pytest.skip(f"backend {target.spec.name!r} declares none of {geometry.family}'s trailing pools")
    pool = trailing[0]
    keys = [f"rp-{i}" for i in range(pages)]
    held = [i for i in range(pages) if i != gap]  # the trailing pool misses one page
    with target.storage() as storage, Rig(target, geometry, storage, page_num=PAGES) as rig:
        assert rig.set(PoolName.KV, keys, range(pages)) == [True] * pages
        if held:
            assert rig.set(pool.name, [keys[i] for i in held], held) == [True] * len(held)
        transfers = [pool.exists_transfer(keys[-window:])]
        result = rig.backend.batch_exists_v2(keys, transfers)
        expected = expected_exists_v2(
            keys, transfers, lambda name, key: name == "kv" or keys.index(key) != gap
        )
        assert result.restorable_prefix_pages is not None, (
            f"restorable_prefix_pages is None (kv_hit_pages {result.kv_hit_pages}); the restorable "
            f"set is {expected.restorable_prefix_pages}. Declare fills_restorable_prefix=False if it is "
            "never given"
        )
        problems = check_exists_result(result, expected)
        assert not problems, "; ".join(problems)
