"""The index's native kernel against its pure-Python path, in the same run, beside the limit.

Two of ours on the same pools, one whose index probes in C++ (``HICACHE_NATIVE=1``) and one in
Python (``HICACHE_NATIVE=0``), and raw NIXL, in interleaved rounds (:mod:`tests.benchmarks.paired`):
a one-page exists and warm get on the scaled hybrid (three pools a page), and a warm get of 64
pages (192 digests looked up). Then each one's calls split by step (:mod:`tests.benchmarks.phases`),
where the index's share is in ``log``. No timing is asserted.

    python -m tests.benchmarks.native [--rounds 25] [--calls 10] [--root DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import shutil
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.benchmarks.contenders import Limit, Ours, Rig
from tests.benchmarks.models import SCALED_HYBRID
from tests.benchmarks.ops import LimitOp, StoreOp
from tests.benchmarks.paired import Contender, rounds
from tests.benchmarks.phases import breakdown

CASES = (("exists", 1), ("get-warm", 1), ("get-warm", 64))
IMPLEMENTATIONS = {"native": "1", "python": "0"}


@contextlib.contextmanager
def implementation(setting: str) -> Iterator[None]:
    """Indexes made meanwhile take the implementation ``HICACHE_NATIVE=setting`` selects."""
    saved = os.environ.get("HICACHE_NATIVE")
    os.environ["HICACHE_NATIVE"] = setting
    try:
        yield
    finally:
        if saved is None:
            del os.environ["HICACHE_NATIVE"]
        else:
            os.environ["HICACHE_NATIVE"] = saved


def ours(rig: Rig, name: str) -> Ours:
    """Ours in a folder of its own, its index of implementation ``name``."""
    with implementation(IMPLEMENTATIONS[name]):
        store = Ours(dataclasses.replace(rig, root=rig.root / name))
    assert store.backend.log._index.native == (name == "native")
    store.name = f"ours-{name}"
    return store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--calls", type=int, default=10, help="one-page calls a round")
    parser.add_argument("--phase-calls", type=int, default=200, help="calls split by step per case")
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(dir=args.root, prefix="native-"))
    pools = SCALED_HYBRID.build(64, upstream=False)
    rig = Rig(SCALED_HYBRID, pools, root, "buffered", "aio")
    stores = [ours(rig, name) for name in IMPLEMENTATIONS]
    limit = Limit(rig, {name for name in pools if stores[0].staged(name)})
    try:
        print("| call | native µs | python µs | native/python | native/limit | python/limit | limit µs |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for op, batch in CASES:
            calls = args.calls if batch == 1 else 1
            contenders: list[Contender] = [StoreOp(s, rig, op, batch, False, calls) for s in stores]
            contenders.append(LimitOp(limit, rig, op, batch, False, calls))
            times = {name: statistics.median(t) * 1e6 for name, t in rounds(contenders, args.rounds).items()}
            n, p, lim = times["ours-native"], times["ours-python"], times["limit"]
            ratios = f"{n / p:.2f} | {n / lim:.2f} | {p / lim:.2f}"
            print(f"| {op} x{batch} | {n:.1f} | {p:.1f} | {ratios} | {lim:.1f} |")
        print("\n| call | implementation | log µs | total µs |\n|---|---|---:|---:|")
        for op, batch in CASES:
            for name, setting in IMPLEMENTATIONS.items():
                with implementation(setting):
                    row = breakdown(rig, op, batch, args.phase_calls if batch == 1 else 15)
                print(f"| {op} x{batch} | {name} | {row['median_us']['log']} | {row['total_us']} |")
    finally:
        for store in stores:
            store.close()
        limit.close()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
