"""A Mooncake cluster for one test session: ``mooncake_master`` and a segment holder, on loopback.

Mooncake keeps objects in memory segments that clients mount; a store whose own client mounts
nothing (``global_segment_size`` 0) puts and gets over Mooncake's TCP transport into a segment
another process holds. The session runs that process (``python -m
conformance.upstream.mooncake_cluster MASTER BYTES``), so an entry outlives the instance that
stored it, as it does in a deployment where the memory belongs to other nodes.

Mooncake's transfer engine listens on 0.0.0.0 whatever address it is given, so the session refuses
to start outside a network namespace whose only interface is loopback; run the certification as
``unshare -n sh -c 'ip link set lo up && python -m pytest --backend=sglang-mooncake ...'``. The
master's address goes into the environment, so the suite's child processes (in the same namespace)
reach the same cluster; each xdist worker starts its own, since keys are global to a master.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import sysconfig
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from conformance.servers.services import LOOPBACK, environment, free_port, running

MASTER_ENV = "HICACHE_MOONCAKE_MASTER"
"""``host:port`` of the session's master; the suite's child processes read it from here."""
SEGMENT_BYTES = 4 << 30
"""Memory the holder mounts (touched only as entries arrive): every entry a worker's session stores
fits below the master's eviction watermark, so nothing is evicted; the session checks that it was not."""
CLIENT_SETTINGS = {"metadata_server": "P2PHANDSHAKE", "protocol": "tcp", "device_name": ""}
"""Mooncake's TCP transport with peer-to-peer handshakes: no RDMA device, no metadata service."""
ISOLATION = (
    "Mooncake's transfer engine listens on 0.0.0.0 whatever it is told: run it in a network "
    "namespace with only loopback up, e.g. unshare -n sh -c 'ip link set lo up && python -m pytest "
    "--backend=sglang-mooncake ...' (as root)"
)


def network_isolated() -> bool:
    """Whether this process's network namespace has no interface but loopback (asked of the kernel:
    /sys/class/net shows the namespace sysfs was mounted in)."""
    return [name for _, name in socket.if_nameindex()] == ["lo"]


def require_isolation() -> None:
    if not network_isolated():
        raise RuntimeError(ISOLATION)


def _master_binary() -> str:
    beside = Path(sysconfig.get_path("scripts")) / "mooncake_master"
    found = str(beside) if beside.exists() else shutil.which("mooncake_master")
    if not found:
        raise RuntimeError("mooncake_master not found: pip install -r requirements/mooncake.txt")
    return found


def _segment_mounted(metrics_port: int) -> bool:
    """The master lists a mounted segment (SGLang's ``check_server`` asks the same)."""
    url = f"http://{LOOPBACK}:{metrics_port}/get_all_segments"
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            return bool(reply.read().strip())
    except OSError:
        return False


def _master_metrics(metrics_port: int) -> dict[str, float]:
    """The master's Prometheus counters and gauges, by name."""
    with urllib.request.urlopen(f"http://{LOOPBACK}:{metrics_port}/metrics", timeout=5) as reply:
        lines = reply.read().decode().splitlines()
    return {
        name: float(value)
        for name, _, value in (line.partition(" ") for line in lines)
        if name and not name.startswith("#") and "{" not in name
    }


def require_no_eviction(metrics_port: int) -> None:
    """Fail the session if the master evicted anything: an evicted entry reads as lost, so every
    property that ran after it would blame the backend for the suite's undersized cluster."""
    metrics = _master_metrics(metrics_port)
    evicted = int(metrics.get("master_evicted_key_count", 0))
    if evicted:
        raise RuntimeError(
            f"the session's Mooncake master evicted {evicted} objects "
            f"({int(metrics.get('master_allocated_bytes', 0))} of "
            f"{int(metrics.get('master_total_capacity_bytes', 0))} bytes in use at the end): "
            "properties that lost entries after that measured the cluster's size, not the backend; "
            "raise SEGMENT_BYTES"
        )


@contextlib.contextmanager
def mooncake_cluster() -> Iterator[None]:
    """This session's master and segment holder, unless the environment names one (a child)."""
    require_isolation()
    if MASTER_ENV in os.environ:
        yield
        return
    rpc, metrics = free_port(), free_port()
    master = f"{LOOPBACK}:{rpc}"
    master_argv = [
        _master_binary(),
        f"--rpc_address={LOOPBACK}",
        f"--rpc_port={rpc}",
        f"--metrics_host={LOOPBACK}",
        f"--metrics_port={metrics}",
        "--enable_http_metadata_server=false",
    ]
    holder_argv = [sys.executable, "-m", "conformance.upstream.mooncake_cluster", master, str(SEGMENT_BYTES)]
    with (
        running(master_argv, rpc, what="mooncake_master"),
        running(
            holder_argv,
            metrics,
            what="the Mooncake segment holder",
            timeout=120,
            ready=lambda: _segment_mounted(metrics),
        ),
        environment({MASTER_ENV: master}),
    ):
        yield
        require_no_eviction(metrics)


def main(master: str, segment_bytes: int) -> None:
    """Mount ``segment_bytes`` of memory into the cluster at ``master``, until SIGTERM."""
    require_isolation()
    from mooncake.store import MooncakeDistributedStore

    store = MooncakeDistributedStore()
    code = store.setup(
        LOOPBACK,
        CLIENT_SETTINGS["metadata_server"],
        segment_bytes,
        16 << 20,
        CLIENT_SETTINGS["protocol"],
        CLIENT_SETTINGS["device_name"],
        master,
    )
    if code:
        raise SystemExit(f"Mooncake segment holder: setup failed with code {code}")
    signal.pause()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
