"""What a backend claims, and the handle the suite uses to build it.

A backend is certified only for what it declares. The suite reads these claims to decide, test by
test, whether a property applies; a property that does not apply is skipped with the claim it
lacks as its reason, and the run ends with a list of every such skip.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import MISSING, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from conformance.model.interface import HiCacheStorageConfig, PoolHitPolicy, PoolName

KV_LAYOUTS = ("layer_first", "page_first", "page_first_direct")
"""Every host-pool layout SGLang 0.5.23 has (``--hicache-mem-layout``), in the suite's order."""
KV_KINDS = ("mha", "mla", "logical_anchor")
"""The KV host pools SGLang 0.5.23 builds: MHA, MLA, and DeepSeek-V4's logical anchor."""
SIDE_POOLS = frozenset(p for p in PoolName if p is not PoolName.KV)


def _claim(default: Any, doc: str) -> Any:
    """A capability field whose documentation lives beside it (README table, report, ``--help``)."""
    if isinstance(default, (dict, Mapping)):
        return field(default_factory=lambda: dict(default), metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class Capabilities:
    """Claims a backend makes about itself.

    Each field's ``metadata["doc"]`` says what the claim promises and what the suite may then do;
    :func:`capability_docs` gives them as rows (``python -m conformance.model.capabilities`` prints the
    README's table). A property that needs a claim the backend does not make is skipped, with the
    claim as its reason. Values are checked when the spec is built: a misspelt claim is one clear
    error, never a traceback in the middle of the run.
    """

    v1_kv: bool = _claim(
        True,
        "KV moves through the v1 calls (`batch_set_v1`, `batch_get_v1`, `batch_exists`); the suite "
        "drives KV that way and checks `batch_exists`'s leading run.",
    )
    kv_through_v2: bool = _claim(
        False,
        "KV may also travel in `batch_set_v2`/`batch_get_v2` beside the side pools "
        "(`register_mem_host_pool_v2(kv, PoolName.KV)` is called).",
    )
    generic_kv: bool = _claim(
        False,
        "KV also moves through the legacy generic calls SGLang's controller uses for `file`, `aibrix` "
        "and `dynamic` without `interface_v1`: `batch_set(keys, pages)`, `batch_get(keys, targets)` "
        "(a tensor or None per key), `batch_exists(keys)` and `exists(key)`, with flat data pages "
        "taken from and restored to the host pool as the controller does.",
    )
    side_pools: frozenset[PoolName] = _claim(
        frozenset(),
        "the side pools (`PoolName` members, never KV) the backend stores through v2; the suite "
        "registers and moves only these, and skips geometries that have none of them.",
    )
    kv_kinds: frozenset[str] = _claim(
        frozenset(KV_KINDS),
        "KV host pool kinds the backend is built with: `mha`, `mla`, `logical_anchor` (DeepSeek-V4's "
        "KV anchor, no KV bytes); a geometry whose KV pool is another kind is not claimed.",
    )
    shaped_side_pools: frozenset[PoolName] = _claim(
        frozenset(),
        "the declared side pools the backend stores only in the shape SGLang builds under that name, "
        "because it keys their objects by the pool's class (Mooncake splits an MHA model's SWA pool "
        "into K and V halves): the suite hands these no generic multi-region pool (the adversarial "
        "geometry's), a shape SGLang never gives a backend under that name.",
    )
    layouts: frozenset[str] = _claim(
        frozenset(KV_LAYOUTS),
        "KV host layouts accepted: `layer_first`, `page_first`, `page_first_direct`.",
    )
    hit_policies: frozenset[PoolHitPolicy] = _claim(
        frozenset(),
        "`PoolHitPolicy` members `batch_exists_v2` honours; exists is asked only about pools with "
        "these policies.",
    )
    persistence: bool = _claim(
        False,
        "a new instance on the same storage, in any process, sees what was stored; the suite "
        "restarts backends and runs writers in child processes (killed, size-limited, read-only).",
    )
    concurrent: bool = _claim(False, "one instance may be called from several threads at once.")
    multiprocess: bool = _claim(
        False, "several processes (each its own instance) may share one storage location."
    )
    stores_files: bool = _claim(
        False,
        "entries live in regular files under the storage folder the factory is given. The suite "
        "may make that folder read-only, read every file in it, and truncate or corrupt whatever "
        "files a write created or changed (found by comparing the folder before and after it); it "
        "assumes nothing about file names or counts, and other files (markers, indexes, locks) are "
        "left alone.",
    )
    detects_corruption: bool = _claim(
        False,
        "a damaged entry reads back as False, never as wrong bytes (needs `stores_files` or "
        "`stores_objects`, where the suite damages it).",
    )
    stores_objects: bool = _claim(
        False,
        "its entries are objects in an S3 bucket the suite reaches through the spec's `bucket` hook "
        "(the objects under a storage location's prefix): the suite shortens and bit-flips them, as "
        "it damages files under `stores_files`.",
    )
    reports_transfer_mode: bool = _claim(
        False, 'promises `backend.transfer_mode(pool) -> "zero_copy" | "staged"`.'
    )
    enumerates_objects: bool = _claim(
        False,
        "promises `backend.stored_object_count() -> int`, one object per stored entry; the suite "
        "checks no two entries share one.",
    )
    overwrites: bool = _claim(
        True,
        "a set of a stored key replaces its bytes; False declares first-write-wins (the second "
        "set writes nothing).",
    )
    io_modes: Mapping[str, Mapping[str, Any]] = _claim(
        {"default": {}},
        "mode name -> `extra_config` that selects it; `--backend-mode` runs the suite in one, "
        "and the alignment property crosses every mode.",
    )
    direct_io_modes: frozenset[str] = _claim(
        frozenset(),
        "the `io_modes` that use O_DIRECT, where misaligned host memory must be staged.",
    )
    stores_bytes: bool = _claim(
        True,
        "a get fills host memory with the bytes that were stored; False declares a keys-only "
        "backend (SGLang's Sim): its keys, exists and hits are certified, every byte check is skipped.",
    )
    fills_restorable_prefix: bool = _claim(
        True,
        "`batch_exists_v2` fills `restorable_prefix_pages` whenever a TRAILING_PAGES pool is queried; "
        "False declares it is left None, where SGLang's controller takes every prefix up to the hit as "
        "restorable.",
    )
    string_flags: bool = _claim(
        True,
        'boolean `extra_config` settings also read as the JSON strings "true" and "false", as users write '
        "`--hicache-storage-backend-extra-config`: every mode is certified so spelled, and any other "
        'string there (e.g. "maybe") must be refused at construction.',
    )
    config_spellings: Mapping[str, tuple[Mapping[str, Any], ...]] = _claim(
        {},
        "mode name -> further `extra_config`s that must behave exactly as that mode (e.g. upstream's "
        "nested `plugin` form).",
    )
    refused_configs: tuple[Mapping[str, Any], ...] = _claim(
        (),
        "`extra_config`s the backend cannot honour: each must fail construction with an exception, "
        "never run as some other mode.",
    )
    decode_context_parallel: bool = _claim(
        False,
        "MLA ranks with DCP (`dcp_size > 1`), which SGLang 0.5.23 runs on its file and Mooncake "
        "backends only, for an MLA KV pool with at most Mamba beside it: the suite then draws DCP "
        "ranks with SGLang's widened MLA pool (a page spans `logical_page_size` slots, `dcp_size` "
        "to a row), each DCP shard one entry shared across DCP groups; undeclared, ranks are drawn "
        "without DCP.",
    )
    bounded_capacity: str = _claim(
        "",
        "the `extra_config` key that bounds the bytes a deployment stores (e.g. `max_size`, in bytes): "
        "the suite sets small budgets through it and checks that the files stay within them in one "
        "process and in two, after every write and during them (a sampler process walks the folder "
        "throughout: an overshoot between two steps of a write that lasts a few walks counts), that "
        "eviction takes whole entries (every pool, every rank) and leaves exists and get agreeing, "
        "and that gets racing eviction are whole or False. Empty: no bound is claimed (needs "
        "`stores_files`, where the bytes are measured).",
    )
    budget_spellings: bool = _claim(
        False,
        "the `bounded_capacity` key also reads a budget as HiCacheFile does (SGLang's "
        "`human_readable_int`): SI suffixes `k`, `M`, `G`, `T`, decimals allowed (`262.144k`), and "
        "IEC ones `Ki`, `Mi`, `Gi`, `Ti`; the suite sets budgets so spelled and checks that they bound "
        "the same bytes.",
    )
    eviction_pin_seconds: float = _claim(
        0.0,
        "how long an entry `exists` reported stays readable whatever is written meanwhile, in any "
        "process (a lease; needs `bounded_capacity`). 0: no pin is claimed.",
    )
    lease_clock: str = _claim(
        "",
        "`module:attribute` naming the zero-argument function, returning wall-clock nanoseconds, that "
        "every lease the backend grants (the pin after exists) is taken and checked by: the suite "
        "replaces it in its own process to run time forward instead of waiting a lease out. Empty: "
        "leases are checked in real time, where `eviction_pin_seconds` is short enough to wait.",
    )
    shares_folder: bool = _claim(
        False,
        "deployments of different models may share one storage folder: `clear()` in one, and its "
        "eviction where `bounded_capacity` is claimed, never removes another's entries.",
    )
    recency_eviction: bool = _claim(
        False,
        "under `bounded_capacity`, a read counts as a use: entries read since are evicted after "
        "entries not used since they were written (least recently used first, at whatever "
        "granularity the backend evicts: a read keeps what it touched).",
    )
    refuses_per_pool: bool = _claim(
        False,
        "in one `batch_set_v2`/`batch_get_v2` naming several pools, a malformed request for one pool "
        "(unregistered, keys and indices of different lengths, indices outside the pool or off a "
        "page, indices of another dtype) is refused alone: the call returns, False for that pool's "
        "keys, and moves every other pool's pages as if they had been asked alone (needs "
        "`kv_through_v2`, so KV travels beside the side pool refused).",
    )

    def __post_init__(self) -> None:
        problems: list[str] = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "bool" and not isinstance(value, bool):
                problems.append(f"{f.name} must be True or False, not {value!r}")
        if not isinstance(self.bounded_capacity, str):
            problems.append(f"bounded_capacity must name an extra_config key, not {self.bounded_capacity!r}")
        pin = self.eviction_pin_seconds
        if isinstance(pin, bool) or not isinstance(pin, (int, float)) or pin < 0:
            problems.append(f"eviction_pin_seconds must be seconds (>= 0), not {pin!r}")
        clock = self.lease_clock
        if not isinstance(clock, str) or (clock and not re.fullmatch(r"[\w.]+:\w+", clock)):
            problems.append(f"lease_clock must name a function as module:attribute, not {clock!r}")
        self._check_members("side_pools", PoolName, problems)
        self._check_members("hit_policies", PoolHitPolicy, problems)
        self._check_members("shaped_side_pools", PoolName, problems)
        shaped, declared = self.shaped_side_pools, self.side_pools
        if isinstance(shaped, frozenset) and isinstance(declared, frozenset) and not shaped <= declared:
            problems.append(f"shaped_side_pools {sorted(map(str, shaped - declared))} are not in side_pools")
        if PoolName.KV in self.side_pools:
            problems.append("side_pools must not hold PoolName.KV: declare kv_through_v2 instead")
        self._check_strings("layouts", problems)
        if not self.layouts <= set(KV_LAYOUTS):
            problems.append(
                f"layouts: unknown {sorted(set(self.layouts) - set(KV_LAYOUTS))}; known: {sorted(KV_LAYOUTS)}"
            )
        self._check_strings("kv_kinds", problems)
        if not self.kv_kinds <= set(KV_KINDS):
            problems.append(
                f"kv_kinds: unknown {sorted(set(self.kv_kinds) - set(KV_KINDS))}; known: {sorted(KV_KINDS)}"
            )
        modes = self.io_modes
        if not isinstance(modes, Mapping) or not modes:
            problems.append(f"io_modes must map mode names to extra_config dicts, not {modes!r}")
        else:
            for name, extra in modes.items():
                if not isinstance(name, str) or not isinstance(extra, Mapping):
                    problems.append(f"io_modes[{name!r}] must be a str -> dict entry, not {extra!r}")
            self._check_strings("direct_io_modes", problems)
            if not self.direct_io_modes <= set(modes):
                problems.append(
                    f"direct_io_modes {sorted(self.direct_io_modes)} are not all in io_modes {sorted(modes)}"
                )
        if problems:
            raise TypeError("invalid Capabilities: " + "; ".join(problems))

    def _as_frozenset(self, name: str, problems: list[str]) -> frozenset[Any] | None:
        value = getattr(self, name)
        if isinstance(value, (str, bytes)) or not isinstance(value, (set, frozenset, list, tuple)):
            problems.append(f"{name} must be a set, not {value!r}")
            return None
        frozen = frozenset(value)
        object.__setattr__(self, name, frozen)
        return frozen

    def _check_members(self, name: str, kind: type[Enum], problems: list[str]) -> None:
        values = self._as_frozenset(name, problems)
        wrong = sorted(repr(v) for v in values or () if not isinstance(v, kind))
        if wrong:
            members = ", ".join(f"{kind.__name__}.{m.name}" for m in kind)
            problems.append(f"{name} must hold {kind.__name__} members ({members}), not {', '.join(wrong)}")

    def _check_strings(self, name: str, problems: list[str]) -> None:
        values = self._as_frozenset(name, problems)
        wrong = sorted(repr(v) for v in values or () if not isinstance(v, str))
        if wrong:
            problems.append(f"{name} must hold strings, not {', '.join(wrong)}")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready claims, one entry per field, sets sorted."""
        return {f.name: _shown(getattr(self, f.name)) for f in fields(self)}


def _shown(value: Any) -> Any:
    """A claim as JSON: mappings by their keys, sets sorted, enum members by value."""
    if isinstance(value, Mapping):
        return sorted(value)
    if isinstance(value, frozenset):
        return sorted(str(v.value) if isinstance(v, Enum) else str(v) for v in value)
    return value


def capability_docs() -> list[tuple[str, str, str]]:
    """``(field, default, what it promises)`` for every capability, in declaration order."""
    rows = []
    for f in fields(Capabilities):
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        rows.append((f.name, json.dumps(_shown(default)), str(f.metadata.get("doc", ""))))
    return rows


Factory = Callable[[HiCacheStorageConfig, Path], Any]
PoolBuilder = Callable[..., Any]
"""``(pool_spec, *, layout, misalign, page_num) -> HostPoolDouble``, as ``PoolSpec.build``; an
MLA KV pool under DCP also gets ``dcp_size`` (only then, so builders without DCP keep working)."""


class BucketObjects(Protocol):
    """The objects one storage location holds in a bucket, as the suite reaches them to damage them."""

    def states(self) -> dict[str, tuple[int, str]]:
        """Each object's name, with its size and entity tag."""
        ...

    def read(self, name: str) -> bytes: ...

    def write(self, name: str, data: bytes) -> None: ...


class Server(NamedTuple):
    """The service a backend's ``session`` meets: ``name`` (``moto``, ``rgw``) qualifies known
    defects the way an I/O mode does, ``description`` (with its version) goes in the report."""

    name: str
    description: str


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
    the suite's child processes reach the same one; ``server``, when given, says which service
    that is (the certification report names it, so runs of one backend on two servers stay apart),
    and ``servers`` lists the names it can be: a known defect keyed ``name@server`` holds on that
    server only, as ``name@mode`` holds in that I/O mode only. ``forget``, when given, removes what
    a backend keeps for a storage location outside it (a bucket's objects under the location's
    prefix) once the suite is done with the location, as the suite removes the folder itself: a
    certification leaves nothing behind, and a shared service does not grow with the run.
    ``bucket``, where ``stores_objects`` is claimed, gives the objects a storage location holds.
    """

    name: str
    factory: Factory
    capabilities: Capabilities
    version: str = "unknown"
    build_pool: PoolBuilder | None = None
    known_defects: Mapping[str, str] = field(default_factory=dict)
    intermittent_defects: Mapping[str, str] = field(default_factory=dict)
    session: Callable[[], AbstractContextManager[None]] | None = None
    server: Callable[[], Server] | None = None
    servers: tuple[str, ...] = ()
    forget: Callable[[Path], None] | None = None
    bucket: Callable[[Path], BucketObjects] | None = None

    def known_defect(self, test_id: str, mode: str, server: str = "") -> tuple[str, bool] | None:
        """``(reason, strict)`` where a declared defect covers ``test_id`` in ``mode`` on
        ``server``, else None."""
        base = test_id.split("[", 1)[0] + "[*]"
        where = [mode, server] if server else [mode]
        for key in (*(f"{k}@{w}" for w in where for k in (test_id, base)), test_id, base):
            if key in self.known_defects:
                return self.known_defects[key], True
            if key in self.intermittent_defects:
                return self.intermittent_defects[key], False
        return None

    def unmatched_defects(self, test_ids: Iterable[str]) -> list[str]:
        """Declared defect keys that cover none of ``test_ids``, or name an I/O mode or server this
        backend does not declare: a key that can never apply is a stale claim, reported, not ignored."""
        ids = set(test_ids)
        covered = ids | {t.split("[", 1)[0] + "[*]" for t in ids}
        stale = []
        for key in [*self.known_defects, *self.intermittent_defects]:
            name, _, mode = key.partition("@")
            if name not in covered or (mode and mode not in {*self.capabilities.io_modes, *self.servers}):
                stale.append(key)
        return sorted(stale)
