"""``NixlObjBackend``: the reference backend on an S3-compatible object store, through NIXL's OBJ plugin.

When L3 outgrows one machine's disk it lives on shared storage. The OBJ plugin speaks S3, so
entries can sit in Ceph RGW, MinIO or AWS S3 with no network code of ours on the data path.

S3 has no append and no partial write: one NIXL write descriptor PUTs one whole object. So the
store is one object per entry, named by the entry's digest (keys never reach object names):

    [512-byte header: magic, entry digest, geometry tag, payload bytes, XXH3-64][record][tail]

A PUT is atomic, so an object is whole or absent, whoever is killed when; a newer version
replaces the old one at once. Every page is staged into a raw-byte buffer (an object is one
contiguous piece of memory) and a batch is one NIXL transfer of many objects, which the plugin
moves in parallel. Reads GET the whole object into staging, check the header, the tail and the
checksum, and scatter. The tail (magic and digest again) is there because the plugin reports a GET
past an object's end as done: only a whole object ends with it. Listing and deleting (``clear``,
``stored_object_count``) are not data movement and NIXL has no verb for them; they go through
boto3.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reference_backend.backend import Item, Lane, NixlBackend, by_pool
from reference_backend.config import flag
from reference_backend.interface import HiCacheStorageConfig
from reference_backend.naming import tenant_name
from reference_backend.record import UNIT, checksum_of

MAGIC = b"HCO1"
HAS_SUM = 1
# magic, flags, entry digest, geometry tag, payload bytes, payload XXH3-64
_HEAD = struct.Struct("<4sI16sIQQ")
TAIL_MAGIC = b"HCOT"
_TAIL = struct.Struct("<4s16s")
_PLUGIN_KEYS = (
    "bucket",
    "endpoint_override",
    "scheme",
    "region",
    "access_key",
    "secret_key",
    "session_token",
    "use_virtual_addressing",
    "req_checksum",
)


@dataclass(frozen=True)
class ObjConfig:
    """The OBJ plugin's parameters as SGLang users write them, plus where in the bucket we live.

    ``extra_config`` takes upstream HiCacheNixl's form, ``{"plugin": {"obj": {"active": true,
    "bucket": ..., "endpoint_override": ..., "access_key": ..., "secret_key": ...}}}``, or the
    same keys flat; ours add ``prefix`` (object names start with it) and ``verify``.
    """

    params: tuple[tuple[str, str], ...]
    prefix: str
    verify: bool = True

    @classmethod
    def from_extra(cls, extra: dict[str, Any] | None, location: Any = None) -> ObjConfig:
        extra = dict(extra or {})
        plugin = extra.get("plugin")
        source = dict(plugin.get("obj", {})) if isinstance(plugin, dict) else extra
        params = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in source.items()}
        params = {k: v for k, v in params.items() if k in _PLUGIN_KEYS}
        if "endpoint_override" in params and "scheme" not in params:
            params["scheme"] = params["endpoint_override"].split(":", 1)[0]
        if "bucket" not in params and not os.environ.get("AWS_DEFAULT_BUCKET"):
            raise ValueError("the object store needs a bucket: extra_config bucket or AWS_DEFAULT_BUCKET")
        if isinstance(location, dict):
            location = location.get("storage_dir")
        prefix = str(extra.get("prefix") or "")
        if not prefix:  # one prefix per storage location, the same in every process
            where = str(Path(location).resolve()) if location is not None else "default"
            prefix = "hicache/" + hashlib.sha256(where.encode()).hexdigest()[:16]
        verify = flag(extra.get("verify", True), "verify")
        return cls(tuple(sorted(params.items())), prefix.rstrip("/"), verify)

    def client(self) -> Any:
        """A boto3 S3 client on the same endpoint and credentials, for listing and deleting."""
        import boto3

        p = dict(self.params)
        return boto3.client(
            "s3",
            endpoint_url=p.get("endpoint_override"),
            aws_access_key_id=p.get("access_key"),
            aws_secret_access_key=p.get("secret_key"),
            aws_session_token=p.get("session_token"),
            region_name=p.get("region", "us-east-1"),
        )

    @property
    def bucket(self) -> str:
        return dict(self.params).get("bucket") or os.environ["AWS_DEFAULT_BUCKET"]


def header(item: Item) -> bytes:
    layout = item.pool.layout
    flags = HAS_SUM if item.checksum is not None else 0
    head = _HEAD.pack(MAGIC, flags, item.digest, layout.tag, layout.size, item.checksum or 0)
    return head.ljust(UNIT, b"\x00")


class NixlObjBackend(NixlBackend):
    """HiCache v2 storage backend on an S3 bucket through NIXL's OBJ plugin."""

    REMOTE = "OBJ"

    def __init__(self, storage_config: HiCacheStorageConfig, location: Any = None) -> None:
        self.obj = ObjConfig.from_extra(storage_config.extra_config, location)
        self._setup(storage_config, self.obj.verify, "OBJ", dict(self.obj.params))
        self._s3: Any = None
        self._tenant = tenant_name(
            str((storage_config.extra_config or {}).get("tenant") or storage_config.model_name or "")
        )

    def moves_in_place(self, host: Any) -> bool:
        """An object is one contiguous piece of memory: every page is staged."""
        return False

    def object_name(self, digest: bytes) -> str:
        """Under the prefix, then the tenant (the model name, or ``tenant``), so that deployments
        sharing a bucket and prefix clear only their own objects."""
        return f"{self.obj.prefix}/{self._tenant}/{digest.hex()}"

    # -- the transfer ------------------------------------------------------------------------

    def descriptors(self, lane: Lane, items: list[Item], writing: bool) -> tuple[np.ndarray, np.ndarray]:
        """One whole object per item: its header, record and tail, back to back in the pool's staging."""
        dram: list[tuple[int, int, int]] = []
        obj: list[tuple[int, int, int]] = []
        for group in by_pool(items).values():
            layout = group[0].pool.layout
            size = UNIT + layout.size + _TAIL.size
            self._prepare(lane, group, size, writing, lead=UNIT)
            for item in group:
                if writing:
                    item.checksum = checksum_of(self._payload(item)) if self.verify else None
                    ctypes.memmove(item.slot - UNIT, header(item), UNIT)
                    tail = _TAIL.pack(TAIL_MAGIC, item.digest)
                    ctypes.memmove(item.slot + layout.size, tail, _TAIL.size)
                else:
                    ctypes.memset(item.slot - UNIT, 0, size)  # a short GET must not leave stale bytes
                dram.append((item.slot - UNIT, size, 0))
                obj.append((0, size, item.fd))
        return np.array(dram, dtype=np.uint64), np.array(obj, dtype=np.uint64)

    def _submit(self, lane: Lane, op: str, items: list[Item]) -> bool:
        """One NIXL transfer of every item's object, each object registered under its name for it."""
        agent = lane.agent
        for dev, item in enumerate(items):
            item.fd = dev
        names = agent.register_memory([(0, 0, i.fd, self.object_name(i.digest)) for i in items], "OBJ")
        try:
            return super()._submit(lane, op, items)
        finally:
            agent.deregister_memory(names)

    def _while_moving(self, op: str, items: list[Item]) -> None:
        """Nothing: an object's checksum is in its header, computed before the PUT."""

    def _opened(self, item: Item) -> bool:
        """Check a fetched object's header: this entry, this geometry, and the promised checksum."""
        layout = item.pool.layout
        magic, flags, digest, tag, size, checksum = _HEAD.unpack(
            ctypes.string_at(item.slot - UNIT, _HEAD.size)
        )
        if (magic, digest, tag, size) != (MAGIC, item.digest, layout.tag, layout.size):
            return False
        if ctypes.string_at(item.slot + layout.size, _TAIL.size) != _TAIL.pack(TAIL_MAGIC, item.digest):
            return False  # a short object: the GET stopped before its end
        item.checksum = checksum if flags & HAS_SUM else None
        return self._stage_in(item)

    # -- set / get / exists --------------------------------------------------------------------

    def _write(self, plans: list[list[Item] | None]) -> list[list[bool]]:
        lane = self.lanes["WRITE"]
        items = [i for plan in plans if plan for i in plan]
        with lane.lock:
            stored = self._transfer(lane, "WRITE", items)
        return [[stored[id(i)] for i in plan] if plan is not None else [] for plan in plans]

    def _read(self, plans: list[list[Item] | None]) -> list[list[bool]]:
        lane = self.lanes["READ"]
        items = [i for plan in plans if plan for i in plan]
        with lane.lock:
            ok = self._transfer(lane, "READ", items, self._opened)
        return [[ok[id(i)] for i in plan] if plan is not None else [] for plan in plans]

    def _stored(self, pool: Any, digests: list[bytes]) -> list[bool]:
        """Whether each entry's object exists: a HEAD per object, on the read lane's agent."""
        if not digests:
            return []
        lane = self.lanes["READ"]
        with lane.lock:
            try:
                found = lane.agent.query_memory(
                    [(0, 0, 0, self.object_name(d)) for d in digests], "OBJ", "OBJ"
                )
            except Exception:  # an unreachable store answers nothing
                return [False for _ in digests]
        return [f is not None for f in found]

    # -- lifecycle ---------------------------------------------------------------------------

    def _client(self) -> Any:
        if self._s3 is None:
            self._s3 = self.obj.client()
        return self._s3

    def _names(self, under: str) -> list[str]:
        pages = self._client().get_paginator("list_objects_v2")
        return [
            o["Key"]
            for page in pages.paginate(Bucket=self.obj.bucket, Prefix=under + "/")
            for o in page.get("Contents", [])
        ]

    def clear(self) -> bool:
        """Delete every object of this tenant under our prefix; other tenants' stay."""
        names = self._names(f"{self.obj.prefix}/{self._tenant}")
        for lo in range(0, len(names), 1000):
            batch = [{"Key": n} for n in names[lo : lo + 1000]]
            self._client().delete_objects(Bucket=self.obj.bucket, Delete={"Objects": batch})
        return True

    def stored_object_count(self) -> int:
        """Objects under our prefix, every tenant's."""
        return len(self._names(self.obj.prefix))

    def _close_store(self) -> None:
        """Nothing to seal; drop the listing client."""
        with contextlib.suppress(Exception):
            if self._s3 is not None:
                self._s3.close()
