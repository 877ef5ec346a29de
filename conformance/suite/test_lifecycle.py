"""What a store lives through: restarts, a new deployment format, and writers in other processes.

A server restarts many times over one store, sometimes with another KV dtype, page size or
layout for the same model, and in a multi-process deployment other ranks write while it runs.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conformance.harness.geometry import ModelGeometry, load_geometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import payload_seeds, render_page
from conformance.harness.worker import Job, payload, run_to_end, store_round
from conformance.model.interface import PoolName

FAMILY = "adversarial"
PAGES = 3
FEW = settings(max_examples=max(2, settings().max_examples // 2))
ONE = settings(max_examples=max(1, settings().max_examples // 12))
"""Each example starts a Python process (seconds): one by default, more in the thorough profile."""
MANY, MANY_CHUNK = 2048, 128
"""Entries another process writes in the thousands property, in batches of SGLang's controller size."""


def _version(rig: Rig, name: PoolName, seed: int, instance: int, page: int) -> bytes:
    return render_page(rig.pool(name), seed, 3, salt=instance * 100 + page)


@pytest.mark.hicache_requires("persistence")
@FEW
@given(instances=st.integers(2, 4), seed=payload_seeds)
@example(instances=3, seed=0)
def test_the_newest_version_wins_across_any_number_of_restarts(
    hicache_target: Target, instances: int, seed: int
) -> None:
    """Instances in sequence on one store each read the newest version, overwrite it, and add keys."""
    target = hicache_target
    geometry = load_geometry(FAMILY)
    shared = [f"life-{i}" for i in range(PAGES)]
    with target.storage() as storage:
        for n in range(instances):
            with Rig(target, geometry, storage, page_num=2 * PAGES) as rig:
                for name in rig.pools:
                    if n:  # what every instance before stored: the newest version, or the first
                        last = n - 1 if target.caps.overwrites else 0
                        assert rig.get(name, shared, range(PAGES)) == [True] * PAGES, (
                            f"{name} lost after restart {n}"
                        )
                        for page in range(PAGES):
                            rig.expect(
                                name,
                                page,
                                _version(rig, name, seed, last, page),
                                f"restart {n}, instance {last}'s version",
                            )
                        earlier = [f"own-{m}-{i}" for m in range(n) for i in range(PAGES)]
                        assert rig.get(name, earlier[-PAGES:], range(PAGES)) == [True] * PAGES, (
                            f"{name}: keys instance {n - 1} added are gone at restart {n}"
                        )
                    own = [f"own-{n}-{i}" for i in range(PAGES)]
                    for page in range(2 * PAGES):
                        rig.put(name, page, _version(rig, name, seed, n, page % PAGES))
                    assert rig.set(name, shared + own, range(2 * PAGES)) == [True] * (2 * PAGES)


def _reformatted(geometry: ModelGeometry, change: str) -> tuple[ModelGeometry, str]:
    """The same model with its KV pool in another format, and the KV layout to open it with."""
    kv = geometry.kv
    params = dict(kv.params)
    layout = "page_first"
    if change == "kv_dtype":  # bf16 -> fp16: the same page bytes, other values
        params["dtype"] = "float16" if params["dtype"] != "float16" else "bfloat16"
    elif change == "page_size":  # twice the tokens of half the width: the same page bytes
        params["page_size"] = params["page_size"] * 2
        params["head_dim"] = params["head_dim"] // 2
    else:
        layout = "layer_first"
    pools = tuple(replace(p, params=params) if p is kv else p for p in geometry.pools)
    return replace(geometry, pools=pools), layout


@pytest.mark.hicache_requires("persistence", layout="layer_first")
@pytest.mark.parametrize("change", ["kv_dtype", "page_size", "layout"])
@FEW
@given(seed=payload_seeds)
def test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one(
    hicache_target: Target, change: str, seed: int
) -> None:
    """Restarted with another KV dtype, page size or layout, old KV pages never read back reinterpreted."""
    target = hicache_target
    geometry = load_geometry(FAMILY)
    keys = [f"fmt-{i}" for i in range(PAGES)]
    with target.storage() as storage:
        with Rig(target, geometry, storage, page_num=PAGES) as first:
            flat = []
            for page in range(PAGES):
                first.put(PoolName.KV, page, render_page(first.pool(PoolName.KV), seed, 3, salt=page))
                flat.append(first.take(PoolName.KV, page))
            assert first.set(PoolName.KV, keys, range(PAGES)) == [True] * PAGES
        other, layout = _reformatted(geometry, change)
        with Rig(target, other, storage, page_num=PAGES, layout=layout) as second:
            second.pool(PoolName.KV).fill(0)
            got = second.get(PoolName.KV, keys, range(PAGES))
            for page, ok in enumerate(got):
                if not ok:
                    continue
                assert change == "layout", (
                    f"after a restart with another {change}, {keys[page]!r} read back True: an entry "
                    f"stored as {geometry.kv.params} served as {other.kv.params}"
                )
                second.expect(PoolName.KV, page, flat[page], f"{keys[page]!r} served in another layout")
            if change != "layout":
                run = second.backend.batch_exists(keys) if target.caps.v1_kv else None
                assert run in (0, None), f"after a restart with another {change}, batch_exists says {run}"


@pytest.mark.hicache_requires("persistence", "multiprocess")
@ONE
@given(seed=payload_seeds)
@example(seed=0)  # a failure here then stops at once, not after shrinking through processes
def test_entries_another_process_writes_are_seen_without_a_restart(hicache_target: Target, seed: int) -> None:
    """A running instance sees, byte for byte, what another process stores after it started."""
    target = hicache_target
    geometry = load_geometry(FAMILY)
    keys = [f"peer-{i}" for i in range(PAGES)]
    with target.storage() as storage, Rig(target, geometry, storage, page_num=PAGES) as rig:
        for name in rig.pools:  # look first, so any index or listing cache is warm and empty
            assert rig.get(name, keys, range(PAGES)) == [False] * PAGES
        job = Job(target.ref, target.mode, str(storage), FAMILY, keys, seed=seed)
        run_to_end(job, timeout=300)
        _sees_what_another_process_stored(rig, keys, seed, 0, "after this one started")


@pytest.mark.hicache_requires("persistence", "multiprocess")
@ONE
@given(seed=payload_seeds)
def test_thousands_of_entries_another_process_writes_are_all_seen_without_a_restart(
    hicache_target: Target, seed: int
) -> None:
    """Thousands of entries another process stores after this instance looked are all seen, exactly.

    What an instance learns of other writers is indexed entry by entry as it finds it, not in the
    bulk of its own writes: an index that grows only on the bulk path holds a few hundred found
    entries and then no more."""
    target = hicache_target
    geometry = load_geometry(FAMILY)
    chunk, rounds = MANY_CHUNK, MANY // MANY_CHUNK
    base = [f"seen-{i}" for i in range(chunk)]
    with target.storage() as storage, Rig(target, geometry, storage, page_num=chunk) as rig:
        for name in rig.pools:
            assert rig.get(name, base[:1], [0]) == [False]  # look first, so the index is warm
        job = Job(
            target.ref, target.mode, str(storage), FAMILY, base, seed=seed, rounds=rounds, fresh_keys=True
        )
        run_to_end(job, timeout=600)
        for round_ in range(rounds):
            _sees_what_another_process_stored(
                rig, job.keys_of(round_), seed, round_, f"round {round_} of {MANY}"
            )


def _sees_what_another_process_stored(rig: Rig, keys: list[str], seed: int, round_: int, what: str) -> None:
    """Every key another process stored in round ``round_`` counts in exists and reads back its bytes."""
    if rig.target.caps.v1_kv:
        run = rig.backend.batch_exists(keys)
        assert run == len(keys), (
            f"{what}: batch_exists sees {run} of the {len(keys)} keys another process stored"
        )
    for name in rig.pools:
        rig.pool(name).fill(0)
        got = rig.get(name, keys, range(len(keys)))
        assert got == [True] * len(keys), f"{name}: get {got} for keys another process stored, {what}"
        for page, key in enumerate(keys):
            want = payload(rig.pool(name), seed, round_, name, key)
            rig.expect(name, page, want, f"stored by another process, {what}")


@pytest.mark.hicache_requires("persistence", "multiprocess")
@ONE
@given(seed=payload_seeds)
@example(seed=0)
def test_entries_another_process_clears_are_gone_without_a_restart(hicache_target: Target, seed: int) -> None:
    """A running instance serves nothing of what another process's clear() removed from the store.

    SGLang clears storage when the weights change: KV computed under the old weights must not be
    served by any process afterwards, whatever it had looked up before the clear."""
    target = hicache_target
    geometry = load_geometry(FAMILY)
    keys = [f"cleared-{i}" for i in range(PAGES)]
    with target.storage() as storage, Rig(target, geometry, storage, page_num=PAGES) as rig:
        for name in rig.pools:
            for page, key in enumerate(keys):
                rig.put(name, page, payload(rig.pool(name), seed, 0, name, key))
        stored = store_round(rig, keys, list(range(PAGES)))
        assert all(flags == [True] * PAGES for flags in stored.values()), f"stored {stored}"
        for name in rig.pools:  # looked up, so any index or cache is warm
            assert rig.get(name, keys, range(PAGES)) == [True] * PAGES
        job = Job(target.ref, target.mode, str(storage), FAMILY, keys, seed=seed, clear=True)
        run_to_end(job, timeout=300)
        if target.caps.v1_kv:
            run = rig.backend.batch_exists(keys)
            assert run == 0, f"batch_exists sees {run} of the {PAGES} keys another process cleared"
        for name in rig.pools:
            got = rig.get(name, keys, range(PAGES))
            assert got == [False] * PAGES, f"{name}: get {got} for keys another process cleared"
