"""Per-call overhead and small records: ours beside raw NIXL in the same rounds, then split by step.

The per-call targets (``report.TARGET_OVERHEAD_US``) set ours minus the limit at one page: 30 µs
for ``exists`` and a warm get, 60 µs for a set. The batch target sets ours/limit at 64 pages.
This runs both on one workload (default the scaled hybrid: three pools a page, many small
records) in one I/O mode, each case as its own interleaved rounds (:mod:`tests.benchmarks.paired`,
checksums on), and prints ours - limit and ours/limit with their intervals; then each case's
calls split by step (:mod:`tests.benchmarks.phases`). No timing is asserted.

    python -m tests.benchmarks.percall [--workload scaled-hybrid] [--mode buffered] [--rounds 25]
        [--cases exists:1 get-warm:1 set-fresh:1 set-fresh:64 get-warm:64] [--no-phases]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from tests.benchmarks.contenders import Limit, Ours, Rig
from tests.benchmarks.models import SCALED_HYBRID, WORKLOADS
from tests.benchmarks.ops import LimitOp, StoreOp
from tests.benchmarks.paired import Contender, differences, median_interval, ratios, rounds
from tests.benchmarks.phases import PHASES, breakdown

CASES = ("exists:1", "get-warm:1", "set-fresh:1", "set-fresh:64", "get-warm:64")


def parse_case(text: str) -> tuple[str, int]:
    op, _, batch = text.partition(":")
    return op, int(batch or 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workload", default=SCALED_HYBRID.name, choices=sorted(WORKLOADS))
    parser.add_argument("--mode", default="buffered", choices=("buffered", "direct"))
    parser.add_argument("--queue", default="aio", choices=("aio", "uring"))
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--calls", type=int, default=10, help="one-page calls a round")
    parser.add_argument("--phase-calls", type=int, default=200, help="one-page calls split by step")
    parser.add_argument("--batch-phase-calls", type=int, default=15, help="batch calls split by step")
    parser.add_argument("--cases", nargs="*", default=list(CASES), help="op:batch")
    parser.add_argument("--no-phases", action="store_true")
    parser.add_argument(
        "--nosum", action="store_true", help="also ours with checksums off, in the same rounds"
    )
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("NIXL_LOG_LEVEL", "WARN")
    cases = [parse_case(c) for c in args.cases]
    workload = WORKLOADS[args.workload]
    root = Path(tempfile.mkdtemp(dir=args.root, prefix="percall-"))
    pools = workload.build(max(b for _, b in cases), upstream=False)
    rig = Rig(workload, pools, root, args.mode, args.queue)
    ours = Ours(rig, verify=True)
    nosum = Ours(rig, verify=False) if args.nosum else None
    limit = Limit(rig, {name for name in pools if ours.staged(name)})
    native = ours.backend.log._index.native
    print(f"{workload.name}, {args.mode} {args.queue}, index {'native' if native else 'pure Python'}")
    try:
        extra = " ours-nosum/limit |" if nosum else ""
        print(f"| call | ours µs | limit µs | ours - limit µs [95%] | ours/limit [95%] |{extra}")
        print(f"|---|---:|---:|---:|---:|{'---:|' if nosum else ''}")
        for op, batch in cases:
            calls = args.calls if batch == 1 and op != "get-cold" else 1
            durable = batch > 1
            contenders: list[Contender] = [
                StoreOp(ours, rig, op, batch, durable, calls),
                LimitOp(limit, rig, op, batch, durable, calls),
            ]
            if nosum:
                contenders.append(StoreOp(nosum, rig, op, batch, durable, calls))
            times = rounds(contenders, args.rounds)
            o, lim = times["ours"], times["limit"]
            diff = median_interval([d * 1e6 for d in differences(o, lim)])
            ratio = median_interval(ratios(lim, o))
            print(
                f"| {op} x{batch} | {statistics.median(o) * 1e6:.1f} | {statistics.median(lim) * 1e6:.1f}"
                f" | {diff.median:.1f} [{diff.low:.1f}, {diff.high:.1f}]"
                f" | {ratio.median:.3f} [{ratio.low:.3f}, {ratio.high:.3f}] |"
                + (f" {statistics.median(ratios(lim, times['ours-nosum'])):.3f} |" if nosum else "")
            )
            ours.clear()
            if nosum:
                nosum.clear()
        if not args.no_phases:
            print(f"\n| call | {' | '.join(PHASES)} | helper | total |")
            print(f"|---|{'---:|' * (len(PHASES) + 2)}")
            for op, batch in cases:
                calls = args.phase_calls if batch == 1 else args.batch_phase_calls
                per_round = args.calls if batch == 1 and op != "get-cold" else 1
                row = breakdown(rig, op, batch, calls, per_round)
                cells = " | ".join(f"{row['median_us'][p]:.1f}" for p in (*PHASES, "helper"))
                print(f"| {op} x{batch} | {cells} | {row['total_us']:.1f} |", flush=True)
    finally:
        ours.close()
        if nosum:
            nosum.close()
        limit.close()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
