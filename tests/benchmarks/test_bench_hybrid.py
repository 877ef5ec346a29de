"""Throughput and per-call cost of the reference backend beside its baselines, in one run.

Each workload is benchmarked for ``ours`` (the backend), ``limit`` (one raw NIXL transfer of the
same descriptors on a pre-opened, pre-sized file), ``pwritev`` (plain syscalls over the same memory
pieces) and, when SGLang is installed, upstream. ``python -m reference_backend.bench_report`` turns the JSON
into ratios. Under xdist or ``--benchmark-disable`` each runs once: the CI smoke mode.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conformance.upstream.loader import UpstreamUnavailable, sglang
from reference_backend.backend import NixlBackend
from tests.benchmarks.workload import (
    BATCHES,
    Rigged,
    Upstream,
    config,
    drop_page_cache,
    fill,
    hybrid_pools,
    pwritev_plan,
    raw_transfer,
)

MODES = [("buffered", "aio"), ("direct", "aio"), ("direct", "uring")]
FRESH = 8  # rounds of never-seen keys per fresh-set workload (each round is new disk space)


@pytest.fixture(scope="module", params=MODES, ids=[f"{m}-{q}" for m, q in MODES])
def rig(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rigged]:
    mode, queue = request.param
    root = tmp_path_factory.mktemp(f"bench-{mode}-{queue}")
    pools = hybrid_pools()
    fill(pools)
    backends = [NixlBackend(config(mode, queue, verify), root / f"ours-{verify}") for verify in (True, False)]
    for backend in backends:
        for name, pool in pools.items():
            backend.register_mem_host_pool_v2(pool, name)
    rigged = Rigged(backends[0], backends[1], pools, root, mode, queue)
    yield rigged
    rigged.close()


def _info(benchmark, rig: Rigged, op: str, batch: int, impl: str) -> None:
    nbytes = sum(pool.page_nbytes() for pool in rig.pools.values()) * batch
    benchmark.group = f"{op} {rig.mode}-{rig.queue} batch={batch}"
    benchmark.extra_info.update(
        op=op,
        mode=rig.mode,
        queue=rig.queue,
        batch=batch,
        impl=impl,
        bytes=nbytes,
    )


@pytest.mark.parametrize("verify", [True, False], ids=["checksum", "no-checksum"])
@pytest.mark.parametrize("batch", BATCHES)
def test_set_ours(benchmark, rig: Rigged, batch: int, verify: bool) -> None:
    _info(benchmark, rig, "set", batch, "ours" if verify else "ours-unverified")
    backend = rig.backend if verify else rig.unverified
    transfers = rig.transfers(batch)
    result = benchmark(backend.batch_set_v2, transfers)
    assert all(all(v) for v in result.values())


@pytest.mark.parametrize("batch", BATCHES)
def test_set_limit(benchmark, rig: Rigged, batch: int) -> None:
    _info(benchmark, rig, "set", batch, "limit")
    agent, descs, reg = rig.raw_plan(batch, "WRITE")
    try:
        benchmark(raw_transfer, agent, "WRITE", descs)
    finally:
        agent.deregister_memory(reg)


@pytest.mark.parametrize("batch", BATCHES)
def test_set_pwritev(benchmark, rig: Rigged, batch: int) -> None:
    _info(benchmark, rig, "set", batch, "pwritev")
    plan = pwritev_plan(rig, batch)
    benchmark(lambda: [os.pwritev(fd, bufs, off) for fd, bufs, off in plan])


@pytest.mark.parametrize("verify", [True, False], ids=["checksum", "no-checksum"])
@pytest.mark.parametrize("batch", BATCHES)
def test_set_fresh_ours(benchmark, rig: Rigged, batch: int, verify: bool) -> None:
    """New keys every round, as HiCache stores new prefixes: every byte lands on fresh space."""
    _info(benchmark, rig, "set-fresh", batch, "ours" if verify else "ours-unverified")
    backend = rig.backend if verify else rig.unverified
    result = benchmark.pedantic(
        backend.batch_set_v2, setup=_fresh(rig, batch, f"fresh{verify}"), rounds=FRESH
    )
    assert all(all(v) for v in result.values())


@pytest.mark.parametrize("batch", BATCHES)
def test_set_fresh_limit(benchmark, rig: Rigged, batch: int) -> None:
    _info(benchmark, rig, "set-fresh", batch, "limit")
    agent, plans, reg = rig.fresh_plans(batch, FRESH)
    rounds = iter(plans)
    try:
        benchmark.pedantic(raw_transfer, setup=lambda: ((agent, "WRITE", next(rounds)), {}), rounds=FRESH)
    finally:
        agent.deregister_memory(reg)


def _fresh(rig: Rigged, batch: int, label: str) -> Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]:
    """A pedantic setup handing each round a batch of keys no round used before."""
    rounds = itertools.count()
    return lambda: ((rig.transfers(batch, f"{label}-{next(rounds)}"),), {})


@pytest.mark.parametrize("verify", [True, False], ids=["checksum", "no-checksum"])
@pytest.mark.parametrize("temperature", ["warm", "cold"])
@pytest.mark.parametrize("batch", BATCHES)
def test_get_ours(benchmark, rig: Rigged, batch: int, temperature: str, verify: bool) -> None:
    _info(benchmark, rig, f"get-{temperature}", batch, "ours" if verify else "ours-unverified")
    backend = rig.backend if verify else rig.unverified
    transfers = rig.transfers(batch)
    assert all(all(v) for v in backend.batch_set_v2(transfers).values())
    folder = rig.root / f"ours-{verify}"
    setup = (lambda: drop_page_cache(folder)) if temperature == "cold" and not rig.direct else None
    if setup is None:
        result = benchmark(backend.batch_get_v2, transfers)
    else:
        result = benchmark.pedantic(backend.batch_get_v2, args=(transfers,), setup=setup, rounds=5)
    assert all(all(v) for v in result.values())


@pytest.mark.parametrize("temperature", ["warm", "cold"])
@pytest.mark.parametrize("batch", BATCHES)
def test_get_limit(benchmark, rig: Rigged, batch: int, temperature: str) -> None:
    _info(benchmark, rig, f"get-{temperature}", batch, "limit")
    agent, descs, reg = rig.raw_plan(batch, "READ")
    raw_transfer(rig.backend._lanes["WRITE"].agent, "WRITE", rig.raw_plan(batch, "WRITE")[1])
    try:
        if temperature == "cold" and not rig.direct:
            benchmark.pedantic(
                raw_transfer,
                args=(agent, "READ", descs),
                setup=lambda: drop_page_cache(rig.root / "raw"),
                rounds=5,
            )
        else:
            benchmark(raw_transfer, agent, "READ", descs)
    finally:
        agent.deregister_memory(reg)


@pytest.mark.parametrize("batch", BATCHES)
def test_exists_ours(benchmark, rig: Rigged, batch: int) -> None:
    _info(benchmark, rig, "exists", batch, "ours")
    transfers = rig.transfers(batch)
    assert all(all(v) for v in rig.backend.batch_set_v2(transfers).values())
    keys = transfers[0].keys or []
    result = benchmark(rig.backend.batch_exists_v2, keys, transfers[1:])
    assert result.kv_hit_pages == batch


@pytest.fixture(scope="module", params=["sglang-nixl", "sglang-file"])
def upstream(request: pytest.FixtureRequest, rig: Rigged) -> Iterator[Upstream]:
    """SGLang 0.5.23's own backend on the same pools (HiCacheFile has no O_DIRECT mode)."""
    try:
        sglang()
    except UpstreamUnavailable as exc:
        pytest.skip(f"upstream baseline: {exc}")
    if request.param == "sglang-file" and rig.direct:
        pytest.skip("HiCacheFile has no O_DIRECT mode")
    backend = Upstream(request.param, rig, rig.root / request.param)
    yield backend
    backend.close()


def _accepted(upstream: Upstream, flags: list[bool], batch: int) -> None:
    if not all(flags):
        pytest.skip(f"{upstream.impl} refuses this batch of {batch} pages ({flags.count(False)} False)")


@pytest.mark.parametrize("batch", BATCHES)
def test_set_upstream(benchmark, rig: Rigged, upstream: Upstream, batch: int) -> None:
    _info(benchmark, rig, "set", batch, upstream.impl)
    transfers = rig.transfers(batch)
    _accepted(upstream, upstream.set(transfers), batch)
    benchmark(upstream.set, transfers)


@pytest.mark.parametrize("batch", BATCHES)
def test_set_fresh_upstream(benchmark, rig: Rigged, upstream: Upstream, batch: int) -> None:
    _info(benchmark, rig, "set-fresh", batch, upstream.impl)
    _accepted(upstream, upstream.set(rig.transfers(batch, "probe")), batch)
    flags = benchmark.pedantic(upstream.set, setup=_fresh(rig, batch, "fresh"), rounds=FRESH)
    _accepted(upstream, flags, batch)


@pytest.mark.parametrize("temperature", ["warm", "cold"])
@pytest.mark.parametrize("batch", BATCHES)
def test_get_upstream(benchmark, rig: Rigged, upstream: Upstream, batch: int, temperature: str) -> None:
    _info(benchmark, rig, f"get-{temperature}", batch, upstream.impl)
    transfers = rig.transfers(batch)
    _accepted(upstream, upstream.set(transfers), batch)
    _accepted(upstream, upstream.get(transfers), batch)
    if temperature == "cold" and not rig.direct:
        folder = rig.root / upstream.impl
        benchmark.pedantic(upstream.get, args=(transfers,), setup=lambda: drop_page_cache(folder), rounds=5)
    else:
        benchmark(upstream.get, transfers)
