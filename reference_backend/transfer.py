"""NIXL transfers and the registrations they need.

A lane is one direction's NIXL agent with what it has registered: the spans of zero-copy host
pools, its staging buffers and the segment files it has moved bytes to or from. NIXL agents are
not thread-safe, so only the lane that owns an agent registers with it, under the lane's lock.

A transfer is posted, then waited for: whoever posts it may work meanwhile (a write checksums
the bytes the kernel is writing) before ``wait``. ``all_or_each`` retries a failed batch item by
item, for exact per-key results. A read of many pages goes in chunks so that checking the bytes
overlaps moving the rest: ``pipelined`` posts every chunk at once (O_DIRECT, where the kernel
moves them meanwhile), ``overlapped`` moves them one by one and checks each on a helper thread
(buffered, where a chunk's copy is made inside its post, which lets go of the GIL).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from reference_backend.log import Segment, SegmentLog
from reference_backend.staging import Staging

T = TypeVar("T")


class SegmentFiles:
    """One agent's registrations of segment files, each holding its segment's descriptor open in
    the log while registered."""

    def __init__(self, agent: Any, log: SegmentLog) -> None:
        self.agent, self.log = agent, log
        self._regs: dict[Segment, Any] = {}

    def register(self, segment: Segment) -> bool:
        """Register ``segment`` once; False when it is retired or NIXL refuses it."""
        if segment in self._regs:
            return True
        if not self.log.hold(segment):
            return False
        try:
            self._regs[segment] = self.agent.register_memory([(0, 0, segment.fd, "")], "FILE")
        except Exception:  # NIXL refused the file: that segment is unusable, not the backend
            self.log.let_go(segment)
            return False
        return True

    def drop_retired(self) -> None:
        """Deregister the segments the log retired, so that it may close them."""
        for segment in [s for s in self._regs if s.retired]:
            self._drop(segment)

    def close(self) -> None:
        for segment in list(self._regs):
            self._drop(segment)

    def _drop(self, segment: Segment) -> None:
        with contextlib.suppress(Exception):
            self.agent.deregister_memory(self._regs.pop(segment))
        self.log.let_go(segment)


@dataclass
class Lane:
    """One direction's NIXL agent and lock, with the registrations that agent holds."""

    agent: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    staging: Staging = field(init=False)
    files: SegmentFiles | None = None
    """Segment files registered with the agent (file targets only)."""
    spans: list[Any] = field(default_factory=list)
    """Registrations of zero-copy host pools' memory."""
    _helper: ThreadPoolExecutor | None = None

    def __post_init__(self) -> None:
        self.staging = Staging(self.agent)

    def helper(self) -> ThreadPoolExecutor:
        """This lane's thread for checksums that run beside a buffered copy, started on first use."""
        if self._helper is None:
            self._helper = ThreadPoolExecutor(1, thread_name_prefix="hicache-checksum")
        return self._helper

    def register_spans(self, spans: list[tuple[int, int]]) -> None:
        """Register host memory pages move in place from or to."""
        self.spans.append(self.agent.register_memory([(at, n, 0, "") for at, n in spans], "DRAM"))

    def close(self) -> None:
        """Release every registration; the caller guarantees no transfer is in flight."""
        if self.files is not None:
            self.files.close()
        self.staging.close()
        for reg in self.spans:
            self.agent.deregister_memory(reg)
        self.spans.clear()
        if self._helper is not None:
            self._helper.shutdown()

    def post(self, op: str, dram: np.ndarray, remote: np.ndarray, kind: str) -> Posted:
        """Start one transfer of rows ``dram`` to or from rows ``remote`` of memory type ``kind``."""
        agent = self.agent
        handle = agent.initialize_xfer(
            op, agent.get_xfer_descs(dram, "DRAM"), agent.get_xfer_descs(remote, kind), agent.name
        )
        posted = Posted(agent, handle)
        try:
            posted.state = agent.transfer(handle)
        except Exception:
            posted.release()
            raise
        return posted


@dataclass
class Posted:
    """One transfer in flight; ``wait`` for it, then ``release`` it (or use it as a context)."""

    agent: Any
    handle: Any
    state: str = "ERR"

    def wait(self) -> bool:
        """True when every byte moved.

        Polls, giving up the CPU between polls: a poll that never yields made one-page O_DIRECT
        writes slow, most likely (inferred, not traced) by holding the CPU a kernel worker that
        finishes a write into new space is bound to, until the scheduler's tick. Such sets took
        3-4 ms in runs of calls, and 0.5 ms otherwise; yielding, 0-1 calls in 400 did, against 16-63
        (interleaved)."""
        try:
            while self.state == "PROC":
                os.sched_yield()
                self.state = self.agent.check_xfer_state(self.handle)
        except Exception:  # NIXL raises its own binding errors for any I/O failure
            self.state = "ERR"
        return self.state == "DONE"

    def release(self) -> None:
        if self.handle is not None:
            self.agent.release_xfer_handle(self.handle)
            self.handle = None

    def __enter__(self) -> Posted:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def all_or_each(
    items: Sequence[T], attempt: Callable[[list[T]], bool], then: Callable[[T], bool] = lambda item: True
) -> dict[int, bool]:
    """Try every item in one ``attempt`` and finish each with ``then``; if that fails, each item on
    its own, finished before the next attempt reuses the staging buffers. A lone item is tried once."""
    if not items:
        return {}
    if attempt(list(items)):
        return {id(i): then(i) for i in items}
    if len(items) == 1:
        return {id(items[0]): False}
    return {id(i): attempt([i]) and then(i) for i in items}


def cut(items: Sequence[T], shares: Sequence[float], size: Callable[[T], int]) -> list[list[T]]:
    """``items`` cut into at most ``len(shares)`` chunks whose bytes follow ``shares``, largest
    items first.

    Checking the last chunk to land overlaps nothing, and a chunk far over its share delays
    every later one: cut by item count, an 18-MiB Mamba state beside 768-KiB KV pages made its
    chunk a third of the batch. An item larger than its share is a chunk of its own; the rest
    share the bytes left, in proportion to the shares left. Items of one size keep their order
    (their records' file order).
    """
    sizes = [size(i) for i in items]
    order = sorted(range(len(items)), key=sizes.__getitem__, reverse=True)  # stable
    left = sum(sizes)
    rest = [sum(shares[k:]) for k in range(len(shares))]
    chunks: list[list[T]] = []
    chunk: list[T] = []
    held = 0
    for at in order:
        chunk.append(items[at])
        held += sizes[at]
        k = len(chunks)
        if k < len(shares) - 1 and held * rest[k] >= left * shares[k]:
            chunks.append(chunk)
            left -= held
            chunk, held = [], 0
    return [*chunks, chunk] if chunk else chunks


def pipelined(
    lane: Lane,
    op: str,
    chunks: list[list[T]],
    rows: Callable[[list[T]], tuple[np.ndarray, np.ndarray]],
    kind: str,
    then: Callable[[T], bool],
) -> dict[int, bool] | None:
    """Post every chunk as a transfer of its own at once, then finish each chunk's items with
    ``then`` as it lands, while the later ones are still in flight. None (every transfer waited for
    and released) when any of them fails."""
    posted: list[tuple[list[T], Posted | None]] = []
    try:
        for chunk in chunks:
            posted.append((chunk, lane.post(op, *rows(chunk), kind)))
    except Exception:  # NIXL raises its own binding errors for any I/O failure
        posted.append(([], None))
    done: dict[int, bool] = {}
    whole = True
    for chunk, transfer in posted:
        whole = whole and transfer is not None and transfer.wait()
        if whole:
            done.update(_finish(chunk, then))
    for _, transfer in posted:
        if transfer is not None:
            transfer.release()
    return done if whole else None


def overlapped(
    lane: Lane,
    op: str,
    chunks: list[list[T]],
    rows: Callable[[list[T]], tuple[np.ndarray, np.ndarray]],
    kind: str,
    then: Callable[[T], bool],
) -> dict[int, bool] | None:
    """Move the chunks one after another on this thread and finish each chunk's items with
    ``then`` on the lane's helper thread as soon as it has landed, beside the next chunk's move.
    Every chunk handed to the helper is finished before this returns (so staging is free again).
    None when any transfer fails."""
    finishing: list[Future[dict[int, bool]]] = []
    whole = True
    try:
        for chunk in chunks:
            try:
                with lane.post(op, *rows(chunk), kind) as moving:
                    whole = moving.wait()
            except Exception:  # NIXL raises its own binding errors for any I/O failure
                whole = False
            if not whole:
                break
            finishing.append(lane.helper().submit(_finish, chunk, then))
    finally:
        done: dict[int, bool] = {}
        for finished in finishing:
            done.update(finished.result())
    return done if whole else None


def _finish(chunk: list[T], then: Callable[[T], bool]) -> dict[int, bool]:
    return {id(i): then(i) for i in chunk}
