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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reference_backend import agents, hits
from reference_backend.config import flag
from reference_backend.interface import (
    HiCacheStorageConfig,
    HiCacheStorageExtraInfo,
    PoolHitPolicy,
    PoolName,
    PoolTransfer,
    PoolTransferResult,
)
from reference_backend.naming import tenant_name
from reference_backend.plan import BatchPlanner, Item, by_pool
from reference_backend.pools import Pool
from reference_backend.record import UNIT
from reference_backend.staging import checksum, gather, intact, place, scatter
from reference_backend.transfer import Lane, all_or_each

KV = str(PoolName.KV)
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


def object_size(pool: Pool) -> int:
    """Bytes of one object of ``pool``: header, record, tail."""
    return UNIT + pool.layout.size + _TAIL.size


def frame(item: Item, writing: bool) -> None:
    """Around a staged page, its object: for a write, the header (with the page's checksum, taken
    before the PUT) and the tail; for a read, zeros, so that a short GET leaves no stale bytes."""
    if not writing:
        ctypes.memset(item.slot - UNIT, 0, object_size(item.pool))
        return
    ctypes.memmove(item.slot - UNIT, header(item), UNIT)
    ctypes.memmove(item.slot + item.pool.layout.size, _TAIL.pack(TAIL_MAGIC, item.digest), _TAIL.size)


def object_rows(items: list[Item]) -> tuple[np.ndarray, np.ndarray]:
    """(DRAM rows, OBJ rows): one whole object per item, from its staging slot to its device."""
    dram = [(i.slot - UNIT, object_size(i.pool), 0) for i in items]
    obj = [(0, object_size(i.pool), i.fd) for i in items]
    return np.array(dram, dtype=np.uint64), np.array(obj, dtype=np.uint64)


@dataclass
class _Tail:
    """One object's tail as ``stored`` fetches it: its place in the call, and the bytes it must hold."""

    n: int
    want: bytes


_TAILS = "exists-tails"
"""The staging buffer ``stored`` fetches tails into (pools' buffers are named after the pools)."""


def opened(item: Item) -> bool:
    """Check a fetched object's header and tail: this entry, this geometry, whole; take the
    checksum its header promises."""
    layout = item.pool.layout
    magic, flags, digest, tag, size, promised = _HEAD.unpack(ctypes.string_at(item.slot - UNIT, _HEAD.size))
    if (magic, digest, tag, size) != (MAGIC, item.digest, layout.tag, layout.size):
        return False
    if ctypes.string_at(item.slot + layout.size, _TAIL.size) != _TAIL.pack(TAIL_MAGIC, item.digest):
        return False  # a short object: the GET stopped before its end
    item.checksum = promised if flags & HAS_SUM else None
    return True


class NixlObjBackend:
    """HiCache v2 storage backend on an S3 bucket through NIXL's OBJ plugin.

    It shares the file target's batch planner, lanes and staging, by composition: every page is
    staged (an object is one contiguous piece of memory), framed as an object, and a batch is one
    transfer of many objects, each registered under its name for that transfer.
    """

    REMOTE = "OBJ"

    def __init__(self, storage_config: HiCacheStorageConfig, location: Any = None) -> None:
        self.obj = ObjConfig.from_extra(storage_config.extra_config, location)
        self.storage_config = storage_config
        self.verify = self.obj.verify
        self.planner = BatchPlanner(storage_config, lambda host: False)
        self.lanes = {op: Lane(agents.acquire(dict(self.obj.params), "OBJ")) for op in ("WRITE", "READ")}
        self._s3: Any = None
        self._tenant = tenant_name(
            str((storage_config.extra_config or {}).get("tenant") or storage_config.model_name or "")
        )

    def object_name(self, digest: bytes, pool: Pool) -> str:
        """Under the prefix, then the tenant (the model name, or ``tenant``), so that deployments
        sharing a bucket and prefix clear only their own objects; the pool's geometry tag ends the
        name, so that a restart in another format (dtype, page size) finds none of the old objects
        with a HEAD, which cannot read the header that would tell."""
        return f"{self.obj.prefix}/{self._tenant}/{digest.hex()}.{pool.layout.tag:016x}"

    # -- registration --------------------------------------------------------------------------

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        self.planner.register(KV, mem_pool_host)

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: PoolName | str) -> None:
        self.planner.register(str(host_pool_name), host_pool)

    def on_host_pools_registered(self) -> None:
        """Pools are prepared as they register; nothing is deferred."""

    def transfer_mode(self, pool_name: PoolName | str) -> str:
        """Always ``staged``: an object is one contiguous piece of memory."""
        return self.planner.transfer_mode(str(pool_name))

    def plan(self, name: str, keys: Any, host_indices: Any) -> list[Item] | None:
        return self.planner.plan(name, keys, host_indices)

    def digest(self, name: str, key: str) -> bytes:
        return self.planner.digest(name, key)

    # -- the steps of a batch ----------------------------------------------------------------

    def stage(self, lane: Lane, items: list[Item], writing: bool) -> None:
        """Give each item a slot in its pool's staging, its page ``UNIT`` bytes in (after the
        header), and frame it as an object; a write's page is copied in and checksummed first."""
        for group in by_pool(items).values():
            place(lane.staging, group, object_size(group[0].pool), lead=UNIT)
            for item in group:
                if writing:
                    gather(item)
                    item.checksum = checksum(item) if self.verify else None
                frame(item, writing)

    def transfer(self, lane: Lane, op: str, items: list[Item]) -> bool:
        """One NIXL transfer of every item's object, each object registered under its name for it."""
        self.stage(lane, items, op == "WRITE")
        for dev, item in enumerate(items):
            item.fd = dev
        named = [(i.fd, self.object_name(i.digest, i.pool)) for i in items]
        return self._move(lane, op, named, *object_rows(items))

    def _move(
        self, lane: Lane, op: str, named: list[tuple[int, str]], dram: np.ndarray, obj: np.ndarray
    ) -> bool:
        """One NIXL transfer between staging and objects, each object registered under its name, as
        (device number, name), for this transfer alone."""
        names = lane.agent.register_memory([(0, 0, dev, name) for dev, name in named], "OBJ")
        try:
            with lane.post(op, dram, obj, self.REMOTE) as moving:
                return moving.wait()
        except Exception:  # NIXL raises its own binding errors for any I/O failure
            return False
        finally:
            lane.agent.deregister_memory(names)

    def receive(self, item: Item) -> bool:
        """Finish a fetched object: header and tail, the promised checksum, then scatter."""
        if not opened(item) or (self.verify and not intact(item)):
            return False
        scatter(item)
        return True

    def write(self, items: list[Item]) -> dict[int, bool]:
        lane = self.lanes["WRITE"]
        with lane.lock:
            return all_or_each(items, lambda batch: self.transfer(lane, "WRITE", batch))

    def read(self, items: list[Item]) -> dict[int, bool]:
        lane = self.lanes["READ"]
        with lane.lock:
            return all_or_each(items, lambda batch: self.transfer(lane, "READ", batch), self.receive)

    # -- set / get / exists --------------------------------------------------------------------

    def batch_set_v1(
        self, keys: list[str], host_indices: torch.Tensor, extra_info: HiCacheStorageExtraInfo | None = None
    ) -> list[bool]:
        return self.planner.v1(keys, host_indices, extra_info, lambda items, _: self.write(items))

    def batch_get_v1(
        self, keys: list[str], host_indices: torch.Tensor, extra_info: HiCacheStorageExtraInfo | None = None
    ) -> list[bool]:
        return self.planner.v1(keys, host_indices, extra_info, lambda items, _: self.read(items))

    def batch_set_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        return self.planner.v2(transfers, extra_info, lambda items, _: self.write(items))

    def batch_get_v2(
        self, transfers: list[PoolTransfer], extra_info: HiCacheStorageExtraInfo | None = None
    ) -> dict[str, list[bool]]:
        return self.planner.v2(transfers, extra_info, lambda items, _: self.read(items))

    def stored(self, pool: Pool, digests: list[bytes]) -> list[bool]:
        """Whether each entry's whole object is there: a ranged GET of its tail, one request as a
        HEAD would be, on the read lane's agent. A HEAD says only that some object has the name,
        so one cut short answered present though no get could read it."""
        if not digests:
            return []
        lane = self.lanes["READ"]
        size = object_size(pool)
        tails = [_Tail(n, _TAIL.pack(TAIL_MAGIC, d)) for n, d in enumerate(digests)]
        with lane.lock:
            base = lane.staging.buffer(_TAILS, _TAIL.size * len(tails)).data_ptr()

            def fetch(batch: list[_Tail]) -> bool:
                for t in batch:  # the tail's complement: bytes a short GET leaves can never match it
                    ctypes.memmove(base + t.n * _TAIL.size, bytes(b ^ 0xFF for b in t.want), _TAIL.size)
                named = [(t.n, self.object_name(digests[t.n], pool)) for t in batch]
                dram = np.array([(base + t.n * _TAIL.size, _TAIL.size, 0) for t in batch], dtype=np.uint64)
                obj = np.array([(size - _TAIL.size, _TAIL.size, t.n) for t in batch], dtype=np.uint64)
                try:  # a short or missing object fails the GET; an unreachable store, the registration
                    return self._move(lane, "READ", named, dram, obj)
                except Exception:
                    return False

            found = all_or_each(
                tails, fetch, lambda t: ctypes.string_at(base + t.n * _TAIL.size, _TAIL.size) == t.want
            )
        return [found[id(t)] for t in tails]

    def _present(self, name: str, keys: Iterable[Any]) -> list[bool]:
        return self.planner.present(name, keys, self.stored)

    def batch_exists(self, keys: list[str], extra_info: HiCacheStorageExtraInfo | None = None) -> int:
        return hits.leading_run(self._present(KV, keys))

    def batch_exists_v2(
        self,
        keys: list[str],
        pool_transfers: list[PoolTransfer] | None = None,
        extra_info: HiCacheStorageExtraInfo | None = None,
    ) -> PoolTransferResult:
        return hits.answer(
            self.batch_exists(keys), keys, pool_transfers or [], self._present, self.restorable
        )

    def restorable(self, t: PoolTransfer, present: list[bool]) -> list[bool]:
        """Per prefix length 0..kv, whether the pool of ``t`` can restore it under its policy."""
        return hits.restorable(PoolHitPolicy(t.hit_policy), len(t.keys or []), present)

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

    def close(self) -> None:
        if self.planner.closed:
            return
        self.planner.closed = True
        with self.lanes["WRITE"].lock, self.lanes["READ"].lock:
            with contextlib.suppress(Exception):
                if self._s3 is not None:
                    self._s3.close()
            for lane in self.lanes.values():
                lane.close()
            self.planner.close()
        for lane in self.lanes.values():
            agents.release(lane.agent)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
