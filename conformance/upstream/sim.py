"""``sglang-sim``: SGLang's ``SimHiCacheStorage`` (the ``sim`` backend) under the suite.

Sim is SGLang's benchmarking medium: it records keys and sleeps as a store of a given bandwidth
would, but keeps no bytes ("served KV is garbage"). What it does answer, exists and hits, is
certified; it declares ``stores_bytes=False``, so every byte check is skipped as not claimed.
Its delays are turned off (``sim_*_gbps`` 0 is "infinite", latency 0): a certification checks
answers, not timing.

Claims, read from ``sglang/srt/mem_cache/storage/sim_storage.py`` (0.5.23): KV through v1, every
side pool through v2 under ``"<key>.<pool>"``, ALL_PAGES and TRAILING_PAGES folded as
``HiCacheFile`` does, one lock around the key set (``concurrent``), and nothing outside the
instance (no persistence, no sharing between processes; each rank has its own set).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from conformance.model.capabilities import SIDE_POOLS, BackendSpec, Capabilities
from conformance.model.interface import HiCacheStorageConfig, PoolHitPolicy
from conformance.model.sglang import sglang
from conformance.upstream.adapters import VERSION, UpstreamAdapter, to_sglang_config
from conformance.upstream.host_pools import build_pool, upstream_of
from conformance.upstream.sim_defects import SGLANG_SIM_DEFECTS

SIM_MODULE = "sglang.srt.mem_cache.storage.sim_storage"
NO_DELAYS = {"sim_write_gbps": 0, "sim_read_gbps": 0, "sim_op_latency_us": 0}


class TokenSized:
    """A host pool as SGLang's own pools present it to Sim: with ``size_per_token``.

    Every SGLang host pool carries ``size_per_token`` (bytes of one token over all layers) and Sim
    reads it on each transfer to size its delay; the suite's doubles for the kinds that do not
    build on a CPU lack it, so it is derived from the double's page here. Everything else is the
    pool's own.
    """

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.size_per_token = pool.page_nbytes() // pool.page_size

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)


def _for_sim(pool: Any) -> Any:
    upstream = upstream_of(pool)
    return upstream if hasattr(upstream, "size_per_token") else TokenSized(upstream)


class SimAdapter(UpstreamAdapter):
    """Registration hands Sim pools that carry ``size_per_token``; the calls are the base adapter's."""

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        self.backend.register_mem_pool_host(_for_sim(mem_pool_host))

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: Any) -> None:
        super().register_mem_host_pool_v2(_for_sim(host_pool), host_pool_name)


def sim_factory(config: HiCacheStorageConfig, storage_dir: Path) -> SimAdapter:
    """One Sim instance; it keeps its keys in memory, so ``storage_dir`` is unused."""
    sglang()  # the stand-ins SGLang's storage modules need on a CPU
    sim = importlib.import_module(SIM_MODULE).SimHiCacheStorage
    return SimAdapter(sim(to_sglang_config(config)))


SGLANG_SIM = BackendSpec(
    "sglang-sim",
    sim_factory,
    Capabilities(
        v1_kv=True,
        side_pools=SIDE_POOLS,
        hit_policies=frozenset({PoolHitPolicy.ALL_PAGES, PoolHitPolicy.TRAILING_PAGES}),
        concurrent=True,
        stores_bytes=False,
        fills_restorable_prefix=False,
        io_modes={"default": NO_DELAYS},
    ),
    version=VERSION,
    build_pool=build_pool,
    known_defects=SGLANG_SIM_DEFECTS,
)
