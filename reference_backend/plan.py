"""The batch planner: from SGLang's calls to the pages a target moves.

Both targets (files, objects) hold one. It registers host pools, validates a request (a malformed
pool request gets all-False before anything is touched), turns each pool's keys and host indices
into ``Item``s, one page of one pool each, named by its entry digest and placed in its prefix
chain, and shapes the target's per-item results back into SGLang's answers.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from reference_backend.interface import HiCacheStorageConfig, PoolName, PoolTransfer, request_starts
from reference_backend.naming import Digester, Scope, scope_for
from reference_backend.pools import Pool

KV = str(PoolName.KV)


@dataclass(slots=True)
class Item:
    """One page of one pool in a batch (slotted: a batch makes one per page of every pool)."""

    pool: Pool
    key: str
    start: int
    digest: bytes
    depth: int = 0
    """Place in its prefix chain (``prefix_keys`` before the batch, then its place in the batch)."""
    slot: int = 0
    """Address of its bytes in its pool's staging buffer (staged pools)."""
    fd: int = -1
    offset: int = 0
    """Where its record lies: file descriptor and position (objects: device number and 0)."""
    checksum: int | None = None
    regions: list[tuple[int, int]] = field(default_factory=list)
    """(address, bytes) of its regions in host memory."""


def by_pool(items: Iterable[Item]) -> dict[str, list[Item]]:
    """Items grouped by pool, pools in order of first appearance."""
    groups: dict[str, list[Item]] = {}
    for name, run in itertools.groupby(items, _POOL_NAME):  # a batch holds each pool's items in a run
        groups.setdefault(name, []).extend(run)
    return groups


_POOL_NAME = operator.attrgetter("pool.name")


Run = Callable[[list[Item], list[str]], dict[int, bool]]
"""A target's read or write: the batch's items and the prefix before them -> result per ``id(item)``."""


def failed(keys: Any) -> list[bool]:
    return [False] * (len(keys) if isinstance(keys, list) else 0)


class BatchPlanner:
    """Registered pools and how a request becomes items; shared by the file and object targets."""

    def __init__(self, storage_config: HiCacheStorageConfig, in_place: Callable[[Any], bool]) -> None:
        self.storage_config = storage_config
        self.in_place = in_place
        """Whether the target may move a host pool's pages without staging."""
        self.pools: dict[str, Pool] = {}
        self.scopes: dict[str, Scope] = {}
        self.digesters: dict[str, Digester] = {}
        """Per pool, ``entry_digest`` of its scope (made at registration from ``scope``)."""
        self.closed = False

    def register(self, name: str, host: Any) -> Pool | None:
        """Prepare ``host`` as pool ``name``: the new pool, or None when it is already registered."""
        if name in self.pools:
            if self.pools[name].host is host:
                return None
            raise ValueError(f"pool {name!r} is already registered with another host pool")
        pool = self.pool(name, host)
        self.pools[name] = pool
        self.scopes[name] = self.scope(name)
        self.digesters[name] = Digester(self.scopes[name], name)
        return pool

    def pool(self, name: str, host: Any) -> Pool:
        """How ``host``'s pages travel."""
        return Pool.of(name, host, self.in_place)

    def scope(self, name: str) -> Scope:
        """Which ranks and stages share pool ``name``'s entries."""
        return scope_for(self.storage_config, name)

    def transfer_mode(self, name: str) -> str:
        return "zero_copy" if self.pools[name].zero_copy else "staged"

    def digests(self, name: str, keys: list[str]) -> list[bytes]:
        """The 16 bytes that name each key's entry of pool ``name``."""
        return self.digesters[name].many(keys)

    def digest(self, name: str, key: str) -> bytes:
        return self.digests(name, [key])[0]

    def plan(self, name: str, keys: Any, host_indices: Any) -> list[Item] | None:
        """The pages of one pool's request, or None when it is malformed or the pool unknown."""
        pool = self.pools.get(name)
        if pool is None or self.closed:
            return None
        starts = request_starts(keys, host_indices, pool.span, pool.slots)
        if starts is None:
            return None
        digests = self.digests(name, keys)
        return [Item(pool, key, start, digest) for key, start, digest in zip(keys, starts, digests)]

    def v1(self, keys: Any, host_indices: Any, extra_info: Any, run: Run) -> list[bool]:
        """A KV-only batch."""
        plan = self.plan(KV, keys, host_indices)
        if plan is None:
            return failed(keys)
        done = run(*self._in_chain([plan], extra_info))
        return [done.get(id(i), False) for i in plan]

    def v2(self, transfers: list[PoolTransfer], extra_info: Any, run: Run) -> dict[str, list[bool]]:
        """A multi-pool batch, moved by one ``run``; a pool's malformed request fails alone."""
        names = [str(t.name) for t in transfers]
        if len(set(names)) != len(names):
            return {n: failed(t.keys) for n, t in zip(names, transfers)}
        plans = [self.plan(n, t.keys, t.host_indices) for n, t in zip(names, transfers)]
        done = run(*self._in_chain(plans, extra_info))
        return {
            n: [done.get(id(i), False) for i in plan] if plan is not None else failed(t.keys)
            for n, t, plan in zip(names, transfers, plans)
        }

    @staticmethod
    def _in_chain(plans: list[list[Item] | None], extra_info: Any) -> tuple[list[Item], list[str]]:
        """Every item, placed in its prefix chain, and the prefix before the batch."""
        prefix = list(getattr(extra_info, "prefix_keys", None) or [])
        for plan in plans:
            for n, item in enumerate(plan or []):
                item.depth = len(prefix) + n
        return [i for plan in plans if plan for i in plan], prefix

    def present(
        self, name: str, keys: Iterable[Any], stored: Callable[[Pool, list[bytes]], list[bool]]
    ) -> list[bool]:
        """Whether each key's entry of pool ``name`` is stored, as ``stored`` finds digests."""
        pool = self.pools.get(name)
        keys = list(keys)
        if pool is None or self.closed:
            return [False for _ in keys]
        named = [isinstance(k, str) for k in keys]
        if False not in named:
            return stored(pool, self.digests(name, keys))
        found = iter(stored(pool, self.digests(name, [k for k, ok in zip(keys, named) if ok])))
        return [ok and next(found) for ok in named]

    def close(self) -> None:
        self.closed = True
        self.pools.clear()
