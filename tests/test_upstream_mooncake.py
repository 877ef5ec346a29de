"""``sglang-mooncake``'s plumbing: isolation enforced, one key prefix per location, and a cluster
that holds memory for other clients and goes when the session ends.

The backend is certified inside a network namespace (``--backend=sglang-mooncake``); the cluster
test makes one (``unshare -n``, as root) and is skipped where Mooncake is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conformance.upstream.mooncake_cluster import ISOLATION, mooncake_cluster, network_isolated


def test_each_location_has_its_own_key_prefix(tmp_path: Path) -> None:
    from conformance.upstream.mooncake import location_tag

    one, two = tmp_path / "one", tmp_path / "two"
    assert location_tag(one) == location_tag(one) != location_tag(two)
    assert location_tag(one).isalnum()  # nothing SGLang's "_"-joined key prefix would split on


@pytest.mark.skipif(network_isolated(), reason="this process is already in an isolated namespace")
def test_outside_an_isolated_namespace_no_cluster_starts() -> None:
    with pytest.raises(RuntimeError, match="network namespace"), mooncake_cluster():
        pass  # pragma: no cover


def _unshare() -> Any:
    if importlib.util.find_spec("mooncake") is None:
        pytest.skip("Mooncake is not installed (requirements/mooncake.txt)")
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("making a network namespace needs root and unshare")
    return shutil.which("unshare")


CLUSTER = textwrap.dedent(
    """
    import os
    from mooncake.store import MooncakeDistributedStore
    from conformance.upstream.mooncake_cluster import CLIENT_SETTINGS, MASTER_ENV, mooncake_cluster


    def children():
        mine = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                        mine.append(pid)
            except OSError:
                pass
        return mine


    with mooncake_cluster():
        assert len(children()) == 2, children()  # the master and the segment holder
        master = os.environ[MASTER_ENV]
        for turn in ("put", "get"):  # two clients in turn, neither with memory of its own
            client = MooncakeDistributedStore()
            settings = CLIENT_SETTINGS["metadata_server"], 0, 1 << 20, CLIENT_SETTINGS["protocol"], ""
            code = client.setup("127.0.0.1", *settings, master)
            assert code == 0, code
            if turn == "put":
                assert client.put("k", b"held by the cluster") == 0
            else:
                assert client.get("k") == b"held by the cluster"
            del client
    assert MASTER_ENV not in os.environ
    assert children() == [], children()  # both stopped by their pids
    """
)


def test_the_cluster_holds_entries_for_later_clients_and_stops_with_the_session() -> None:
    unshare = _unshare()
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [unshare, "-n", "sh", "-c", f'ip link set lo up && exec "{sys.executable}" -c "$0"', CLUSTER],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_refusal_says_how_to_run() -> None:
    assert "unshare -n" in ISOLATION and "ip link set lo up" in ISOLATION


def test_the_swa_pool_is_drawn_only_in_the_shapes_sglang_hands_mooncake(tmp_path: Path) -> None:
    """Mooncake keys an MHA model's SWA pool as K and V halves: the adversarial geometry's generic
    multi-region ``swa`` (no SGLang class) is not drawn for it, MiMo-V2's MHA SWA pool is."""
    from conformance.harness.geometry import load_geometry
    from conformance.harness.rig import Target
    from conformance.model.interface import PoolName
    from conformance.upstream.mooncake import SGLANG_MOONCAKE

    target = Target(SGLANG_MOONCAKE, "tcp", tmp_path)
    adversarial = [p.name for p in target.usable_pools(load_geometry("adversarial"))]
    assert PoolName.SWA not in adversarial and adversarial  # its other side pools stay
    assert PoolName.SWA in [p.name for p in target.usable_pools(load_geometry("mimo_v2_swa_mtp"))]
