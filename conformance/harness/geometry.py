"""Turn the shipped model geometries into host-pool doubles.

A geometry fixes the shapes; the suite still chooses the layout, the base-pointer alignment and
the number of pages, because those are what a backend must cope with.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import Any

import hicache_fixtures
import torch

from conformance.doubles.hostpools import HostPoolDouble
from conformance.doubles.kv_pools import LogicalAnchorHostPool, MHAHostPool, MLAHostPool
from conformance.doubles.side_pools import (
    DeepSeekV4PagedHostPool,
    DSAIndexerHostPool,
    MambaHostPool,
    MultiRegionHostPool,
)
from conformance.model.capabilities import KV_LAYOUTS
from conformance.model.interface import PoolHitPolicy, PoolName, PoolTransfer
from conformance.model.sglang import UpstreamUnavailable, sglang

PAGE_FIRST_LAYOUTS = ("page_first", "page_first_direct")
ANY_LAYOUT_KINDS = frozenset({"mha", "mla", "dsa_indexer", "dsv4_paged", "dsv4_state", "logical_anchor"})
"""Kinds whose SGLang host pool takes every layout; Mamba (and the generic double) are page-first
only."""


def dtype_named(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


@dataclass(frozen=True)
class PoolSpec:
    """One pool of a model: its name, kind, hit policy and the shape arguments of its double."""

    name: PoolName
    kind: str
    hit_policy: PoolHitPolicy
    params: dict[str, Any] = field(hash=False)

    @property
    def layouts(self) -> tuple[str, ...]:
        return KV_LAYOUTS if self.kind in ANY_LAYOUT_KINDS else PAGE_FIRST_LAYOUTS

    def layout_for(self, kv_layout: str) -> str:
        """The layout this pool gets beside a KV pool in ``kv_layout``: SGLang gives every host pool
        the one ``--hicache-mem-layout``; a page-first-only kind gets page_first instead of
        layer_first."""
        if kv_layout in self.layouts:
            return kv_layout
        return "page_first_direct" if kv_layout == "page_first_direct" else "page_first"

    @property
    def block_pages(self) -> int:
        return int(self.params.get("block_pages", 0))

    @property
    def group_pages(self) -> int:
        return int(self.params.get("group_pages", 0))

    def exists_transfer(self, keys: list[str]) -> PoolTransfer:
        """The PoolTransfer that asks ``batch_exists_v2`` about this pool under its own policy."""
        return PoolTransfer(
            name=self.name,
            keys=list(keys),
            hit_policy=self.hit_policy,
            block_pages=self.block_pages,
            group_pages=self.group_pages,
        )

    def with_page_size(self, page_size: int) -> PoolSpec:
        """This pool with pages of ``page_size`` tokens (a DCP rank's share of a logical page)."""
        return replace(self, params={**self.params, "page_size": page_size})

    def build(
        self, *, layout: str, misalign: int = 0, page_num: int = 8, dcp_size: int = 1
    ) -> HostPoolDouble:
        """A fresh double of this pool, filled with a recognisable byte so stray writes show.

        ``dcp_size`` widens an MLA pool's addressing as SGLang does under DCP."""
        if dcp_size > 1 and self.kind != "mla":
            raise ValueError(f"SGLang widens only MLA host pools for DCP, not {self.kind!r}")
        p = self.params
        pool: HostPoolDouble
        if self.kind == "mha":
            pool = MHAHostPool(
                layer_num=p["layer_num"],
                head_num=p["head_num"],
                head_dim=p["head_dim"],
                page_size=p["page_size"],
                page_num=page_num,
                dtype=dtype_named(p["dtype"]),
                layout=layout,
                misalign=misalign,
            )
        elif self.kind == "mla":
            pool = MLAHostPool(
                layer_num=p["layer_num"],
                kv_cache_dim=p["kv_cache_dim"],
                page_size=p["page_size"],
                page_num=page_num,
                dtype=dtype_named(p["dtype"]),
                layout=layout,
                misalign=misalign,
                dcp_size=dcp_size,
            )
        elif self.kind == "mamba":
            pool = MambaHostPool(
                num_layers=p["num_layers"],
                temporal_shape=p["temporal_shape"],
                conv_shapes=p["conv_shapes"],
                size=page_num,
                layout=layout,
                temporal_dtype=dtype_named(p["temporal_dtype"]),
                conv_dtype=dtype_named(p["conv_dtype"]),
                misalign=misalign,
            )
        elif self.kind == "dsa_indexer":
            pool = DSAIndexerHostPool(
                layer_num=p["layer_num"],
                index_head_dim=p["index_head_dim"],
                page_size=p["page_size"],
                page_num=page_num,
                store_dtype=dtype_named(p["store_dtype"]),
                layout=layout,
                misalign=misalign,
            )
        elif self.kind == "multi_region":
            pool = MultiRegionHostPool(
                regions=[(dtype_named(d), shape) for d, shape in p["regions"]],
                page_size=p["page_size"],
                page_num=page_num,
                dtype=dtype_named(p["dtype"]),
                layout=layout,
                misalign=misalign,
            )
        elif self.kind in ("dsv4_paged", "dsv4_state"):
            item_bytes = p["item_bytes"] if self.kind == "dsv4_paged" else p["ring_size"] * p["slot_bytes"]
            pool = DeepSeekV4PagedHostPool(
                layer_num=p["layer_num"],
                item_bytes=item_bytes,
                page_size=p["page_size"],
                page_num=page_num,
                layout=layout,
                item_dtypes=[(dtype_named(d), n) for d, n in p.get("item_dtypes", [])],
                misalign=misalign,
            )
        elif self.kind == "logical_anchor":
            pool = LogicalAnchorHostPool(
                page_size=p["page_size"], page_num=page_num, layout=layout, misalign=misalign
            )
        else:
            raise ValueError(f"unknown pool kind {self.kind!r}")
        pool.fill(0xA5)
        return pool


@dataclass(frozen=True)
class ModelGeometry:
    family: str
    model: str
    is_mla: bool
    pools: tuple[PoolSpec, ...]
    drawn: bool = False
    """Composed by :func:`conformance.harness.combinations.pool_combinations` rather than loaded from a
    fixture: its repr then spells every pool, since no file holds it."""

    def __repr__(self) -> str:
        if self.drawn:
            return f"drawn({', '.join(f'{p.name}={p.kind}{dict(p.params)}' for p in self.pools)})"
        return f"load_geometry({self.family!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Keep hypothesis's falsifying examples to one readable line."""
        printer.text(repr(self))

    @property
    def kv(self) -> PoolSpec:
        return next(p for p in self.pools if p.name is PoolName.KV)

    @property
    def side_pools(self) -> tuple[PoolSpec, ...]:
        return tuple(p for p in self.pools if p.name is not PoolName.KV)

    @property
    def runs_dcp(self) -> bool:
        """Whether SGLang 0.5.23 lets this model's L3 run under DCP: an MLA KV pool with at most
        Mamba state beside it (``HiCacheController.attach_storage_backend`` refuses the rest)."""
        return self.kv.kind == "mla" and all(p.kind == "mamba" for p in self.side_pools)


def load_geometry(family: str) -> ModelGeometry:
    raw = hicache_fixtures.load_model(family)
    pools = tuple(
        PoolSpec(
            name=PoolName(entry["name"]),
            kind=entry["kind"],
            hit_policy=PoolHitPolicy(entry.get("hit_policy", "all_pages")),
            params={k: v for k, v in entry.items() if k not in ("name", "kind", "hit_policy", "tp")},
        )
        for entry in raw["pools"]
    )
    return ModelGeometry(raw["family"], raw["model"], bool(raw["is_mla"]), pools)


def stated_sharing(family: str) -> dict[str, str]:
    """What a fixture states each pool's TP sharing is, as read from SGLang (``"replicated"``: every
    TP rank reads the one entry its writer rank stored; ``"sharded"``: each rank its own)."""
    return {entry["name"]: entry["tp"] for entry in hicache_fixtures.load_model(family)["pools"]}


def all_geometries() -> list[ModelGeometry]:
    return [load_geometry(f) for f in hicache_fixtures.model_families()]


def covered_pool_names() -> frozenset[str]:
    """Every pool name some shipped geometry builds."""
    return frozenset(str(p.name) for g in all_geometries() for p in g.pools)


def interface_pool_names() -> frozenset[str]:
    """The pool names the interface knows: ours, and the installed SGLang's where it imports."""
    names = {str(n) for n in PoolName}
    with contextlib.suppress(UpstreamUnavailable):
        names |= {n.value for n in sglang().PoolName}
    return frozenset(names)


def untested_pool_names() -> list[str]:
    """Pool names the interface knows and no geometry builds: what a certificate does not cover.

    Derived from the installed ``PoolName`` rather than a list, so a pool a new SGLang adds shows up
    here (and in the report) instead of being silently absent.
    """
    return sorted(interface_pool_names() - covered_pool_names())
