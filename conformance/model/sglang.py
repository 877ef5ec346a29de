"""Import SGLang's storage modules on a CPU-only machine, with the two stand-ins they need.

``sglang.srt.mem_cache`` pulls in the model-config package, which imports ``torchvision`` for
vision models' preprocessing. PyPI's torchvision needs a CUDA build of torch, and no storage code
runs a line of it, so a module stand-in takes its place. It is installed only for this import and
only after ``transformers`` has decided, with the real package absent, that torchvision is not
there: transformers would otherwise take the stand-in for the real thing. ``triton`` is the real
package (``triton==3.9.0`` imports without a GPU).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from functools import cache
from typing import Any

SGLANG_VERSION = "0.5.23"
INSTALL_HINT = (
    "install the upstream extra: `tox -e upstream` or `pip install --no-deps -r requirements/upstream.txt`"
)


class UpstreamUnavailable(ImportError):
    """SGLang, or something its storage modules import, is not installed."""


def _stand_in(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    module.__path__ = []
    module.__dict__.update(attrs)
    return module


def _install_torchvision_stand_in() -> None:
    if "torchvision" in sys.modules or importlib.util.find_spec("torchvision") is not None:
        return
    importlib.import_module("transformers.utils.import_utils")  # settles "torchvision: absent"
    interpolation = type("InterpolationMode", (), {})
    functional = _stand_in("torchvision.transforms.functional", InterpolationMode=interpolation)
    transforms = _stand_in("torchvision.transforms", InterpolationMode=interpolation, functional=functional)
    root = _stand_in("torchvision", __version__="0.0.0+hicache-conformance-stand-in", transforms=transforms)
    sys.modules.update(
        {
            "torchvision": root,
            "torchvision.transforms": transforms,
            "torchvision.transforms.functional": functional,
        }
    )


MODULES = {
    "storage": "sglang.srt.mem_cache.hicache_storage",
    "nixl": "sglang.srt.mem_cache.storage.nixl.hicache_nixl",
    "memory_pool": "sglang.srt.mem_cache.memory_pool",
    "mha": "sglang.srt.mem_cache.pool_host.mha",
    "mamba": "sglang.srt.mem_cache.pool_host.mamba",
    "device_info": "sglang.srt.mem_cache.device_pool_info",
}


@cache
def sglang() -> types.SimpleNamespace:
    """SGLang's storage types, backends and host pools, imported once per process."""
    try:
        from importlib.metadata import version

        found = version("sglang")
        _install_torchvision_stand_in()
        with warnings.catch_warnings():  # "only CUDA supports AWQ/GGUF" and the like, at import
            warnings.simplefilter("ignore")
            m = types.SimpleNamespace(**{k: importlib.import_module(v) for k, v in MODULES.items()})
    except ImportError as exc:  # PackageNotFoundError is an ImportError too
        raise UpstreamUnavailable(
            f"SGLang's storage backends cannot be imported ({exc}); {INSTALL_HINT}"
        ) from exc
    if found != SGLANG_VERSION:
        raise UpstreamUnavailable(
            f"the adapters and their findings are for sglang {SGLANG_VERSION}, not {found}"
        )
    return types.SimpleNamespace(
        version=found,
        PoolName=m.storage.PoolName,
        PoolHitPolicy=m.storage.PoolHitPolicy,
        PoolTransfer=m.storage.PoolTransfer,
        HiCacheStorageConfig=m.storage.HiCacheStorageConfig,
        HiCacheStorageExtraInfo=m.storage.HiCacheStorageExtraInfo,
        HiCacheFile=m.storage.HiCacheFile,
        HiCacheNixl=m.nixl.HiCacheNixl,
        MHATokenToKVPool=m.memory_pool.MHATokenToKVPool,
        MHATokenToKVPoolHost=m.mha.MHATokenToKVPoolHost,
        MambaPoolHost=m.mamba.MambaPoolHost,
        MambaStateBufferInfo=m.device_info.MambaStateBufferInfo,
    )
