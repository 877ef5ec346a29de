"""Turn a pytest-benchmark JSON of ``tests/benchmarks`` into a Markdown table of ratios and a chart.

``python -m reference_backend.bench_report bench.json --markdown out.md --chart out.png``

Each workload (operation, I/O mode and queue, batch) gets ours beside its baselines from the same
run. Ratios are throughput ratios: ``limit / ours`` in time, so 1.0 means ours reaches the raw
NIXL transfer and 0.5 means it takes twice as long. The limit of ``set`` rewrites one pre-sized
file in place with our descriptors; that of ``set-fresh`` (new keys every round) puts the same
descriptors on fresh space of a growing file each round, as a store that never overwrites must.
``upstream / ours`` is ours' speed-up over SGLang 0.5.23's HiCacheNixl and HiCacheFile on the
same batch. Per-call overhead is ``ours - limit`` at batch 1.
"""

from __future__ import annotations

import argparse
import json
import platform
from collections import defaultdict
from pathlib import Path
from typing import Any

Key = tuple[str, str, int]


def load(path: Path) -> tuple[dict[Key, dict[str, float]], dict[str, Any]]:
    """Median seconds per (op, mode-queue, batch) and implementation, plus the machine info."""
    data = json.loads(path.read_text())
    table: dict[Key, dict[str, float]] = defaultdict(dict)
    for bench in data["benchmarks"]:
        info = bench["extra_info"]
        key = (info["op"], f"{info['mode']}-{info['queue']}", int(info["batch"]))
        table[key][info["impl"]] = float(bench["stats"]["median"])
        table[key]["bytes"] = float(info["bytes"])
    return dict(table), data.get("machine_info", {})


def markdown(table: dict[Key, dict[str, float]], machine: dict[str, Any]) -> str:
    lines = [
        f"Machine: {machine.get('cpu', {}).get('brand_raw', platform.processor())}, "
        f"{machine.get('cpu', {}).get('count', '?')} cores, Python {machine.get('python_version', '?')}",
        "",
        "| op | mode | batch | MB | ours ms | limit ms | ours/limit | unverified ms | unverified/limit |"
        " pwritev ms | ours GB/s | HiCacheNixl ms | ours vs HiCacheNixl | HiCacheFile ms |"
        " ours vs HiCacheFile |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (op, mode, batch), row in sorted(table.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        ours, limit, pw = row.get("ours"), row.get("limit"), row.get("pwritev")
        nocrc = row.get("ours-unverified")
        nixl, file = row.get("sglang-nixl"), row.get("sglang-file")
        lines.append(
            f"| {op} | {mode} | {batch} | {row['bytes'] / 1e6:.1f} | {_ms(ours)} | {_ms(limit)} | "
            f"{_ratio(limit, ours)} | {_ms(nocrc)} | {_ratio(limit, nocrc)} | {_ms(pw)} | "
            f"{row['bytes'] / ours / 1e9:.2f} | {_ms(nixl)} | {_speedup(nixl, ours)} | {_ms(file)} | "
            f"{_speedup(file, ours)} |"
            if ours
            else f"| {op} | {mode} | {batch} | - |"
        )
    overhead = [
        f"- {op} {mode}: {(row['ours'] - row['limit']) * 1e6:.0f} µs over raw NIXL at one page"
        for (op, mode, batch), row in sorted(table.items())
        if batch == 1 and "ours" in row and "limit" in row
    ]
    return "\n".join([*lines, "", "Per-call overhead:", *overhead, ""])


def _ratio(limit: float | None, ours: float | None) -> str:
    return f"{limit / ours:.2f}" if ours and limit else "-"


def _speedup(upstream: float | None, ours: float | None) -> str:
    return f"{upstream / ours:.2f}x" if ours and upstream else "-"


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:.2f}" if seconds else "-"


def chart(table: dict[Key, dict[str, float]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(k for k, v in table.items() if "ours" in v and "limit" in v)
    labels = [f"{op} {mode} b={batch}" for op, mode, batch in rows]
    ratios = [table[k]["limit"] / table[k]["ours"] for k in rows]
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.3), 6))
    ax.bar(range(len(rows)), ratios, color=["tab:green" if r >= 0.9 else "tab:orange" for r in ratios])
    ax.axhline(0.9, color="grey", linestyle="--", linewidth=1, label="target 0.9")
    ax.set_xticks(range(len(rows)), labels, fontsize=7, rotation=90)
    ax.set_ylabel("throughput ours / raw NIXL limit")
    ax.set_title("Reference backend against one raw NIXL transfer of the same descriptors")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("json", type=Path)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--chart", type=Path)
    args = parser.parse_args(argv)
    table, machine = load(args.json)
    text = markdown(table, machine)
    if args.markdown:
        args.markdown.write_text(text)
    else:
        print(text)
    if args.chart:
        chart(table, args.chart)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
