"""KV pages through the legacy generic calls come back byte for byte, apart, and counted right.

SGLang 0.5.23's controller drives ``file``, ``aibrix`` and ``dynamic`` backends (without
``interface_v1``) through ``batch_set(keys, pages)``, ``batch_get(keys, targets)``,
``batch_exists(keys)`` and ``exists(key)``: flat data pages taken from the host pool with
``get_data_page`` and restored with ``set_from_flat_data_page`` until the first None. That is
HiCacheFile's real KV path, and AIBrix's only one, so a certificate that tried only v1 would
say nothing about what those deployments run.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from conformance.harness.geometry import ModelGeometry, load_geometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import (
    adversarial_keys,
    pattern_strides,
    payload_seeds,
    rank_sets,
    render_page,
)
from conformance.model.interface import PoolName
from conformance.model.oracle import leading_run
from conformance.model.sharing import Shape
from conformance.suite._common import (
    GEOMETRIES,
    entry_identity,
    ids,
    is_storage_writer,
    kv_layouts,
    misaligns,
    page_lists,
    runnable,
)
from conformance.suite.test_bad_input import expect_refused
from conformance.suite.test_sidecar_key_uniqueness import NEIGHBOURS

PAGES = 8
KV = PoolName.KV
hex_key = st.text("0123456789abcdef", min_size=1, max_size=16)
stored_flags = st.lists(st.booleans(), min_size=1, max_size=PAGES)


def _store(rig: Rig, keys: list[str], pages: list[int], seed: int, stride: int = 1) -> list[bytes]:
    """Render a distinct page per key into ``pages``, store them, and return what was written."""
    pool = rig.pool(KV)
    written = [render_page(pool, seed, stride, salt=i) for i in range(len(keys))]
    for page, data in zip(pages, written):
        rig.put(KV, page, data)
    assert rig.generic_set(keys, pages) is True, f"batch_set of {len(keys)} pages did not return True"
    return written


def _store_flagged(rig: Rig, keys: list[str], stored: list[bool], seed: int) -> dict[str, bytes]:
    """Store the keys flagged True, in host pages 0, 1, ...; what each stored key was given."""
    chosen = [k for k, s in zip(keys, stored) if s]
    if not chosen:
        return {}
    return dict(zip(chosen, _store(rig, chosen, list(range(len(chosen))), seed)))


@pytest.mark.hicache_requires("generic_kv")
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(
    seed=payload_seeds,
    stride=pattern_strides,
    layout=kv_layouts,
    misalign=misaligns,
    pages=page_lists(PAGES),
    data=st.data(),
)
def test_kv_pages_round_trip_byte_for_byte_through_the_generic_calls(
    hicache_target: Target,
    geometry: ModelGeometry,
    seed: int,
    stride: int,
    layout: str,
    misalign: int,
    pages: list[int],
    data: st.DataObject,
) -> None:
    """Pages stored with batch_set come back bit-identical from batch_get, into other slots too."""
    hicache_target.require_layout(layout)
    dst = data.draw(st.permutations(range(PAGES)).map(lambda p: p[: len(pages)]), label="dst")
    keys = [f"generic-{i}" for i in range(len(pages))]
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, layout=layout, misalign=misalign, page_num=PAGES) as rig,
    ):
        written = _store(rig, keys, pages, seed, stride)
        rig.pool(KV).fill(0x5A)
        restored = rig.generic_get(keys, dst)
        assert restored == len(keys), f"batch_get restored {restored} of {len(keys)} stored pages"
        for i, page in enumerate(dst):
            rig.expect(KV, page, written[i], f"key {keys[i]!r}")


@pytest.mark.hicache_requires("generic_kv")
@given(stored=stored_flags)
@example(stored=[False, True])
def test_generic_exists_counts_the_leading_run_and_exists_answers_each_key(
    hicache_target: Target, stored: list[bool]
) -> None:
    """batch_exists is the leading run of stored keys; exists is True exactly for stored keys."""
    keys = [f"exists-{i}" for i in range(len(stored))]
    geometry = load_geometry("llama3_mha")
    with hicache_target.storage() as storage, Rig(hicache_target, geometry, storage, page_num=PAGES) as rig:
        _store_flagged(rig, keys, stored, seed=len(keys))
        leading = leading_run(stored)
        counted = rig.backend.batch_exists(keys)
        assert counted == leading, f"batch_exists answered {counted}, the leading run is {leading}"
        answers = [rig.backend.exists(k) for k in keys]
        assert answers == stored, f"exists answered {answers} for keys stored as {stored}"


@pytest.mark.hicache_requires("generic_kv")
@given(keys=st.lists(adversarial_keys(), min_size=2, max_size=4, unique=True), seed=payload_seeds)
@example(keys=["a/b", "a_b"], seed=0)
@example(keys=["a", "a_0"], seed=0)
def test_generic_keys_that_look_alike_keep_their_own_pages(
    hicache_target: Target, keys: list[str], seed: int
) -> None:
    """Every key has its own stored page: suffixes, separators and long keys never collide."""
    geometry = load_geometry("llama3_mha")
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, page_num=len(keys)) as rig,
    ):
        pages = list(range(len(keys)))
        written = _store(rig, keys, pages, seed)
        rig.pool(KV).fill(0)
        restored = rig.generic_get(keys, pages)
        assert restored == len(keys), f"batch_get restored {restored} of {len(keys)} stored pages"
        for i, key in enumerate(keys):
            rig.expect(KV, i, written[i], f"key {key!r}")


@pytest.mark.hicache_requires("generic_kv")
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(keys=st.lists(hex_key, min_size=1, max_size=3, unique=True), ranks=rank_sets())
@example(keys=["0"], ranks=NEIGHBOURS)
def test_generic_entries_of_shards_a_deployment_keeps_apart_stay_apart(
    hicache_target: Target, geometry: ModelGeometry, keys: list[str], ranks: list[Shape]
) -> None:
    """Ranks of one deployment each read back their own shard's pages through the generic calls."""
    shapes = list(dict.fromkeys(runnable(hicache_target, geometry, s) for s in ranks))
    stored: dict[tuple[object, ...], bytes] = {}
    pages = list(range(len(keys)))
    with hicache_target.storage() as storage:
        rigs = [Rig(hicache_target, geometry, storage, page_num=len(keys), shape=s) for s in shapes]
        try:
            writers = [rig for rig in rigs if is_storage_writer(rig.config, KV)]
            for r, rig in enumerate(writers):
                written = _store(rig, keys, pages, seed=7919 * r, stride=2)
                for key, data in zip(keys, written):
                    stored[entry_identity(rig.config, KV, key)] = data
            for rig in writers:
                rig.pool(KV).fill(0)
                restored = rig.generic_get(keys, pages)
                label = f"{rig.config.model_name}@{rig.shape.label()}"
                assert restored == len(keys), f"batch_get at {label} restored {restored} of {len(keys)}"
                for i, key in enumerate(keys):
                    rig.expect(KV, i, stored[entry_identity(rig.config, KV, key)], f"key {key!r} at {label}")
        finally:
            for rig in rigs:
                rig.close()


def _flag(rig: Rig, keys: list[str], values: list[torch.Tensor]) -> list[bool]:
    """batch_set's one answer, as the per-key list ``expect_refused`` reads."""
    return [rig.backend.batch_set(keys, values)]


@pytest.mark.hicache_requires("generic_kv")
def test_generic_calls_refuse_keys_and_pages_of_different_lengths(hicache_target: Target) -> None:
    """batch_set with more keys than pages, or fewer, is an error or False, and stores none of them."""
    geometry = load_geometry("llama3_mha")
    with hicache_target.storage() as storage, Rig(hicache_target, geometry, storage, page_num=4) as rig:
        kv = rig.pool(KV)
        pages = [kv.get_data_page(rig.start(KV, p)) for p in range(3)]
        for keys, values in ((["a", "b", "c"], pages[:2]), (["d", "e"], pages)):
            expect_refused(f"{len(keys)} keys with {len(values)} pages", partial(_flag, rig, keys, values))
            present = [k for k in keys if rig.backend.exists(k)]
            assert present == [], f"a refused batch_set stored {present}"


@pytest.mark.hicache_requires("generic_kv")
@given(stored=stored_flags)
@example(stored=[True, False, True])
def test_generic_get_answers_none_for_missing_keys_and_fills_the_rest(
    hicache_target: Target, stored: list[bool]
) -> None:
    """A missing key is None in its own position, never an exception, and the stored ones still fill."""
    keys = [f"get-{i}" for i in range(len(stored))]
    geometry = load_geometry("llama3_mha")
    with hicache_target.storage() as storage, Rig(hicache_target, geometry, storage, page_num=PAGES) as rig:
        written = _store_flagged(rig, keys, stored, seed=3)
        kv = rig.pool(KV)
        kv.fill(0x5A)
        got = rig.backend.batch_get(keys, [kv.get_dummy_flat_data_page() for _ in keys])
        assert got is not None and len(got) == len(keys), f"batch_get answered {got!r:.200}"
        found = [g is not None for g in got]
        assert found == stored, f"batch_get found {found} for keys stored as {stored}"
        for i, key in enumerate(keys):
            if stored[i]:
                kv.set_from_flat_data_page(rig.start(KV, i), got[i])
                rig.expect(KV, i, written[key], f"key {key!r}")
