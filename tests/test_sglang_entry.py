"""SGLang's own factory loads the reference backend and drives it with SGLang's own objects.

``--hicache-storage-backend dynamic`` imports ``reference_backend.sglang_entry``, checks the class
against SGLang's ``HiCacheStorage`` and calls ``cls(storage_config, kwargs)``; the cache controller
then hands it SGLang's host pools and ``PoolTransfer``s. Skipped without the upstream extra.
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from conformance.harness.geometry import load_geometry
from conformance.harness.rig import byte_difference
from conformance.harness.strategies import render_page
from conformance.model.sglang import UpstreamUnavailable, sglang
from conformance.upstream.host_pools import build_pool, upstream_of


@pytest.fixture(scope="module")
def sg() -> Any:
    try:
        return sglang()
    except UpstreamUnavailable as exc:
        pytest.skip(str(exc))


def test_sglangs_dynamic_loader_builds_a_backend_that_round_trips_its_own_pools(
    sg: Any, tmp_path: Path
) -> None:
    factory = importlib.import_module("sglang.srt.mem_cache.storage.backend_factory").StorageBackendFactory
    config = entry_config(sg, tmp_path, model="Qwen/Qwen3-Next-80B-A3B-Instruct", use_direct_io=True)
    geometry = load_geometry("qwen3_next_hybrid")
    kv = build_pool(geometry.kv, layout="page_first", page_num=4)
    (mamba_spec,) = geometry.side_pools
    mamba = build_pool(mamba_spec, layout="page_first", page_num=4)
    backend = factory.create_backend("dynamic", config, upstream_of(kv))
    assert isinstance(backend, importlib.import_module("reference_backend.sglang_entry").HiCacheNixlReference)
    backend.register_mem_pool_host(upstream_of(kv))
    backend.register_mem_host_pool_v2(upstream_of(mamba), sg.PoolName.MAMBA)
    pages = {pool: [render_page(pool, 3, 2, salt=i) for i in range(2)] for pool in (kv, mamba)}
    for pool, written in pages.items():
        for i, data in enumerate(written):
            pool.write_page(i * pool.page_size, data)
    keys = ["h0", "h1"]
    kv_slots = torch.arange(2 * kv.page_size)
    assert backend.batch_set_v1(keys, kv_slots) == [True, True]
    mamba_transfer = sg.PoolTransfer(
        name=sg.PoolName.MAMBA,
        host_indices=torch.tensor([0, 1]),
        keys=keys,
        hit_policy=sg.PoolHitPolicy.TRAILING_PAGES,
    )
    assert backend.batch_set_v2([mamba_transfer])[sg.PoolName.MAMBA] == [True, True]
    kv.fill(0)
    mamba.fill(0)
    landing = sg.PoolTransfer(name=sg.PoolName.MAMBA, host_indices=torch.tensor([2, 3]), keys=keys)
    assert backend.batch_get_v1(keys, kv_slots + 2 * kv.page_size) == [True, True]
    assert backend.batch_get_v2([landing])[sg.PoolName.MAMBA] == [True, True]
    for pool, written in pages.items():
        for i, data in enumerate(written):
            problem = byte_difference(pool.read_page((2 + i) * pool.page_size), data)
            assert problem is None, f"{pool.describe()} page {2 + i}: {problem}"
    window = sg.PoolTransfer(
        name=sg.PoolName.MAMBA, keys=keys[-1:], hit_policy=sg.PoolHitPolicy.TRAILING_PAGES
    )
    assert backend.batch_exists_v2(keys, [window]).kv_hit_pages == 2
    backend.close()


def test_sglangs_dynamic_loader_builds_the_object_store_target(sg: Any, tmp_path: Path) -> None:
    """The same path for the S3 target, configured as an SGLang user writes it."""
    pytest.importorskip("moto", reason="needs the obj extra (moto, boto3)")
    from conformance.servers.s3server import ensure_endpoint

    factory = importlib.import_module("sglang.srt.mem_cache.storage.backend_factory").StorageBackendFactory
    with ensure_endpoint():
        obj = {
            "active": True,
            "bucket": os.environ["HICACHE_S3_BUCKET"],
            "endpoint_override": os.environ["HICACHE_S3_ENDPOINT"],
            "access_key": os.environ["AWS_ACCESS_KEY_ID"],
            "secret_key": os.environ["AWS_SECRET_ACCESS_KEY"],
        }
        extra = {
            "backend_name": "nixl-reference-s3",
            "module_path": "reference_backend.sglang_entry",
            "class_name": "HiCacheNixlObjReference",
            "interface_v1": True,
            "plugin": {"obj": obj},
            "prefix": f"sglang-entry/{tmp_path.name}",
        }
        config = sg.HiCacheStorageConfig(
            tp_rank=0, tp_size=1, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
            is_mla_model=False, enable_storage_metrics=False, is_page_first_layout=True,
            model_name="m", extra_config=extra,
        )  # fmt: skip
        kv = build_pool(load_geometry("qwen3_next_hybrid").kv, layout="page_first", page_num=4)
        backend = factory.create_backend("dynamic", config, upstream_of(kv))
        entry = importlib.import_module("reference_backend.sglang_entry")
        assert isinstance(backend, entry.HiCacheNixlObjReference)
        backend.register_mem_pool_host(upstream_of(kv))
        written = render_page(kv, 5, 2)
        kv.write_page(0, written)
        assert backend.batch_set_v1(["h0"], torch.arange(kv.page_size)) == [True]
        assert backend.exists("h0") and not backend.exists("h1")
        assert backend.batch_get_v1(["h0"], torch.arange(kv.page_size, 2 * kv.page_size)) == [True]
        assert byte_difference(kv.read_page(kv.page_size), written) is None
        backend.clear()
        backend.close()


def test_a_configuration_that_would_take_the_legacy_calls_is_refused_at_startup(
    sg: Any, tmp_path: Path
) -> None:
    """Without ``interface_v1`` SGLang's controller would call batch_set/batch_get, which we do not have."""
    factory = importlib.import_module("sglang.srt.mem_cache.storage.backend_factory").StorageBackendFactory
    for flag in ({}, {"interface_v1": 0}, {"interface_v1": False}):
        extra = {
            "backend_name": "nixl-reference",
            "module_path": "reference_backend.sglang_entry",
            "class_name": "HiCacheNixlReference",
            "storage_dir": str(tmp_path),
            **flag,
        }
        config = sg.HiCacheStorageConfig(
            tp_rank=0, tp_size=1, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
            is_mla_model=False, enable_storage_metrics=False, is_page_first_layout=True,
            model_name="m", extra_config=extra,
        )  # fmt: skip
        with pytest.raises(ValueError, match="interface_v1"):
            factory.create_backend("dynamic", config, None)


def entry_config(sg: Any, tmp_path: Path, model: str = "org/model", **extra: Any) -> Any:
    """What SGLang hands the class for ``--hicache-storage-backend dynamic`` with ``extra``."""
    extra = {
        "backend_name": "nixl-reference",
        "module_path": "reference_backend.sglang_entry",
        "class_name": "HiCacheNixlReference",
        "interface_v1": True,
        "storage_dir": str(tmp_path),
        **extra,
    }
    return sg.HiCacheStorageConfig(
        tp_rank=0, tp_size=1, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
        is_mla_model=False, enable_storage_metrics=False, is_page_first_layout=True,
        model_name=model, extra_config=extra,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({}, "O_DIRECT=on (chosen by default)"),
        ({"use_direct_io": "false", "queue": "uring"}, "O_DIRECT=off (chosen by extra_config)"),
    ],
)
def test_startup_logs_the_effective_configuration_once(
    sg: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, extra, said
) -> None:
    """A user who switches from HiCacheNixl reads which I/O mode they got, and every other setting."""
    monkeypatch.delenv("SGLANG_HICACHE_NIXL_USE_DIRECT_IO", raising=False)
    factory = importlib.import_module("sglang.srt.mem_cache.storage.backend_factory").StorageBackendFactory
    name = "reference_backend.sglang_entry"
    with caplog.at_level(logging.INFO, logger=name):
        backend = factory.create_backend("dynamic", entry_config(sg, tmp_path, **extra), None)
    backend.close()
    lines = [r for r in caplog.records if r.name == name]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    (line,) = lines
    message = line.getMessage()
    assert line.levelno == logging.INFO
    assert said in message
    queue = extra.get("queue", "aio")
    for setting in (f"storage_dir={tmp_path}", f"queue={queue}", "fsync=off", "verify=on", "segment_mib=1024",
                    "budget=unbounded", "pin_seconds=30", "eviction_policy=chain", "tenant='org/model'",
                    "nixl="):  # fmt: skip
        assert setting in message, (setting, message)
    assert backend.settings.direct_io is ("O_DIRECT=on" in said)


def test_o_direct_on_a_file_system_that_refuses_it_is_refused_at_startup(
    sg: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Otherwise every write fails and SGLang sees only an L3 that never hits; buffered is not probed."""
    entry = importlib.import_module("reference_backend.sglang_entry")
    monkeypatch.delenv("SGLANG_HICACHE_NIXL_USE_DIRECT_IO", raising=False)
    monkeypatch.setattr(entry, "direct_io_refusal", lambda folder: "Invalid argument (errno 22)")
    with pytest.raises(ValueError, match=r'is the default .*"use_direct_io": false'):
        entry.HiCacheNixlReference(entry_config(sg, tmp_path), None)
    with pytest.raises(ValueError, match="was set by extra_config"):
        entry.HiCacheNixlReference(entry_config(sg, tmp_path, use_direct_io=True), None)
    entry.HiCacheNixlReference(entry_config(sg, tmp_path, use_direct_io=False), None).close()
