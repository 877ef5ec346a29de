"""Operations as round contenders: set-fresh, get (warm, cold), exists, and the mixed workload.

Writes: before every timed write the page cache of every file under the rig is written back and
dropped (untimed), so no contender inherits another's dirty pages; the timed part is the call
plus the writeback of every page the call dirtied (``paired.write_back``), so each round pays its
own writeback. Cold reads drop the contender's files from the page cache first (untimed); under
O_DIRECT there is no page cache and a read is measured once, as ``get``.

A round may time several operations back to back (``calls``), each on its own fresh pages where
it writes, and report the time per operation: one call of a hundred microseconds, timed right
after another contender's, mostly measures the caches that contender evicted. A cold read is cold
once, so it is always one operation.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from conformance.model.interface import PoolTransfer
from tests.benchmarks.contenders import (
    ExistsQuery,
    Limit,
    LimitPlan,
    Rig,
    drop_cache,
    exists_query,
    files_under,
)
from tests.benchmarks.paired import Timed, write_back

TICK_NS = 20_000_000
"""Margin for coarse file mtimes: a file written during a call may carry a stamp this much earlier."""


class Store(Protocol):
    """Ours or HiCacheNixl, as the operations drive them."""

    name: str

    def set(self, transfers: list[PoolTransfer]) -> bool: ...
    def get(self, transfers: list[PoolTransfer]) -> bool: ...
    def exists(self, query: ExistsQuery) -> bool: ...


class Refused(RuntimeError):
    """A contender answered False: its figures would time a failure."""


def _check(ok: bool, who: str, what: str) -> None:
    if not ok:
        raise Refused(f"{who} refused {what}")


@dataclass
class StoreOp:
    """One operation of a backend under the round loop."""

    store: Store
    rig: Rig
    op: str
    batch: int
    durable: bool = True
    calls: int = 1
    name: str = ""
    transfers: list[PoolTransfer] = field(default_factory=list)
    query: ExistsQuery = field(default_factory=lambda: ([], []))
    since: int = 0
    operations: list[Callable[[], None]] = field(default_factory=list)
    """This round's operations, ``calls`` of them, made by ``prepare``: each one can be timed on
    its own (``tests.benchmarks.phases``), and ``call`` runs them all."""

    def __post_init__(self) -> None:
        _check_calls(self.op, self.calls)
        self.name = self.store.name
        if self.op != "set-fresh":
            self.transfers = self.rig.transfers("stored", self.batch)
            _check(self.store.set(self.transfers), self.name, f"a batch of {self.batch}")
            _check(self.store.get(self.transfers), self.name, f"a read of {self.batch}")
            self.query = exists_query(self.transfers)

    def prepare(self, round_no: int) -> None:
        if self.op == "set-fresh":
            fresh = [self.rig.transfers(f"fresh-{round_no}-{c}", self.batch) for c in range(self.calls)]
            self.operations = [functools.partial(self._set, batch) for batch in fresh]
            drop_cache(files_under(self.rig.root))
            self.since = time.time_ns() - TICK_NS
            return
        if self.op == "get-cold":
            drop_cache(files_under(self.rig.folder(self.name)))
        self.operations = [self._exists if self.op == "exists" else self._get] * self.calls

    def call(self) -> None:
        for operation in self.operations:
            operation()

    def _set(self, transfers: list[PoolTransfer]) -> None:
        _check(self.store.set(transfers), self.name, "a fresh batch")

    def _get(self) -> None:
        _check(self.store.get(self.transfers), self.name, "a read")

    def _exists(self) -> None:
        _check(self.store.exists(self.query), self.name, "exists")

    def written(self) -> list[str]:
        if self.op != "set-fresh" or not self.durable:
            return []
        return files_under(self.rig.folder(self.name), self.since)


@dataclass
class LimitOp:
    """The same operation as one raw NIXL transfer (an ``exists`` as one NIXL file query). Every
    fresh write goes to space of the file never written before, as ours' appends do: space freed
    by a truncate waits for the journal before ext4 hands it out again."""

    limit: Limit
    rig: Rig
    op: str
    batch: int
    durable: bool = True
    calls: int = 1
    name: str = "limit"
    operations: list[Callable[[], None]] = field(default_factory=list)
    """This round's operations, made by ``prepare``, as ``StoreOp``'s are."""

    def __post_init__(self) -> None:
        _check_calls(self.op, self.calls)
        self.transfers = self.rig.transfers("limit", self.batch)
        self.first = self.limit.plan(self.transfers)
        self.limit.grow(self.first.extent)
        if self.op != "set-fresh":
            _check(self.limit.move("WRITE", self.first), self.name, "the setup write")

    def prepare(self, round_no: int) -> None:
        if self.op == "set-fresh":
            extent = self.first.extent
            start = (round_no * self.calls + 1) * extent
            plans = [self.limit.plan(self.transfers, start + c * extent) for c in range(self.calls)]
            self.limit.grow(start + self.calls * extent)
            drop_cache(files_under(self.rig.root))
            self.operations = [functools.partial(self._move, "WRITE", plan) for plan in plans]
            return
        if self.op == "get-cold":
            drop_cache([self.limit.path])
        one = self._exists if self.op == "exists" else functools.partial(self._move, "READ", self.first)
        self.operations = [one] * self.calls

    def call(self) -> None:
        for operation in self.operations:
            operation()

    def _move(self, op: str, plan: LimitPlan) -> None:
        _check(self.limit.move(op, plan), self.name, self.op)

    def _exists(self) -> None:
        _check(self.limit.exists(), self.name, "exists")

    def written(self) -> list[str]:
        return [self.limit.path] if self.op == "set-fresh" and self.durable else []


def _check_calls(op: str, calls: int) -> None:
    """A round makes at least one operation, and a cold read only one: the first warms the cache."""
    if calls < 1:
        raise ValueError(f"a round makes at least one operation, not {calls}")
    if op == "get-cold" and calls != 1:
        raise ValueError(f"a cold read is cold once: get-cold cannot be {calls} operations a round")


def mixed(store: Store, rig: Rig, batch: int) -> list[Timed]:
    """Backup (a fresh set, written back) and prefetch (a cold get of other pages) of one batch
    each: one after the other, and at once from two threads as the cache controller runs them."""
    stored = rig.transfers("prefetch", batch, first_page=batch, slot=1)
    _check(store.set(stored), store.name, "the prefetch setup")
    fresh: list[list[PoolTransfer]] = [[]]
    folder = rig.folder(store.name)

    def before(round_no: int) -> None:
        fresh[0] = rig.transfers(f"backup-{round_no}-{time.time_ns()}", batch)
        drop_cache(files_under(rig.root))

    def backup() -> None:
        since = time.time_ns() - TICK_NS
        _check(store.set(fresh[0]), store.name, "a backup")
        write_back(files_under(folder, since))

    def prefetch() -> None:
        _check(store.get(stored), store.name, "a prefetch")

    def sequential() -> None:
        backup()
        prefetch()

    def concurrent() -> None:
        errors: list[BaseException] = []
        threads = [threading.Thread(target=_catching(part, errors)) for part in (backup, prefetch)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    return [Timed("sequential", sequential, before), Timed("concurrent", concurrent, before)]


def _catching(part: Callable[[], None], errors: list[BaseException]) -> Callable[[], None]:
    def run() -> None:
        try:
            part()
        except BaseException as exc:
            errors.append(exc)

    return run
