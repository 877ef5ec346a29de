"""The reference backend stands alone: installed without the suite's extras, SGLang loads it.

A fresh virtual environment (no system site packages) gets CPU torch, then this distribution with
the ``nixl`` extra only, then SGLang 0.5.23 as CI installs it (``--no-deps``). SGLang's
``StorageBackendFactory`` builds the file target through the dynamic loader and a page round-trips;
the S3 target and the SGLang entry import; the install built the index's C++ kernel wherever a
compiler is found. Neither pytest nor hypothesis may be installed by that, and loading the backend
may import none of them, nor the ``conformance`` package (one ``pyproject.toml`` ships both
products, so its files are there, inert without the extras).

Building the environment takes minutes, so the test is marked slow: ``-m slow`` runs it (CI does).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE_DEPENDENCIES = ("pytest", "_pytest", "hypothesis")
SUITE_ONLY = (*SUITE_DEPENDENCIES, "conformance")

CHILD = r"""
import importlib.util, json, sys, tempfile
import torch

class KVPool:
    # the storage-facing surface of a page_first KV host pool, over one tensor
    page_size, size, dtype, layout = 4, 16, torch.float16, "page_first"

    def __init__(self):
        self.buf = torch.zeros(self.size, 256, dtype=self.dtype)

    def get_page_buffer_meta(self, indices):
        starts = [int(i) for i in indices[:: self.page_size]]
        nbytes = self.page_size * self.buf[0].numel() * self.dtype.itemsize
        return [self.buf[s].data_ptr() for s in starts], [nbytes] * len(starts)

    def is_stride_page_aligned(self, page_size_bytes=4096):
        return self.buf.data_ptr() % page_size_bytes == 0

    def get_data_page(self, index, flat=True):
        return self.buf[index : index + self.page_size].flatten()

    def get_dummy_flat_data_page(self):
        return torch.zeros(self.page_size * 256, dtype=self.dtype)

    def set_from_flat_data_page(self, index, page):
        self.buf[index : index + self.page_size] = page.view(self.page_size, 256)

loaded_by = "reference_backend directly"
if importlib.util.find_spec("sglang") is not None:
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig
    from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory

    extra = {"backend_name": "nixl-reference", "module_path": "reference_backend.sglang_entry",
             "class_name": "HiCacheNixlReference", "interface_v1": True,
             "storage_dir": tempfile.mkdtemp()}
    config = HiCacheStorageConfig(
        tp_rank=0, tp_size=1, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
        is_mla_model=False, enable_storage_metrics=False, is_page_first_layout=True,
        model_name="m", extra_config=extra)
    backend = StorageBackendFactory.create_backend("dynamic", config, None)
    import reference_backend.sglang_entry as entry
    assert isinstance(backend, entry.HiCacheNixlReference), type(backend)
    assert entry.HiCacheNixlObjReference
    loaded_by = "SGLang's StorageBackendFactory"
else:
    from reference_backend.backend import NixlBackend
    from reference_backend.interface import HiCacheStorageConfig
    from reference_backend.obj import NixlObjBackend

    assert NixlObjBackend
    config = HiCacheStorageConfig(0, 1, 0, 1, 0, 1, False, False, True, "m")
    backend = NixlBackend(config, tempfile.mkdtemp())
pool = KVPool()
backend.register_mem_pool_host(pool)
pool.buf[:8] = torch.arange(8 * 256, dtype=torch.float16).view(8, 256)
written = pool.buf[:8].clone()
stored = backend.batch_set_v1(["a", "b"], torch.arange(8))
pool.buf.zero_()
read = backend.batch_get_v1(["a", "b"], torch.arange(8))
backend.close()
from reference_backend.index import Index
print(json.dumps({
    "loaded_by": loaded_by,
    "native": Index().native,
    "round_trip": stored == read == [True, True] and bool(torch.equal(pool.buf[:8], written)),
    "installed": sorted(m for m in SUITE_DEPENDENCIES if importlib.util.find_spec(m) is not None),
    "imported": sorted({m.split(".")[0] for m in sys.modules} & set(SUITE_ONLY)),
}))
"""


def _run(*cmd: str | os.PathLike[str], cwd: Path | None = None) -> str:
    """Run one step; an install on a loaded machine can take many minutes (SGLang's tree: ~50 wheels)."""
    done = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, check=False, cwd=cwd, timeout=3600
    )
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_the_backend_installs_and_loads_without_the_suite(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy, so that building the wheel writes nothing in the checkout
    listed = _run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    pip = (python, "-m", "pip", "install", "-q")
    _run(*pip, "torch==2.13.0")  # the CPU wheel on disk, as CI installs it
    _run(*pip, f"{source}[nixl]")
    _run(*pip, "--no-deps", "-r", ROOT / "requirements" / "upstream.txt")
    child = f"SUITE_DEPENDENCIES = {SUITE_DEPENDENCIES!r}\nSUITE_ONLY = {SUITE_ONLY!r}\n{CHILD}"
    env = {**os.environ, "NIXL_LOG_LEVEL": "WARN"}
    done = subprocess.run(
        [str(python), "-c", child], capture_output=True, text=True, check=False, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {
        "loaded_by": "SGLang's StorageBackendFactory",
        "native": shutil.which("c++") is not None,  # the index's kernel, built at install where it can be
        "round_trip": True,
        "installed": [],
        "imported": [],
    }
