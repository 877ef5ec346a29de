"""Settings from SGLang's ``--hicache-storage-backend-extra-config`` JSON.

Upstream ``HiCacheNixl`` keys that apply here are honoured with the same meaning:
``use_direct_io`` (top level), and the plugin choice in either of its two forms,
``{"plugin": {"posix": {"active": true, ...params}}}`` or flat POSIX params such as
``{"use_uring": "true"}``. The storage folder comes, as upstream, from
``SGLANG_HICACHE_NIXL_BACKEND_STORAGE_DIR``; ours add ``storage_dir``, ``queue``
(``aio`` | ``uring``), ``fsync``, ``verify`` (an XXH3 checksum of every record, on by default)
and ``segment_mib`` (size at which a writer starts a new segment file, 1024 by default).

**O_DIRECT is on by default, as in HiCacheNixl.** SGLang 0.5.23's ``NixlBackendConfig.get_use_direct_io``
(``sglang/srt/mem_cache/storage/nixl/nixl_utils.py``) returns ``use_direct_io`` when the key is
present and otherwise ``SGLANG_HICACHE_NIXL_USE_DIRECT_IO``, whose default is True
(``sglang/srt/environ.py``). We read the same key, then the same variable, then the same default,
so one ``extra_config`` selects one I/O mode whichever of the two backends it is given: a user who
switches never silently gets the other one. It is also the mode a KV cache tier wants: the host pool
already is the DRAM copy, and buffered I/O would keep a second one in the page cache, taking memory
from the host pool and making reads look fast only until memory pressure evicts it. The cost is
alignment: a pool whose regions are not 4096-aligned is staged through a buffer of ours (one copy a
page, as HiCacheNixl's bounce buffers), and a file system that refuses O_DIRECT is refused at
startup by the SGLang entry (:func:`direct_io_refusal`) rather than failing every write later.
``"use_direct_io": false`` (or the variable set to ``0``) selects buffered I/O. ``direct_io_source``
records which of the three decided, for the startup log line.

Capacity (:mod:`reference_backend.capacity`): ``max_size`` as HiCacheFile spells it,
HiCacheNixl's ``l3_cleaner_enabled``/``l3_cleaner_high_watermark``/``l3_cleaner_low_watermark``,
and ours, ``pin_seconds`` and ``eviction_policy``. ``tenant`` names the deployment whose entries
``clear()`` and eviction may remove (the model name by default). docs/configuration.md lists every
key with its default.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reference_backend.capacity import Budget
from reference_backend.checkpoint import EVERY as CHECKPOINT_EVERY

DEFAULT_DIR = "/tmp/hicache_storage"
DEFAULT_DIRECT_IO = True
"""HiCacheNixl's default (``SGLANG_HICACHE_NIXL_USE_DIRECT_IO = EnvBool(True)``); see the module
docstring for why we keep it."""
DIRECT_IO_ENV = "SGLANG_HICACHE_NIXL_USE_DIRECT_IO"
QUEUES = {"aio": {}, "uring": {"use_uring": "true"}}
_OUR_KEYS = {
    "storage_dir",
    "queue",
    "fsync",
    "verify",
    "segment_mib",
    "checkpoint_records",
    "use_direct_io",
    "plugin",
    "tenant",
}
_CAPACITY_KEYS = {
    "max_size",
    "l3_cleaner_enabled",
    "l3_cleaner_high_watermark",
    "l3_cleaner_low_watermark",
    "pin_seconds",
    "eviction_policy",
}


_TRUE = ("1", "true", "yes", "y", "on")
_FALSE = ("0", "false", "no", "n", "off")
"""Every spelling SGLang's ``EnvBool`` reads (``y``/``n`` included, for the environment variable)."""


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
    direct_io: bool = DEFAULT_DIRECT_IO
    queue: str = "aio"
    fsync: bool = False
    verify: bool = True
    segment_bytes: int = 1 << 30
    checkpoint_records: int = CHECKPOINT_EVERY
    """Records committed between two checkpoints of the index while the store runs (at least: an
    sixteenth of the index when that is more); 0 checkpoints only at close."""
    budget: Budget = field(default_factory=Budget)
    tenant: str | None = None
    """Who owns what this instance stores; None: the model name."""
    direct_io_source: str = "default"
    """Who chose ``direct_io``: ``extra_config``, the environment variable, or ``default``."""

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
        direct_io, direct_io_source = resolve_direct_io(extra)
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
            direct_io=direct_io,
            queue=queue,
            fsync=flag(extra.get("fsync", False), "fsync"),
            verify=flag(extra.get("verify", True), "verify"),
            segment_bytes=int(extra.get("segment_mib", 1024)) << 20,
            checkpoint_records=_count(
                extra.get("checkpoint_records", CHECKPOINT_EVERY), "checkpoint_records"
            ),
            budget=Budget.from_extra(
                {
                    **extra,
                    "l3_cleaner_enabled": flag(extra.get("l3_cleaner_enabled", True), "l3_cleaner_enabled"),
                },
                folder,
            ),
            tenant=None if extra.get("tenant") is None else str(extra["tenant"]),
            direct_io_source=direct_io_source,
        )

    def summary(self, model_name: str | None = None) -> str:
        """Every effective setting on one line, for the log an operator reads at startup."""
        budget = self.budget
        limit = f"{budget.limit} B" if budget.limit else "unbounded"
        tenant = self.tenant if self.tenant is not None else f"{model_name or ''!r} (the model name)"
        onoff = {True: "on", False: "off"}
        return (
            f"storage_dir={self.storage_dir} "
            f"O_DIRECT={onoff[self.direct_io]} (chosen by {self.direct_io_source}) "
            f"queue={self.queue} fsync={onoff[self.fsync]} verify={onoff[self.verify]} "
            f"segment_mib={self.segment_bytes >> 20} checkpoint_records={self.checkpoint_records} "
            f"budget={limit} "
            f"watermarks={budget.high * 100:g}%/{budget.low * 100:g}% "
            f"pin_seconds={budget.pin_seconds:g} eviction_policy={budget.policy} tenant={tenant}"
        )


def _count(value: Any, name: str) -> int:
    """A count of at least zero, as JSON or a user writes it; anything else is refused."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{name} must be a whole number of at least 0, not {value!r}")
    try:
        count = int(value)
    except ValueError:
        raise ValueError(f"{name} must be a whole number of at least 0, not {value!r}") from None
    if count < 0:
        raise ValueError(f"{name} must be a whole number of at least 0, not {value!r}")
    return count


def resolve_direct_io(extra: dict[str, Any]) -> tuple[bool, str]:
    """O_DIRECT on or off, and who said so: the ``use_direct_io`` key, else the environment variable
    HiCacheNixl reads, else HiCacheNixl's default (on); the same order upstream reads them in."""
    if "use_direct_io" in extra:
        return flag(extra["use_direct_io"], "use_direct_io"), "extra_config"
    env = os.environ.get(DIRECT_IO_ENV)
    if env is not None:
        return flag(env, DIRECT_IO_ENV), DIRECT_IO_ENV
    return DEFAULT_DIRECT_IO, "default"


def direct_io_refusal(folder: str | os.PathLike[str]) -> str | None:
    """Why ``folder``'s file system refuses an O_DIRECT open (None when it takes one): some do
    (tmpfs on older kernels, some FUSE and network file systems), and the segment log would then
    fail every write, which the controller only sees as cache misses."""
    os.makedirs(folder, exist_ok=True)
    probe = os.path.join(folder, f".o_direct_probe.{uuid.uuid4().hex}")
    try:
        fd = os.open(probe, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o600)
    except OSError as exc:
        return f"{exc.strerror or exc} (errno {exc.errno})"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None
