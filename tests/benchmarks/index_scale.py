"""The segment log and its index alone, up to 10 million entries (issue 32).

The scale sweep (:mod:`tests.benchmarks.scale`) drives the whole backend on 16-KiB pages, which
takes 16 GB of disk a million entries; this drives :class:`reference_backend.log.SegmentLog`
directly with 512-byte records (5 GB at 10M), to show what the index costs where the disk cannot
hold real pages: a lookup of 64 stored digests, a commit of 64 new ones, the memory each entry
takes, and a restart: from the checkpoint, from the log, and after a crash (a process that
committed the most a running log commits between two checkpoints, then died without closing: the
restart loads the last checkpoint and scans that tail). Each N is filled in a fresh process,
restarted in more. No timing is asserted anywhere.

    python -m tests.benchmarks.index_scale [--sizes 1000 1000000 10000000] [--tmp DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from reference_backend import checkpoint
from reference_backend.log import Layout, SegmentLog, Stamp

REPO = Path(__file__).resolve().parents[2]
RECORD = 512
BATCH = 64
FILL_BATCH = 4096
CALLS = 400


def digest(i: int) -> bytes:
    """A uniformly spread 16-byte digest for entry ``i``, as BLAKE2b's would be."""
    return int(i * 0x9E3779B97F4A7C15 % (1 << 64)).to_bytes(8, "little") + i.to_bytes(8, "little")


def open_log(root: str, checkpoints: bool = True) -> SegmentLog:
    return SegmentLog(
        root, direct=False, fsync=False, segment_bytes=1 << 30, tenant="ab", checkpoints=checkpoints
    )


def append(log: SegmentLog, ids: range) -> None:
    extent = log.reserve(Layout.of([[RECORD] * len(ids)]))
    assert extent is not None
    assert log.commit(extent, [Stamp(digest(i), 1, None) for i in ids])


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def fill(root: str, n: int) -> dict[str, Any]:
    """In its own process: fill to ``n``, time lookups and commits, close (checkpoint)."""
    before = rss()
    log = open_log(root)
    log.refresh()
    started = time.perf_counter()
    for lo in range(0, n, FILL_BATCH):
        append(log, range(lo, min(n, lo + FILL_BATCH)))
    filled = time.perf_counter() - started
    peak = rss() - before  # a running checkpoint may hold its copy of the records (48 B an entry)
    log.wait_checkpoint()
    grown = rss() - before
    rng = np.random.default_rng(0)
    lookups = []
    for _ in range(CALLS):
        wanted = [digest(int(i)) for i in rng.integers(0, n, BATCH)]
        t = time.perf_counter()
        found = log.locate(wanted)
        lookups.append(time.perf_counter() - t)
        assert all(found)
    commits = []
    for call in range(CALLS // 4):
        t = time.perf_counter()
        append(log, range(n + call * BATCH, n + (call + 1) * BATCH))
        commits.append(time.perf_counter() - t)
    t = time.perf_counter()
    log.close()
    return {
        "fill_s": filled,
        "bytes_per_entry": grown / n,
        "bytes_per_entry_checkpointing": peak / n,
        "locate_us": float(np.median(lookups) * 1e6),
        "locate_p99_us": float(np.percentile(lookups, 99) * 1e6),
        "commit_us": float(np.median(commits) * 1e6),
        "commit_p99_us": float(np.percentile(commits, 99) * 1e6),
        "close_s": time.perf_counter() - t,
    }


def restart(root: str, n: int, checkpoints: bool) -> dict[str, Any]:
    """In its own process: open the log and answer a first lookup."""
    t = time.perf_counter()
    log = open_log(root, checkpoints)
    found = log.locate([digest(i) for i in range(0, n, max(1, n // BATCH))][:BATCH])
    took = time.perf_counter() - t
    assert all(found)
    return {"first_locate_s": took, "restored": log.restored}


def crash(root: str, n: int) -> None:
    """In its own process: restart, commit one record short of the next checkpoint, and die
    without closing, as a crash would."""
    log = open_log(root)
    log.refresh()
    tail = crash_tail(n)
    for lo in range(n, n + tail, FILL_BATCH):
        append(log, range(lo, min(n + tail, lo + FILL_BATCH)))
    os._exit(0)


def crash_tail(n: int) -> int:
    """The most a running log of ``n`` records commits without a checkpoint."""
    return max(checkpoint.EVERY, n // checkpoint.SHARE) - 1


def child(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.index_scale", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def sweep(sizes: list[int], tmp: str) -> dict[int, dict[str, Any]]:
    out = {}
    for n in sizes:
        root = tempfile.mkdtemp(dir=tmp, prefix=f"index-{n}-")
        try:
            row = child("--fill", root, str(n))
            row["restart_checkpoint_s"] = child("--restart", root, str(n))["first_locate_s"]
            saved = os.path.join(root, "segments", "index.ab.ckpt")  # open_log's tenant
            os.rename(saved, saved + ".aside")
            row["restart_log_s"] = child("--restart-log", root, str(n))["first_locate_s"]
            os.rename(saved + ".aside", saved)
            subprocess.run(
                [sys.executable, "-m", "tests.benchmarks.index_scale", "--crash", root, str(n)],
                cwd=REPO,
                check=True,
            )
            crashed = child("--restart", root, str(n))
            assert crashed["restored"], "the crashed log's checkpoint was not trusted"
            row["restart_crash_s"] = crashed["first_locate_s"]
            row["crash_tail"] = crash_tail(n)
            out[n] = row
            print(n, json.dumps(row), flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return out


def table(rows: dict[int, dict[str, Any]]) -> str:
    sizes = sorted(rows)
    head = "| | " + " | ".join(f"{n:,}" for n in sizes) + " |\n|---|" + "---:|" * len(sizes) + "\n"
    lines = [
        ("locate 64 stored, median µs", "locate_us", "{:,.0f}"),
        ("locate 64 stored, p99 µs", "locate_p99_us", "{:,.0f}"),
        ("commit 64 new, median µs", "commit_us", "{:,.0f}"),
        ("commit 64 new, p99 µs", "commit_p99_us", "{:,.0f}"),
        ("memory per entry, bytes (RSS)", "bytes_per_entry", "{:,.1f}"),
        (
            "the same while a checkpoint holds its copy (at the fill's end)",
            "bytes_per_entry_checkpointing",
            "{:,.1f}",
        ),
        ("close with checkpoint, s", "close_s", "{:.2f}"),
        ("restart from the checkpoint: open + first locate, s", "restart_checkpoint_s", "{:.3f}"),
        ("restart from the log (no checkpoint), s", "restart_log_s", "{:.2f}"),
        ("records committed after the last checkpoint, at most", "crash_tail", "{:,}"),
        ("restart after a crash: that checkpoint + that tail, s", "restart_crash_s", "{:.3f}"),
    ]
    body = "".join(
        f"| {name} | " + " | ".join(fmt.format(rows[n][key]) for n in sizes) + " |\n"
        for name, key, fmt in lines
    )
    first = sizes[0]
    growth = "| locate growth from the smallest N | " + " | ".join(
        f"{rows[n]['locate_us'] / rows[first]['locate_us']:.2f}x" for n in sizes
    )
    return head + body + growth + " |\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 1_000_000, 10_000_000])
    parser.add_argument("--tmp", default=tempfile.gettempdir())
    parser.add_argument("--fill", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--restart", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--restart-log", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--crash", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.crash:
        crash(args.crash[0], int(args.crash[1]))
    elif args.fill:
        print(json.dumps(fill(args.fill[0], int(args.fill[1]))))
    elif args.restart or args.restart_log:
        root, n = args.restart or args.restart_log
        print(json.dumps(restart(root, int(n), checkpoints=bool(args.restart))))
    else:
        print(table(sweep(args.sizes, args.tmp)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
