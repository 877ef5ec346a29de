"""How long each call of the reference backend holds the GIL, against its wall time (issue 32).

SGLang calls storage from its backup and prefetch threads beside the scheduler, which needs the
GIL to run at all: a call that holds it for most of its time stalls the scheduler for that long.
A child process calls one operation in a loop; py-spy samples it from outside twice, once every
sample of the calling thread (``--idle``) and once only samples that hold the GIL (``--gil``).
The share is the second count over the first, for samples inside the call. Nothing in the child
is instrumented, so the figure is the process as SGLang would run it.

    python -m tests.benchmarks.gil [--out DIR] [--seconds 4]

Needs py-spy (the ``bench`` extra) and the right to trace a child (root, or ptrace_scope 0).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reference_backend.backend import NixlBackend
from tests.benchmarks.models import LLAMA3_70B, SCALED_HYBRID
from tests.benchmarks.workload import config

REPO = Path(__file__).resolve().parents[2]
WORKLOADS = {w.name: w for w in (SCALED_HYBRID, LLAMA3_70B)}
"""Many small records (three pools), and real pages (5.2 MiB each)."""
OPS = ("batch_get_v2", "batch_set_v2", "batch_exists_v2")
BATCHES = (1, 64)
MODES = ("buffered", "direct")
RAW = ("--nonblocking", "-f", "raw")
RATE = 400
"""Samples a second: py-spy's own cost is then a few percent of one core."""


def child(workload: str, op: str, batch: int, mode: str, seconds: float) -> None:
    """The process py-spy watches: one backend, one op in a loop on the main thread."""
    work = WORKLOADS[workload]
    pools = work.build(batch, upstream=False)
    root = tempfile.mkdtemp(prefix="gil-")
    cfg = config(mode, "aio")
    backend = NixlBackend(cfg, root)
    try:
        for name, pool in pools.items():
            backend.register_mem_host_pool_v2(pool, name)
        counter = itertools.count()

        def fresh() -> list[Any]:
            keys = [f"k{next(counter)}" for _ in range(batch)]
            return work.transfers(pools, keys)

        stored = fresh()
        backend.batch_set_v2(stored)
        keys = list(stored[0].keys or [])
        call: Callable[[], object] = {
            "batch_get_v2": lambda: backend.batch_get_v2(stored),
            "batch_set_v2": lambda: backend.batch_set_v2(fresh()),
            "batch_exists_v2": lambda: backend.batch_exists_v2(keys, stored[1:]),
        }[op]
        print("ready", flush=True)
        ends = time.monotonic() + seconds
        calls = 0
        started = time.perf_counter()
        while time.monotonic() < ends:
            call()
            calls += 1
        print(json.dumps({"call_us": (time.perf_counter() - started) / calls * 1e6}), flush=True)
    finally:
        backend.close()
        shutil.rmtree(root, ignore_errors=True)


def samples(pid: int, seconds: float, op: str, gil: bool) -> int:
    """Samples of the main thread inside ``op`` over ``seconds``, only GIL holders if ``gil``."""
    out = Path(tempfile.mkdtemp()) / "raw.txt"
    flags = ["--gil"] if gil else ["--idle"]
    command = ["py-spy", "record", "-p", str(pid), "-d", str(round(seconds)), "-r", str(RATE)]
    subprocess.run(
        [*command, *RAW, *flags, "-o", str(out)],
        check=True,
        capture_output=True,
    )
    total = 0
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if f"{op} (" in stack:
            total += int(count)
    shutil.rmtree(out.parent, ignore_errors=True)
    return total


def measure(workload: str, op: str, batch: int, mode: str, seconds: float) -> dict[str, Any]:
    """One row: the child loops for both recordings back to back."""
    loop = ("--seconds", str(2 * seconds + 2))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.benchmarks.gil", "--child", workload, op, str(batch), mode, *loop],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "NIXL_LOG_LEVEL": "WARN"},
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "ready"
        everything = samples(proc.pid, seconds, op, gil=False)
        holding = samples(proc.pid, seconds, op, gil=True)
        result = json.loads(proc.stdout.readline())
    finally:
        proc.wait()
    return {
        "workload": workload,
        "op": op,
        "batch": batch,
        "mode": mode,
        "call_us": result["call_us"],
        "samples": everything,
        "gil_share": holding / everything if everything else float("nan"),
    }


def report(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| workload | op | batch | mode | call | GIL held, share of the call | samples |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workload']} | `{r['op']}` | {r['batch']} | {r['mode']} | {r['call_us']:,.0f} µs"
            f" | {r['gil_share']:.2f} | {r['samples']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, help="folder for gil.md and gil.json")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds each recording samples")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS))
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        workload, op, batch, mode = args.child
        child(workload, op, int(batch), mode, args.seconds)
        return 0
    rows = []
    for workload, op, batch, mode in itertools.product(args.workloads, OPS, BATCHES, MODES):
        rows.append(measure(workload, op, batch, mode, args.seconds))
        print(json.dumps(rows[-1]), flush=True)
    text = report(rows)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gil.md").write_text(text)
        (args.out / "gil.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
