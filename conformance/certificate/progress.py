"""What a certification run is doing, and how far it is: a line per property family as it starts and
as it ends.

A whole certification takes minutes to half an hour; pytest's dots say neither which guarantee is
being checked nor how much is left. The process that reports (the xdist controller, or the only
process) learns which properties will run from the collection, then counts each property as done
when its last report arrives, whichever worker ran it, so the lines are the same with and without
xdist (under xdist families overlap, as their properties are spread over the workers).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from conformance.certificate.report import family_of

PREFIX = "hicache-conformance:"
_RANK = {"passed": 0, "skipped": 1, "known defect": 2, "failed": 3}
"""A property's outcome is the worst of its reports' (a teardown error after a pass is a failure)."""


def _count(n: int, noun: str, plural: str) -> str:
    return f"{n} {noun if n == 1 else plural}"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes}:{secs:02d}"


@dataclass
class _Family:
    total: int = 0
    started: float | None = None
    done: Counter[str] = field(default_factory=Counter)


@dataclass
class Progress:
    """Counts and lines for one run: ``expect`` the properties that will run, ``report`` each of
    their test reports; every line goes to ``write``."""

    backend: str
    mode: str
    write: Callable[[str], None]
    clock: Callable[[], float] = time.monotonic
    families: dict[str, _Family] = field(default_factory=dict)
    outcome: dict[str, str] = field(default_factory=dict)
    """Property id -> its worst outcome so far; a property leaves it when it is done."""
    finished: set[str] = field(default_factory=set)
    began: float = 0.0

    def __post_init__(self) -> None:
        self.began = self.clock()

    @property
    def total(self) -> int:
        return sum(f.total for f in self.families.values())

    def expect(self, properties: Iterable[str], seed: int) -> None:
        """The suite properties this run will run (once: every xdist worker collects the same)."""
        if self.families:
            return
        for pid in sorted(properties):
            self.families.setdefault(family_of(pid), _Family()).total += 1
        self.write(
            f"{PREFIX} certifying {self.backend} (mode {self.mode}): "
            f"{_count(self.total, 'property', 'properties')} in "
            f"{_count(len(self.families), 'family', 'families')}, hypothesis seed {seed}"
        )

    def report(self, pid: str, when: str, outcome: str) -> None:
        """One test report of property ``pid``: ``when`` is pytest's phase (``???`` for xdist's
        account of a worker that died), ``outcome`` the report's, in the certificate's words."""
        family = self.families.get(family_of(pid))
        if family is None or pid in self.finished:
            return
        now = self.clock()
        if family.started is None:
            family.started = now
            self.write(
                f"{PREFIX} {family_of(pid)} started: backend {self.backend}, mode {self.mode}, "
                f"{_count(family.total, 'property', 'properties')}; run {self._done()}/{self.total} done, "
                f"{_clock(now - self.began)} elapsed"
            )
        worst = self.outcome.get(pid, "passed")
        self.outcome[pid] = max(worst, outcome, key=lambda o: _RANK.get(o, 0))
        if when not in ("teardown", "???"):
            return
        self.finished.add(pid)
        family.done[self.outcome.pop(pid)] += 1
        count = sum(family.done.values())
        if count == family.total:
            counts = ", ".join(f"{n} {o}" for o, n in sorted(family.done.items(), key=lambda i: _RANK[i[0]]))
            self.write(
                f"{PREFIX} {family_of(pid)} done {count}/{family.total} in {_clock(now - family.started)} "
                f"({counts}); run {self._done()}/{self.total} done, {_clock(now - self.began)} elapsed"
            )

    def _done(self) -> int:
        return len(self.finished)
