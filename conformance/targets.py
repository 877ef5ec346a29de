"""The reference backend's two targets as the suite certifies them: their claims and factories.

The backend ships no certification glue: what it claims, how the suite builds it on a storage
folder, and the S3 server and test credentials its object-store target meets under test live here.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.model.capabilities import SIDE_POOLS, BackendSpec, Capabilities
from conformance.model.interface import HiCacheStorageConfig, PoolHitPolicy
from conformance.servers.s3server import (
    BUCKET_ENV,
    DEFAULT_BUCKET,
    DEFAULTS,
    ENDPOINT_ENV,
    SERVERS,
    BucketPrefix,
    client_settings,
    ensure_endpoint,
    forget_prefix,
    server,
)
from reference_backend import __version__
from reference_backend.backend import NixlBackend
from reference_backend.obj import NixlObjBackend, ObjConfig


def nixl_factory(config: HiCacheStorageConfig, storage_dir: Path) -> NixlBackend:
    """The file target on the suite's storage folder."""
    return NixlBackend(config, storage_dir)


def nixl_obj_factory(config: HiCacheStorageConfig, storage_dir: Path) -> NixlObjBackend:
    """The object-store target: endpoint, bucket and credentials from the environment (see
    :mod:`conformance.servers.s3server`), unless the config names its own."""
    return NixlObjBackend(replace(config, extra_config=on_the_server(config.extra_config)), storage_dir)


def nixl_obj_forget(storage_dir: Path) -> None:
    """Delete the objects a storage location left in the bucket: a run of hundreds of properties
    otherwise fills it, and every listing (clear, counting objects) slows with what it holds."""
    forget_prefix(ObjConfig.from_extra(on_the_server({}), storage_dir).prefix + "/")


def nixl_obj_bucket(storage_dir: Path) -> BucketPrefix:
    """The objects a storage location holds: the suite damages them as it damages files."""
    return BucketPrefix(ObjConfig.from_extra(on_the_server({}), storage_dir).prefix + "/")


def on_the_server(extra_config: dict[str, Any] | None) -> dict[str, Any]:
    """``extra_config`` with the suite's S3 server filled in where it names no endpoint."""
    extra = dict(extra_config or {})
    if "plugin" not in extra and "endpoint_override" not in extra:
        extra.setdefault("bucket", os.environ.get(BUCKET_ENV, DEFAULT_BUCKET))
        extra.setdefault("endpoint_override", os.environ[ENDPOINT_ENV])
        extra.setdefault("access_key", os.environ.get("AWS_ACCESS_KEY_ID", DEFAULTS["AWS_ACCESS_KEY_ID"]))
        extra.setdefault(
            "secret_key", os.environ.get("AWS_SECRET_ACCESS_KEY", DEFAULTS["AWS_SECRET_ACCESS_KEY"])
        )
        extra.setdefault("region", os.environ.get("AWS_REGION", DEFAULTS["AWS_REGION"]))
        for key, value in client_settings().items():
            extra.setdefault(key, value)
    return extra


NIXL_CAPABILITIES = Capabilities(
    v1_kv=True,
    kv_through_v2=True,
    side_pools=SIDE_POOLS,
    hit_policies=frozenset(PoolHitPolicy),
    persistence=True,
    concurrent=True,
    multiprocess=True,
    stores_files=True,
    detects_corruption=True,
    reports_transfer_mode=True,
    enumerates_objects=True,
    decode_context_parallel=True,
    bounded_capacity="max_size",  # issue 18: reference_backend/capacity.py
    budget_spellings=True,  # capacity.parse_size: HiCacheFile's spellings
    eviction_pin_seconds=30.0,
    lease_clock="reference_backend.capacity:lease_clock",
    shares_folder=True,
    refuses_per_pool=True,  # plan.BatchPlanner.v2: a pool's malformed request fails alone
    recency_eviction=True,  # eviction_policy chain (the default) or lru: capacity.Capacity.touch
    io_modes={
        "buffered": {"use_direct_io": False},
        "direct": {"use_direct_io": True},
        "direct-uring": {"use_direct_io": True, "queue": "uring"},
    },
    direct_io_modes=frozenset({"direct", "direct-uring"}),
    config_spellings={  # upstream HiCacheNixl's nested plugin form, flags as JSON strings
        "buffered": ({"use_direct_io": "false", "plugin": {"posix": {"active": "true"}}},),
        "direct": (
            {"use_direct_io": "true", "plugin": {"posix": {"active": True}}},
            # HiCacheNixl's cleaner keys: without max_size, percent of the file system; at 100
            # nothing goes before the disk is full, so the mode is unchanged
            {"use_direct_io": True, "l3_cleaner_high_watermark": 100, "l3_cleaner_low_watermark": 100},
            # what matters only under a budget (no pin after exists, the oldest segment first)
            {"use_direct_io": True, "pin_seconds": 0, "eviction_policy": "fifo"},
        ),
        "direct-uring": (
            {"use_direct_io": "true", "plugin": {"posix": {"active": "true", "use_uring": "true"}}},
            {"use_direct_io": True, "use_uring": "true"},
        ),
    },
    refused_configs=(
        {"plugin": {"gds": {"active": True}}},
        {"plugin": {"posix": {"active": "maybe"}}},
        {"queue": "spdk"},
        {"use_direct_io": True, "use_uring": "sometimes"},
    ),
)

NIXL_OBJ_CAPABILITIES = replace(
    NIXL_CAPABILITIES,
    stores_files=False,
    stores_objects=True,
    reports_transfer_mode=False,
    io_modes={"default": {}},
    direct_io_modes=frozenset(),
    config_spellings={},
    refused_configs=(),
    bounded_capacity="",  # a bucket has no budget of ours, nor pins (issue 18)
    budget_spellings=False,
    eviction_pin_seconds=0.0,
    lease_clock="",
    recency_eviction=False,
)
"""The file target's claims, less what a bucket cannot give the suite: files (its objects are
damaged instead), O_DIRECT, a budget."""

NIXL = BackendSpec("nixl", nixl_factory, NIXL_CAPABILITIES, version=__version__)
NIXL_OBJ = BackendSpec(
    "nixl-obj",
    nixl_obj_factory,
    NIXL_OBJ_CAPABILITIES,
    version=__version__,
    session=ensure_endpoint,
    server=server,
    forget=nixl_obj_forget,
    bucket=nixl_obj_bucket,
    servers=SERVERS,
)
