"""The scale sweep (``python -m tests.benchmarks.scale``) runs end to end at tiny N: a store filled,
per-call figures, the raw NIXL limit paired with ours' gets and sets, a restart in a fresh process,
a budgeted fill in a child, and tables with a row per figure and a column per N. Timing is the
sweep's job: no figure is judged here, only that each is there and positive."""

from __future__ import annotations

import re
from pathlib import Path

from tests.benchmarks.scale import LIMITED, OPS, Plan, markdown, sweep, tables, write_report

TINY = Plan(
    sizes=(400,),
    calls=4,
    budget_sizes=(400,),
    budget_calls=2,
    budget_seconds=60.0,
    write_cap=30.0,
    probe_timeout=60.0,
)


def _value(cell: str) -> float:
    """The number in a cell such as ``1,221 us``, ``47.17 ms`` or ``1.00x``."""
    match = re.fullmatch(r"([0-9][0-9,]*(?:\.[0-9]+)?)(?: ?(?:us|ms|s|x))?", cell.strip())
    assert match, f"not a figure: {cell!r}"
    return float(match.group(1).replace(",", ""))


def test_the_sweep_measures_every_figure_at_every_n(tmp_path: Path) -> None:
    lines: list[str] = []
    data = sweep(TINY, tmp_path / "stores", log=lines.append)
    assert len(lines) == len(TINY.sizes) + len(TINY.budget_sizes)
    assert not (tmp_path / "stores" / "unbounded").exists(), "the sweep removes its stores"

    for n in TINY.sizes:
        assert set(data.calls[n].ops) == set(OPS)
        assert all(
            s.calls == TINY.calls and s.median_us > 0 and s.p99_us > 0 for s in data.calls[n].ops.values()
        )
        assert data.calls[n].failures == 0
        assert set(data.calls[n].limits) == set(LIMITED)
        for against in data.calls[n].limits.values():
            assert against.ours.calls == against.limit.calls == TINY.calls
            assert min(against.ours.median_us, against.limit.median_us, against.ratio.median) > 0
            assert against.ratio.n == TINY.calls // 2, "a round is two pairs in opposite orders"
        restart = data.restarts[n]
        assert restart.ok, restart.error
        assert min(restart.construct_ms, restart.first_exists_ms, restart.first_get_ms) > 0
        assert restart.rss_growth > 0
    budgeted = data.budgeted[400]
    assert budgeted.status == "ok"
    assert budgeted.below is not None and budgeted.evicting is not None
    assert budgeted.below.median_us > 0 and budgeted.evicting.median_us > 0

    calls, limits, restarts, budget, growth = tables(data)
    assert calls.columns == ["", "400"] and restarts.columns == ["", "400"]
    assert [name for name, _ in calls.rows[: 2 * len(OPS)]] == [
        f"{op} {s}" for op in OPS for s in ("median", "p99")
    ]
    for name, cells in calls.rows[: 2 * len(OPS)] + restarts.rows[:3]:
        assert len(cells) == 1 and all(_value(c) > 0 for c in cells), name
    assert limits.columns == ["", "400"]
    limit_rows = dict(limits.rows)
    for op in LIMITED:
        for name in ("ours median", "limit median", "ours / limit", "ours / limit, growth from 400"):
            cells = limit_rows[f"{op}: {name}"]
            assert len(cells) == 1 and _value(cells[0]) > 0, f"{op}: {name}"
        assert limit_rows[f"{op}: ours / limit, growth from 400"] == ["1.00x"]
    assert budget.columns == ["entries written", "400"]
    rows = dict(budget.rows)
    for name in ("below the budget: median", "past it (must evict): median", "evicting / below, median"):
        assert _value(rows[name][0]) > 0, name
    assert rows["status"] == ["ok"]
    assert growth.columns == ["", "400", "target"]
    growth_rows = dict(growth.rows)
    for op in OPS:
        assert growth_rows[f"{op} median"] == ["1.00x", "≤ 1.3x"]
    for op in LIMITED:
        assert growth_rows[f"{op} / limit, per-round ratio"] == ["1.00x", "≤ 1.3x"]
        assert growth_rows[f"limit {op} median"] == ["1.00x", ""], "the machine's growth has no target"

    text = markdown(data)
    assert all(t.title in text for t in (calls, limits, restarts, budget, growth))
    write_report(data, tmp_path / "out")
    assert (tmp_path / "out" / "scale.md").read_text() == text
    assert (tmp_path / "out" / "scale.png").stat().st_size > 0
