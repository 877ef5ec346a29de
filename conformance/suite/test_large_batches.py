"""Batches the size SGLang's controller sends: hundreds of pages in one v2 call, and in one exists.

The hybrid cache controller (SGLang 0.5.23) chunks KV into 128-page batches, but hands each side
pool's whole span to ``batch_set_v2``/``batch_get_v2`` at once and asks ``batch_exists_v2`` about
the whole span. A backend whose buffers hold 128 pages must still move and count all of them, and
one whose transport queues a few thousand objects must still keep a long context's span. And one
instance holds thousands of entries, not the few hundred most properties store.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conformance.harness.geometry import ModelGeometry, load_geometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import payload_seeds, render_page
from conformance.model.interface import PoolHitPolicy, PoolName
from conformance.model.oracle import check_exists_result, expected_exists_v2, leading_run
from conformance.suite._common import HYBRID, ids

CONTROLLER_CHUNK = 128
"""The KV batch size of SGLang's controller; side-pool batches are not cut to it."""
FEW = settings(max_examples=max(2, settings().max_examples // 4))
"""Each example moves hundreds of pages: a few are enough, the explicit 129 among them."""
LONG_CONTEXT_PAGES = 512
"""A 32K-token context at SGLang's usual 64-token pages: the span a long prompt hands each side pool."""
STORE_CHUNK = 64
"""The exists property stores in small batches, so that it tests exists alone."""
MANY = 2048
"""Entries one instance holds in the thousands property: an index or table sized for the few
hundred entries of the other properties must grow past them."""
ONE = settings(max_examples=max(1, settings().max_examples // 12))


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@FEW
@given(pages=st.integers(CONTROLLER_CHUNK + 1, 300), seed=payload_seeds)
@example(pages=CONTROLLER_CHUNK + 1, seed=0)
def test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call(
    hicache_target: Target, geometry: ModelGeometry, pages: int, seed: int
) -> None:
    """One batch_set_v2 and one batch_get_v2 over every side pool move more than 128 pages each, exactly."""
    round_trip_in_one_v2_call(hicache_target, geometry, pages, seed)


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
def test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call(
    hicache_target: Target, geometry: ModelGeometry
) -> None:
    """A 32K-token context's whole side-pool span, one v2 call each way, moves every page exactly.

    One fixed size, so no hypothesis: a backend that fails it may take a minute a call (Mooncake
    does), and hypothesis would replay the failing call to report it."""
    round_trip_in_one_v2_call(hicache_target, geometry, LONG_CONTEXT_PAGES, seed=0)


def round_trip_in_one_v2_call(target: Target, geometry: ModelGeometry, pages: int, seed: int) -> None:
    """Store ``pages`` pages of every side pool in one batch_set_v2, zero the host, and load them back
    in one batch_get_v2: every flag True and every byte as written."""
    specs = target.require_side_pools(geometry)
    names = [s.name for s in specs] + ([PoolName.KV] if target.caps.kv_through_v2 else [])
    keys = [f"big-{i}" for i in range(pages)]
    with target.storage() as storage, Rig(target, geometry, storage, page_num=pages) as rig:
        written = {}
        for n, name in enumerate(names):
            written[name] = [render_page(rig.pool(name), seed, 64, salt=n * 1000 + i) for i in range(pages)]
            for page, data in enumerate(written[name]):
                rig.put(name, page, data)
        stored = rig.backend.batch_set_v2([rig.transfer(name, keys, range(pages)) for name in names])
        for name in names:
            flags = list(stored.get(str(name)) or [])
            assert flags == [True] * pages, (
                f"batch_set_v2 of {pages} pages: pool {name} answered {flags.count(True)} True "
                f"of {len(flags)} flags"
            )
            rig.pool(name).fill(0)
        loaded = rig.backend.batch_get_v2([rig.transfer(name, keys, range(pages)) for name in names])
        for name in names:
            flags = list(loaded.get(str(name)) or [])
            assert flags == [True] * pages, (
                f"batch_get_v2 of {pages} pages: pool {name} answered {flags.count(True)} True "
                f"of {len(flags)} flags; first False at {flags.index(False) if False in flags else None}"
            )
            for page in range(pages):
                rig.expect(name, page, written[name][page], f"page {page} of a {pages}-page batch")


@pytest.mark.parametrize("geometry", HYBRID, ids=ids(HYBRID))
@FEW
@given(
    pages=st.integers(CONTROLLER_CHUNK + 1, 400),
    gaps=st.lists(st.one_of(st.none(), st.integers(CONTROLLER_CHUNK - 8, 399)), min_size=4, max_size=4),
    windows=st.lists(st.integers(1, 3), min_size=3, max_size=3),
)
@example(pages=300, gaps=[None, None, None, None], windows=[1, 1, 1])
@example(pages=300, gaps=[200, 150, None, 250], windows=[2, 1, 1])
def test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle(
    hicache_target: Target,
    geometry: ModelGeometry,
    pages: int,
    gaps: list[int | None],
    windows: list[int],
) -> None:
    """batch_exists and batch_exists_v2 over a span of hundreds of pages count all of it, gaps and all."""
    target = hicache_target
    target.require_side_pools(geometry)
    queryable = target.queryable_pools(geometry)
    keys = [f"span-{i}" for i in range(pages)]
    # each pool holds every page but one (its gap, when drawn and inside the span)
    missing = {PoolName.KV: gaps[0], **{s.name: gaps[1 + i % 3] for i, s in enumerate(queryable)}}
    with target.storage() as storage, Rig(target, geometry, storage, page_num=pages) as rig:
        for name, gap in missing.items():
            held = [i for i in range(pages) if i != gap]
            for start in range(0, len(held), STORE_CHUNK):
                chunk = held[start : start + STORE_CHUNK]
                got = rig.set(name, [keys[i] for i in chunk], chunk)
                assert got == [True] * len(chunk), f"storing {len(chunk)} pages of {name}: {got}"
        transfers = []
        for i, spec in enumerate(queryable):
            own = keys[-windows[i % 3] :] if spec.hit_policy is PoolHitPolicy.TRAILING_PAGES else keys
            transfers.append(spec.exists_transfer(own))

        def present(pool: str, key: str) -> bool:
            return keys.index(key) != missing[PoolName(pool)]

        if target.caps.v1_kv:
            run = rig.backend.batch_exists(keys)
            want = leading_run([present("kv", k) for k in keys])
            assert run == want, f"batch_exists over {pages} keys: {run}, the leading run is {want}"
        expected = expected_exists_v2(keys, transfers, present)
        problems = check_exists_result(rig.backend.batch_exists_v2(keys, transfers), expected)
        assert not problems, f"batch_exists_v2 over {pages} keys: " + "; ".join(problems)


@pytest.mark.hicache_requires("v1_kv")
@ONE
@given(seed=payload_seeds)
def test_an_instance_holding_thousands_of_entries_finds_and_reads_every_one(
    hicache_target: Target, seed: int
) -> None:
    """Thousands of entries stored through one instance all answer exists and read back exactly.

    And again after a restart where the backend persists: a table sized for the few hundred
    entries of the other properties must grow, on the write path and on the restart's."""
    kv, chunk = PoolName.KV, CONTROLLER_CHUNK
    geometry = load_geometry("adversarial")  # KV pages of 512 bytes: thousands stay a few MiB
    batches = [[f"many-{b}-{i}" for i in range(chunk)] for b in range(MANY // chunk)]
    with hicache_target.storage() as storage:
        with Rig(hicache_target, geometry, storage, page_num=chunk) as rig:
            for b, keys in enumerate(batches):
                for page, data in enumerate(_many_pages(rig, seed, b)):
                    rig.put(kv, page, data)
                stored = rig.set(kv, keys, range(chunk))
                assert stored == [True] * chunk, (
                    f"batch {b} of {len(batches)}: stored {stored.count(True)} of {chunk}"
                )
            _finds_every_one(rig, batches, seed, "stored")
        if hicache_target.caps.persistence:
            with Rig(hicache_target, geometry, storage, page_num=chunk) as again:
                _finds_every_one(again, batches, seed, "stored before a restart")


def _many_pages(rig: Rig, seed: int, batch: int) -> list[bytes]:
    """The KV bytes of the thousands property's batch ``batch``, one page a key."""
    chunk = CONTROLLER_CHUNK
    return [render_page(rig.pool(PoolName.KV), seed, 3, salt=batch * chunk + p) for p in range(chunk)]


def _finds_every_one(rig: Rig, batches: list[list[str]], seed: int, how: str) -> None:
    """Every batch's keys answer exists and read back their own bytes."""
    kv, chunk = PoolName.KV, CONTROLLER_CHUNK
    for b, keys in enumerate(batches):
        run = rig.backend.batch_exists(keys)
        assert run == chunk, f"batch {b}: batch_exists says {run} of {chunk}, with {MANY} entries {how}"
        rig.pool(kv).fill(0)
        got = rig.get(kv, keys, range(chunk))
        assert got == [True] * chunk, f"batch {b}: read back {got.count(True)} of {chunk}, {how}"
        for page, data in enumerate(_many_pages(rig, seed, b)):
            rig.expect(kv, page, data, f"{keys[page]!r}, one of {MANY} entries {how}")
