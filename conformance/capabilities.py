"""What a backend claims, and the handle the suite uses to build it.

A backend is certified only for what it declares. The suite reads these claims to decide, test by
test, whether a property applies; a property that does not apply is skipped with the claim it
lacks as its reason, and the run ends with a list of every such skip.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.interface import HiCacheStorageConfig, PoolHitPolicy, PoolName

ALL_LAYOUTS = frozenset({"layer_first", "page_first", "page_first_direct"})
SIDE_POOLS = frozenset(p for p in PoolName if p is not PoolName.KV)


@dataclass(frozen=True)
class Capabilities:
    """Claims a backend makes about itself.

    ``io_modes`` maps a mode name to the ``extra_config`` that selects it; the suite crosses the
    alignment property with every mode, and ``--backend-mode`` runs the whole suite in one.
    ``direct_io_modes`` names those that use O_DIRECT, where misaligned memory must be staged.
    ``reports_transfer_mode`` promises ``backend.transfer_mode(pool) -> "zero_copy" | "staged"``;
    ``enumerates_objects`` promises ``backend.stored_object_count() -> int``.
    ``persistence``: a new instance on the same storage, in any process, sees what was stored.
    ``concurrent``: one instance may be called from several threads at once.
    ``multiprocess``: several processes may share one storage location.
    ``stores_files``: entries are regular files under the storage folder, which the suite may
    truncate or corrupt. ``detects_corruption``: a damaged file reads back as False, never as
    wrong bytes.
    """

    v1_kv: bool = True
    kv_through_v2: bool = False
    side_pools: frozenset[PoolName] = frozenset()
    layouts: frozenset[str] = ALL_LAYOUTS
    hit_policies: frozenset[PoolHitPolicy] = frozenset()
    persistence: bool = False
    concurrent: bool = False
    multiprocess: bool = False
    stores_files: bool = False
    detects_corruption: bool = False
    reports_transfer_mode: bool = False
    enumerates_objects: bool = False
    overwrites: bool = True
    io_modes: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {"default": {}})
    direct_io_modes: frozenset[str] = frozenset()

    def as_dict(self) -> dict[str, Any]:
        return {
            "v1_kv": self.v1_kv,
            "kv_through_v2": self.kv_through_v2,
            "side_pools": sorted(str(p) for p in self.side_pools),
            "layouts": sorted(self.layouts),
            "hit_policies": sorted(str(h.value) for h in self.hit_policies),
            "persistence": self.persistence,
            "concurrent": self.concurrent,
            "multiprocess": self.multiprocess,
            "stores_files": self.stores_files,
            "detects_corruption": self.detects_corruption,
            "reports_transfer_mode": self.reports_transfer_mode,
            "enumerates_objects": self.enumerates_objects,
            "overwrites": self.overwrites,
            "io_modes": sorted(self.io_modes),
            "direct_io_modes": sorted(self.direct_io_modes),
        }


Factory = Callable[[HiCacheStorageConfig, Path], Any]
PoolBuilder = Callable[..., Any]
"""``(pool_spec, *, layout, misalign, page_num) -> HostPoolDouble``, as ``PoolSpec.build``."""


@dataclass(frozen=True)
class BackendSpec:
    """A named backend: how to build one on a storage location, and what it claims.

    ``build_pool`` replaces the suite's host-pool doubles where a backend can be given its
    engine's real pools (the SGLang adapters do). ``known_defects`` maps test ids (the part after
    the module path; a trailing ``[*]`` covers every parameter set, a trailing ``@mode`` limits the
    entry to one I/O mode) to the reason a property is expected to fail: each becomes
    ``xfail(strict=True)``, so a fixed defect turns the run red. ``intermittent_defects`` has the
    same form, for defects a property catches only when a race or a kill lands just so; those
    become non-strict xfails, since a pass proves nothing there. ``session``, when given, is
    entered once per test session (per xdist worker) around the whole run: a backend whose store
    is a service starts or finds it there, and publishes where it is through the environment, so
    the suite's child processes reach the same one.
    """

    name: str
    factory: Factory
    capabilities: Capabilities
    version: str = "unknown"
    build_pool: PoolBuilder | None = None
    known_defects: Mapping[str, str] = field(default_factory=dict)
    intermittent_defects: Mapping[str, str] = field(default_factory=dict)
    session: Callable[[], AbstractContextManager[None]] | None = None

    def known_defect(self, test_id: str, mode: str) -> tuple[str, bool] | None:
        """``(reason, strict)`` where a declared defect covers ``test_id`` in ``mode``, else None."""
        base = test_id.split("[", 1)[0] + "[*]"
        for key in (f"{test_id}@{mode}", f"{base}@{mode}", test_id, base):
            if key in self.known_defects:
                return self.known_defects[key], True
            if key in self.intermittent_defects:
                return self.intermittent_defects[key], False
        return None
