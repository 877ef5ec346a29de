"""A time limit for each property: a backend that hangs fails that property, not the whole run.

A backend can hang where no Python signal reaches it, in native code: a destructor joining a
thread that never ends (Mooncake's client, closed, joins one for a minute at a time). Only the
process's end ends such a hang. So when a property overruns its limit, its process writes down
which property it was and where every thread stood, kills the services it started, and exits.
Under xdist the controller reads that account when the worker goes down, and a fresh worker runs
the rest; without xdist the certificate is written first, with the rest "not run". Either way the
property is *failed*, never passed or unaccounted for.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from conformance.servers.services import kill_all

SECONDS_PER_EXAMPLE = 150.0
"""The default limit is this times the profile's examples a property: the slowest property seen
(the stateful model on an object store) takes about 40 s per example of ``max_examples``."""
EXIT_OVERRUN = 3
"""The exit status of a process that ended an overrun property."""


@dataclass(frozen=True)
class Overrun:
    """One property that overran: its suite id, why it failed, and every thread's stack."""

    property: str
    reason: str
    stacks: str


class Watchdog:
    """Times each property; records an overrun in ``folder``, which the reporting process reads."""

    def __init__(self, limit: float, folder: Path) -> None:
        self.limit, self.folder = limit, folder

    def _record(self, nodeid: str) -> Path:
        return self.folder / (hashlib.sha256(nodeid.encode()).hexdigest()[:24] + ".json")

    @contextlib.contextmanager
    def watch(self, nodeid: str, pid: str, last_words: Callable[[Overrun], None]) -> Iterator[None]:
        """Run the block under the limit; past it, record, call ``last_words`` and exit."""
        lock, done, runner = threading.Lock(), [False], threading.get_ident()

        def expire() -> None:
            with lock:
                if done[0]:
                    return  # the property ended as the limit passed
                overrun = Overrun(pid, f"it ran past its time limit of {self.limit:g} s", _stacks(runner))
                self._record(nodeid).write_text(json.dumps(asdict(overrun)))
                last_words(overrun)
                kill_all()
                os._exit(EXIT_OVERRUN)

        timer = threading.Timer(self.limit, expire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            with lock:
                done[0] = True
            timer.cancel()

    def overrun(self, nodeid: str) -> Overrun | None:
        """The account an ended process left for ``nodeid``, if it overran."""
        record = self._record(nodeid)
        return Overrun(**json.loads(record.read_text())) if record.exists() else None


def _stacks(runner: int) -> str:
    """Every other thread's Python stack, then the property's own, innermost frame last: where a
    report keeps the end of this text, it keeps where the property hung."""
    frames = sys._current_frames()
    others = [
        f"thread {ident}:\n{''.join(traceback.format_stack(frame))}"
        for ident, frame in frames.items()
        if ident not in (runner, threading.get_ident())
    ]
    own = "".join(traceback.format_stack(frames[runner])) if runner in frames else "(gone)\n"
    return "".join(others) + f"the property's thread:\n{own}"
