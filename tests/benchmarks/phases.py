"""Where a call's time goes: the reference backend's steps, each timed on its own.

The per-call overhead targets set ours beside raw NIXL at one page, and the batch targets ours
beside it at 64 pages; a single figure says how far off it is, not why. Here ours runs alone, its
seams wrapped by a meter that charges each step its own time (exclusive of the steps it calls):
validating and naming the request (``plan``), the segment log (reserve, commit, locate, the look
at other writers' segments), staging copies, NIXL descriptor rows, NIXL itself (descriptor lists,
post, wait, release: what the limit pays too), the checksum, waiting for the helper thread to
finish its checks (``waiting``), a durable write's writeback, and the rest (SGLang's result
shapes, hit arithmetic, the call's own bookkeeping). A batch checks pages on a helper thread
beside the transfer: what that thread spends is ``helper``, beside the call's time, not part of
it. Each figure is a median over calls; the wrapping adds about a microsecond a step, so the
total here runs a little above the paired rounds' figure.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import reference_backend.backend as backend_module
from reference_backend.transfer import Lane
from tests.benchmarks.contenders import Ours, Rig
from tests.benchmarks.ops import StoreOp
from tests.benchmarks.paired import write_back

PHASES = ("plan", "log", "stage", "descriptors", "nixl", "checksum", "waiting", "writeback", "other")
"""The calling thread's time, which adds up to the call's."""
HELPER = "helper"
"""Time the helper thread spent in metered steps, beside the call."""


class Meter:
    """Exclusive time per phase on the thread that made the meter; every metered step that runs on
    another thread (the lanes' helper) is charged to ``helper`` instead."""

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self.clock = clock
        self.spent: Counter[str] = Counter()
        self.home = threading.get_ident()
        self._stacks = threading.local()

    def timed(self, phase: str, inner: Callable[..., Any]) -> Callable[..., Any]:
        def step(*args: Any, **kwargs: Any) -> Any:
            stack: list[int] = self._stacks.__dict__.setdefault("inner", [])
            stack.append(0)
            start = self.clock()
            try:
                return inner(*args, **kwargs)
            finally:
                took = self.clock() - start
                nested = stack.pop()
                # one key per thread: two threads never add to the same counter
                self.spent[phase if threading.get_ident() == self.home else HELPER] += took - nested
                if stack:
                    stack[-1] += took

        return step

    def take(self, total_ns: int) -> dict[str, float]:
        """This call's microseconds per phase, ``other`` being the total's unmetered rest, and
        ``helper`` the helper thread's time beside it."""
        out = {p: self.spent.get(p, 0) / 1e3 for p in PHASES if p != "other"}
        out["other"] = total_ns / 1e3 - sum(out.values())
        out[HELPER] = self.spent.get(HELPER, 0) / 1e3
        self.spent.clear()
        return out


def meter_waits(meter: Meter, pool: ThreadPoolExecutor) -> ThreadPoolExecutor:
    """``pool``, its futures from now on charging the time spent waiting on them to ``waiting``."""
    submit = pool.submit

    def metered(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = submit(fn, *args, **kwargs)
        future.result = meter.timed("waiting", future.result)  # type: ignore[method-assign]
        return future

    pool.submit = metered  # type: ignore[method-assign]
    return pool


def _wrap(meter: Meter, owner: Any, attr: str, phase: str) -> None:
    setattr(owner, attr, meter.timed(phase, getattr(owner, attr)))


def _meter_lane(meter: Meter, lane: Lane) -> None:
    """A lane's post, the wait and release of every transfer it posts, and its helper's futures."""
    post = meter.timed("nixl", lane.post)

    def posted(*args: Any, **kwargs: Any) -> Any:
        transfer = post(*args, **kwargs)
        _wrap(meter, transfer, "wait", "nixl")
        _wrap(meter, transfer, "release", "nixl")
        return transfer

    lane.post = posted  # type: ignore[method-assign]
    meter_waits(meter, lane.helper())  # started now, so that every future it hands out is metered


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
        _meter_lane(meter, lane)
    saved = {name: getattr(backend_module, name) for name in ("file_rows", "checksum", "intact")}
    for name, phase in (("file_rows", "descriptors"), ("checksum", "checksum"), ("intact", "checksum")):
        setattr(backend_module, name, meter.timed(phase, saved[name]))
    try:
        yield meter
    finally:
        for name, step in saved.items():
            setattr(backend_module, name, step)


def breakdown(rig: Rig, op: str, batch: int, calls: int, per_round: int = 1) -> dict[str, Any]:
    """Median microseconds per phase of ``calls`` calls of ``op`` on ``batch`` pages by a fresh
    ours, in rounds of ``per_round`` prepared as the paired rounds prepare theirs (a write's first
    call after the rig's writeback pays what the rest do not; a batch write is timed with its
    writeback), so both tables describe the same calls."""
    ours = Ours(rig, verify=True)
    durable = batch > 1
    try:
        with metered(ours) as meter:
            runner = StoreOp(ours, rig, op, batch, durable=durable, calls=per_round)
            meter.spent.clear()
            per_call: list[dict[str, float]] = []
            for n in range(-(-calls // per_round)):
                runner.prepare(n)
                for operation in runner.operations:
                    start = time.perf_counter_ns()
                    operation()
                    called = time.perf_counter_ns() - start
                    paths = runner.written()  # untimed, as in the paired rounds
                    if paths:
                        start = time.perf_counter_ns()
                        write_back(paths)
                        meter.spent["writeback"] += time.perf_counter_ns() - start
                    per_call.append(meter.take(called + meter.spent["writeback"]))
    finally:
        ours.clear()
        ours.close()
    return {
        "op": op,
        "batch": batch,
        "calls": len(per_call),
        "median_us": {p: round(statistics.median(c[p] for c in per_call), 1) for p in (*PHASES, HELPER)},
        "total_us": round(statistics.median(sum(c[p] for p in PHASES) for c in per_call), 1),
    }
