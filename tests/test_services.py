"""Services a backend needs die with the test run that started them, however it ends.

A real pytest process runs a real server through ``services.running``; the run is then ended
from outside with SIGTERM, as ``pkill`` or a cancelled CI job ends it, when no cleanup code runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SERVER = (
    "import socket, sys, time; s = socket.socket(); "
    "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); time.sleep(600)"
)
RUN = f"""
import sys, time
from conformance.servers.services import free_port, running
port = free_port()
with running([sys.executable, "-c", {SERVER!r}, str(port)], port, what="a test server") as pid:
    print(pid, flush=True)
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie nobody has reaped yet."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_a_service_dies_when_its_run_is_terminated() -> None:
    run = subprocess.Popen([sys.executable, "-c", RUN], stdout=subprocess.PIPE, text=True)
    server = 0
    try:
        assert run.stdout is not None
        server = int(run.stdout.readline())
        assert _alive(server)
        os.kill(run.pid, signal.SIGTERM)
        assert run.wait(30) == -signal.SIGTERM, "the run still ends as SIGTERM ends it"
        deadline = time.monotonic() + 10
        while _alive(server) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(server), f"server {server} outlived the run that started it"
    finally:
        run.kill()
        run.wait()
        if server and _alive(server):
            os.kill(server, signal.SIGKILL)
