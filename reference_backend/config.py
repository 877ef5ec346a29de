"""Settings from SGLang's ``--hicache-storage-backend-extra-config`` JSON.

Upstream ``HiCacheNixl`` keys that apply here are honoured with the same meaning:
``use_direct_io`` (top level), and the plugin choice in either of its two forms,
``{"plugin": {"posix": {"active": true, ...params}}}`` or flat POSIX params such as
``{"use_uring": "true"}``. The storage folder comes, as upstream, from
``SGLANG_HICACHE_NIXL_BACKEND_STORAGE_DIR``; ours add ``storage_dir``, ``queue``
(``aio`` | ``uring``), ``fsync``, ``verify`` (an XXH3 checksum of every record, on by default)
and ``segment_mib`` (size at which a writer starts a new segment file, 1024 by default).

Capacity (:mod:`reference_backend.capacity`): ``max_size`` as HiCacheFile spells it,
HiCacheNixl's ``l3_cleaner_enabled``/``l3_cleaner_high_watermark``/``l3_cleaner_low_watermark``,
and ours, ``pin_seconds`` and ``eviction_policy``. ``tenant`` names the deployment whose entries
``clear()`` and eviction may remove (the model name by default).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reference_backend.capacity import Budget

DEFAULT_DIR = "/tmp/hicache_storage"
QUEUES = {"aio": {}, "uring": {"use_uring": "true"}}
_OUR_KEYS = {"storage_dir", "queue", "fsync", "verify", "segment_mib", "use_direct_io", "plugin", "tenant"}
_CAPACITY_KEYS = {
    "max_size",
    "l3_cleaner_enabled",
    "l3_cleaner_high_watermark",
    "l3_cleaner_low_watermark",
    "pin_seconds",
    "eviction_policy",
}


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def flag(value: Any, name: str) -> bool:
    """A boolean setting as JSON gives it (``true``) or as users write it (``"true"``); anything
    else is refused, so that a typo never selects a mode silently."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"{name} must be true or false (or the strings {_TRUE + _FALSE}), not {value!r}")


@dataclass(frozen=True)
class BackendConfig:
    storage_dir: Path
    direct_io: bool = False
    queue: str = "aio"
    fsync: bool = False
    verify: bool = True
    segment_bytes: int = 1 << 30
    budget: Budget = field(default_factory=Budget)
    tenant: str | None = None
    """Who owns what this instance stores; None: the model name."""

    def plugin_params(self) -> dict[str, str]:
        return dict(QUEUES[self.queue])

    @classmethod
    def from_extra(cls, extra: dict[str, Any] | None, location: Any = None) -> BackendConfig:
        """Build settings; ``location`` is the suite's storage path or SGLang's kwargs dict."""
        extra = dict(extra or {})
        plugin = extra.get("plugin")
        params: dict[str, Any] = {}
        if isinstance(plugin, dict):
            active = [
                k for k, v in plugin.items() if flag(dict(v).get("active", False), f"plugin.{k}.active")
            ]
            if active and active[0].lower() != "posix":
                raise ValueError(f"only the POSIX plugin is supported, not {active[0]!r}")
            params = {k: v for k, v in dict(plugin.get("posix", {})).items() if k != "active"}
        else:
            params = {k: v for k, v in extra.items() if k not in _OUR_KEYS | _CAPACITY_KEYS}
        queue = str(
            extra.get("queue", "uring" if flag(params.get("use_uring", False), "use_uring") else "aio")
        )
        if queue not in QUEUES:
            raise ValueError(f"queue must be one of {sorted(QUEUES)}, not {queue!r}")
        if isinstance(location, dict):
            location = location.get("storage_dir")
        folder = (
            extra.get("storage_dir")
            or (str(location) if location is not None else None)
            or os.environ.get("SGLANG_HICACHE_NIXL_BACKEND_STORAGE_DIR")
            or DEFAULT_DIR
        )
        return cls(
            storage_dir=Path(folder),
            direct_io=flag(extra.get("use_direct_io", False), "use_direct_io"),
            queue=queue,
            fsync=flag(extra.get("fsync", False), "fsync"),
            verify=flag(extra.get("verify", True), "verify"),
            segment_bytes=int(extra.get("segment_mib", 1024)) << 20,
            budget=Budget.from_extra(
                {
                    **extra,
                    "l3_cleaner_enabled": flag(extra.get("l3_cleaner_enabled", True), "l3_cleaner_enabled"),
                },
                folder,
            ),
            tenant=None if extra.get("tenant") is None else str(extra["tenant"]),
        )
