"""No two distinct (config, pool, key) entries ever share a stored object.

Naming schemes that glue strings together collide: key ``a_k`` of one pool against key ``a`` of a
``_k`` component, ``org/model`` against ``org_model``, rank 1 of 12 against rank 11 of 2. Each
entry here gets its own payload; if any two share an object, one of them reads back the other's.

The ranks of a deployment (TP, pipeline stages, attention CP, DCP) follow SGLang's sharing rule
(:mod:`conformance.model.sharing`): shards it keeps apart must stay apart, and the replicated entries one
writer stores must be found by every rank that shares them.
"""

from __future__ import annotations

from itertools import product

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from conformance.harness.geometry import ModelGeometry, load_geometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import (
    TEMPTATIONS,
    adversarial_keys,
    deployments,
    model_names,
    rank_sets,
    ranks_of,
    render_page,
    tempting_key_pairs,
)
from conformance.model.interface import PoolName
from conformance.model.sharing import Shape, writer_of
from conformance.suite._common import (
    GEOMETRIES,
    entry_identity,
    ids,
    is_storage_writer,
    runnable,
    store_from_writers,
)

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
                    if not is_storage_writer(rig.config, name):
                        continue  # replicated state is backed up by its writer rank only
                    pool = rig.pool(name)
                    for i in range(len(keys)):
                        payload = render_page(pool, r * 7919 + n * 131 + i, 2, salt=r)
                        rig.put(name, i, payload)
                        last_writer[entry_identity(rig.config, name, keys[i])] = payload
                    assert rig.set(name, keys, range(len(keys))) == [True] * len(keys)
            for rig in rigs:
                for name in rig.pools:
                    where = f"{rig.config.model_name}@{rig.config.tp_rank}/{rig.config.tp_size}"
                    want = [last_writer.get(entry_identity(rig.config, name, key)) for key in keys]
                    rig.pool(name).fill(0x00)
                    got = rig.get(name, keys, range(len(keys)))
                    assert got == [w is not None for w in want], f"{name} get at {where} returned {got}"
                    for i, (key, page) in enumerate(zip(keys, want)):
                        if page is not None:
                            rig.expect(name, i, page, f"key {key!r} of {where}")
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
    names = [geometry.kv.name, *(s.name for s in hicache_target.usable_pools(geometry))]
    spelled = [stem, *(f"{stem}{sep}{n}" for sep, n in product(("_", "."), names)), f"{stem}_k", f"{stem}_v"]
    spelled = list(dict.fromkeys(spelled))  # every spelling, however many pools (DeepSeek-V4 has nine)
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, page_num=len(spelled)) as rig,
    ):
        assert list(rig.pools) == names
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


# One rank and its neighbour in each dimension: another stage, another CP rank, and another TP rank
# that (for MLA) is another DCP shard. Every shard-blind naming scheme collides somewhere in it.
NEIGHBOURS = [
    Shape(
        tp_rank=0,
        tp_size=2,
        pp_rank=0,
        pp_size=2,
        attn_cp_rank=0,
        attn_cp_size=2,
        dcp_size=2,
        logical_page_size=2,
    ),
    Shape(
        tp_rank=0,
        tp_size=2,
        pp_rank=1,
        pp_size=2,
        attn_cp_rank=0,
        attn_cp_size=2,
        dcp_size=2,
        logical_page_size=2,
    ),
    Shape(
        tp_rank=0,
        tp_size=2,
        pp_rank=0,
        pp_size=2,
        attn_cp_rank=1,
        attn_cp_size=2,
        dcp_size=2,
        logical_page_size=2,
    ),
    Shape(
        tp_rank=1,
        tp_size=2,
        pp_rank=0,
        pp_size=2,
        attn_cp_rank=0,
        attn_cp_size=2,
        dcp_rank=1,
        dcp_size=2,
        logical_page_size=2,
    ),
]
shard_keys = st.lists(
    st.text("0123456789abcdef", min_size=1, max_size=8), min_size=1, max_size=3, unique=True
)


def _label(rig: Rig) -> str:
    return f"{rig.config.model_name}@{rig.shape.label()}"


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(keys=shard_keys, ranks=rank_sets())
@example(keys=["0"], ranks=NEIGHBOURS)
@example(keys=["0"], ranks=[Shape(attn_cp_size=2), Shape(attn_cp_rank=1, attn_cp_size=2)])  # CP without DCP
def test_every_shard_a_deployment_keeps_apart_has_its_own_entry(
    hicache_target: Target, geometry: ModelGeometry, keys: list[str], ranks: list[Shape]
) -> None:
    """Ranks of one deployment (TP, pipeline stages, CP, DCP) each read back their own shard's bytes."""
    shapes = list(dict.fromkeys(runnable(hicache_target, geometry, s) for s in ranks))
    with hicache_target.storage() as storage:
        rigs = [Rig(hicache_target, geometry, storage, page_num=len(keys), shape=s) for s in shapes]
        try:
            stored = store_from_writers(rigs, keys)
            for rig in rigs:
                for name in rig.pools:
                    if not is_storage_writer(rig.config, name):
                        continue
                    rig.pool(name).fill(0x00)
                    got = rig.get(name, keys, range(len(keys)))
                    assert got == [True] * len(keys), f"{name} get at {_label(rig)} returned {got}"
                    for i, key in enumerate(keys):
                        want = stored[entry_identity(rig.config, name, key)]
                        rig.expect(name, i, want, f"key {key!r} at {_label(rig)}")
            if hicache_target.caps.enumerates_objects:
                count = rigs[0].backend.stored_object_count()
                assert count == len(stored), f"{count} stored objects for {len(stored)} shard entries"
        finally:
            for rig in rigs:
                rig.close()


MLA = [g for g in GEOMETRIES if g.is_mla]


def _a_reader(shape: Shape) -> Shape:
    """A rank that is not its DCP shard's writer: the next DCP group's rank where there is one."""
    if shape.tp_rank != shape.dcp_rank or shape.tp_rank + shape.dcp_size >= shape.tp_size:
        return shape
    return Shape(**{**shape.config_fields(), "tp_rank": shape.tp_rank + shape.dcp_size})


readers = deployments(mla=True).filter(lambda d: d.tp_size > d.dcp_size).flatmap(ranks_of).map(_a_reader)


@pytest.mark.parametrize("geometry", MLA, ids=ids(MLA))
@given(keys=shard_keys, reader=readers)
@example(keys=["0"], reader=Shape(tp_rank=1, tp_size=2))
@example(keys=["0"], reader=Shape(tp_rank=3, tp_size=4, dcp_rank=1, dcp_size=2, logical_page_size=2))
def test_every_tp_rank_reads_the_replicated_entries_its_writer_stored(
    hicache_target: Target, geometry: ModelGeometry, keys: list[str], reader: Shape
) -> None:
    """MLA state the writer rank stores (``is_storage_writer``) is found, byte-exact, on every TP rank."""
    with hicache_target.storage() as storage:
        reader = runnable(hicache_target, geometry, reader)
        writer = Rig(hicache_target, geometry, storage, page_num=len(keys), shape=writer_of(reader))
        other = Rig(hicache_target, geometry, storage, page_num=len(keys), shape=reader)
        try:
            shared = [
                n
                for n in writer.pools
                if entry_identity(writer.config, n, "") == entry_identity(other.config, n, "")
            ]
            assert shared, (
                f"{geometry.family} replicates no pool between {_label(writer)} and {_label(other)}"
            )
            stored: dict[PoolName, list[bytes]] = {}
            for n, name in enumerate(shared):
                stored[name] = [
                    render_page(writer.pool(name), 31 * n + i, 3, salt=i) for i in range(len(keys))
                ]
                for i, payload in enumerate(stored[name]):
                    writer.put(name, i, payload)
                done = writer.set(name, keys, range(len(keys)))
                assert done == [True] * len(keys), f"{name} set at {_label(writer)} returned {done}"
            if PoolName.KV in shared:
                hits = other.backend.batch_exists(list(keys))
                where = f"{_label(other)} (stored at {_label(writer)})"
                assert hits == len(keys), f"batch_exists at {where} found {hits} of {len(keys)} keys"
            for name in shared:
                other.pool(name).fill(0x00)
                got = other.get(name, keys, range(len(keys)))
                assert got == [True] * len(keys), (
                    f"{name} get at {_label(other)} returned {got} for keys {_label(writer)} stored"
                )
                for i, key in enumerate(keys):
                    other.expect(name, i, stored[name][i], f"key {key!r} stored at {_label(writer)}")
        finally:
            writer.close()
            other.close()


IDENTITY_FAMILY = "qwen3_next_hybrid"
"""KV through v1 (or v2) beside a Mamba pool through v2: a key is folded on either path."""


def _kv_hits(rig: Rig, keys: list[str]) -> int:
    """The leading run ``batch_exists`` (v1 where claimed, else v2's KV figure) reports."""
    if rig.target.caps.v1_kv:
        return int(rig.backend.batch_exists(keys))
    return int(rig.backend.batch_exists_v2(keys, []).kv_hit_pages)


def _store_pages(rig: Rig, keys: list[str], first: int, salt: int) -> dict[PoolName, list[bytes]]:
    """Distinct pages under ``keys`` in host slots ``first..``, every pool; what each key holds."""
    held: dict[PoolName, list[bytes]] = {}
    for n, name in enumerate(rig.pools):
        pool = rig.pool(name)
        held[name] = [render_page(pool, salt * 1000 + n * 100 + i, 3, salt=salt) for i in range(len(keys))]
        for i, page in enumerate(held[name]):
            rig.put(name, first + i, page)
        slots = range(first, first + len(keys))
        assert rig.set(name, keys, slots) == [True] * len(keys), f"{name}: storing {keys!r} was refused"
    return held


def _read_exactly(rig: Rig, keys: list[str], held: dict[PoolName, list[bytes]], when: str) -> None:
    """Every pool reads back each key's own page, into fresh slots (its keys alone, where the
    backend stores no bytes)."""
    for name in rig.pools:
        rig.pool(name).fill(0)
        got = rig.get(name, keys, range(len(keys)))
        assert got == [True] * len(keys), f"{when}: {name} get of {keys!r} answered {got}"
        for i, key in enumerate(keys):
            if rig.target.caps.stores_bytes:
                rig.expect(name, i, held[name][i], f"{when}: key {key!r}")


def _absent(rig: Rig, keys: list[str], when: str) -> None:
    """No pool finds any of ``keys``, by exists or by get."""
    for key in keys:
        hits = _kv_hits(rig, [key])
        assert hits == 0, f"{when}: exists finds {key!r} ({hits}), which was never stored"
    for name in rig.pools:
        got = rig.get(name, keys, range(len(keys)))
        assert got == [False] * len(keys), f"{when}: {name} get of never-stored {keys!r} answered {got}"


@given(pairs=st.tuples(*(tempting_key_pairs(t) for t in TEMPTATIONS)))
def test_keys_that_differ_only_in_what_a_backend_may_normalize_stay_distinct(
    hicache_target: Target, pairs: tuple[tuple[str, str], ...]
) -> None:
    """Keys that differ only in case, Unicode form, whitespace or separators stay distinct entries.

    Letter case, NFC against NFD, surrounding whitespace, hex case, ``-``/``_``/``/``/``.``: each
    pair is two entries through set, get, exists and clear, in KV and a side pool. A backend that
    case-folds, normalizes, strips or sanitises a key before naming its object finds one key's
    entry under the other: exists reports a key never stored, a get serves the other key's page,
    and after a clear the survivor's store resurrects the other."""
    firsts, seconds = [a for a, _ in pairs], [b for _, b in pairs]
    assume(len({*firsts, *seconds}) == 2 * len(pairs))  # pairs of different temptations never meet
    geometry = load_geometry(IDENTITY_FAMILY)
    count = len(pairs)
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, page_num=2 * count) as rig,
    ):
        held = _store_pages(rig, firsts, 0, salt=1)
        _absent(rig, seconds, "only the first of each pair stored")
        held_second = _store_pages(rig, seconds, count, salt=2)
        _read_exactly(rig, firsts, held, "both of each pair stored")
        _read_exactly(rig, seconds, held_second, "both of each pair stored")
        hits = _kv_hits(rig, [*firsts, *seconds])
        assert hits == 2 * count, f"both of each pair stored: exists finds {hits} of {2 * count}"
        rig.backend.clear()
        again = _store_pages(rig, seconds, 0, salt=3)
        _absent(rig, firsts, "after clear(), only the second of each pair stored again")
        _read_exactly(rig, seconds, again, "after clear(), only the second of each pair stored again")
