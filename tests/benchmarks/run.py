"""Run the benchmark matrix and write its raw round times, with the machine they came from.

``python -m tests.benchmarks --out DIR`` writes ``DIR/bench.json``, ``DIR/bench.md`` and
``DIR/bench.png``. ``--quick`` is a smoke run of a few seconds (tiny batches, three rounds).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from conformance.model.sglang import UpstreamUnavailable, sglang
from reference_backend import agents
from tests.benchmarks import report
from tests.benchmarks.contenders import Limit, Ours, Rig, Upstream
from tests.benchmarks.models import REAL, SCALED_HYBRID, Workload
from tests.benchmarks.ops import LimitOp, Refused, StoreOp, mixed
from tests.benchmarks.paired import Contender, rounds
from tests.benchmarks.phases import breakdown

MODES = (("buffered", "aio"), ("direct", "aio"), ("direct", "uring"))


@dataclass(frozen=True)
class Plan:
    """What one run measures: per workload, the batches and the rounds each gets."""

    modes: tuple[tuple[str, str], ...]
    batches: dict[str, tuple[int, ...]]
    rounds_one_page: int
    one_page_calls: int
    """One-page operations a round times back to back per contender (a cold read: one)."""
    rounds_batch: int
    rounds_real: int
    mixed: tuple[tuple[str, int], ...]
    mixed_modes: tuple[tuple[str, str], ...]
    rounds_mixed: int
    phases: dict[str, tuple[int, ...]]
    """Per workload, the batches whose calls are split by step (``tests.benchmarks.phases``)."""
    phase_calls: int
    """One-page calls per op and mode split by step."""
    phase_batch_calls: int
    """Calls of a batch per op and mode split by step."""


FULL = Plan(
    modes=MODES,
    batches={SCALED_HYBRID.name: (1, 64), **{w.name: (64,) for w in REAL}},
    rounds_one_page=25,
    one_page_calls=10,
    rounds_batch=17,
    rounds_real=13,
    mixed=((SCALED_HYBRID.name, 64), (REAL[0].name, 32)),
    mixed_modes=(("buffered", "aio"), ("direct", "aio")),
    rounds_mixed=9,
    phases={SCALED_HYBRID.name: (1, 64), **{w.name: (64,) for w in REAL}},
    phase_calls=200,
    phase_batch_calls=15,
)
QUICK = Plan(
    modes=(("buffered", "aio"), ("direct", "aio")),
    batches={SCALED_HYBRID.name: (1, 8), REAL[0].name: (2,)},
    rounds_one_page=3,
    one_page_calls=2,
    rounds_batch=3,
    rounds_real=3,
    mixed=((SCALED_HYBRID.name, 8),),
    mixed_modes=(("buffered", "aio"),),
    rounds_mixed=3,
    phases={SCALED_HYBRID.name: (1, 8)},
    phase_calls=10,
    phase_batch_calls=3,
)


def ops_for(mode: str, batch: int) -> tuple[str, ...]:
    gets = ("get-warm", "get-cold") if mode == "buffered" else ("get",)
    return ("set-fresh", *gets, *(("exists",) if batch == 1 else ()))


def upstream_available() -> bool:
    try:
        sglang()
    except UpstreamUnavailable:
        return False
    return True


def measure_workload(
    workload: Workload, mode: str, queue: str, batches: tuple[int, ...], plan: Plan, root: Path
) -> Iterator[dict[str, Any]]:
    """Every op and batch of one workload in one mode, each as its own interleaved rounds."""
    with_upstream = upstream_available()
    pools = workload.build(max(batches), upstream=with_upstream)
    rig = Rig(workload, pools, root / f"{workload.name}-{mode}-{queue}", mode, queue)
    stores: list[Any] = [Ours(rig, verify=True), Ours(rig, verify=False)]
    limit = Limit(rig, {name for name in pools if stores[0].staged(name)})
    if with_upstream:
        stores.append(Upstream(rig))
    try:
        for batch in batches:
            for op in ops_for(mode, batch):
                count = (
                    plan.rounds_one_page
                    if batch == 1
                    else plan.rounds_real
                    if workload in REAL
                    else plan.rounds_batch
                )
                durable = batch > 1
                calls = calls_per_round(plan, op, batch)
                started = time.perf_counter()
                contenders: list[Contender] = []
                refused: dict[str, str] = {}
                for store in stores:
                    if store.name == "ours-nosum" and (batch == 1 or op == "set-fresh"):
                        continue  # the checksum's cost shows where it bounds: reads of big batches
                    try:
                        contenders.append(StoreOp(store, rig, op, batch, durable, calls))
                    except Refused as exc:
                        refused[store.name] = str(exc)
                contenders.append(LimitOp(limit, rig, op, batch, durable, calls))
                times = rounds(contenders, count)
                yield {
                    "workload": workload.name,
                    "model": workload.model,
                    "mode": mode,
                    "queue": queue,
                    "op": op,
                    "batch": batch,
                    "bytes": workload.batch_bytes(pools, batch),
                    "rounds": count,
                    "calls_per_round": calls,
                    "durable": durable and op == "set-fresh",
                    "times": times,
                    "refused": refused,
                    "seconds": round(time.perf_counter() - started, 1),
                }
                for store in stores:
                    store.clear()
    finally:
        for store in stores:
            store.close()
        limit.close()
        del stores, limit, pools
        gc.collect()
        shutil.rmtree(rig.root, ignore_errors=True)


def measure_mixed(
    workload: Workload, mode: str, queue: str, batch: int, count: int, root: Path
) -> dict[str, Any]:
    pools = workload.build(2 * batch, upstream=False)
    rig = Rig(workload, pools, root / f"mixed-{workload.name}-{mode}-{queue}", mode, queue)
    ours = Ours(rig, verify=True)
    try:
        times = rounds(mixed(ours, rig, batch), count)
    finally:
        ours.close()
        shutil.rmtree(rig.root, ignore_errors=True)
    return {
        "workload": workload.name,
        "mode": mode,
        "queue": queue,
        "batch": batch,
        "bytes": 2 * workload.batch_bytes(pools, batch),
        "rounds": count,
        "times": times,
    }


def calls_per_round(plan: Plan, op: str, batch: int) -> int:
    """Operations a round makes back to back: several of one page, whose call alone is too short
    to time apart from what ran before it; one of a batch, and of a cold read, cold only once."""
    return plan.one_page_calls if batch == 1 and op != "get-cold" else 1


def measure_phases(
    workload: Workload, mode: str, queue: str, batches: tuple[int, ...], plan: Plan, root: Path
) -> list[dict[str, Any]]:
    """Ours' calls of every op and batch of one workload in one mode, split by step."""
    pools = workload.build(max(batches), upstream=False)
    rig = Rig(workload, pools, root / f"phases-{workload.name}-{mode}-{queue}", mode, queue)
    try:
        return [
            {
                "workload": workload.name,
                "mode": mode,
                "queue": queue,
                **breakdown(
                    rig,
                    op,
                    batch,
                    plan.phase_calls if batch == 1 else plan.phase_batch_calls,
                    calls_per_round(plan, op, batch),
                ),
            }
            for batch in batches
            for op in ops_for(mode, batch)
        ]
    finally:
        del pools
        gc.collect()
        shutil.rmtree(rig.root, ignore_errors=True)


def speeds(nbytes: int = 64 << 20) -> dict[str, float]:
    """GB/s of the two things a verified warm read is made of: a memory copy and XXH3 over it."""
    import torch
    import xxhash

    src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
    dst = torch.empty_like(src)
    view = src.numpy().data
    copy = hashed = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        dst.copy_(src)
        copy = min(copy, time.perf_counter() - start)
        start = time.perf_counter()
        xxhash.xxh3_64_intdigest(view)
        hashed = min(hashed, time.perf_counter() - start)
    return {"memcpy_gbps": round(nbytes / copy / 1e9, 2), "xxh3_gbps": round(nbytes / hashed / 1e9, 2)}


def file_system(path: Path) -> str:
    """The type and device of the mount that holds ``path`` (from /proc/mounts)."""
    target = str(path.resolve())
    best = ("", "?", "?")
    for line in Path("/proc/mounts").read_text().splitlines():
        device, mount, kind = line.split()[:3]
        if (target == mount or target.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best[0]):
            best = (mount, kind, device)
    return f"{best[1]} ({best[2]} on {best[0]})"


def environment(root: Path) -> dict[str, Any]:
    """What the figures depend on: NIXL, the file system, the machine, and how busy it was."""
    fs = file_system(root)
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "nixl": importlib.metadata.version("nixl"),
        "nixl_build": agents.build_name(),
        "plugin": "POSIX",
        "file_system": fs,
        "kernel": platform.release(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": importlib.metadata.version("torch"),
        "sglang": importlib.metadata.version("sglang") if upstream_available() else None,
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_before": [round(x, 1) for x in os.getloadavg()],
        **speeds(),
    }


def run(plan: Plan, root: Path) -> dict[str, Any]:
    started = time.perf_counter()
    env = environment(root)
    results: list[dict[str, Any]] = []
    workloads = {w.name: w for w in (SCALED_HYBRID, *REAL)}
    for name, batches in plan.batches.items():
        for mode, queue in plan.modes:
            for row in measure_workload(workloads[name], mode, queue, batches, plan, root):
                results.append(row)
                print(report.one_line(row), flush=True)
    mixes = []
    for name, batch in plan.mixed:
        for mode, queue in plan.mixed_modes:
            row = measure_mixed(workloads[name], mode, queue, batch, plan.rounds_mixed, root)
            mixes.append(row)
            print(report.one_line_mixed(row), flush=True)
    phases = []
    for name, batches in plan.phases.items():
        for mode, queue in plan.modes:
            for row in measure_phases(workloads[name], mode, queue, batches, plan, root):
                phases.append(row)
                print(report.one_line_phases(row), flush=True)
    env["load_after"] = [round(x, 1) for x in os.getloadavg()]
    env["seconds"] = round(time.perf_counter() - started, 1)
    return {
        "environment": env,
        "method": {
            "pairing": "every round runs each contender once, back to back, in a rotating order",
            "one_page": f"each round times {plan.one_page_calls} operations back to back per contender "
            "(fresh pages for each write; a cold read: one) and reports the time per operation, the steady "
            "cost of a call rather than the caches the previous contender evicted",
            "writes": "page cache of the rig written back and dropped before each timed write (untimed); "
            "timed: the call plus the writeback of every file it wrote (sync_file_range WAIT_BEFORE|WRITE|"
            "WAIT_AFTER: data on the device, no journal commit per file; batch 1: no writeback)",
            "cold_reads": "the contender's files written back and dropped from the page cache first",
            "interval": "median of per-round ratios; distribution-free order-statistic interval",
        },
        "results": results,
        "mixed": mixes,
        "phases": phases,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("bench"), help="folder for bench.json/.md/.png")
    parser.add_argument("--root", type=Path, default=None, help="where the stores' files go (a temp folder)")
    parser.add_argument("--quick", action="store_true", help="a smoke run of a minute")
    parser.add_argument("--only", nargs="*", default=None, help="workloads to run (default: all)")
    args = parser.parse_args(argv)
    os.environ.setdefault("NIXL_LOG_LEVEL", "WARN")
    args.out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        root = args.root or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hicache-bench-")))
        plan = QUICK if args.quick else FULL
        if args.only is not None:
            plan = replace(
                plan,
                batches={k: v for k, v in plan.batches.items() if k in args.only},
                mixed=tuple(m for m in plan.mixed if m[0] in args.only),
                phases={k: v for k, v in plan.phases.items() if k in args.only},
            )
        data = run(plan, root)
    (args.out / "bench.json").write_text(json.dumps(data, indent=1))
    report.main(
        [
            str(args.out / "bench.json"),
            "--markdown",
            str(args.out / "bench.md"),
            "--chart",
            str(args.out / "bench.png"),
        ]
    )
    print(
        f"wrote {args.out}/bench.json, bench.md, bench.png in {data['environment']['seconds']} s",
        file=sys.stderr,
    )
    return 0
