"""Paired, interleaved measurement: every contender runs once per round, in a rotating order.

Two benchmarks timed one after the other each meet their own writeback, their own neighbour's
I/O and their own frequency state, and a ratio of their medians inherits all of it. Here every
round runs each contender once, back to back, on the same memory and files, so whatever the
machine does to one round it does to all of them; the figure is the median of the per-round
ratios, with a distribution-free 95% interval from order statistics.
"""

from __future__ import annotations

import ctypes
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol


class Contender(Protocol):
    """One implementation of one operation, as the round loop drives it."""

    name: str
    calls: int
    """Operations ``call`` makes back to back; its time is reported per operation."""

    def prepare(self, round_no: int) -> None:
        """Untimed: what the round needs before the call (fresh keys, a dropped page cache)."""

    def call(self) -> None:
        """Timed: the operation, ``calls`` times. Raises when an operation reports failure."""

    def written(self) -> list[str]:
        """Untimed: the files ``call`` wrote, whose dirty pages the round then writes back, timed."""


def rounds(contenders: Sequence[Contender], count: int) -> dict[str, list[float]]:
    """Seconds per operation for each contender, one figure a round; round ``r`` starts at
    contender ``r mod n``.

    A contender's time is its call plus the writeback of every file it wrote (``write_back``),
    over the operations the call made; listing those files is not timed.
    """
    times: dict[str, list[float]] = {c.name: [] for c in contenders}
    n = len(contenders)
    for r in range(count):
        for k in range(n):
            contender = contenders[(r + k) % n]
            contender.prepare(r)
            start = time.perf_counter()
            contender.call()
            called = time.perf_counter() - start
            paths = contender.written()
            start = time.perf_counter()
            write_back(paths)
            times[contender.name].append((called + time.perf_counter() - start) / contender.calls)
    return times


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
WRITEBACK = 1 | 2 | 4  # SYNC_FILE_RANGE_WAIT_BEFORE | WRITE | WAIT_AFTER


def write_back(paths: Sequence[str]) -> None:
    """Write every dirty page of ``paths`` to the device and wait for it, file by file.

    ``sync_file_range`` flushes data without a journal commit per file, so a store of one file per
    page pays for its bytes, not for as many ``fdatasync`` commits as it has files (which a page
    cache flushing in the background would batch).
    """
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:  # renamed or deleted since it was listed (a checkpoint's temporary)
            continue
        try:
            if _LIBC.sync_file_range(fd, 0, 0, WRITEBACK):
                raise OSError(ctypes.get_errno(), f"sync_file_range {path}")
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Interval:
    """A median with its distribution-free confidence interval, and the coverage it really has."""

    median: float
    low: float
    high: float
    coverage: float
    n: int

    def as_dict(self) -> dict[str, float]:
        return {"median": self.median, "low": self.low, "high": self.high, "coverage": self.coverage}


def _binom_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return float(sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def median_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """The sample median and the order-statistic interval [x_(k), x_(n-k+1)] around it.

    ``k`` is the largest rank whose interval still covers the true median with at least
    ``confidence``; with fewer than 6 values none does, and the interval is the full range with
    the coverage it actually has.
    """
    xs = sorted(values)
    n = len(xs)
    if not n:
        raise ValueError("no values")
    mid = (xs[(n - 1) // 2] + xs[n // 2]) / 2
    k = 1
    while k + 1 <= n // 2 and 1 - 2 * _binom_cdf(k, n) >= confidence:
        k += 1
    coverage = 1 - 2 * _binom_cdf(k - 1, n)
    return Interval(mid, xs[k - 1], xs[n - k], coverage, n)


def ratios(numerator: Sequence[float], denominator: Sequence[float]) -> list[float]:
    """Per-round ratios of two contenders' times from the same rounds."""
    return [a / b for a, b in zip(numerator, denominator)]


def differences(minuend: Sequence[float], subtrahend: Sequence[float]) -> list[float]:
    """Per-round differences of two contenders' times from the same rounds."""
    return [a - b for a, b in zip(minuend, subtrahend)]


@dataclass
class Timed:
    """A contender made of plain callables (the mixed workload's sequential and concurrent runs)."""

    name: str
    run: Callable[[], None]
    before: Callable[[int], None] = lambda r: None
    calls: int = 1

    def prepare(self, round_no: int) -> None:
        self.before(round_no)

    def call(self) -> None:
        self.run()

    def written(self) -> list[str]:
        return []
