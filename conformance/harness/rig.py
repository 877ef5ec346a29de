"""A backend under test wired to host-pool doubles: the suite's one way to drive a backend.

``Target`` is the resolved backend plus the run's choices (I/O mode, where storage lives). A
``Rig`` is one backend instance with one model geometry's pools registered. Several rigs can share
a storage location, which is how the suite models a restart or a second TP rank.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import torch

from conformance.doubles.hostpools import HostPoolDouble
from conformance.harness.caller import ControllerCalls, PoolSlots
from conformance.harness.geometry import ModelGeometry, PoolSpec
from conformance.harness.reaper import REAPER
from conformance.model.capabilities import BackendSpec, Capabilities
from conformance.model.interface import HiCacheStorageConfig, PoolName, PoolTransfer, page_span, slot_count
from conformance.model.sharing import Shape


@dataclass
class Target:
    """The backend under test; ``ref`` is how ``--backend`` named it, for child processes."""

    spec: BackendSpec
    mode: str
    root: Path
    extra_config: dict[str, Any] = field(default_factory=dict)
    ref: str = ""

    @property
    def caps(self) -> Capabilities:
        return self.spec.capabilities

    def __repr__(self) -> str:
        return f"Target({self.spec.name!r}, mode={self.mode!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Keep hypothesis's falsifying examples to one readable line."""
        printer.text(repr(self))

    def require(self, claim: str, why: str = "") -> None:
        """Skip, naming the claim, unless the backend declares it."""
        if not getattr(self.caps, claim):
            pytest.skip(f"backend {self.spec.name!r} does not declare {claim}" + (f": {why}" if why else ""))

    def with_mode(self, mode: str) -> Target:
        return replace(self, mode=mode, extra_config=dict(self.caps.io_modes[mode]))

    @contextlib.contextmanager
    def storage(self) -> Iterator[Path]:
        """A fresh, empty storage location, removed afterwards (by the reaper, off this thread),
        with whatever the backend kept for it in a service (``BackendSpec.forget``)."""
        path = Path(tempfile.mkdtemp(prefix="store-", dir=self.root))
        try:
            yield path
        finally:
            try:
                if self.spec.forget is not None:
                    self.spec.forget(path)
            finally:
                REAPER.discard(path)

    def build_pool(
        self, spec: PoolSpec, *, layout: str, misalign: int = 0, page_num: int = 8, dcp_size: int = 1
    ) -> HostPoolDouble:
        """The host pool the backend is given: its engine's own where it declares one, else a double.

        ``dcp_size`` (an MLA KV pool under DCP) reaches the builder only where it is above 1."""
        build = self.spec.build_pool or PoolSpec.build
        dcp = {"dcp_size": dcp_size} if dcp_size > 1 else {}
        pool: HostPoolDouble = build(spec, layout=layout, misalign=misalign, page_num=page_num, **dcp)
        return pool

    def usable_pools(self, geometry: ModelGeometry) -> list[PoolSpec]:
        """The geometry's side pools this backend claims to support, in the shapes it claims them."""
        generic = {p.name for p in geometry.side_pools if p.kind == "multi_region"}
        claimed = self.caps.side_pools - (generic & self.caps.shaped_side_pools)
        return [p for p in geometry.side_pools if p.name in claimed]

    def queryable_pools(self, geometry: ModelGeometry) -> list[PoolSpec]:
        """The usable side pools whose hit policy the backend declares, so exists may ask about them."""
        return [p for p in self.usable_pools(geometry) if p.hit_policy in self.caps.hit_policies]

    def require_side_pools(self, geometry: ModelGeometry) -> list[PoolSpec]:
        pools = self.usable_pools(geometry)
        if not pools:
            pytest.skip(
                f"backend {self.spec.name!r} declares none of {geometry.family}'s side pools "
                f"({', '.join(str(p.name) for p in geometry.side_pools) or 'none'})"
            )
        return pools

    def require_layout(self, layout: str) -> None:
        """Only declared layouts are examples: a drawn layout the backend does not declare is
        rejected (``assume``), not a skip, which would end the whole property at its first draw."""
        from hypothesis import assume

        assume(layout in self.caps.layouts)


def byte_difference(got: bytes, want: bytes) -> str | None:
    """A short account of how two pages differ, or None when they are identical.

    Pages are kilobytes: pytest's own diff of two such ``bytes`` takes minutes per example.
    """
    if got == want:
        return None
    if len(got) != len(want):
        return f"{len(got)} bytes where {len(want)} were stored"
    diffs = [i for i in range(len(got)) if got[i] != want[i]]
    at = diffs[0]
    return (
        f"{len(diffs)} of {len(got)} bytes differ; first at offset {at}: "
        f"{got[at : at + 8].hex()} where {want[at : at + 8].hex()} was stored"
    )


def side_layout(layout: str, spec: PoolSpec) -> str:
    """SGLang gives every host pool the one ``--hicache-mem-layout``; page-first-only kinds (Mamba,
    the DSA indexer) get page_first where it is layer_first."""
    return spec.layout_for(layout)


def kv_spec(geometry: ModelGeometry, shape: Shape) -> PoolSpec:
    """The KV pool a rank of ``shape`` registers: under DCP, SGLang's server page is the logical
    page, and each rank's pool holds its ``1/dcp_size`` share of it per row."""
    if shape.dcp_size == 1:
        return geometry.kv
    assert shape.logical_page_size is not None  # Shape refuses DCP without one
    return geometry.kv.with_page_size(shape.logical_page_size // shape.dcp_size)


class Rig:
    """One backend instance plus the host pools it has been given."""

    def __init__(
        self,
        target: Target,
        geometry: ModelGeometry,
        storage: Path,
        *,
        layout: str = "page_first",
        misalign: int = 0,
        page_num: int = 8,
        tp_rank: int = 0,
        tp_size: int = 1,
        shape: Shape | None = None,
        model_name: str | None = None,
        pools: dict[PoolName, HostPoolDouble] | None = None,
    ) -> None:
        """``shape`` places the rank in a deployment; without it, ``tp_rank``/``tp_size`` alone do."""
        self.target, self.geometry, self.storage = target, geometry, storage
        if shape is None:
            shape = Shape(tp_rank=tp_rank, tp_size=tp_size)
        if shape.dcp_size > 1 and not geometry.runs_dcp:
            raise ValueError(f"{geometry.family}: SGLang runs no L3 under DCP for it ({shape.label()})")
        self.shape = shape
        caps = target.caps
        if geometry.kv.kind not in caps.kv_kinds:
            pytest.skip(f"backend {target.spec.name!r} does not declare kv_kinds {geometry.kv.kind!r}")
        if pools is None:
            pools = {
                geometry.kv.name: target.build_pool(
                    kv_spec(geometry, shape),
                    layout=layout,
                    misalign=misalign,
                    page_num=page_num,
                    dcp_size=shape.dcp_size,
                )
            }
            for spec in target.usable_pools(geometry):
                pools[spec.name] = target.build_pool(
                    spec, layout=side_layout(layout, spec), misalign=misalign, page_num=page_num
                )
        self.pools = pools
        self.config = HiCacheStorageConfig(
            **shape.config_fields(),
            is_mla_model=geometry.is_mla,
            enable_storage_metrics=False,
            is_page_first_layout=layout != "layer_first",
            model_name=model_name if model_name is not None else geometry.model,
            extra_config=dict(target.extra_config),
        )
        self.backend = ControllerCalls(
            target.spec.factory(self.config, storage),
            {str(n): PoolSlots(page_span(p), slot_count(p)) for n, p in pools.items()},
        )
        kv = self.pools[PoolName.KV]
        self.backend.register_mem_pool_host(kv)
        if caps.kv_through_v2:
            self.backend.register_mem_host_pool_v2(kv, PoolName.KV)
        for name, pool in self.pools.items():
            if name is not PoolName.KV:
                self.backend.register_mem_host_pool_v2(pool, name)
        finalise = getattr(self.backend, "on_host_pools_registered", None)
        if callable(finalise):
            finalise()

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        closer = getattr(self.backend, "close", None)
        if callable(closer):
            closer()

    def pool(self, name: PoolName) -> HostPoolDouble:
        return self.pools[name]

    def start(self, name: PoolName, page: int) -> int:
        """The first slot of host page ``page``, in the controller's (logical, under DCP) slots."""
        return page * self.pools[name].logical_page_size

    def indices(self, name: PoolName, pages: Sequence[int]) -> torch.Tensor:
        """Token slots of whole pages, as the controller hands them over."""
        span = self.pools[name].logical_page_size
        return torch.tensor([p * span + t for p in pages for t in range(span)], dtype=torch.int64)

    def transfer(self, name: PoolName, keys: Sequence[str], pages: Sequence[int], **kw: Any) -> PoolTransfer:
        return PoolTransfer(name=name, host_indices=self.indices(name, pages), keys=list(keys), **kw)

    def put(self, name: PoolName, page: int, data: bytes) -> None:
        self.pools[name].write_page(self.start(name, page), data)

    def take(self, name: PoolName, page: int) -> bytes:
        """Host page ``page`` as read back; a keys-only backend makes every byte check unclaimed."""
        self.target.require("stores_bytes", "a keys-only backend fills no host memory")
        return self.pools[name].read_page(self.start(name, page))

    def expect(self, name: PoolName, page: int, want: bytes, context: str = "") -> None:
        """Fail, briefly, unless host page ``page`` of pool ``name`` holds exactly ``want``."""
        problem = byte_difference(self.take(name, page), want)
        if problem:
            pool = self.pools[name]
            raise AssertionError(
                f"{name} page {page}{' (' + context + ')' if context else ''}: {problem}; {pool.describe()}"
            )

    def _kv_through_v1(self) -> bool:
        """KV through v1 where claimed, else v2; a backend claiming neither (AIBrix: the legacy
        generic calls only) is not claimed for a property that moves KV this way."""
        caps = self.target.caps
        if not caps.v1_kv and not caps.kv_through_v2:
            self.target.require("v1_kv", "KV moves through the legacy generic calls only")
        return caps.v1_kv

    def set_at(self, name: PoolName, keys: Any, host_indices: Any, *extra_info: Any) -> Any:
        """The backend's own answer to a store, through v1 for KV (when claimed) and v2 otherwise,
        with ``extra_info`` where one is given.

        Nothing is checked or converted, so malformed keys and indices reach the backend as given.
        """
        if name is PoolName.KV and self._kv_through_v1():
            return self.backend.batch_set_v1(keys, host_indices, *extra_info)
        transfer = PoolTransfer(name=name, host_indices=host_indices, keys=keys)
        return self.backend.batch_set_v2([transfer], *extra_info).get(str(name))

    def get_at(self, name: PoolName, keys: Any, host_indices: Any, *extra_info: Any) -> Any:
        if name is PoolName.KV and self._kv_through_v1():
            return self.backend.batch_get_v1(keys, host_indices, *extra_info)
        transfer = PoolTransfer(name=name, host_indices=host_indices, keys=keys)
        return self.backend.batch_get_v2([transfer], *extra_info).get(str(name))

    def generic_set(self, keys: Sequence[str], pages: Sequence[int]) -> Any:
        """The controller's legacy store (``_generic_page_set``): flat KV data pages to ``batch_set``."""
        kv = self.pools[PoolName.KV]
        data = [kv.get_data_page(self.start(PoolName.KV, p)) for p in pages]
        return self.backend.batch_set(list(keys), data)

    def generic_get(self, keys: Sequence[str], pages: Sequence[int]) -> int:
        """The controller's legacy load (``_generic_page_get``): ``batch_get`` into dummy flat pages,
        each returned page restored to its host page until the first None; the count restored."""
        kv = self.pools[PoolName.KV]
        got = self.backend.batch_get(list(keys), [kv.get_dummy_flat_data_page() for _ in keys])
        if got is None:
            return 0
        assert len(got) == len(keys), f"batch_get answered {len(got)} entries for {len(keys)} keys"
        for count, (page, data) in enumerate(zip(pages, got)):
            if data is None:
                return count
            kv.set_from_flat_data_page(self.start(PoolName.KV, page), data)
        return len(keys)

    def set(self, name: PoolName, keys: Sequence[str], pages: Sequence[int]) -> list[bool]:
        """Store whole host pages under ``keys``."""
        return list(self.set_at(name, list(keys), self.indices(name, pages)))

    def get(self, name: PoolName, keys: Sequence[str], pages: Sequence[int]) -> list[bool]:
        return list(self.get_at(name, list(keys), self.indices(name, pages)))
