"""Ceph's RADOS Gateway on loopback: a one-host Ceph cluster for a test session, then gone.

``rgw_server()`` builds a cluster in a temporary folder from the Debian packages (``radosgw``,
``ceph-mon``, ``ceph-osd``): one monitor, one OSD on memstore (objects in the OSD's memory), one
gateway with the suite's test credentials as an S3 user. Every daemon binds 127.0.0.1 only (the
monitor and the gateway to the ports given, the OSD's messengers to its public and cluster address,
both loopback), so no network namespace is needed and the tests reach the gateway from the host.
Authentication inside the cluster is off (``auth none``: nothing outside loopback reaches it). The
daemons run in the foreground, are stopped by their process ids (gateway, OSD, monitor), and the
folder with the cluster's maps, OSD store, sockets and logs is removed after them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from conformance.servers.services import LOOPBACK, free_port, running

BINARIES = ("monmaptool", "ceph-mon", "ceph", "ceph-osd", "radosgw-admin", "radosgw")
"""What the cluster is built with: Debian's ``radosgw``, ``ceph-mon`` and ``ceph-osd`` packages."""
INSTALL = "apt-get install radosgw ceph-mon ceph-osd"

CONFIG = """\
[global]
fsid = {fsid}
mon_host = v2:{host}:{mon_port}
public_addr = {host}
cluster_addr = {host}
ms_bind_msgr1 = false
ms_mon_client_mode = crc
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
run_dir = {root}/run
admin_socket = {root}/run/$name.asok
log_file = {root}/log/$name.log
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_allow_pool_size_one = true
mon_data_avail_warn = 1
paxos_propose_interval = 0.1
osd_objectstore = memstore
memstore_device_bytes = {store_bytes}
debug_rgw = 0
[mon.a]
mon_data = {root}/mon
[osd.0]
osd_data = {root}/osd
[client.rgw]
rgw_frontends = beast endpoint={host}:{rgw_port} tcp_nodelay=1
rgw_data = {root}/rgw
"""
"""The cluster's ``ceph.conf``. msgr2 only (an OSD without a v2 address is never marked up);
``auth none`` offers no secure mode, so the gateway's monitor connections ask for crc; one replica
and eight placement groups a pool fit one OSD; no manager, so no autoscaler; a monitor that
proposes every 0.1 s, not 1 s, creates the gateway's pools in a second, not nine; and the gateway
sends small answers at once (``tcp_nodelay``: without it a GET of 10 KB on a kept-alive connection
takes 50 ms, Nagle's algorithm waiting on the client's delayed ACK, against 4 ms)."""


@dataclass(frozen=True)
class Cluster:
    """A running gateway: its S3 endpoint, the folder holding the cluster, its daemons' pids."""

    endpoint: str
    root: Path
    pids: tuple[int, ...]


def missing() -> list[str]:
    """The binaries this machine lacks to build a cluster (empty where it can)."""
    return [b for b in BINARIES if shutil.which(b) is None]


@functools.cache
def version() -> str:
    """The installed gateway's Ceph version, ``16.2.15``."""
    out = subprocess.run(["radosgw", "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[2]


def _admin(path: Path, prefix: str) -> dict[str, object]:
    """One command on a daemon's admin socket: the request ends in a NUL, the answer is its
    length (4 bytes, big-endian) then JSON."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(str(path))
        s.sendall(json.dumps({"prefix": prefix}).encode() + b"\0")
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"{path} closed after {len(data)} bytes")
            data += chunk
        return dict(json.loads(data[4:]))


def _active(asok: Path) -> bool:
    """The OSD has booted: the monitor marked it up and it serves its placement groups."""
    with contextlib.suppress(OSError, ValueError):
        return _admin(asok, "status").get("state") == "active"
    return False


def _run(argv: list[str], conf: Path, deadline: float) -> str:
    """A Ceph command-line tool on the cluster, within the time left; its output, or why not."""
    try:
        done = subprocess.run(
            [argv[0], "-c", str(conf), *argv[1:]],
            capture_output=True,
            text=True,
            timeout=max(deadline - time.monotonic(), 1.0),
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{' '.join(argv)} did not finish in time") from exc
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-800:]}")
    return done.stdout


@contextlib.contextmanager
def rgw_server(
    access_key: str, secret_key: str, *, timeout: float = 120.0, store_bytes: int = 4 << 30
) -> Iterator[Cluster]:
    """Run a one-host Ceph cluster with a gateway on loopback until the block ends.

    ``access_key`` and ``secret_key`` become an S3 user's keys. ``store_bytes`` is the capacity
    the OSD reports (memstore holds objects in memory, so only what is stored costs memory).
    """
    if lacking := missing():
        raise RuntimeError(f"Ceph's gateway needs {', '.join(lacking)}: {INSTALL}")
    deadline = time.monotonic() + timeout
    with (
        tempfile.TemporaryDirectory(prefix="hicache-rgw-") as folder,
        contextlib.ExitStack() as daemons,
    ):
        root = Path(folder)
        for sub in ("run", "log", "mon", "osd", "rgw"):
            (root / sub).mkdir()
        fsid, osd_uuid = uuid.uuid4(), uuid.uuid4()
        mon_port, rgw_port = free_port(), free_port()
        conf = root / "ceph.conf"
        conf.write_text(
            CONFIG.format(
                fsid=fsid,
                host=LOOPBACK,
                mon_port=mon_port,
                rgw_port=rgw_port,
                root=root,
                store_bytes=store_bytes,
            )
        )
        monmap = str(root / "monmap")
        subprocess.run(
            [
                "monmaptool",
                "--create",
                "--add",
                "a",
                f"v2:{LOOPBACK}:{mon_port}",
                "--fsid",
                str(fsid),
                monmap,
            ],
            capture_output=True,
            check=True,
        )
        _run(["ceph-mon", "-i", "a", "--mkfs", "--monmap", monmap], conf, deadline)
        left = deadline - time.monotonic()
        pids = [
            daemons.enter_context(
                running(
                    ["ceph-mon", "-c", str(conf), "-i", "a", "-d"], mon_port, what="ceph-mon", timeout=left
                )
            )
        ]
        osd = _run(["ceph", "--connect-timeout", "30", "osd", "new", str(osd_uuid)], conf, deadline).strip()
        _run(["ceph-osd", "-i", osd, "--mkfs", "--osd-uuid", str(osd_uuid)], conf, deadline)
        asok = root / "run" / f"osd.{osd}.asok"
        left = deadline - time.monotonic()
        pids.append(
            daemons.enter_context(
                running(
                    ["ceph-osd", "-c", str(conf), "-i", osd, "-d"],
                    0,
                    what="ceph-osd",
                    timeout=left,
                    ready=lambda: _active(asok),
                )
            )
        )
        user = ["--uid", "hicache", "--display-name", "hicache", "--access-key", access_key]
        _run(
            ["radosgw-admin", "-n", "client.rgw", "user", "create", *user, "--secret-key", secret_key],
            conf,
            deadline,
        )
        left = deadline - time.monotonic()
        argv = ["radosgw", "-c", str(conf), "-n", "client.rgw", "-d"]
        pids.append(daemons.enter_context(running(argv, rgw_port, what="radosgw", timeout=left)))
        yield Cluster(f"http://{LOOPBACK}:{rgw_port}", root, tuple(pids))
