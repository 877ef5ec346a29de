"""No two distinct (config, pool, key) entries ever share a stored object.

Naming schemes that glue strings together collide: key ``a_k`` of one pool against key ``a`` of a
``_k`` component, ``org/model`` against ``org_model``, rank 1 of 12 against rank 11 of 2. Each
entry here gets its own payload; if any two share an object, one of them reads back the other's.
"""

from __future__ import annotations

from itertools import product

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conformance.geometry import ModelGeometry
from conformance.interface import PoolName
from conformance.rig import Rig, Target
from conformance.strategies import adversarial_keys, model_names, render_page
from conformance.suite._common import GEOMETRIES, entry_identity, ids

RANKS = [(0, 1), (0, 2), (1, 2), (1, 12), (11, 2), (2, 11)]


def spellings(model: str) -> list[str]:
    """Names a careless scheme might fold together with ``model``."""
    return sorted(
        {model, model.replace("/", "-"), model.replace("/", "_"), model.replace("_", "/"), f"{model}_1"}
    )


@st.composite
def configs(draw: st.DrawFn) -> list[tuple[str, tuple[int, int]]]:
    """A serving config, every near-spelling of its model at the same rank, and another rank."""
    model = draw(st.one_of(model_names.map(lambda m: m if "/" in m else f"org/{m}"), model_names))
    rank, other = draw(st.lists(st.sampled_from(RANKS), min_size=2, max_size=2, unique=True))
    return [(m, rank) for m in spellings(model)] + [(model, other)]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(keys=st.lists(adversarial_keys(), min_size=1, max_size=4, unique=True), configs=configs())
def test_every_config_pool_and_key_has_its_own_stored_object(
    hicache_target: Target,
    geometry: ModelGeometry,
    keys: list[str],
    configs: list[tuple[str, tuple[int, int]]],
) -> None:
    """Cross-writes of adversarial keys, pools, model names and TP ranks never overwrite each other."""
    assume(all(len(k.encode()) <= 1024 for k in keys))
    last_writer: dict[tuple[object, ...], bytes] = {}
    with hicache_target.storage() as storage:
        rigs = [
            Rig(
                hicache_target,
                geometry,
                storage,
                page_num=len(keys),
                model_name=model,
                tp_rank=rank,
                tp_size=size,
            )
            for model, (rank, size) in configs
        ]
        try:
            for r, rig in enumerate(rigs):
                for n, name in enumerate(rig.pools):
                    pool = rig.pool(name)
                    for i in range(len(keys)):
                        payload = render_page(pool, r * 7919 + n * 131 + i, 2, salt=r)
                        rig.put(name, i, payload)
                        last_writer[entry_identity(rig.config, name, keys[i])] = payload
                    assert rig.set(name, keys, range(len(keys))) == [True] * len(keys)
            for rig in rigs:
                for name in rig.pools:
                    rig.pool(name).fill(0x00)
                    assert rig.get(name, keys, range(len(keys))) == [True] * len(keys)
                    for i, key in enumerate(keys):
                        rig.expect(
                            name,
                            i,
                            last_writer[entry_identity(rig.config, name, key)],
                            f"key {key!r} of {rig.config.model_name}@"
                            f"{rig.config.tp_rank}/{rig.config.tp_size}",
                        )
            if hicache_target.caps.enumerates_objects:
                count = rigs[0].backend.stored_object_count()
                assert count == len(last_writer), f"{count} stored objects for {len(last_writer)} entries"
        finally:
            for rig in rigs:
                rig.close()


@pytest.mark.parametrize(
    "geometry", [g for g in GEOMETRIES if g.side_pools], ids=ids([g for g in GEOMETRIES if g.side_pools])
)
@given(stem=st.text("0123456789abcdef", min_size=1, max_size=8))
def test_keys_that_spell_another_pools_suffix_stay_distinct(
    hicache_target: Target, geometry: ModelGeometry, stem: str
) -> None:
    """``h`` in pool P never meets ``h_P``, ``h.P`` or ``h_k`` in any pool."""
    hicache_target.require_side_pools(geometry)
    with hicache_target.storage() as storage, Rig(hicache_target, geometry, storage, page_num=8) as rig:
        names = list(rig.pools)
        spelled = (
            [stem] + [f"{stem}{sep}{n}" for sep, n in product(("_", "."), names)] + [f"{stem}_k", f"{stem}_v"]
        )
        spelled = list(dict.fromkeys(spelled))[:8]
        expected: dict[tuple[PoolName, str], bytes] = {}
        for n, name in enumerate(names):
            pool = rig.pool(name)
            for i, key in enumerate(spelled):
                expected[(name, key)] = render_page(pool, 17, 2, salt=n * 100 + i)
                rig.put(name, i, expected[(name, key)])
            assert rig.set(name, spelled, range(len(spelled))) == [True] * len(spelled)
        for name in names:
            rig.pool(name).fill(0)
            assert rig.get(name, spelled, range(len(spelled))) == [True] * len(spelled)
            for i, key in enumerate(spelled):
                rig.expect(name, i, expected[(name, key)], f"key {key!r}")
