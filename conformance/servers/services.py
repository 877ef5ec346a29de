"""Servers a backend needs, run for one test session on loopback and stopped by pid.

A backend whose store is a service (an S3 server, HF3FS's metadata server, Mooncake's master)
starts it from its ``BackendSpec.session``; the service's address goes into the environment, so
the suite's child processes reach the same one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType

LOOPBACK = "127.0.0.1"
_RUNNING: set[subprocess.Popen[bytes]] = set()
"""Every service this process runs now, for ``kill_all``."""


def free_port() -> int:
    """A port nothing listens on at the moment, on loopback."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 0.2):
        return True
    return False


@contextlib.contextmanager
def running(
    argv: Sequence[str],
    port: int,
    *,
    what: str,
    timeout: float = 60.0,
    ready: Callable[[], bool] | None = None,
) -> Iterator[int]:
    """Run ``argv`` until the block ends, once it listens on ``port``; yields its pid.

    ``ready``, when given, replaces the port test (a process with no port of its own, such as a
    client that serves memory, is ready when its server says so). Its output goes to a temporary
    file (a pipe nobody reads would stall a chatty server), whose tail explains a server that never
    gets ready. It is stopped by its pid: SIGTERM, then SIGKILL.
    """
    is_ready = ready or (lambda: _listening(port))
    with _killed_with_us(), tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(list(argv), stdout=log, stderr=subprocess.STDOUT)
        _RUNNING.add(proc)
        try:
            deadline = time.monotonic() + timeout
            while not is_ready():
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    proc.wait()
                    log.seek(0)
                    tail = log.read().decode(errors="replace")[-800:]
                    raise RuntimeError(
                        f"{what} was not ready on {LOOPBACK}:{port} (exit {proc.returncode}): {tail}"
                    )
                time.sleep(0.1)
            yield proc.pid
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            _RUNNING.discard(proc)


def kill_all() -> None:
    """Kill every service this process runs, by pid: a process about to exit without its cleanup
    (a property that overran its time limit) leaves no server behind."""
    for proc in list(_RUNNING):
        with contextlib.suppress(OSError):
            proc.kill()


@contextlib.contextmanager
def _killed_with_us() -> Iterator[None]:
    """While the block runs, a SIGTERM to this process (``pkill``, a cancelled CI job) kills every
    service first: the process ends without its cleanup, and a server left behind would outlive
    the run. A handler set before is chained; an ignored SIGTERM, or a block off the main thread
    (only that thread may set handlers), is left as it is."""
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        kill_all()
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the block, then put back what was there."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
