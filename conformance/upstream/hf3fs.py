"""``sglang-hf3fs``: SGLang's ``HiCacheHF3FS`` under the suite, with SGLang's own mock 3FS client.

The real client (usrbio) needs a 3FS cluster; ``use_mock_hf3fs_client`` swaps in SGLang's
``Hf3fsMockClient``, which does pread/pwrite on a local file. Everything above it is the real
code: page allocation, the metadata service, the v1 and v2 paths. The global-metadata mode is the
one certified (it is the only one SGLang allows for MLA models, and the only one where an index
outlives an instance): SGLang's metadata server runs on loopback for the session, one per storage
location (``conformance.upstream.hf3fs_metadata``).

SGLang builds HF3FS through ``StorageBackendFactory`` with the KV host pool in hand (the page size
comes from it) and reads its settings from the JSON file named by
``SGLANG_HICACHE_HF3FS_CONFIG_PATH``. The adapter does the same when the KV pool is registered:
it writes that file for the storage location (files under the suite's folder, 8 MiB each), builds
the backend through SGLang's factory, and registers the pool. The backend installs SIGINT, SIGTERM
and SIGQUIT handlers that only call ``close()`` (a process holding one no longer dies on SIGTERM);
the adapter puts the previous handlers back, so the suite's processes stay killable.

Claims, read from ``sglang/srt/mem_cache/storage/hf3fs/storage_hf3fs.py`` (0.5.23): KV through v1
only (KV registered through v2 is ignored), every side pool through v2 with its own file, ALL_PAGES
and TRAILING_PAGES, ``restorable_prefix_pages`` never filled, first write wins (a present key is
not written again), entries in regular files and an index that another instance and another
process share through the metadata server.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.model.capabilities import SIDE_POOLS, BackendSpec, Capabilities
from conformance.model.interface import HiCacheStorageConfig, PoolHitPolicy
from conformance.model.sglang import sglang
from conformance.servers.services import environment
from conformance.upstream.adapters import VERSION, UpstreamAdapter, to_sglang_config
from conformance.upstream.hf3fs_defects import SGLANG_HF3FS_DEFECTS
from conformance.upstream.hf3fs_metadata import URL_ENV, location_prefix, metadata_server
from conformance.upstream.host_pools import build_pool, upstream_of

CONFIG_ENV = "SGLANG_HICACHE_HF3FS_CONFIG_PATH"
FILE_SIZE = 8 << 20
"""Bytes of each 3FS file (sparse): hundreds of pages of the largest geometry, so the suite's
batches never meet HF3FS's LRU eviction."""
KILL_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)
_building = threading.Lock()  # the configuration file is named through the process environment


def _factory_class() -> Any:
    sglang()
    return importlib.import_module("sglang.srt.mem_cache.storage.backend_factory").StorageBackendFactory


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in KILL_SIGNALS}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def _config_file(storage: Path) -> Iterator[str]:
    """SGLang's JSON settings for one storage location, in a file of its own for the build."""
    url = os.environ.get(URL_ENV)
    if not url:
        raise RuntimeError(f"no HF3FS metadata server: {URL_ENV} is unset (the backend's session starts one)")
    settings = {
        "file_path_prefix": str(storage / "hicache"),
        "file_size": FILE_SIZE,
        "numjobs": 2,
        "entries": 8,
        "metadata_server_url": f"{url}/{location_prefix(storage)}",
    }
    with tempfile.NamedTemporaryFile("w", prefix="hf3fs-", suffix=".json") as f:
        json.dump(settings, f)
        f.flush()
        yield f.name


class Hf3fsAdapter(UpstreamAdapter):
    """Builds ``HiCacheHF3FS`` when the KV pool arrives, as SGLang's controller does."""

    def __init__(self, config: HiCacheStorageConfig, storage: Path) -> None:
        super().__init__(None)
        self.config, self.storage = config, storage

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        kv = upstream_of(mem_pool_host)
        with (
            _building,
            _config_file(self.storage) as path,
            environment({CONFIG_ENV: path}),
            _signal_handlers_kept(),
        ):
            self.backend = _factory_class().create_backend("hf3fs", to_sglang_config(self.config), kv)
        self.backend.register_mem_pool_host(kv)

    def close(self) -> None:
        """Close, and drop the exit hook that would keep every closed instance alive until exit."""
        backend = self.backend
        super().close()
        if backend is not None:
            atexit.unregister(backend.close)


def hf3fs_factory(config: HiCacheStorageConfig, storage_dir: Path) -> Hf3fsAdapter:
    return Hf3fsAdapter(config, storage_dir)


SGLANG_HF3FS = BackendSpec(
    "sglang-hf3fs",
    hf3fs_factory,
    Capabilities(
        v1_kv=True,
        side_pools=SIDE_POOLS,
        hit_policies=frozenset({PoolHitPolicy.ALL_PAGES, PoolHitPolicy.TRAILING_PAGES}),
        persistence=True,
        concurrent=True,
        multiprocess=True,
        stores_files=True,
        overwrites=False,
        fills_restorable_prefix=False,
        io_modes={"mock-client": {"use_mock_hf3fs_client": True}},
    ),
    version=VERSION,
    build_pool=build_pool,
    known_defects=SGLANG_HF3FS_DEFECTS,
    session=metadata_server,
)
