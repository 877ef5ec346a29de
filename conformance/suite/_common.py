"""Small helpers shared by the property modules."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.doubles.hostpools import MISALIGNMENT
from conformance.harness.geometry import ModelGeometry, all_geometries
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import render_page
from conformance.model.capabilities import KV_LAYOUTS
from conformance.model.interface import PoolName
from conformance.model.sharing import Shape, fit
from conformance.model.sharing import entry_identity as entry_identity  # re-exported for the properties
from conformance.model.sharing import is_storage_writer as is_storage_writer

GEOMETRIES: list[ModelGeometry] = all_geometries()
HYBRID = [g for g in GEOMETRIES if g.side_pools]

misaligns = st.sampled_from([0, MISALIGNMENT])
kv_layouts = st.sampled_from(KV_LAYOUTS)


def page_lists(page_num: int, max_pages: int = 4) -> st.SearchStrategy[list[int]]:
    """Distinct host pages in any order: a backend must honour each page's own slots."""
    return st.lists(st.integers(0, page_num - 1), min_size=1, max_size=min(max_pages, page_num), unique=True)


def ids(geometries: list[ModelGeometry]) -> list[str]:
    return [g.family for g in geometries]


def runnable(target: Target, geometry: ModelGeometry, shape: Shape) -> Shape:
    """``shape`` as this backend can run ``geometry``: DCP only where SGLang runs the model's L3 under
    it (MLA KV, at most Mamba beside) and the backend declares it."""
    return fit(shape, geometry.runs_dcp and target.caps.decode_context_parallel)


def store_everything(rig: Rig, keys: list[str], seed: int, salt: int) -> dict[PoolName, list[bytes]]:
    """Drawn pages under ``keys`` in host pages ``0..len(keys)`` of every pool, each pool stored
    (and required to be) in its own call; what each pool's pages hold."""
    written: dict[PoolName, list[bytes]] = {}
    for n, name in enumerate(rig.pools):
        pool = rig.pool(name)
        written[name] = [render_page(pool, seed, 3, salt=salt * 1000 + n * 100 + i) for i in range(len(keys))]
        for page, data in enumerate(written[name]):
            rig.put(name, page, data)
        assert rig.set(name, keys, range(len(keys))) == [True] * len(keys), f"{name} store"
    return written


def store_from_writers(rigs: list[Rig], keys: list[str]) -> dict[tuple[object, ...], bytes]:
    """Each rig's drawn pages under ``keys`` in every pool it writes (the controller backs
    replicated state up from its writer rank only), each pool stored (and required to be) in its
    own call; the page each entry holds, by ``entry_identity``."""
    stored: dict[tuple[object, ...], bytes] = {}
    for r, rig in enumerate(rigs):
        for n, name in enumerate(rig.pools):
            if not is_storage_writer(rig.config, name):
                continue
            for i, key in enumerate(keys):
                payload = render_page(rig.pool(name), 7919 * r + 131 * n + i, 2, salt=r)
                rig.put(name, i, payload)
                stored[entry_identity(rig.config, name, key)] = payload
            done = rig.set(name, keys, range(len(keys)))
            label = f"{rig.config.model_name}@{rig.shape.label()}"
            assert done == [True] * len(keys), f"{name} set at {label} returned {done}"
    return stored
