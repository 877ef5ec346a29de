"""Time for leases: the backend's own clock run forward where it declares one, else real time.

A backend that names its lease clock (``lease_clock``, ``module:attribute``) has that function
replaced, in the suite's process, by a clock that stands still until the property moves it: a
30-second pin is checked at its 29.97th second and past its end in no time, and a slow machine
never lets a pin lapse early. Without one, time is real, and only pins short enough to wait out
are checked.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Iterator

import pytest

from conformance.harness.rig import Target

REAL_WAIT_LIMIT = 5.0
"""The longest pin the suite waits out in real time, for a backend with no lease clock."""


class LeaseTime:
    """The time a property sees its leases in; ``mark`` starts one, ``move_to`` goes into it."""

    def __init__(self, driven: bool) -> None:
        self.driven = driven
        self.now_ns = time.time_ns()
        self.marked = self._now()

    def __call__(self) -> int:
        """The backend's clock, where it is driven: it moves only when the property moves it."""
        return self.now_ns

    def _now(self) -> float:
        return self.now_ns / 1e9 if self.driven else time.monotonic()

    def mark(self) -> float:
        """A lease begins now (call it just before the call that grants one); the moment, to
        measure from later."""
        self.marked = self._now()
        return self.marked

    def move_to(self, seconds: float, since: float | None = None) -> None:
        """Go ``seconds`` past the mark (or ``since``): the clock is set there, or real time waited out."""
        target = (self.marked if since is None else since) + seconds
        if self.driven:
            self.now_ns = max(self.now_ns, int(target * 1e9))
        else:
            time.sleep(max(0.0, target - time.monotonic()))

    def within(self, seconds: float, since: float | None = None) -> bool:
        """Whether less than ``seconds`` have passed since the mark (or ``since``): a real flood
        may outlast a lease."""
        return self._now() - (self.marked if since is None else since) < seconds


@contextlib.contextmanager
def lease_time(target: Target) -> Iterator[LeaseTime]:
    """The backend's declared lease clock, driven by the property, for the block; else real time,
    skipping a backend whose pin is too long to wait out."""
    named = target.caps.lease_clock
    if not named:
        pin = target.caps.eviction_pin_seconds
        if pin > REAL_WAIT_LIMIT:
            pytest.skip(
                f"backend {target.spec.name!r} declares no lease_clock, and its {pin:g} s pin is too long "
                f"to wait out (at most {REAL_WAIT_LIMIT:g} s)"
            )
        yield LeaseTime(driven=False)
        return
    module_name, attribute = named.split(":")
    module = importlib.import_module(module_name)
    clock = LeaseTime(driven=True)
    real = getattr(module, attribute)
    setattr(module, attribute, clock)
    try:
        yield clock
    finally:
        setattr(module, attribute, real)
