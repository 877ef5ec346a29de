"""``sglang-seaweedfs``: SGLang's ``SeaweedFSStore`` under the suite, against S3 on loopback.

SeaweedFS is reached through its S3 gateway, so the store is a boto3 client: the suite runs it
against the S3 server the project already uses for its own object-store target (moto on
127.0.0.1, or Ceph's RADOS Gateway with ``HICACHE_S3_SERVER=rgw``, started for the session by
``conformance.servers.s3server``, or the endpoint in ``HICACHE_S3_ENDPOINT``). Each storage location is
its own key prefix in the session's bucket (``prefix`` is SeaweedFS's own setting), so locations
never see each other's objects and a restart on the same location finds its own.

Claims, read from ``sglang/srt/mem_cache/storage/seaweedfs/seaweedfs_store.py`` (0.5.23): KV
through v1 (zero-copy from the pool's buffers) and through v2 under the same object name, every
side pool through v2 as ``<key>.<pool>``, ALL_PAGES and TRAILING_PAGES, ``restorable_prefix_pages``
never filled, a set replaces the object (PutObject), a thread pool of boto3 calls, and objects
that any instance in any process reads, and deployments of different models sharing a location
(every key carries the model name; ``clear()`` deletes only its own model's and rank's prefix).
Nothing lives in the storage folder (``stores_files`` not claimed).
"""

from __future__ import annotations

import hashlib
import importlib
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.model.capabilities import SIDE_POOLS, BackendSpec, Capabilities
from conformance.model.interface import HiCacheStorageConfig, PoolHitPolicy
from conformance.model.sglang import sglang
from conformance.servers.s3server import (
    BUCKET_ENV,
    ENDPOINT_ENV,
    SERVERS,
    BucketPrefix,
    ensure_endpoint,
    forget_prefix,
    server,
)
from conformance.upstream.adapters import VERSION, UpstreamAdapter, to_sglang_config
from conformance.upstream.host_pools import build_pool
from conformance.upstream.seaweedfs_defects import SGLANG_SEAWEEDFS_DEFECTS

MODULE = "sglang.srt.mem_cache.storage.seaweedfs.seaweedfs_store"


def location_prefix(storage: Path) -> str:
    """The key prefix of one storage location: a digest of its folder, the same in every process."""
    return "loc-" + hashlib.sha256(os.fsencode(storage.resolve())).hexdigest()[:24]


def seaweedfs_factory(config: HiCacheStorageConfig, storage_dir: Path) -> UpstreamAdapter:
    """One ``SeaweedFSStore`` on the session's S3 server, scoped to the storage location."""
    sglang()
    store = importlib.import_module(MODULE).SeaweedFSStore
    extra = {
        **(config.extra_config or {}),
        "endpoint": os.environ[ENDPOINT_ENV],
        "bucket": os.environ[BUCKET_ENV],
        "access_key": os.environ["AWS_ACCESS_KEY_ID"],
        "secret_key": os.environ["AWS_SECRET_ACCESS_KEY"],
        "region": os.environ["AWS_REGION"],
        "prefix": location_prefix(storage_dir),
    }
    return UpstreamAdapter(store(to_sglang_config(replace(config, extra_config=extra))))


def _forget(storage: Path) -> None:
    """The location's objects go when the suite is done with it (``BackendSpec.forget``)."""
    forget_prefix(location_prefix(storage))


def _bucket(storage: Path) -> BucketPrefix:
    """The location's objects, which the damage properties shorten (``BackendSpec.bucket``)."""
    return BucketPrefix(location_prefix(storage))


def _session() -> Any:
    return ensure_endpoint()


SGLANG_SEAWEEDFS = BackendSpec(
    "sglang-seaweedfs",
    seaweedfs_factory,
    Capabilities(
        v1_kv=True,
        kv_through_v2=True,
        side_pools=SIDE_POOLS,
        hit_policies=frozenset({PoolHitPolicy.ALL_PAGES, PoolHitPolicy.TRAILING_PAGES}),
        persistence=True,
        concurrent=True,
        multiprocess=True,
        fills_restorable_prefix=False,
        shares_folder=True,  # every key carries the model name, and clear() deletes only its own prefix
        stores_objects=True,
        io_modes={"s3": {"max_workers": 4}},
    ),
    version=VERSION,
    build_pool=build_pool,
    known_defects=SGLANG_SEAWEEDFS_DEFECTS,
    session=_session,
    server=server,
    servers=SERVERS,
    forget=_forget,
    bucket=_bucket,
)
