"""Pools sharing keys stay apart, a get writes only where it was told to, and a store keeps only
what it was handed.

Hybrid models store several pools under the same page hashes. A backend that drops the pool from
its object names, shares a staging buffer between pools, or scatters a page into the wrong slots
corrupts a neighbour silently. One that reads past a page when it stores it puts other requests'
KV on disk, where no read-back shows it. The ranks of a deployment share a store the same way:
another pipeline stage, CP rank, DCP shard or (for sharded state) TP rank never sees this rank's
entries.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from conformance.harness.geometry import ModelGeometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import deployments, payload_seeds, ranks_of, render_page, shapes
from conformance.model.interface import PoolName
from conformance.model.sharing import Shape, writer_of
from conformance.suite._common import (
    GEOMETRIES,
    HYBRID,
    entry_identity,
    ids,
    is_storage_writer,
    kv_layouts,
    misaligns,
    runnable,
    store_everything,
)

PAGES = 6
UNHANDED = bytes.fromhex("5ac317e9813fd26b")
"""What every host byte a store is not handed holds: a run of 23 bytes or more of it, copied
anywhere, contains 16 consecutive bytes of it at one of its 8 phases."""


def _all_pools(rig: Rig) -> list[PoolName]:
    return list(rig.pools)


def _paint_unhanded(rig: Rig) -> None:
    """Every byte of every pool's memory, padding included, to the repeating ``UNHANDED``."""
    for name in _all_pools(rig):
        for buf in rig.pool(name).backing():
            raw = buf.view(torch.uint8).reshape(-1)
            if not raw.numel():
                continue
            pattern = (UNHANDED * (raw.numel() // len(UNHANDED) + 1))[: raw.numel()]
            raw.copy_(torch.frombuffer(bytearray(pattern), dtype=torch.uint8))


def _unhanded_in_files(folder: Path) -> list[str]:
    """Where a file under ``folder`` holds 16 consecutive bytes of ``UNHANDED`` (any phase), as
    ``file@offset``, the first such run of each file."""
    probes = [(UNHANDED * 3)[phase : phase + 16] for phase in range(len(UNHANDED))]
    found = []
    for parent, _, names in os.walk(folder):
        for name in names:
            path = Path(parent, name)
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                at = min((i for i in (data.find(p) for p in probes) if i >= 0), default=-1)
                if at >= 0:
                    found.append(f"{path.relative_to(folder)}@{at}")
    return found


def writer_shapes(target: Target, geometry: ModelGeometry) -> st.SearchStrategy[Shape]:
    """Ranks that back every pool of ``geometry`` up (for MLA, the writer of its DCP shard)."""
    runs = shapes().map(lambda s: runnable(target, geometry, s))
    return runs.map(writer_of) if geometry.is_mla else runs


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@given(seed=payload_seeds, layout=kv_layouts, misalign=misaligns, count=st.integers(1, 4), data=st.data())
def test_overwriting_one_pool_never_changes_another_pool(
    hicache_target: Target,
    geometry: ModelGeometry,
    seed: int,
    layout: str,
    misalign: int,
    count: int,
    data: st.DataObject,
) -> None:
    """After the same keys are stored in every pool, overwriting one pool leaves the rest intact.

    The overwritten pool then holds the new bytes, or the first ones where the backend declares
    first-write-wins.
    """
    hicache_target.require_side_pools(geometry)
    hicache_target.require_layout(layout)
    keys = [f"shared-{i}" for i in range(count)]
    shape = data.draw(writer_shapes(hicache_target, geometry), label="rank")
    with (
        hicache_target.storage() as storage,
        Rig(
            hicache_target, geometry, storage, layout=layout, misalign=misalign, page_num=PAGES, shape=shape
        ) as rig,
    ):
        written = store_everything(rig, keys, seed, salt=0)
        victim = data.draw(st.sampled_from(_all_pools(rig)), label="overwritten pool")
        pool = rig.pool(victim)
        fresh = [render_page(pool, seed, 5, salt=9000 + i) for i in range(count)]
        for page, payload in enumerate(fresh):
            rig.put(victim, page, payload)
        assert rig.set(victim, keys, range(count)) == [True] * count
        if hicache_target.caps.overwrites:
            written[victim] = fresh
        for name in _all_pools(rig):
            rig.pool(name).fill(0x5A)
            assert rig.get(name, keys, range(count)) == [True] * count, f"{name} lost entries"
            for page in range(count):
                rig.expect(name, page, written[name][page], f"after overwriting {victim}")


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@given(seed=payload_seeds, layout=kv_layouts, count=st.integers(1, 4), data=st.data())
def test_entries_in_one_pool_are_invisible_to_another_pools_exists(
    hicache_target: Target, geometry: ModelGeometry, seed: int, layout: str, count: int, data: st.DataObject
) -> None:
    """Storing a key in one pool never makes it exist, or count as a hit, in another pool."""
    specs = hicache_target.require_side_pools(geometry)
    hicache_target.require_layout(layout)
    keys = [f"lonely-{i}" for i in range(count)]
    shape = data.draw(writer_shapes(hicache_target, geometry), label="rank")
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, layout=layout, page_num=PAGES, shape=shape) as rig,
    ):
        side = data.draw(st.sampled_from(specs), label="side pool")
        rig.put(side.name, 0, render_page(rig.pool(side.name), seed, 2))
        assert rig.set(side.name, keys, range(count)) == [True] * count
        assert rig.backend.batch_exists(keys) == 0, f"{side.name} entries counted as KV hits"
        queryable = hicache_target.queryable_pools(geometry)
        if side in queryable:
            assert rig.backend.batch_exists_v2(keys, [side.exists_transfer(keys)]).kv_hit_pages == 0
        assert rig.set(PoolName.KV, keys, range(count)) == [True] * count
        others = [s for s in queryable if s.name is not side.name]
        if others:
            other = others[0]
            transfer = other.exists_transfer(keys)
            result = rig.backend.batch_exists_v2(keys, [transfer])
            assert dict(result.extra_pool_hit_pages).get(str(other.name), 0) == 0, (
                f"{side.name} entries counted as {other.name} hits"
            )


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@given(seed=payload_seeds, layout=kv_layouts, misalign=misaligns, data=st.data())
def test_get_never_touches_host_memory_outside_its_target_slots(
    hicache_target: Target,
    geometry: ModelGeometry,
    seed: int,
    layout: str,
    misalign: int,
    data: st.DataObject,
) -> None:
    """A get fills exactly its target pages; every other byte of every pool keeps its canary."""
    hicache_target.require_layout(layout)
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, layout=layout, misalign=misalign, page_num=PAGES) as rig,
    ):
        names = _all_pools(rig)
        count = data.draw(st.integers(1, 3), label="pages")
        keys = [f"canary-{i}" for i in range(count)]
        written = store_everything(rig, keys, seed, salt=1)
        dst = data.draw(st.permutations(range(PAGES)).map(lambda p: p[:count]), label="target pages")
        for name in names:
            rig.pool(name).fill(0xC3)
        for name in names:
            assert rig.get(name, keys, dst) == [True] * count
        for name in names:
            pool = rig.pool(name)
            for page in range(PAGES):
                if page in dst:
                    rig.expect(name, page, written[name][dst.index(page)], "a target page")
                else:
                    rig.expect(name, page, b"\xc3" * pool.page_nbytes(), "outside the get's targets")
            canary = bytes([0xC3])
            for buf in pool.snapshot():
                assert buf.count(canary) >= len(buf) - count * pool.page_nbytes(), (
                    f"get wrote outside {name}'s pages"
                )


_DIMENSIONS = {"tp": "tp_size", "pp": "pp_size", "cp": "attn_cp_size"}


@st.composite
def neighbouring_ranks(draw: st.DrawFn) -> tuple[Shape, Shape]:
    """Two ranks of one deployment that differ in one coordinate: TP (and with it DCP), stage or CP."""
    d = draw(deployments())
    if d.tp_size == d.pp_size == d.attn_cp_size == 1:
        d = replace(d, pp_size=2)
    a = draw(ranks_of(d))
    dimension = draw(st.sampled_from([k for k, size in _DIMENSIONS.items() if getattr(d, size) > 1]))
    size = getattr(d, _DIMENSIONS[dimension])
    step = draw(st.integers(1, size - 1))
    if dimension == "tp":
        tp = (a.tp_rank + step) % size
        b = replace(a, tp_rank=tp, dcp_rank=tp % a.dcp_size)
    elif dimension == "pp":
        b = replace(a, pp_rank=(a.pp_rank + step) % size)
    else:
        b = replace(a, attn_cp_rank=(a.attn_cp_rank + step) % size)
    return a, b


_DCP = {"dcp_size": 2, "logical_page_size": 2}


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(pair=neighbouring_ranks(), count=st.integers(1, 3))
@example(pair=(Shape(pp_size=2), Shape(pp_rank=1, pp_size=2)), count=1)
@example(pair=(Shape(attn_cp_size=2), Shape(attn_cp_rank=1, attn_cp_size=2)), count=1)
@example(pair=(Shape(tp_size=2, **_DCP), Shape(tp_rank=1, tp_size=2, dcp_rank=1, **_DCP)), count=1)
def test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share(
    hicache_target: Target, geometry: ModelGeometry, pair: tuple[Shape, Shape], count: int
) -> None:
    """Entries one rank stores are absent, to get and exists, on a rank whose shard SGLang keeps apart."""
    a, b = (runnable(hicache_target, geometry, s) for s in pair)
    if geometry.is_mla and b.tp_rank == b.dcp_rank:
        a, b = b, a  # let the rank that backs replicated state up be the one that stores
    keys = [f"mine-{i}" for i in range(count)]
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, page_num=PAGES, shape=a) as owner,
        Rig(hicache_target, geometry, storage, page_num=PAGES, shape=b) as other,
    ):
        stored = [n for n in owner.pools if is_storage_writer(owner.config, n)]
        for n, name in enumerate(stored):
            for page in range(count):
                owner.put(name, page, render_page(owner.pool(name), n, 2, salt=page))
            done = owner.set(name, keys, range(count))
            assert done == [True] * count, f"{name} set at {a.label()} returned {done}"
        apart = [
            n for n in stored if entry_identity(owner.config, n, "") != entry_identity(other.config, n, "")
        ]
        if PoolName.KV in apart:
            hits = other.backend.batch_exists(keys)
            assert hits == 0, f"batch_exists at {b.label()} counted {hits} of the keys {a.label()} stored"
        for name in apart:
            got = other.get(name, keys, range(count))
            assert got == [False] * count, (
                f"{name} get at {b.label()} returned {got} for keys {a.label()} stored"
            )


@pytest.mark.hicache_requires("stores_files", reason="the suite reads what a store put in its files")
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(seed=payload_seeds, layout=kv_layouts, misalign=misaligns, data=st.data())
def test_a_store_puts_no_host_byte_it_was_not_handed_into_its_files(
    hicache_target: Target,
    geometry: ModelGeometry,
    seed: int,
    layout: str,
    misalign: int,
    data: st.DataObject,
) -> None:
    """No byte of host memory outside the pages a store was handed reaches the backend's files.

    A store that reads past a page (a region length from another pool, a span rounded up to a
    block, a neighbouring slot) persists another request's KV: a leak between requests and
    tenants that no read-back shows, since the get copies back the page alone. Every byte of
    every pool but the stored pages holds a pattern; once the backend is closed, no file holds a
    run of it, whether each store succeeded or was refused.
    """
    hicache_target.require_layout(layout)
    count = data.draw(st.integers(1, 3), label="pages")
    pages = data.draw(st.permutations(range(PAGES)).map(lambda p: sorted(p[:count])), label="stored pages")
    keys = [f"handed-{i}" for i in range(count)]
    with hicache_target.storage() as storage:
        with Rig(hicache_target, geometry, storage, layout=layout, misalign=misalign, page_num=PAGES) as rig:
            _paint_unhanded(rig)
            for n, name in enumerate(_all_pools(rig)):
                pool = rig.pool(name)
                for i, page in enumerate(pages):
                    rig.put(name, page, render_page(pool, seed, 3, salt=n * 100 + i))
                rig.set(name, keys, pages)  # stored or refused, no other byte may reach a file
        leaked = _unhanded_in_files(storage)
        assert not leaked, (
            f"host bytes outside the stored pages {pages} (a run of the pattern they held) are in {leaked}"
        )
