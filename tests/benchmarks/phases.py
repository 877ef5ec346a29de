"""Where a one-page call's time goes: the reference backend's steps, each timed on its own.

The per-call overhead targets set ours beside raw NIXL at one page, and a single figure says how
far off it is, not why. Here ours runs alone, its seams wrapped by a meter that charges each
step its own time (exclusive of the steps it calls): validating and naming the request
(``plan``), the segment log (reserve, commit, locate, the look at other writers' segments),
staging copies, NIXL descriptor rows, NIXL itself (descriptor lists, post, wait, release: what
the limit pays too), the checksum, and the rest (SGLang's result shapes, hit arithmetic, the
call's own bookkeeping). Each figure is a median over calls; the wrapping adds about a
microsecond a step, so the total here runs a little above the paired rounds' figure.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import reference_backend.backend as backend_module
from tests.benchmarks.contenders import Ours, Rig
from tests.benchmarks.ops import StoreOp

PHASES = ("plan", "log", "stage", "descriptors", "nixl", "checksum", "other")


class Meter:
    """Exclusive time per phase: a step's time less the metered steps it called. One thread only:
    the one-page calls it meters start no helper thread (those serve batches of many pages)."""

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self.clock = clock
        self.spent: Counter[str] = Counter()
        self._inner: list[int] = []

    def timed(self, phase: str, inner: Callable[..., Any]) -> Callable[..., Any]:
        def step(*args: Any, **kwargs: Any) -> Any:
            self._inner.append(0)
            start = self.clock()
            try:
                return inner(*args, **kwargs)
            finally:
                took = self.clock() - start
                nested = self._inner.pop()
                self.spent[phase] += took - nested
                if self._inner:
                    self._inner[-1] += took

        return step

    def take(self, total_ns: int) -> dict[str, float]:
        """This call's microseconds per phase, ``other`` being the total's unmetered rest."""
        out = {p: self.spent.get(p, 0) / 1e3 for p in PHASES if p != "other"}
        out["other"] = total_ns / 1e3 - sum(out.values())
        self.spent.clear()
        return out


def _wrap(meter: Meter, owner: Any, attr: str, phase: str) -> None:
    setattr(owner, attr, meter.timed(phase, getattr(owner, attr)))


def _meter_nixl(meter: Meter, lane: Any) -> None:
    """A lane's post, and the wait and release of every transfer it posts."""
    post = meter.timed("nixl", lane.post)

    def posted(*args: Any, **kwargs: Any) -> Any:
        transfer = post(*args, **kwargs)
        _wrap(meter, transfer, "wait", "nixl")
        _wrap(meter, transfer, "release", "nixl")
        return transfer

    lane.post = posted


@contextlib.contextmanager
def metered(ours: Ours) -> Iterator[Meter]:
    """``ours``' backend with every step metered; the module-level steps are restored after."""
    meter = Meter()
    b = ours.backend
    _wrap(meter, b.planner, "plan", "plan")
    _wrap(meter, b.planner, "digest", "plan")
    for attr in ("reserve", "commit", "locate", "refresh"):
        _wrap(meter, b.log, attr, "log")
    _wrap(meter, b, "stage", "stage")
    _wrap(meter, b, "receive", "stage")  # what is left of it once its checksum is charged: scatter
    for lane in b.lanes.values():
        _meter_nixl(meter, lane)
    saved = {name: getattr(backend_module, name) for name in ("file_rows", "checksum", "intact")}
    for name, phase in (("file_rows", "descriptors"), ("checksum", "checksum"), ("intact", "checksum")):
        setattr(backend_module, name, meter.timed(phase, saved[name]))
    try:
        yield meter
    finally:
        for name, step in saved.items():
            setattr(backend_module, name, step)


def breakdown(rig: Rig, op: str, calls: int, per_round: int = 1) -> dict[str, Any]:
    """Median microseconds per phase of ``calls`` one-page calls of ``op`` by a fresh ours, in
    rounds of ``per_round`` prepared as the paired rounds prepare theirs (a write's first call
    after the rig's writeback pays what the rest do not), so both tables describe the same calls."""
    ours = Ours(rig, verify=True)
    try:
        with metered(ours) as meter:
            runner = StoreOp(ours, rig, op, 1, durable=False, calls=per_round)
            meter.spent.clear()
            per_call: list[dict[str, float]] = []
            for n in range(-(-calls // per_round)):
                runner.prepare(n)
                for operation in runner.operations:
                    start = time.perf_counter_ns()
                    operation()
                    per_call.append(meter.take(time.perf_counter_ns() - start))
    finally:
        ours.clear()
        ours.close()
    return {
        "op": op,
        "calls": len(per_call),
        "median_us": {p: round(statistics.median(c[p] for c in per_call), 1) for p in PHASES},
        "total_us": round(statistics.median(sum(c.values()) for c in per_call), 1),
    }
