"""The object-store target beside its own limit: one raw NIXL OBJ transfer of the same objects.

The S3 server is moto on loopback, so the figures measure our overhead over NIXL's OBJ plugin and
that plugin's overhead over an in-memory S3, not a network. Batches stop at 64 pages: moto keeps
every object in its own process's memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.doubles.hostpools import HostPoolDouble
from conformance.model.interface import PoolName, PoolTransfer
from tests.benchmarks.workload import config, fill, hybrid_pools, raw_transfer, transfers

pytest.importorskip("moto", reason="the object-store benchmarks need the obj extra (moto, boto3)")

from conformance.servers.s3server import ensure_endpoint
from conformance.targets import nixl_obj_factory
from reference_backend.obj import NixlObjBackend, object_rows

BATCHES = (1, 8, 64)


@dataclass
class ObjRig:
    backend: NixlObjBackend
    pools: dict[PoolName, HostPoolDouble]

    def transfers(self, batch: int) -> list[PoolTransfer]:
        return transfers(self.pools, batch)

    def raw_plan(self, batch: int, op: str) -> tuple[Any, tuple[Any, Any], Any]:
        """Our objects' descriptors, registered once: the OBJ plugin with no backend around it."""
        lane = self.backend.lanes[op]
        items = [
            i
            for t in self.transfers(batch)
            for i in self.backend.plan(str(t.name), t.keys, t.host_indices) or []
        ]
        for dev, item in enumerate(items):
            item.fd = dev
        agent = lane.agent
        names = agent.register_memory(
            [(0, 0, i.fd, self.backend.object_name(i.digest, i.pool)) for i in items], "OBJ"
        )
        self.backend.stage(lane, items, writing=True)
        dram, obj = object_rows(items)
        return agent, (agent.get_xfer_descs(dram, "DRAM"), agent.get_xfer_descs(obj, "OBJ")), names


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjRig]:
    with ensure_endpoint():
        pools = hybrid_pools(max(BATCHES))
        fill(pools)
        backend = nixl_obj_factory(config("buffered", "aio"), Path(tmp_path_factory.mktemp("bench-obj")))
        for name, pool in pools.items():
            backend.register_mem_host_pool_v2(pool, name)
        yield ObjRig(backend, pools)
        backend.clear()
        backend.close()


def _info(benchmark: Any, rig: ObjRig, op: str, batch: int, impl: str) -> None:
    benchmark.group = f"{op} s3-moto batch={batch}"
    nbytes = sum(pool.page_nbytes() for pool in rig.pools.values()) * batch
    benchmark.extra_info.update(op=op, mode="s3", queue="moto", batch=batch, impl=impl, bytes=nbytes)


@pytest.mark.parametrize("batch", BATCHES)
def test_obj_set_ours(benchmark: Any, rig: ObjRig, batch: int) -> None:
    _info(benchmark, rig, "set", batch, "ours")
    result = benchmark(rig.backend.batch_set_v2, rig.transfers(batch))
    assert all(all(v) for v in result.values())


@pytest.mark.parametrize("batch", BATCHES)
def test_obj_get_ours(benchmark: Any, rig: ObjRig, batch: int) -> None:
    _info(benchmark, rig, "get-warm", batch, "ours")
    transfers = rig.transfers(batch)
    assert all(all(v) for v in rig.backend.batch_set_v2(transfers).values())
    result = benchmark(rig.backend.batch_get_v2, transfers)
    assert all(all(v) for v in result.values())


@pytest.mark.parametrize("op", ["WRITE", "READ"])
@pytest.mark.parametrize("batch", BATCHES)
def test_obj_limit(benchmark: Any, rig: ObjRig, batch: int, op: str) -> None:
    _info(benchmark, rig, "set" if op == "WRITE" else "get-warm", batch, "limit")
    if op == "READ":
        assert all(all(v) for v in rig.backend.batch_set_v2(rig.transfers(batch)).values())
    agent, descs, names = rig.raw_plan(batch, op)
    try:
        benchmark(raw_transfer, agent, op, descs)
    finally:
        agent.deregister_memory(names)
