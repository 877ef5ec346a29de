"""The class SGLang's ``StorageBackendFactory`` loads: our backend under SGLang's ABC.

SGLang's dynamic loader imports ``module_path``, takes ``class_name``, checks that it subclasses
``HiCacheStorage`` and calls ``cls(storage_config, kwargs)``. This module makes that subclass; it
imports SGLang, so only SGLang itself should import it. Our code reads SGLang's own
``PoolTransfer``/``PoolName``/``PoolHitPolicy`` objects by value, so no translation is needed.

At startup the file target logs its effective configuration once, at INFO, on this module's logger:
every setting after defaults and the environment are applied, and whether O_DIRECT was chosen by
``extra_config``, by ``SGLANG_HICACHE_NIXL_USE_DIRECT_IO`` or by default, so a user who switched
from HiCacheNixl can see which I/O mode they got.
"""

from __future__ import annotations

import logging
from importlib import metadata
from typing import Any

from sglang.srt.mem_cache.hicache_storage import HiCacheStorage

from reference_backend.backend import NixlBackend
from reference_backend.config import BackendConfig, direct_io_refusal
from reference_backend.obj import NixlObjBackend

logger = logging.getLogger(__name__)


class _BatchOnly:
    """SGLang's legacy single-key API, refused: the controller drives storage through batch_*_v1/v2."""

    def get(self, key: str, target_location: Any = None, target_sizes: Any = None) -> Any:
        raise NotImplementedError("the legacy single-key API is not supported; use batch_*_v1/v2")

    def batch_get(self, keys: list[str], target_locations: Any = None, target_sizes: Any = None) -> Any:
        raise NotImplementedError("the legacy single-key API is not supported; use batch_*_v1/v2")

    def set(self, key: str, value: Any = None, target_location: Any = None, target_sizes: Any = None) -> bool:
        raise NotImplementedError("the legacy single-key API is not supported; use batch_*_v1/v2")

    def batch_set(
        self, keys: list[str], values: Any = None, target_locations: Any = None, target_sizes: Any = None
    ) -> bool:
        raise NotImplementedError("the legacy single-key API is not supported; use batch_*_v1/v2")

    def exists(self, key: str) -> bool:
        return bool(self.batch_exists([key]) == 1)  # type: ignore[attr-defined]

    def get_stats(self) -> dict[str, int]:
        return {"objects": self.stored_object_count()}  # type: ignore[attr-defined]


def require_interface_v1(storage_config: Any) -> None:
    """Refuse, at startup, a configuration that SGLang's controller would drive through the legacy
    calls: it takes the zero-copy v1/v2 path for a ``dynamic`` backend only when
    ``bool(extra_config.get("interface_v1", 0))``, and otherwise every backup would fail."""
    extra = getattr(storage_config, "extra_config", None) or {}
    if not bool(extra.get("interface_v1", 0)):
        raise ValueError(
            'set "interface_v1": true in --hicache-storage-backend-extra-config: without it SGLang drives '
            "a dynamic backend through the legacy batch_set/batch_get calls, which this backend does not have"
        )


def require_direct_io_support(settings: BackendConfig) -> None:
    """Refuse, at startup, O_DIRECT on a file system that does not take it: otherwise every write
    would fail and SGLang would only see an L3 that never hits."""
    if not settings.direct_io:
        return
    why = direct_io_refusal(settings.storage_dir)
    if why is not None:
        by = settings.direct_io_source
        chosen = "is the default (as in HiCacheNixl)" if by == "default" else f"was set by {by}"
        raise ValueError(
            f"O_DIRECT {chosen}, but {settings.storage_dir} refuses an O_DIRECT open: {why}; "
            'choose a folder on a file system that takes it, or set "use_direct_io": false'
        )


def nixl_version() -> str:
    try:
        return metadata.version("nixl")
    except metadata.PackageNotFoundError:
        return "unknown"


class HiCacheNixlReference(_BatchOnly, NixlBackend, HiCacheStorage):
    """``--hicache-storage-backend dynamic`` target on files; docs/configuration.md lists the extra_config."""

    def __init__(self, storage_config: Any, location: Any = None) -> None:
        require_interface_v1(storage_config)
        require_direct_io_support(BackendConfig.from_extra(storage_config.extra_config, location))
        super().__init__(storage_config, location)
        logger.info(
            "HiCacheNixlReference: %s nixl=%s",
            self.settings.summary(storage_config.model_name),
            nixl_version(),
        )


class HiCacheNixlObjReference(_BatchOnly, NixlObjBackend, HiCacheStorage):
    """``--hicache-storage-backend dynamic`` target on an S3 bucket; see the README."""

    def __init__(self, storage_config: Any, location: Any = None) -> None:
        require_interface_v1(storage_config)
        super().__init__(storage_config, location)
