"""A bounded L3: the budget holds, eviction keeps every answer true, and deployments stay apart.

An L3 on a local disk fills up, so a backend that claims a budget (``bounded_capacity`` names the
``extra_config`` key the suite sets it through) is driven past it with streams of fresh writes.
The store must stay within the budget, measured as the bytes of the files under its folder, in
one process and in two; what eviction leaves must still answer truthfully (exists never reports
what get cannot return, a hole only shortens the hit, whole entries go together); a get racing
eviction is whole or False; and a pinned entry stays. Backends that let deployments of different
models share a folder (``shares_folder``) must keep ``clear()`` and eviction to their own entries.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from decimal import Decimal

import pytest
from hypothesis import example, given, note, settings
from hypothesis import strategies as st

from conformance.harness.geometry import load_geometry
from conformance.harness.leases import LeaseTime, lease_time
from conformance.harness.rig import Rig, Target, byte_difference
from conformance.harness.strategies import payload_seeds, render_page
from conformance.harness.worker import Job, reports
from conformance.model.interface import PoolName
from conformance.model.oracle import check_exists_result, expected_exists_v2
from conformance.model.sharing import Shape
from conformance.servers.folder_peak import FolderPeak, held_after_deletion, held_at_once

FAMILY = "qwen3_next_hybrid"
"""KV pages with Mamba state beside them: a hybrid prefix, whose entries must go whole."""
PAGES = 8
WRITERS = 2
BUDGETS = st.sampled_from([256 << 10, 384 << 10, 512 << 10])
"""Budgets of a few hundred KiB: room for tens of batches, so a short stream must evict."""
FLOOD = 3
"""A stream writes this many budgets' worth of fresh pages."""
LONG = 12
"""The long run writes this many budgets' worth: the store fills, fragments and refills many times."""
WRITES = 500
"""...or this many batches, where they are small: a run stays seconds long."""
ANY_BUDGET = st.integers(160 << 10, 512 << 10)
"""Budgets of any size from 160 KiB (four of the largest batches) to 512 KiB, not only round ones."""
FEW = settings(max_examples=max(2, settings().max_examples // 4))
ONE = settings(max_examples=max(1, settings().max_examples // 12))
SEGMENTED_BUDGETS = st.sampled_from([2 << 20, 3 << 20])
"""Budgets of megabytes for the recency property: a store that evicts whole files (the reference's
segments are a sixteenth of the budget) has tens of them, so the files that hold the entries read
are never the only ones left to take."""
CRASHES = 8
"""Writers killed in turn, at most: with one partly written file each, enough to fill a budget."""


def bounded(target: Target, budget: int) -> Target:
    """The target with the budget set through the key the backend declares."""
    return replace(target, extra_config={**target.extra_config, target.caps.bounded_capacity: budget})


def page_bytes(rig: Rig) -> int:
    """Payload bytes one key takes in every pool."""
    return sum(pool.page_nbytes() for pool in rig.pools.values())


def fill(rig: Rig, seed: int, round_: int, count: int = PAGES) -> dict[PoolName, list[bytes]]:
    """Render a round's pages into every pool's first ``count`` host slots; the bytes they now hold."""
    pages: dict[PoolName, list[bytes]] = {}
    for name, pool in rig.pools.items():
        pages[name] = []
        for page in range(count):
            rig.put(name, page, render_page(pool, seed, 3, salt=round_ * PAGES + page))
            pages[name].append(rig.take(name, page))
    return pages


def store(rig: Rig, keys: list[str]) -> dict[PoolName, list[bool]]:
    """Every pool's pages of ``keys`` from host slots 0..n, KV first as the controller backs up."""
    return {name: rig.set(name, keys, range(len(keys))) for name in rig.pools}


def readable(
    rig: Rig, keys: list[str], want: dict[PoolName, list[bytes]] | None = None
) -> dict[PoolName, list[bool]]:
    """Which keys each pool reads back; with ``want``, every page read must be exactly those bytes."""
    out = {}
    for name in rig.pools:
        rig.pool(name).fill(0)
        got = rig.get(name, keys, range(len(keys)))
        out[name] = got
        for page, ok in enumerate(got):
            if ok and want is not None:
                problem = byte_difference(rig.take(name, page), want[name][page])
                assert problem is None, f"{name} {keys[page]!r} read back True with other bytes: {problem}"
    return out


def flood(rig: Rig, budget: int, seed: int, tag: str) -> None:
    """Fresh keys in every pool until ``FLOOD`` budgets' worth has been written (the same bytes
    under every key: what is measured is space, and what is checked is older keys)."""
    fill(rig, seed, 1000)
    for round_ in range(-(-FLOOD * budget // (PAGES * page_bytes(rig)))):
        store(rig, [f"{tag}-{round_}-{i}" for i in range(PAGES)])


@pytest.mark.hicache_requires("bounded_capacity", "stores_files")
@FEW
@given(budget=BUDGETS, seed=payload_seeds, batches=st.lists(st.integers(1, PAGES), min_size=1, max_size=3))
def test_stored_bytes_stay_within_the_budget_under_a_stream_of_fresh_writes(
    hicache_target: Target, budget: int, seed: int, batches: list[int]
) -> None:
    """Through a long stream of fresh writes the folder never holds over the budget; the newest reads back.

    Never: after a write, and during one, where a sampler process walks the folder throughout. The
    batches go round ``batches``' sizes, as a controller's backups vary. The store evicts, it does
    not just refuse: the last batch must come back whole. After a write, a file the backend deleted
    but still holds open counts too: its blocks are not free until it is closed."""
    target = bounded(hicache_target, budget)
    geometry = load_geometry(FAMILY)
    with target.storage() as storage, Rig(target, geometry, storage, page_num=PAGES) as rig:
        sizes: list[int] = []
        while sum(sizes) * page_bytes(rig) < FLOOD * budget:
            sizes.append(batches[len(sizes) % len(batches)])
        worst, keys = 0, []
        fill(rig, seed, 0)
        with FolderPeak(storage) as watch:
            for round_, batch in enumerate(sizes):
                if round_ == len(sizes) - 1:  # the last batch in bytes of its own
                    fill(rig, seed, 1, batch)
                keys = [f"s{round_}-{i}" for i in range(batch)]
                store(rig, keys)
                unlinked = held_after_deletion(storage)
                worst = max(worst, held_at_once(storage) + unlinked)  # a background thread may still work
                assert worst <= budget, (
                    f"{worst} bytes stored, budget {budget}, after write {round_} ({unlinked} of them in "
                    "files deleted but still held open)"
                )
        assert watch.peak <= budget, (
            f"the folder held {watch.peak} bytes at one moment under a budget of {budget}, though at most "
            f"{worst} after each write: an overshoot between the steps of a write ({watch.samples} samples)"
        )
        got = readable(rig, keys, fill(rig, seed, 1, len(keys)))
        assert all(all(flags) for flags in got.values()), f"the newest batch does not read back: {got}"


@pytest.mark.hicache_requires("bounded_capacity")
@FEW
@given(
    budget=ANY_BUDGET,
    seed=payload_seeds,
    sizes=st.lists(st.integers(1, PAGES), min_size=1, max_size=4),
    overwrite_every=st.integers(2, 5),
    back=st.integers(1, 12),
    restart_every=st.integers(3, 12),
)
def test_a_full_store_keeps_accepting_writes_that_fit_once_unpinned_entries_go(
    hicache_target: Target,
    budget: int,
    seed: int,
    sizes: list[int],
    overwrite_every: int,
    back: int,
    restart_every: int,
) -> None:
    """A full store never locks up: every later batch a small share of the budget is stored and reads back.

    ``LONG`` budgets' worth of batches (``WRITES`` at most), their sizes going round ``sizes``:
    every ``overwrite_every``-th batch writes the keys of the batch ``back`` batches before it
    again, in new bytes, and a backend that persists is restarted before every ``restart_every``-th.
    No exists is asked, so nothing is pinned and whatever earlier writes left may be evicted: a batch
    of at most ``PAGES`` pages must be stored long after the store has filled and fragmented. A
    store that frees space only by steps that first need free space (a compaction's copy, a
    tombstone) refuses every write from then on: this is where it shows. The folder stays within
    the budget after every write, where the backend keeps files."""
    target = bounded(hicache_target, budget)
    geometry = load_geometry(FAMILY)
    restarts = target.caps.persistence
    with target.storage() as storage:
        rig = Rig(target, geometry, storage, page_num=PAGES)
        try:
            batch_bytes = PAGES * page_bytes(rig)
            assert 4 * batch_bytes <= budget, "a batch must be a small share of the budget"
            note(
                f"budget {budget} bytes, batches of up to {batch_bytes} payload bytes, {LONG} budgets' "
                f"worth or {WRITES} batches; restarts {'on' if restarts else 'off (no persistence claimed)'}"
            )
            batches: list[list[str]] = []
            versions: dict[str, list[dict[PoolName, bytes]]] = {}  # each key's bytes, oldest first
            written = overwrites = restarted = 0
            round_ = 0
            while written < LONG * budget and round_ < WRITES:
                if restarts and round_ and round_ % restart_every == 0:
                    rig.close()
                    rig = Rig(target, geometry, storage, page_num=PAGES)
                    restarted += 1
                again = round_ % overwrite_every == overwrite_every - 1 and len(batches) >= back
                keys = (
                    batches[-back] if again else [f"w{round_}-{i}" for i in range(sizes[round_ % len(sizes)])]
                )
                pages = fill(rig, seed, round_, len(keys))
                began = time.monotonic()
                got = store(rig, keys)
                took = time.monotonic() - began
                overwrites += again
                history = (
                    f"write {round_} ({'an overwrite of write ' + str(round_ - back) if again else 'fresh'}, "
                    f"{len(keys)} keys) after {written} payload bytes ({written / budget:.1f} budgets) "
                    f"under a budget of {budget}, {overwrites} overwrites and {restarted} restarts"
                )
                assert all(all(flags) for flags in got.values()), (
                    f"{history}: refused in {took:.2f} s, though evicting unpinned entries makes room: {got}"
                )
                if target.caps.stores_files:
                    held = held_at_once(storage)
                    assert held <= budget, f"{history}: {held} bytes stored"
                for i, key in enumerate(keys):
                    versions.setdefault(key, []).append({name: pages[name][i] for name in pages})
                _reads_back_a_version(rig, keys, versions, target.caps.overwrites, history)
                batches.append(keys)
                written += len(keys) * page_bytes(rig)
                round_ += 1
        finally:
            rig.close()


def _reads_back_a_version(
    rig: Rig,
    keys: list[str],
    versions: dict[str, list[dict[PoolName, bytes]]],
    overwrites: bool,
    history: str,
) -> None:
    """Every key of the batch just stored reads back in every pool: its newest bytes, or, where a
    second set of a stored key writes nothing (first write wins), any bytes it was ever set to."""
    for name in rig.pools:
        rig.pool(name).fill(0)
        got = rig.get(name, keys, range(len(keys)))
        assert all(got), f"{history}: stored, then {name} read back {got}"
        for page, key in enumerate(keys):
            held = rig.take(name, page)
            wanted = versions[key] if not overwrites else versions[key][-1:]
            if not any(held == v[name] for v in wanted):
                problem = byte_difference(held, wanted[-1][name])
                raise AssertionError(f"{history}: {name} {key!r} read back other bytes: {problem}")


@pytest.mark.hicache_requires("bounded_capacity", "stores_files", "persistence", "multiprocess")
@ONE
@given(budget=BUDGETS, seed=payload_seeds)
def test_two_processes_writing_at_once_stay_within_one_budget(
    hicache_target: Target, budget: int, seed: int
) -> None:
    """Two processes of one deployment streaming fresh writes into one folder share one budget."""
    target = hicache_target
    geometry = load_geometry(FAMILY)
    with target.storage() as storage, tempfile.TemporaryDirectory(prefix="hicache-barrier-") as barrier:
        with Rig(bounded(target, budget), geometry, storage, page_num=PAGES) as probe:
            rounds = -(-5 * budget // (4 * PAGES * page_bytes(probe)))  # 1.25 budgets each
        jobs = [
            Job(
                target.ref,
                target.mode,
                str(storage),
                FAMILY,
                [f"p{w}-{i}" for i in range(PAGES)],
                seed,
                rounds=rounds,
                fresh_keys=True,
                extra={target.caps.bounded_capacity: budget},
                barrier=barrier,  # outside the storage folder: never counted as stored bytes
                parties=WRITERS,
            )
            for w in range(WRITERS)
        ]
        with contextlib.ExitStack() as stack:
            watch = stack.enter_context(FolderPeak(storage))
            # stderr to files, not pipes: nobody reads a pipe while the writers run, and a full one blocks
            errors = [stack.enter_context(tempfile.TemporaryFile()) for _ in jobs]
            procs = [
                stack.enter_context(subprocess.Popen(j.argv(), stdout=subprocess.DEVNULL, stderr=err))
                for j, err in zip(jobs, errors, strict=True)
            ]
            for proc in procs:  # a writer still running when anything here raises is stopped, then reaped
                stack.callback(proc.kill)
            for proc, err in zip(procs, errors, strict=True):
                proc.wait()
                err.seek(0)
                assert proc.returncode == 0, f"a writer failed: {err.read().decode()[-2000:]}"
        assert watch.peak <= budget, f"two processes stored {watch.peak} bytes under one budget of {budget}"


def _killed_writer(job: Job, rounds: int) -> int:
    """Run ``job`` in a process of its own and SIGKILL it once it has stored ``rounds`` rounds,
    its next batch already on its way; the rounds it reported stored."""
    done = 0
    with subprocess.Popen(job.argv(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        try:
            assert proc.stdout is not None
            for report in reports(proc.stdout):
                done += "round" in report
                if done >= rounds:
                    break
        finally:
            proc.kill()
    return done


@pytest.mark.hicache_requires("bounded_capacity", "stores_files", "persistence", "multiprocess")
@ONE
@given(budget=BUDGETS, seed=payload_seeds, crashes=st.integers(1, CRASHES), rounds=st.integers(1, 3))
@example(budget=256 << 10, seed=0, crashes=CRASHES, rounds=2)
def test_what_killed_writers_left_is_evicted_like_any_other_entry(
    hicache_target: Target, budget: int, seed: int, crashes: int, rounds: int
) -> None:
    """What writers killed mid-stream left behind never keeps a later instance from storing.

    ``crashes`` writers in turn, each SIGKILLed after ``rounds`` batches with its next one on its
    way, as a rank in a crash loop. If what a killed writer was writing stays "in use" for good,
    every crash takes a share of the budget, and after a few nothing fits. The next instance then
    streams ``FLOOD`` budgets of fresh writes: every batch is stored, the folder stays within the
    budget, and the newest batch reads back."""
    target = bounded(hicache_target, budget)
    geometry = load_geometry(FAMILY)
    with target.storage() as storage:
        with Rig(target, geometry, storage, page_num=PAGES) as probe:
            per_round = PAGES * page_bytes(probe)
        for crash in range(crashes):
            job = Job(
                target.ref,
                target.mode,
                str(storage),
                FAMILY,
                [f"killed{crash}-{i}" for i in range(PAGES)],
                seed,
                rounds=rounds + 4,  # more than it lives to write
                fresh_keys=True,
                extra={target.caps.bounded_capacity: budget},
            )
            done = _killed_writer(job, rounds)
            assert done >= rounds, f"writer {crash} stopped after {done} of {rounds} rounds"
        note(f"{crashes} writers killed after {rounds} rounds of {per_round} payload bytes each")
        with Rig(target, geometry, storage, page_num=PAGES) as rig:
            fill(rig, seed, 0)
            after = -(-FLOOD * budget // per_round)
            keys: list[str] = []
            for round_ in range(after):
                keys = [f"after-{round_}-{i}" for i in range(PAGES)]
                got = store(rig, keys)
                history = f"write {round_} of {after}, after {crashes} writers were killed"
                assert all(all(flags) for flags in got.values()), f"{history}: refused {got}"
                held = held_at_once(storage)
                assert held <= budget, f"{history}: {held} bytes stored under a budget of {budget}"
            got = readable(rig, keys, fill(rig, seed, 0))
            assert all(all(flags) for flags in got.values()), f"the newest batch does not read back: {got}"


@pytest.mark.hicache_requires("bounded_capacity", "recency_eviction")
@FEW
@given(budget=SEGMENTED_BUDGETS, seed=payload_seeds)
def test_entries_read_between_every_two_writes_are_never_evicted(
    hicache_target: Target, budget: int, seed: int
) -> None:
    """Under a budget, entries read after every write stay, however much else is written and evicted.

    The entries are the store's oldest writes and its most recently used ones throughout ``FLOOD``
    budgets of fresh writes that are never read: the victims must be those. A store that evicts
    by age alone loses what its users read most (a shared system prompt's pages)."""
    target = bounded(hicache_target, budget)
    geometry = load_geometry(FAMILY)
    with target.storage() as storage, Rig(target, geometry, storage, page_num=PAGES) as rig:
        per_round = PAGES * page_bytes(rig)
        kept = [f"read-{i}" for i in range(PAGES)]
        want = fill(rig, seed, 0)
        assert all(all(flags) for flags in store(rig, kept).values())
        rounds = -(-FLOOD * budget // per_round)
        for round_ in range(rounds):
            fill(rig, seed, 1)
            store(rig, [f"unread-{round_}-{i}" for i in range(PAGES)])
            got = readable(rig, kept, want)
            assert all(all(flags) for flags in got.values()), (
                f"after write {round_} of {rounds} ({(round_ + 1) * per_round} payload bytes under a budget "
                f"of {budget}), the entries read after every write were evicted: {got}"
            )


LIVE_SHARE = 4
"""The overwrite property keeps its live entries within this fraction of the budget: at twice their
bytes and a few files beside, a store that compacts stays well under its low watermark."""


@pytest.mark.hicache_requires("bounded_capacity", "overwrites")
@FEW
@given(budget=SEGMENTED_BUDGETS, seed=payload_seeds, hot=st.integers(2 * PAGES, 4 * PAGES))
def test_overwrites_never_cost_an_entry_while_the_live_ones_fill_a_quarter_of_the_budget(
    hicache_target: Target, budget: int, seed: int, hot: int
) -> None:
    """Entries never overwritten stay while others are rewritten over and over, live a quarter of the budget.

    Every batch rewrites the same ``hot`` keys in new bytes and adds one key never written again,
    until the live entries fill a quarter of the budget; meanwhile several budgets' worth is
    written. An overwritten version is garbage: a store that keeps the files of old versions
    holding a few live records (a log that never compacts a mostly dead file) fills with
    garbage, evicts live entries to make room, and loses what was never replaced."""
    target = bounded(hicache_target, budget)
    geometry = load_geometry(FAMILY)
    with target.storage() as storage, Rig(target, geometry, storage, page_num=hot + 1) as rig:
        size = page_bytes(rig)
        rounds = budget // LIVE_SHARE // size - hot
        note(f"{size} bytes a key, {rounds} batches of {hot + 1} keys: {rounds * (hot + 1) * size} bytes")
        want: dict[str, dict[PoolName, bytes]] = {}
        for round_ in range(rounds):
            keys = [f"hot-{i}" for i in range(hot)] + [f"kept-{round_}"]
            for name, pool in rig.pools.items():
                for slot, key in enumerate(keys):
                    rig.put(name, slot, render_page(pool, seed, 3, salt=round_ * (hot + 1) + slot))
                    want.setdefault(key, {})[name] = rig.take(name, slot)
            stored = store(rig, keys)
            assert all(all(flags) for flags in stored.values()), f"batch {round_} was refused: {stored}"
        keys = sorted(want)
        for start in range(0, len(keys), hot + 1):
            chunk = keys[start : start + hot + 1]
            got = readable(rig, chunk, {name: [want[k][name] for k in chunk] for name in rig.pools})
            lost = sorted({k for name, flags in got.items() for k, ok in zip(chunk, flags) if not ok})
            assert not lost, (
                f"{len(lost)} live entries lost ({lost[:4]}...) with {len(keys) * size} live payload bytes "
                f"under a budget of {budget}, after {rounds * (hot + 1) * size} bytes written"
            )


def _presence(keys: list[str], have: dict[PoolName, list[bool]]) -> Callable[[str, str], bool]:
    """The oracle's view: a pool holds a key exactly when the key read back from it."""
    return lambda pool, key: have[PoolName(pool)][keys.index(key)]


@pytest.mark.hicache_requires("bounded_capacity")
@FEW
@given(budget=BUDGETS, seed=payload_seeds, chains=st.integers(2, 6))
def test_eviction_takes_whole_entries_and_leaves_exists_and_get_agreeing(
    hicache_target: Target, budget: int, seed: int, chains: int
) -> None:
    """Eviction takes an entry from every pool and rank at once, and exists reports what get restores.

    Two TP ranks write chains past the budget. Then every key is readable in every pool on both
    ranks or in none, and each rank's exists (v1 and v2, every hit policy) is exactly what its
    gets can restore: a hole only shortens the hit, an evicted side-pool page leaves the set."""
    target = bounded(hicache_target, budget)
    geometry = load_geometry(FAMILY)
    with target.storage() as storage:
        ranks = [
            Rig(target, geometry, storage, page_num=PAGES, shape=Shape(tp_rank=r, tp_size=2)) for r in (0, 1)
        ]
        try:
            rounds = -(-FLOOD * budget // (2 * PAGES * page_bytes(ranks[0])))
            written: list[list[str]] = []
            for rig in ranks:
                fill(rig, seed, 0)
            for round_ in range(max(rounds, chains)):
                keys = [f"c{round_}-{i}" for i in range(PAGES)]
                for rig in ranks:
                    store(rig, keys)
                written.append(keys)
            seen = {
                r: {c: readable(rig, keys) for c, keys in enumerate(written)} for r, rig in enumerate(ranks)
            }
            for c, keys in enumerate(written):
                for i, key in enumerate(keys):
                    where = {(r, str(n)) for r in seen for n, flags in seen[r][c].items() if flags[i]}
                    every = {(r, str(n)) for r in seen for n in seen[r][c]}
                    assert where in (set(), every), (
                        f"{key!r} partly evicted: readable only at {sorted(where)}"
                    )
            for r, rig in enumerate(ranks):
                for c, keys in enumerate(written):
                    have = seen[r][c]
                    transfers = [spec.exists_transfer(keys) for spec in target.queryable_pools(geometry)]
                    expected = expected_exists_v2(keys, transfers, _presence(keys, have))
                    if target.caps.v1_kv:
                        run = rig.backend.batch_exists(keys)
                        assert run == expected.kv_hit_pages, (
                            f"rank {r}: batch_exists says {run} where gets restore {expected.kv_hit_pages}"
                        )
                    if transfers or target.caps.kv_through_v2:
                        problems = check_exists_result(rig.backend.batch_exists_v2(keys, transfers), expected)
                        assert not problems, f"rank {r}, chain {c}: " + "; ".join(problems)
        finally:
            for rig in ranks:
                rig.close()


@pytest.mark.hicache_requires("bounded_capacity")
@FEW
@given(budget=BUDGETS, seed=payload_seeds)
def test_exists_then_eviction_then_get_is_false_or_the_stored_bytes(
    hicache_target: Target, budget: int, seed: int
) -> None:
    """A get after exists and a flood that evicts returns False or the exact bytes, nothing else.

    Never an exception, another entry's bytes or an old version. The entries come from a writer
    that has finished, and another instance floods (as another rank or process evicts in a
    deployment), so eviction can reach what the reader has located."""
    target = bounded(hicache_target, budget)
    geometry = load_geometry(FAMILY)
    keys = [f"e-{i}" for i in range(PAGES)]
    with target.storage() as storage:
        with Rig(target, geometry, storage, page_num=PAGES) as writer:
            first = fill(writer, seed, 0)
            store(writer, keys)
            second = fill(writer, seed, 1)
            store(writer, keys)
        want = second if target.caps.overwrites else first  # the one version that may read back
        with Rig(target, geometry, storage, page_num=PAGES) as reader:
            if target.caps.v1_kv:
                assert reader.backend.batch_exists(keys) == PAGES
            else:
                assert reader.backend.batch_exists_v2(keys, []).kv_hit_pages == PAGES
            with Rig(target, geometry, storage, page_num=PAGES) as other:
                flood(other, budget, seed, "flood")
            readable(reader, keys, want)


@pytest.mark.hicache_requires("bounded_capacity", "eviction_pin_seconds")
@FEW
@given(budget=BUDGETS, seed=payload_seeds, hit=st.integers(1, PAGES))
def test_an_entry_exists_reported_stays_readable_for_the_pin_length(
    hicache_target: Target, budget: int, seed: int, hit: int
) -> None:
    """Entries exists has just reported survive another instance's flood inside the pin length."""
    target = bounded(hicache_target, budget)
    geometry = load_geometry(FAMILY)
    keys = [f"pin-{i}" for i in range(PAGES)]
    with target.storage() as storage:
        with Rig(target, geometry, storage, page_num=PAGES) as writer:  # stored, and done with
            want = fill(writer, seed, 0)
            store(writer, keys)
        rig = Rig(target, geometry, storage, page_num=PAGES)
        started = time.monotonic()
        asked = rig.backend.batch_exists(keys[:hit]) if target.caps.v1_kv else None
        if asked is None:
            asked = rig.backend.batch_exists_v2(keys[:hit], []).kv_hit_pages
        assert asked == hit
        with Rig(target, geometry, storage, page_num=PAGES) as other:
            flood(other, budget, seed, "other")
        if time.monotonic() - started >= target.caps.eviction_pin_seconds:
            pytest.skip("the flood outlasted the pin; nothing to conclude")  # pragma: no cover
        got = readable(rig, keys[:hit], want)
        rig.close()
        assert all(all(flags) for flags in got.values()), f"pinned entries evicted: {got}"


LAST_MOMENT = 0.999
"""How far into its lease a pin is checked last: where a lease that lapses early has lapsed."""
PAST_THE_LEASE = 1.01
"""How far past a lease's start writes must be taken again: a hundredth past its end."""


def _pin(rig: Rig, keys: list[str]) -> int:
    """Ask exists about ``keys`` (which pins the leading run it reports); the run."""
    if rig.target.caps.v1_kv:
        return int(rig.backend.batch_exists(keys))
    return int(rig.backend.batch_exists_v2(keys, []).kv_hit_pages)


@pytest.mark.hicache_requires("bounded_capacity", "eviction_pin_seconds")
@FEW
@given(budget=BUDGETS, seed=payload_seeds, hit=st.integers(1, PAGES), share=st.floats(0.0, LAST_MOMENT))
def test_an_entry_exists_reported_stays_readable_to_the_last_moment_of_its_lease(
    hicache_target: Target, budget: int, seed: int, hit: int, share: float
) -> None:
    """An entry exists reported survives a flood at any moment of its lease, up to its last.

    Another instance floods the store ``share`` of the way into the pin's length and again at
    ``LAST_MOMENT`` of it: both times the pinned entries read back exactly. Time is the backend's
    declared lease clock, run forward (a pin that lapses at half its stated length shows at once),
    or real where it declares none."""
    target = bounded(hicache_target, budget)
    lease = target.caps.eviction_pin_seconds
    geometry = load_geometry(FAMILY)
    keys = [f"lease-{i}" for i in range(hit)]
    with lease_time(target) as clock, target.storage() as storage:
        with Rig(target, geometry, storage, page_num=PAGES) as writer:  # stored, and done with
            want = fill(writer, seed, 0)
            store(writer, keys)
        with Rig(target, geometry, storage, page_num=PAGES) as rig:
            clock.mark()
            assert _pin(rig, keys) == hit, "exists does not find what was just stored"
            for moment in (share, LAST_MOMENT):
                clock.move_to(moment * lease)
                with Rig(target, geometry, storage, page_num=PAGES) as other:
                    flood(other, budget, seed, f"flood-{moment}")
                if not clock.within(lease):
                    pytest.skip("the flood outlasted the pin; nothing to conclude")  # pragma: no cover
                got = readable(rig, keys, want)
                assert all(all(flags) for flags in got.values()), (
                    f"pinned entries evicted by a flood {moment * lease:.3f} s into a {lease:g} s pin: {got}"
                )


@contextlib.contextmanager
def leased_rig(target: Target, budget: int) -> Iterator[tuple[LeaseTime, Rig]]:
    """A rig on a fresh store under ``budget``, with the lease clock the pin properties drive."""
    target = bounded(target, budget)
    with (
        lease_time(target) as clock,
        target.storage() as storage,
        Rig(target, load_geometry(FAMILY), storage, page_num=PAGES) as rig,
    ):
        yield clock, rig


def pins_held(
    rig: Rig, clock: LeaseTime, since: float, pinned: list[tuple[list[str], dict[PoolName, list[bytes]]]]
) -> None:
    """Every pinned key reads back exactly, where the pins taken from ``since`` on hold still."""
    if not clock.within(rig.target.caps.eviction_pin_seconds, since=since):
        pytest.skip("the writes outlasted the pin; nothing to conclude")  # pragma: no cover
    for keys, want in pinned:
        got = readable(rig, keys, want)
        assert all(all(flags) for flags in got.values()), f"pinned entries from {keys[0]!r} on evicted: {got}"


@pytest.mark.hicache_requires("bounded_capacity", "eviction_pin_seconds")
@FEW
@given(budget=BUDGETS, seed=payload_seeds, batch=st.integers(2, PAGES))
def test_a_store_full_of_pinned_entries_takes_writes_again_once_the_pins_lapse(
    hicache_target: Target, budget: int, seed: int, batch: int
) -> None:
    """Writes a store full of pinned entries refuses are taken again once the pins lapse.

    Every batch written is pinned at once by exists, so the budget fills with entries that may not
    go: a write is refused, and every pinned entry still reads back. Once the pins' length has
    passed (the backend's lease clock run forward, or real time where it declares none), the
    refused batch is stored and reads back exactly: the entries pinned before are evictable again."""
    lease = hicache_target.caps.eviction_pin_seconds
    with leased_rig(hicache_target, budget) as (clock, rig):
        first = clock.mark()
        pinned: list[tuple[list[str], dict[PoolName, list[bytes]]]] = []
        refused: list[str] = []
        round_ = written = 0
        while written < 2 * budget:
            keys = [f"full-{round_}-{i}" for i in range(batch)]
            pages = fill(rig, seed, round_, batch)
            if not all(all(flags) for flags in store(rig, keys).values()):
                refused = keys
                break
            clock.mark()  # the last pin is the one to wait out
            assert _pin(rig, keys) == batch, f"exists does not find batch {round_}, just stored"
            pinned.append((keys, pages))
            written += batch * page_bytes(rig)
            round_ += 1
        pins_held(rig, clock, first, pinned)
        assert refused, f"{written} bytes stored under a budget of {budget}, every entry pinned, none refused"
        clock.move_to(PAST_THE_LEASE * lease)
        pages = fill(rig, seed, round_, batch)
        got = store(rig, refused)
        assert all(all(flags) for flags in got.values()), (
            f"{PAST_THE_LEASE * lease:.2f} s after pinning for {lease:g} s, the batch refused while "
            f"every entry was pinned is refused still: {got}"
        )
        got = readable(rig, refused, pages)
        assert all(all(flags) for flags in got.values()), f"stored once the pins lapsed, then read back {got}"


@pytest.mark.hicache_requires("bounded_capacity", "eviction_pin_seconds")
@FEW
@given(budget=BUDGETS, seed=payload_seeds)
def test_a_pinned_entry_holds_only_its_own_bytes_against_the_budget(
    hicache_target: Target, budget: int, seed: int
) -> None:
    """Entries pinned here and there among the stored ones keep only their own bytes from the budget.

    While the store fills, one entry of every batch is pinned as it is written (exists on it
    alone); then fresh batches worth two more budgets are written inside the pin length. The
    pinned entries are an eighth of a budget, so each fresh batch fits once unpinned entries go:
    every one is stored, and every pinned entry reads back exactly. A store that keeps a whole file
    for the one pinned entry in it refuses writes once each of its files holds one."""
    with leased_rig(hicache_target, budget) as (clock, rig):
        first = clock.mark()
        pinned: list[tuple[list[str], dict[PoolName, list[bytes]]]] = []
        round_ = written = 0
        while written < 3 * budget:
            keys = [f"spread-{round_}-{i}" for i in range(PAGES)]
            pages = fill(rig, seed, round_)
            got = store(rig, keys)
            assert all(all(flags) for flags in got.values()), (
                f"batch {round_} refused with {len(pinned)} entries pinned "
                f"({len(pinned) * page_bytes(rig)} bytes of a {budget}-byte budget): {got}"
            )
            if written < budget:
                assert _pin(rig, keys[:1]) == 1, f"exists does not find {keys[0]!r}, just stored"
                pinned.append((keys[:1], {name: held[:1] for name, held in pages.items()}))
            written += PAGES * page_bytes(rig)
            round_ += 1
        pins_held(rig, clock, first, pinned)


@pytest.mark.hicache_requires("bounded_capacity", "concurrent")
@FEW
@given(budget=BUDGETS, seed=payload_seeds)
def test_gets_racing_eviction_are_whole_or_false(hicache_target: Target, budget: int, seed: int) -> None:
    """While one instance floods the store, another's gets of older keys are exact bytes or False.

    The keys are left by a writer that has finished (a writer still appending holds its records
    where eviction cannot free them yet), so the flood evicts the very entries being read."""
    target = bounded(hicache_target, budget)
    geometry = load_geometry(FAMILY)
    keys = [f"r-{i}" for i in range(PAGES)]
    with target.storage() as storage:
        with Rig(target, geometry, storage, page_num=PAGES) as first:
            want = fill(first, seed, 0)
            store(first, keys)
        with (
            Rig(target, geometry, storage, page_num=PAGES) as reader,
            Rig(target, geometry, storage, page_num=PAGES) as writer,
        ):
            _read_while_flooding(reader, writer, keys, want, budget, seed)


def _read_while_flooding(
    reader: Rig, writer: Rig, keys: list[str], want: dict[PoolName, list[bytes]], budget: int, seed: int
) -> None:
    """``reader`` reads ``keys`` over and over while ``writer`` floods on a thread, and once after."""
    failures: list[BaseException] = []

    def write() -> None:
        try:
            flood(writer, budget, seed, "race")
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    try:
        while thread.is_alive():
            readable(reader, keys, want)
    finally:
        thread.join()
    assert not failures, f"the flooding writer failed: {failures[0]!r}"
    readable(reader, keys, want)


TENANTS = {
    "distinct": ("org/model-a", "org/model-b"),
    "slash-or-dash": ("org/m", "org-m"),
    "prefix": ("llama", "llama-70b"),
    "suffix": ("m", "org_m"),
}
"""Pairs of model names (``mine``, ``theirs``) that one folder must keep apart, each a parameter
set, so every run meets every pair: names that differ only in a separator, and names one of which
ends or begins with the other (a deployment that finds its files by a name's suffix or prefix
takes the other's)."""
TENANCY = pytest.mark.parametrize("models", list(TENANTS.values()), ids=list(TENANTS))


@pytest.mark.hicache_requires("shares_folder")
@TENANCY
@ONE
@given(seed=payload_seeds)
def test_clear_in_one_deployment_never_removes_another_deployments_entries(
    hicache_target: Target, models: tuple[str, str], seed: int
) -> None:
    """Two models share a folder and the same keys; ``clear()`` in one leaves the other whole."""
    geometry = load_geometry(FAMILY)
    keys = [f"t-{i}" for i in range(PAGES)]
    with hicache_target.storage() as storage:
        theirs = Rig(hicache_target, geometry, storage, page_num=PAGES, model_name=models[1])
        mine = Rig(hicache_target, geometry, storage, page_num=PAGES, model_name=models[0])
        try:
            fill(mine, seed, 0)
            store(mine, keys)
            want = fill(theirs, seed, 1)
            store(theirs, keys)
            mine.backend.clear()
            got = readable(theirs, keys, want)
            assert all(all(flags) for flags in got.values()), (
                f"clear() in {models[0]!r} removed {models[1]!r}'s entries: {got}"
            )
        finally:
            mine.close()
            theirs.close()


@pytest.mark.hicache_requires("shares_folder", "bounded_capacity")
@TENANCY
@ONE
@given(budget=BUDGETS, seed=payload_seeds)
def test_eviction_in_one_deployment_never_removes_another_deployments_entries(
    hicache_target: Target, models: tuple[str, str], budget: int, seed: int
) -> None:
    """One model floods its budget; another model's entries in the same folder all stay.

    The other has stored and stopped (its files finished, as eviction can take them), and the
    flooding deployment starts after it, so whatever it finds on disk at start (an index, a scan
    of the folder) must already tell the other's entries from its own."""
    target = bounded(hicache_target, budget)
    geometry = load_geometry(FAMILY)
    keys = [f"t-{i}" for i in range(PAGES)]
    with target.storage() as storage:
        with Rig(target, geometry, storage, page_num=PAGES, model_name=models[1]) as theirs:
            want = fill(theirs, seed, 1)
            store(theirs, keys)
        with Rig(target, geometry, storage, page_num=PAGES, model_name=models[0]) as mine:
            flood(mine, budget, seed, "mine")
        with Rig(target, geometry, storage, page_num=PAGES, model_name=models[1]) as theirs:
            got = readable(theirs, keys, want)
        assert all(all(flags) for flags in got.values()), (
            f"eviction in {models[0]!r} removed {models[1]!r}'s entries: {got}"
        )


SHARE = 4
"""A deployment's entries totalling a ``SHARE``-th of its budget are well under any watermark."""
LARGER = 1024
"""The other deployment's budget is this many times larger: whatever it keeps beside its entries
(indexes, pin tables sized by its budget) may be larger than the first one's whole budget, and
none of it is the first one's to pay for."""


@pytest.mark.hicache_requires("shares_folder", "bounded_capacity")
@ONE
@given(budget=BUDGETS, seed=payload_seeds)
def test_a_deployment_keeps_a_share_of_its_budget_whatever_another_deployment_keeps_in_the_folder(
    hicache_target: Target, budget: int, seed: int
) -> None:
    """Entries totalling a quarter of the budget all stay beside another deployment of a far larger one.

    A budget is one deployment's: a store that charges it for another's files (their entries, an
    index of theirs, a table sized by their budget) evicts its own entries long before they fill
    it. The other model stores, is asked exists (as a serving deployment is: a lease is taken), and
    stays open while this one writes; both must read back whole."""
    geometry = load_geometry(FAMILY)
    models = TENANTS["distinct"]
    with hicache_target.storage() as storage:
        theirs = Rig(
            bounded(hicache_target, LARGER * budget), geometry, storage, page_num=PAGES, model_name=models[1]
        )
        mine = Rig(bounded(hicache_target, budget), geometry, storage, page_num=PAGES, model_name=models[0])
        try:
            their_keys = [f"theirs-{i}" for i in range(PAGES)]
            their_pages = fill(theirs, seed, 1)
            store(theirs, their_keys)
            _pin(theirs, their_keys)
            batches = max(1, budget // SHARE // (PAGES * page_bytes(mine)))
            fill(mine, seed, 0)
            for round_ in range(batches):
                store(mine, [f"mine-{round_}-{i}" for i in range(PAGES)])
            note(f"{batches} batches of {PAGES * page_bytes(mine)} payload bytes under a budget of {budget}")
            for round_ in range(batches):
                keys = [f"mine-{round_}-{i}" for i in range(PAGES)]
                got = readable(mine, keys, fill(mine, seed, 0))
                assert all(all(flags) for flags in got.values()), (
                    f"batch {round_} of {batches} ({batches * PAGES * page_bytes(mine)} payload bytes, a "
                    f"{SHARE}th of the budget of {budget}) was evicted beside {models[1]!r}'s store of "
                    f"budget {LARGER * budget}: {got}"
                )
            got = readable(theirs, their_keys, their_pages)
            assert all(all(flags) for flags in got.values()), (
                f"{models[1]!r}'s entries do not read back: {got}"
            )
        finally:
            mine.close()
            theirs.close()


SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
IEC = {"Ki": 2**10}
"""Every drawn budget is a whole number of KiB (none of MiB)."""
WHOLE_MIB = ("1Mi", 2**20)
"""The one IEC budget above KiB the suite can fill: a whole MiB."""
UNFILLABLE: tuple[str | int, ...] = ("1G", "1Gi", "1T", "1Ti", 0, "0")
"""Budgets no test fills, and the spellings of no budget at all: a unit read too small, or a zero
read as a size, still shows, as a store that refuses or evicts."""


def spelled(budget: int, unit: str) -> str:
    """``budget`` bytes as HiCacheFile spells a size: an SI unit with the decimals it needs, or a
    whole number of an IEC unit."""
    if unit in IEC:
        return f"{budget // IEC[unit]}{unit}"
    return f"{(Decimal(budget) / SI[unit]).normalize():f}{unit}"


@pytest.mark.hicache_requires("bounded_capacity", "budget_spellings", "stores_files")
@FEW
@given(budget=BUDGETS, seed=payload_seeds)
def test_a_budget_spelled_with_a_unit_bounds_the_same_bytes(
    hicache_target: Target, budget: int, seed: int
) -> None:
    """A budget written with a unit (``262.144k``, ``0.262144M``, ``256Ki``, ``1Mi``) bounds its bytes.

    Users write ``max_size`` as HiCacheFile reads it. A unit read as another (``M`` as MiB), a
    decimal dropped, or a spelling that quietly means no budget lets the store past what was set;
    one read too small refuses what fits. Every unit, each in a store of its own: the folder must
    stay within the bytes, and the newest batch of a stream three budgets long must read back.
    Budgets of a G or a T are never filled, and 0 means none: a stream of one drawn budget is stored
    whole under each."""
    geometry = load_geometry(FAMILY)
    key = hicache_target.caps.bounded_capacity
    spellings: list[tuple[str | int, int]] = [*((spelled(budget, u), budget) for u in [*SI, *IEC]), WHOLE_MIB]
    for text, limit in [*spellings, *((text, 0) for text in UNFILLABLE)]:
        target = replace(hicache_target, extra_config={**hicache_target.extra_config, key: text})
        with target.storage() as storage, Rig(target, geometry, storage, page_num=PAGES) as rig:
            fill(rig, seed, 0)
            written = FLOOD * limit if limit else budget
            rounds = -(-written // (PAGES * page_bytes(rig)))
            for round_ in range(rounds):
                stored = store(rig, [f"u{round_}-{i}" for i in range(PAGES)])
                held = held_at_once(storage)
                assert not limit or held <= limit, f"{held} bytes stored under {limit} spelled {text!r}"
            newest = range(rounds - 1, rounds) if limit else range(rounds)
            for round_ in newest:
                got = readable(rig, [f"u{round_}-{i}" for i in range(PAGES)], fill(rig, seed, 0))
                assert all(all(flags) for flags in got.values()), (
                    f"under a budget spelled {text!r}, batch {round_} of {rounds} (stored: {stored}) "
                    f"does not read back: {got}"
                )
