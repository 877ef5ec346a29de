"""What the controller hands a backend arrives as it hands it, and is left as it was.

SGLang's cache controller cuts a prefetch or a backup into batches by slicing one index tensor
for the whole operation, hands the KV-derived pools (the DSA indexer) KV's very slice, and keeps
using the slots, the keys, ``prefix_keys`` and its transfers after each call; once a backup or a
prefetch returns, its host pages are the controller's again, to keep or to give to other data.
Every call of every property goes through :class:`conformance.harness.caller.ControllerCalls`, which hands
index tensors as views at a storage offset and fails a call that changes anything it was handed;
the properties here make each kind of call the way the controller makes it, and overwrite host
pages the moment a store or a load returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from conformance.harness.geometry import ModelGeometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import payload_seeds, render_page
from conformance.model.interface import HiCacheStorageExtraInfo, PoolName, PoolTransfer, page_span, slot_count
from conformance.suite._common import GEOMETRIES, ids, kv_layouts, misaligns, store_everything

PAGES = 8
"""Host pages per pool: an operation of up to half of them, loaded into the other half."""

SETTLE_S = 0.05
"""How long a load's host pages are watched once the caller has overwritten them: a transfer the
backend left in flight lands within it (NIXL's and the kernel's take milliseconds)."""

Batch = tuple[int, int]
"""Pages ``[start, end)`` of an operation."""


def batches_of(count: int) -> st.SearchStrategy[list[Batch]]:
    """``count`` pages cut into at least two batches, as the controller cuts an operation."""
    cuts = st.lists(st.integers(1, count - 1), min_size=1, max_size=count - 1, unique=True)
    return cuts.map(lambda c: list(zip([0, *sorted(c)], [*sorted(c), count])))


class Operation:
    """One prefetch or backup of ``pages`` in every pool: one index tensor per pool, sliced per
    batch; KV-derived pools (KV's slots, KV's geometry) share KV's tensor and its slices."""

    def __init__(self, rig: Rig, pages: list[int]) -> None:
        self.rig = rig
        kv = rig.pool(PoolName.KV)
        self.derived = {
            name
            for name, pool in rig.pools.items()
            if name is not PoolName.KV
            and (page_span(pool), slot_count(pool)) == (page_span(kv), slot_count(kv))
        }
        self.indices = {name: rig.indices(name, pages) for name in rig.pools if name not in self.derived}

    def slot_view(self, name: PoolName, batch: Batch) -> torch.Tensor:
        """Pool ``name``'s slots of ``batch``: a view into the operation's tensor at its offset."""
        source = PoolName.KV if name in self.derived else name
        span = page_span(self.rig.pool(source))
        return self.indices[source][batch[0] * span : batch[1] * span]

    def move(
        self,
        keys: list[str],
        batches: list[Batch],
        kv_call: Callable[..., Any],
        side_call: Callable[..., Any],
    ) -> None:
        """Every batch: KV through ``kv_call`` (the rig's ``set_at`` or ``get_at``: v1 where
        claimed), then the side pools in one ``side_call``, each told the keys of the batches
        before it, as the controller tells them."""
        side = [name for name in self.rig.pools if name is not PoolName.KV]
        for batch in batches:
            own = keys[batch[0] : batch[1]]
            extra = HiCacheStorageExtraInfo(prefix_keys=keys[: batch[0]])
            kv = self.slot_view(PoolName.KV, batch)
            assert list(kv_call(PoolName.KV, own, kv, extra)) == [True] * len(own), f"KV batch {batch}"
            if side:
                transfers = [
                    PoolTransfer(name=n, host_indices=self.slot_view(n, batch), keys=own) for n in side
                ]
                done = side_call(transfers, extra)
                for name in side:
                    assert list(done[str(name)]) == [True] * len(own), f"{name} batch {batch}"


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(seed=payload_seeds, count=st.integers(2, PAGES // 2), data=st.data())
def test_batches_sliced_from_one_operation_store_and_load_each_pages_own_bytes(
    hicache_target: Target, geometry: ModelGeometry, seed: int, count: int, data: st.DataObject
) -> None:
    """Pages moved in batches sliced from one index tensor read back byte for byte into their slots.

    A backup and a prefetch of the same pages, each cut into drawn batches whose indices are
    slices of one tensor per operation (KV-derived pools handed KV's slices), whatever offset
    each batch sits at.
    """
    hicache_target.require("stores_bytes", "the property compares the bytes of every page")
    keys = [f"op-{i}" for i in range(count)]
    cut = data.draw(batches_of(count), label="batches")
    into = data.draw(st.permutations(range(count, 2 * count)), label="loaded into pages")
    with hicache_target.storage() as storage, Rig(hicache_target, geometry, storage, page_num=PAGES) as rig:
        written = {
            name: [render_page(rig.pool(name), seed, 3, salt=i) for i in range(count)] for name in rig.pools
        }
        for name, pages in written.items():
            for page, payload in enumerate(pages):
                rig.put(name, page, payload)
        Operation(rig, list(range(count))).move(keys, cut, rig.set_at, rig.backend.batch_set_v2)
        Operation(rig, list(into)).move(keys, cut, rig.get_at, rig.backend.batch_get_v2)
        for name, pages in written.items():
            for i, payload in enumerate(pages):
                rig.expect(name, into[i], payload, f"key {keys[i]}, batches {cut}")


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(count=st.integers(2, PAGES // 2), data=st.data())
def test_a_call_leaves_the_keys_indices_and_prefix_keys_it_was_handed_as_they_were(
    hicache_target: Target, geometry: ModelGeometry, count: int, data: st.DataObject
) -> None:
    """No call changes a key, a slot (in or around its view), a prefix key or a transfer it was handed.

    A backup, both exists calls over the span from each batch on, and a prefetch, each with the
    prefix keys the controller passes; the rig's :class:`~conformance.harness.caller.ControllerCalls`
    fails the call that changes anything.
    """
    keys = [f"handed-{i}" for i in range(count)]
    cut = data.draw(batches_of(count), label="batches")
    with hicache_target.storage() as storage, Rig(hicache_target, geometry, storage, page_num=PAGES) as rig:
        Operation(rig, list(range(count))).move(keys, cut, rig.set_at, rig.backend.batch_set_v2)
        queried = hicache_target.queryable_pools(geometry)
        for start, _ in cut:
            rest, extra = keys[start:], HiCacheStorageExtraInfo(prefix_keys=keys[:start])
            assert rig.backend.batch_exists(rest, extra) == len(rest)
            if queried:
                rig.backend.batch_exists_v2(rest, [spec.exists_transfer(rest) for spec in queried], extra)
        Operation(rig, list(range(count, 2 * count))).move(keys, cut, rig.get_at, rig.backend.batch_get_v2)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(seed=payload_seeds, count=st.integers(1, PAGES // 2), layout=kv_layouts, misalign=misaligns)
def test_a_store_has_read_every_page_it_stores_when_it_returns(
    hicache_target: Target, geometry: ModelGeometry, seed: int, count: int, layout: str, misalign: int
) -> None:
    """Host pages overwritten the moment a store returns leave what it stored as it was.

    Once a backup returns, the controller may evict its host pages and hand the slots to other
    data. A backend that copies them later (a write-behind queue, a transfer still in flight)
    stores whatever the slots hold by then. Each pool's pages are overwritten as soon as its store
    returns, then every page is loaded into other slots.
    """
    hicache_target.require("stores_bytes", "the property compares the bytes of every page")
    hicache_target.require_layout(layout)
    keys = [f"returned-{i}" for i in range(count)]
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, layout=layout, misalign=misalign, page_num=PAGES) as rig,
    ):
        stored: dict[PoolName, list[bytes]] = {}
        for n, name in enumerate(rig.pools):
            pool = rig.pool(name)
            stored[name] = [render_page(pool, seed, 3, salt=100 * n + i) for i in range(count)]
            later = [render_page(pool, seed, 5, salt=100 * n + 50 + i) for i in range(count)]
            for page, payload in enumerate(stored[name]):
                rig.put(name, page, payload)
            assert rig.set(name, keys, range(count)) == [True] * count, f"{name} store"
            for page, payload in enumerate(later):
                rig.put(name, page, payload)
        for name, pages in stored.items():
            assert rig.get(name, keys, range(count, 2 * count)) == [True] * count, f"{name} load"
            for i, payload in enumerate(pages):
                rig.expect(
                    name, count + i, payload, f"key {keys[i]}, its host page overwritten after the store"
                )


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=ids(GEOMETRIES))
@given(
    seed=payload_seeds,
    count=st.integers(1, 3),
    missing=st.integers(0, 2),
    layout=kv_layouts,
    misalign=misaligns,
)
def test_a_load_writes_no_host_page_once_it_returns(
    hicache_target: Target,
    geometry: ModelGeometry,
    seed: int,
    count: int,
    missing: int,
    layout: str,
    misalign: int,
) -> None:
    """Host pages overwritten the moment a load returns keep what the caller put there.

    Once a prefetch returns, the controller keeps the pages it loaded and frees the others for
    other data. A backend that lets a read land after returning (a transfer it stopped waiting
    for and never cancelled, a retry's abandoned first attempt) writes into pages that are no
    longer its own. Each pool loads stored pages and a tail of keys never stored; the moment its
    load returns, every page it was handed is overwritten, and after the others have loaded and a
    settling pause, each must still hold what was put there.
    """
    hicache_target.require("stores_bytes", "a load must have bytes to land")
    hicache_target.require_layout(layout)
    stored_keys = [f"landed-{i}" for i in range(count)]
    keys = stored_keys + [f"never-stored-{i}" for i in range(missing)]
    into = range(count, 2 * count + missing)
    with (
        hicache_target.storage() as storage,
        Rig(hicache_target, geometry, storage, layout=layout, misalign=misalign, page_num=PAGES) as rig,
    ):
        store_everything(rig, stored_keys, seed, salt=0)
        put_after: dict[PoolName, list[bytes]] = {}
        for n, name in enumerate(rig.pools):
            pool = rig.pool(name)
            put_after[name] = [render_page(pool, seed, 5, salt=100 * n + 50 + i) for i in range(len(into))]
            rig.get(name, keys, into)
            for page, payload in zip(into, put_after[name]):
                rig.put(name, page, payload)
        time.sleep(SETTLE_S)
        for name, payloads in put_after.items():
            for key, page, payload in zip(keys, into, payloads):
                rig.expect(name, page, payload, f"key {key}'s host page, overwritten once the load returned")
