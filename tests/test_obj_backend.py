"""The object-store target: real NIXL OBJ transfers against moto's S3 server on loopback."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.doubles.kv_pools import MHAHostPool
from conformance.model.interface import HiCacheStorageConfig, PoolName, PoolTransfer

pytest.importorskip("moto", reason="the object-store tests need the obj extra (moto, boto3)")

from conformance.harness.rig import Target
from conformance.servers.s3server import ENDPOINT_ENV, ensure_endpoint, moto_server
from conformance.targets import NIXL_OBJ, nixl_obj_factory
from reference_backend.obj import NixlObjBackend, ObjConfig
from tests.test_reference_backend import PAGES, indices, kv_pool


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with ensure_endpoint():
        yield os.environ[ENDPOINT_ENV]


def config(**extra: Any) -> HiCacheStorageConfig:
    return HiCacheStorageConfig(0, 1, 0, 1, 0, 1, False, False, True, "org/model", extra_config=extra)


@pytest.fixture
def make(endpoint: str, tmp_path: Path) -> Iterator[Any]:
    made: list[NixlObjBackend] = []

    def build(kv: MHAHostPool, where: Path = tmp_path) -> NixlObjBackend:
        backend = nixl_obj_factory(config(), where)
        backend.register_mem_pool_host(kv)
        made.append(backend)
        return backend

    yield build
    for backend in made:
        backend.clear()
        backend.close()


def test_extra_config_takes_upstreams_plugin_form_and_the_flat_form(tmp_path: Path) -> None:
    nested = ObjConfig.from_extra(
        {"plugin": {"obj": {"active": True, "bucket": "b", "endpoint_override": "http://h:9000"}}}, tmp_path
    )
    flat = ObjConfig.from_extra({"bucket": "b", "endpoint_override": "http://h:9000"}, tmp_path)
    assert nested == flat
    assert dict(flat.params) == {"bucket": "b", "endpoint_override": "http://h:9000", "scheme": "http"}
    assert ObjConfig.from_extra({"bucket": "b", "prefix": "team/l3/"}).prefix == "team/l3"


def test_each_storage_location_has_its_own_prefix_the_same_in_every_process(tmp_path: Path) -> None:
    first, again = (ObjConfig.from_extra({"bucket": "b"}, tmp_path / "a") for _ in range(2))
    other = ObjConfig.from_extra({"bucket": "b"}, tmp_path / "b")
    assert first.prefix == again.prefix != other.prefix


def test_a_bucketless_config_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_BUCKET", raising=False)
    with pytest.raises(ValueError, match="bucket"):
        ObjConfig.from_extra({"endpoint_override": "http://h:9000"})


def test_a_batch_with_a_missing_object_still_reads_the_others(make) -> None:
    kv = kv_pool()
    kv.write_page(0, b"\x5a" * kv.page_nbytes())
    backend = make(kv)
    assert backend.batch_set_v1(["here"], indices(kv, [0])) == [True]
    kv.fill(0)
    assert backend.batch_get_v1(["here", "gone"], indices(kv, [1, 2])) == [True, False]
    assert kv.read_page(kv.page_size) == b"\x5a" * kv.page_nbytes()


def _s3(backend: NixlObjBackend) -> Any:
    return backend.obj.client()


def _object(backend: NixlObjBackend, key: str) -> str:
    return backend.object_name(backend.digest(str(PoolName.KV), key), backend.planner.pools[str(PoolName.KV)])


def test_an_object_under_another_entrys_name_is_refused(make) -> None:
    kv = kv_pool()
    backend = make(kv)
    assert backend.batch_set_v1(["a"], indices(kv, [0])) == [True]
    s3 = _s3(backend)
    body = s3.get_object(Bucket=backend.obj.bucket, Key=_object(backend, "a"))["Body"].read()
    s3.put_object(Bucket=backend.obj.bucket, Key=_object(backend, "b"), Body=body)
    assert backend.batch_get_v1(["b"], indices(kv, [1])) == [False]


@pytest.mark.parametrize(
    "keep", [0, 100, 600, -1], ids=["empty", "inside-the-header", "inside-the-record", "one-byte-short"]
)
def test_a_short_object_never_reads_back(make, keep: int) -> None:
    """The OBJ plugin reports a GET past an object's end as done; stale staging must not pass."""
    kv = kv_pool()
    kv.fill(0)  # an all-zero page: a zeroed staging slot would pass its checksum
    backend = make(kv)
    assert backend.batch_set_v1(["a"], indices(kv, [0])) == [True]
    assert backend.batch_get_v1(["a"], indices(kv, [1])) == [True]  # the staging now holds "a"
    s3 = _s3(backend)
    body = s3.get_object(Bucket=backend.obj.bucket, Key=_object(backend, "a"))["Body"].read()
    s3.put_object(Bucket=backend.obj.bucket, Key=_object(backend, "a"), Body=body[:keep])
    kv.fill(0)
    assert backend.batch_get_v1(["a"], indices(kv, [1])) == [False]


def test_entries_are_objects_under_the_prefix_and_clear_removes_only_those(make, tmp_path: Path) -> None:
    kv = kv_pool()
    mine, theirs = make(kv, tmp_path / "mine"), make(kv_pool(), tmp_path / "theirs")
    assert mine.batch_set_v1(list("abc"), indices(kv, [0, 1, 2])) == [True] * 3
    assert theirs.batch_set_v1(["z"], indices(kv, [3])) == [True]
    assert mine.stored_object_count() == 3
    assert mine.clear()
    assert mine.batch_exists(list("abc")) == 0
    assert (mine.stored_object_count(), theirs.stored_object_count()) == (0, 1)


def test_the_suite_leaves_no_objects_behind_a_storage_location_it_is_done_with(make, tmp_path: Path) -> None:
    """``Target.storage`` removes the location's objects as it removes its folder; others' stay."""
    kv = kv_pool()
    elsewhere = make(kv, tmp_path / "elsewhere")
    assert elsewhere.batch_set_v1(["kept"], indices(kv, [0])) == [True]
    with Target(NIXL_OBJ, "default", tmp_path).storage() as location:
        done = make(kv, location)
        assert done.batch_set_v1(["a", "b"], indices(kv, [0, 1])) == [True, True]
        assert done.stored_object_count() == 2
        done.close()
    assert not location.exists() or not any(location.iterdir())
    assert (done.stored_object_count(), elsewhere.stored_object_count()) == (0, 1)


def test_a_multi_pool_batch_is_one_transfer_of_many_objects(make) -> None:
    kv = kv_pool()
    backend = make(kv)
    lane = backend.lanes["WRITE"]
    calls = []
    real = lane.agent.initialize_xfer

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    lane.agent.initialize_xfer = counting
    try:
        transfer = PoolTransfer(name=PoolName.KV, host_indices=indices(kv, range(PAGES)), keys=list("wxyz"))
        assert backend.batch_set_v2([transfer]) == {"kv": [True] * PAGES}
    finally:
        del lane.agent.initialize_xfer
    assert len(calls) == 1


def test_the_loopback_server_is_gone_when_its_block_ends() -> None:
    with moto_server() as url:
        port = int(url.rsplit(":", 1)[1])
        socket.create_connection(("127.0.0.1", port), 1).close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), 1).close()
