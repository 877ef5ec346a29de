"""SGLang's ``AibrixKVCacheStorage`` under the suite, through the legacy generic calls it alone has.

Facts carried over from SGLang 0.5.23 and ``aibrix-kvcache==0.8.0`` (``requirements/aibrix.txt``):
the backend is built with the KV host pool (the factory hands it ``mem_pool_host``) and refuses
MLA (``NotImplementedError``); its v1 methods are the base class's (they return None) and
``batch_exists_v2`` raises, so SGLang's controller drives it through ``batch_set``/``batch_get``/
``batch_exists`` only. AIBrix's cache manager keeps pages in an L1 of host memory that it pins
(which needs an accelerator: ``TESTING_DISABLE_PIN_MEMORY`` turns that off) and allocates whole up
front (``AIBRIX_KV_CACHE_OL_L1_CACHE_CAPACITY_GB``, 10 GB unless set). Every instance has an L1
of its own, so nothing persists across instances and nothing is shared between ranks.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from conformance.model.capabilities import BackendSpec, Capabilities
from conformance.model.interface import HiCacheStorageConfig
from conformance.model.sglang import sglang
from conformance.servers.services import environment
from conformance.upstream.adapters import VERSION, UpstreamAdapter, to_sglang_config
from conformance.upstream.aibrix_defects import SGLANG_AIBRIX_DEFECTS
from conformance.upstream.host_pools import build_pool, upstream_of

MODULE = "sglang.srt.mem_cache.storage.aibrix_kvcache.aibrix_kvcache_storage"
L1_SETTINGS = {
    "AIBRIX_KV_CACHE_OL_L1_CACHE_CAPACITY_GB": "0.25",  # the suite's largest MHA batches, many times over
    "AIBRIX_KV_CACHE_OL_L2_CACHE_BACKEND": "",  # L1 only: no service, nothing on disk
}


def _storage_class() -> Any:
    sglang()
    manager: Any = importlib.import_module("aibrix_kvcache.cache_manager")
    manager.TESTING_DISABLE_PIN_MEMORY = True
    return importlib.import_module(MODULE).AibrixKVCacheStorage


class AibrixAdapter(UpstreamAdapter):
    """Builds ``AibrixKVCacheStorage`` when the KV pool arrives, as SGLang's factory does."""

    def __init__(self, config: HiCacheStorageConfig) -> None:
        super().__init__(None)
        self.config = config

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        with environment(L1_SETTINGS):
            self.backend = _storage_class()(to_sglang_config(self.config), upstream_of(mem_pool_host))

    def close(self) -> None:
        """Release the L1 (its allocator and threads); SGLang's class has no close of its own."""
        if self.backend is not None:
            self.backend.kv_cache_manager.close()
            self.backend = None


def aibrix_factory(config: HiCacheStorageConfig, storage_dir: Path) -> AibrixAdapter:
    return AibrixAdapter(config)


SGLANG_AIBRIX = BackendSpec(
    "sglang-aibrix",
    aibrix_factory,
    Capabilities(
        v1_kv=False,
        generic_kv=True,
        kv_kinds=frozenset({"mha"}),  # MLA: NotImplementedError (after an AttributeError on head_num)
        layouts=frozenset({"layer_first", "page_first", "page_first_direct"}),
        persistence=False,
        concurrent=True,
        fills_restorable_prefix=False,
        io_modes={"l1": {}},
    ),
    version=VERSION,
    build_pool=build_pool,
    known_defects=SGLANG_AIBRIX_DEFECTS,
)
