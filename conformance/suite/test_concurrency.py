"""Threads and processes sharing a backend or a store never see torn or lost entries.

SGLang's controller stores from one thread and loads from another while the scheduler asks
``exists``; MLA ranks in separate processes write the same replicated KV to one store.
"""

from __future__ import annotations

import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from conformance.harness.geometry import load_geometry
from conformance.harness.rig import Rig, Target, byte_difference
from conformance.harness.worker import Job, payload
from conformance.model.interface import PoolName

FAMILY = "qwen3_next_hybrid"
THREADS = 4
SLOTS = 4  # host pages each thread owns
ROUNDS = 6


@pytest.mark.hicache_requires("concurrent")
def test_threads_storing_and_loading_disjoint_and_shared_keys_never_tear(hicache_target: Target) -> None:
    """Writers and readers on one instance: every read is one whole written version."""
    geometry = load_geometry(FAMILY)
    shared = [f"shared-{i}" for i in range(SLOTS)]
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, page_num=THREADS * SLOTS * 2) as rig,
    ):
        names = list(rig.pools)
        errors: list[str] = []
        versions: dict[tuple[PoolName, str], list[bytes]] = {}
        lock = threading.Lock()

        def page_of(worker: int, slot: int, reading: bool) -> int:
            return (2 * worker + reading) * SLOTS + slot

        def writer(worker: int) -> None:
            own = [f"own-{worker}-{i}" for i in range(SLOTS)]
            for round_ in range(ROUNDS):
                for keys in (own, shared):
                    for name in names:
                        for slot, key in enumerate(keys):
                            data = payload(rig.pool(name), worker, round_, name, key)
                            with lock:
                                versions.setdefault((name, key), []).append(data)
                            rig.put(name, page_of(worker, slot, False), data)
                        pages = [page_of(worker, s, False) for s in range(SLOTS)]
                        if rig.set(name, keys, pages) != [True] * SLOTS:
                            errors.append(f"worker {worker}: {name} set failed")
                    check(worker, keys)

        def check(worker: int, keys: list[str]) -> None:
            for name in names:
                pages = [page_of(worker, s, True) for s in range(SLOTS)]
                for slot, ok in enumerate(rig.get(name, keys, pages)):
                    if not ok:
                        errors.append(f"worker {worker}: {name} {keys[slot]!r} vanished")
                        continue
                    got = rig.take(name, pages[slot])
                    with lock:
                        known = list(versions[(name, keys[slot])])
                    if all(byte_difference(got, v) for v in known):
                        errors.append(f"worker {worker}: {name} {keys[slot]!r} read torn bytes")

        with ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(writer, range(THREADS)))
        assert not errors, "; ".join(errors[:5])


@pytest.mark.hicache_requires("multiprocess")
def test_two_processes_sharing_a_store_lose_nothing(hicache_target: Target) -> None:
    """Two writer processes on one store (as MLA ranks share KV): every key whole, none lost."""
    geometry = load_geometry("deepseek_v3_mla")
    keys = [f"mla-{i}" for i in range(16)]
    with hicache_target.storage() as storage:
        jobs = [
            Job(
                hicache_target.ref,
                hicache_target.mode,
                str(storage),
                "deepseek_v3_mla",
                keys,
                seed=s,
                rounds=8,
                tp_rank=r,
                tp_size=2,
            )
            for s, r in ((21, 0), (22, 1))
        ]
        procs = [
            subprocess.Popen(j.argv(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for j in jobs
        ]
        outs = [p.communicate(timeout=300) for p in procs]
        for proc, (_, err) in zip(procs, outs):
            assert proc.returncode == 0, err[-2000:]
        with Rig(hicache_target, geometry, storage, page_num=len(keys)) as rig:
            name = PoolName.KV
            assert rig.get(name, keys, range(len(keys))) == [True] * len(keys), "an entry was lost"
            for page, key in enumerate(keys):
                candidates = [
                    payload(rig.pool(name), j.seed, r, name, key) for j in jobs for r in range(j.rounds)
                ]
                got = rig.take(name, page)
                assert not all(byte_difference(got, c) for c in candidates), f"{key!r} holds torn bytes"
