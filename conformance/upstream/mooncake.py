"""``sglang-mooncake``: SGLang's ``MooncakeStore`` under the suite, on a Mooncake cluster on loopback.

Each session runs ``mooncake_master`` and a process that holds the cluster's memory
(``conformance.upstream.mooncake_cluster``); every store the suite builds is a client that mounts
no memory of its own (``global_segment_size`` 0), so its entries travel over Mooncake's TCP
transport and outlive it, as they do in a deployment. Keys are global to a master: each storage
location is its own ``extra_backend_tag`` (Mooncake's own key prefix), and each xdist worker has
its own cluster. Everything runs inside a network namespace with only loopback up (the transfer
engine listens on 0.0.0.0): the adapter refuses to build a store anywhere else.

Claims, read from ``sglang/srt/mem_cache/storage/mooncake_store/mooncake_store.py`` (0.5.23): KV
through v1 only (v2 registration of KV is a no-op), MHA only in the page-first layouts (SGLang
switches Mooncake off ``layer_first``; the store raises on it), every side pool it names keys for
(all but ``auxiliary_swa``), SWA only in the shapes SGLang hands it (an MHA model's SWA pool is an
MHA host pool, keyed as K and V halves: the suite's generic multi-region ``swa`` is not drawn),
ALL_PAGES and TRAILING_PAGES with ``restorable_prefix_pages`` filled, first write wins (a present
key is skipped), one client shared by the controller's threads, any instance in any process of the
namespace reading the cluster, and model names in every key (deployments share a cluster).

Decode context parallelism is claimed as SGLang runs it: an MLA host pool widened by ``dcp_size``
(logical pages of ``page_size * dcp_size`` slots), ``logical_page_size`` to match, and the DCP
topology in Mooncake's key prefix.

What it fails is recorded in ``SGLANG_MOONCAKE_DEFECTS`` (finding 21 in docs/upstream-findings.md),
and what it fails only when two writers race in ``SGLANG_MOONCAKE_INTERMITTENT`` (finding 23).
"""

from __future__ import annotations

import hashlib
import importlib
import os
from dataclasses import replace
from pathlib import Path

from conformance.model.capabilities import SIDE_POOLS, BackendSpec, Capabilities
from conformance.model.interface import HiCacheStorageConfig, PoolHitPolicy, PoolName
from conformance.model.sglang import sglang
from conformance.servers.services import LOOPBACK
from conformance.upstream.adapters import VERSION, UpstreamAdapter, to_sglang_config
from conformance.upstream.host_pools import build_pool
from conformance.upstream.mooncake_cluster import (
    CLIENT_SETTINGS,
    MASTER_ENV,
    mooncake_cluster,
    require_isolation,
)
from conformance.upstream.mooncake_defects import SGLANG_MOONCAKE_DEFECTS, SGLANG_MOONCAKE_INTERMITTENT

MODULE = "sglang.srt.mem_cache.storage.mooncake_store.mooncake_store"


def location_tag(storage: Path) -> str:
    """The key prefix of one storage location: a digest of its folder, the same in every process."""
    return "loc" + hashlib.sha256(os.fsencode(storage.resolve())).hexdigest()[:24]


def mooncake_factory(config: HiCacheStorageConfig, storage_dir: Path) -> UpstreamAdapter:
    """One ``MooncakeStore`` client of the session's cluster, scoped to the storage location."""
    require_isolation()
    master = os.environ.get(MASTER_ENV)
    if not master:
        raise RuntimeError(f"no Mooncake master: {MASTER_ENV} is unset (the backend's session starts one)")
    sglang()
    store = importlib.import_module(MODULE).MooncakeStore
    extra = {
        **(config.extra_config or {}),
        "master_server_address": master,
        "local_hostname": LOOPBACK,
        "extra_backend_tag": location_tag(storage_dir),
    }
    return UpstreamAdapter(store(to_sglang_config(replace(config, extra_config=extra))))


SGLANG_MOONCAKE = BackendSpec(
    "sglang-mooncake",
    mooncake_factory,
    Capabilities(
        v1_kv=True,
        side_pools=SIDE_POOLS - {PoolName.AUXILIARY_SWA},
        # an MHA model's SWA pool is keyed as K and V halves (SGLang hands it an MHA host pool)
        shaped_side_pools=frozenset({PoolName.SWA}),
        layouts=frozenset({"page_first", "page_first_direct"}),
        hit_policies=frozenset({PoolHitPolicy.ALL_PAGES, PoolHitPolicy.TRAILING_PAGES}),
        persistence=True,
        concurrent=True,
        multiprocess=True,
        overwrites=False,
        shares_folder=True,
        decode_context_parallel=True,  # SGLang runs DCP on file and Mooncake only
        io_modes={"tcp": {**CLIENT_SETTINGS, "global_segment_size": 0}},
    ),
    version=VERSION,
    build_pool=build_pool,
    known_defects=SGLANG_MOONCAKE_DEFECTS,
    intermittent_defects=SGLANG_MOONCAKE_INTERMITTENT,
    session=mooncake_cluster,
)
