"""Malformed requests get a clear error or per-key False: no crash deep inside the backend, no
damage to other entries, nothing written outside the store.
"""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
import torch

from conformance.harness.geometry import load_geometry
from conformance.harness.rig import Rig, Target
from conformance.model.interface import PoolName, PoolTransfer

FAMILY = "qwen3_next_hybrid"
PAGES = 4
CLEAR_ERRORS = (ValueError, TypeError, KeyError, IndexError)


@contextlib.contextmanager
def guarded(hicache_target: Target) -> Iterator[Rig]:
    """A rig whose store sits two folders deep in a sandbox, holding two known entries in every pool.

    On exit the entries must read back intact and both folders around the store must hold
    nothing else, so a key that climbs one or two levels out of the store is caught.
    """
    with hicache_target.storage() as outer:
        store = outer / "sandbox" / "store"
        store.mkdir(parents=True)
        with Rig(hicache_target, load_geometry(FAMILY), store, page_num=PAGES) as rig:
            known = {}
            for n, name in enumerate(rig.pools):
                known[name] = [bytes([0x30 + n + i]) * rig.pool(name).page_nbytes() for i in range(2)]
                for page, data in enumerate(known[name]):
                    rig.put(name, page, data)
                assert rig.set(name, ["keep-0", "keep-1"], [0, 1]) == [True, True]
            yield rig
            for name in rig.pools:
                rig.pool(name).fill(0)
                assert rig.get(name, ["keep-0", "keep-1"], [2, 3]) == [True, True], f"{name} lost an entry"
                for i in range(2):
                    rig.expect(name, 2 + i, known[name][i], "an untouched entry")
        assert [p.name for p in outer.iterdir()] == ["sandbox"], "wrote two levels outside the store"
        assert [p.name for p in store.parent.iterdir()] == ["store"], "wrote outside the store"


def v2_pool(hicache_target: Target, rig: Rig) -> PoolName | None:
    """The pool a v2 request names: a side pool the backend stores (the rig registered only
    those), else KV where the backend moves KV through v2; None where it takes no pool through v2,
    so only its v1 calls are asked (a KV-only backend is not failed for pools it never claimed)."""
    side = [name for name in rig.pools if name is not PoolName.KV]
    if side:
        return side[0]
    return PoolName.KV if hicache_target.caps.kv_through_v2 else None


def expect_refused(what: str, call: Callable[[], Any]) -> None:
    """Pass when ``call`` raised a clear error or answered False for every key of every pool;
    otherwise fail, saying what the backend did with ``what``."""
    try:
        result = call()
    except CLEAR_ERRORS:
        return
    except Exception as exc:
        clear = ", ".join(e.__name__ for e in CLEAR_ERRORS)
        raise AssertionError(
            f"{what}: the backend raised {type(exc).__name__}: {exc} (not one of {clear})"
        ) from exc
    if isinstance(result, dict):
        refused = all(not any(flags) for flags in result.values())
    else:
        refused = isinstance(result, list) and not any(result)
    if not refused:
        shown = repr(dict(result) if isinstance(result, dict) else result)
        raise AssertionError(
            f"{what}: the backend returned {shown[:300]}, not an error or False for every key"
        )


MALFORMED = (
    "an unregistered pool",
    "keys and indices of different lengths",
    "indices outside the pool",
    "indices of another dtype",
)


def malformed(rig: Rig, pool: PoolName, how: str) -> PoolTransfer:
    """A request for ``pool`` (or for a pool never registered) malformed as ``how`` says."""
    spec = rig.pool(pool)
    if how == "an unregistered pool":
        absent = next(p for p in PoolName if p not in rig.pools)
        return PoolTransfer(name=absent, host_indices=torch.arange(0, 1), keys=["bad-0"])
    if how == "keys and indices of different lengths":
        return PoolTransfer(name=pool, host_indices=rig.indices(pool, [2]), keys=["bad-0", "bad-1"])
    if how == "indices outside the pool":
        outside = torch.arange(spec.size, spec.size + spec.page_size, dtype=torch.int64)
        return PoolTransfer(name=pool, host_indices=outside, keys=["bad-0"])
    assert how == "indices of another dtype", how
    return PoolTransfer(name=pool, host_indices=rig.indices(pool, [2]).to(torch.float32), keys=["bad-0"])


def answered(what: str, call: Callable[[], Any]) -> dict[str, list[bool]]:
    """The per-pool answer of a v2 call that must return, not raise."""
    try:
        result = call()
    except Exception as exc:
        raise AssertionError(
            f"{what}: the backend raised {type(exc).__name__}: {exc}, so the caller cannot tell which "
            "of the well-formed pool's pages it moved"
        ) from exc
    return {str(name): list(flags) for name, flags in dict(result).items()}


@pytest.mark.hicache_requires("refuses_per_pool", "kv_through_v2")
@pytest.mark.parametrize("how", MALFORMED)
def test_a_malformed_pool_in_a_v2_call_is_refused_alone(hicache_target: Target, how: str) -> None:
    """A malformed pool request in a v2 call gets False alone; the KV request beside it moves.

    A call that raises, or answers False throughout, after moving some pages leaves the controller
    wrong about what is stored."""
    with guarded(hicache_target) as rig:
        side = v2_pool(hicache_target, rig)
        if side is None or side is PoolName.KV:
            pytest.skip(f"no side pool of {FAMILY} is claimed, so no second pool can be malformed")
        kv, keys = PoolName.KV, ["fresh-0", "fresh-1"]
        pages = [bytes([0x60 + i]) * rig.pool(kv).page_nbytes() for i in range(2)]
        for page, data in zip((2, 3), pages):
            rig.put(kv, page, data)
        bad = malformed(rig, side, how)
        refused = [False] * len(bad.keys or [])
        for verb, call in (("set", rig.backend.batch_set_v2), ("get", rig.backend.batch_get_v2)):
            what = f"v2 {verb} of KV {keys} beside {bad.name} with {how}"
            if verb == "get":
                rig.pool(kv).fill(0)
            result = answered(what, partial(call, [rig.transfer(kv, keys, [2, 3]), bad]))
            assert result.get(str(kv)) == [True, True], f"{what}: KV answered {result.get(str(kv))}"
            answer = result.get(str(bad.name))
            assert answer == refused, f"{what}: {bad.name} answered {answer}, not {refused}"
        for page, data in zip((2, 3), pages):
            rig.expect(kv, page, data, f"KV loaded beside {bad.name} with {how}")


def test_keys_and_indices_of_different_lengths_are_refused(hicache_target: Target) -> None:
    """Keys and host indices of different lengths get a clear error or False, through v1 and v2."""
    with guarded(hicache_target) as rig:
        short = rig.indices(PoolName.KV, [2])
        expect_refused(
            "set of 2 keys with 1 page of indices", lambda: rig.set_at(PoolName.KV, ["a", "b"], short)
        )
        expect_refused(
            "get of 2 keys into 1 page of indices",
            lambda: rig.get_at(PoolName.KV, ["keep-0", "keep-1"], short),
        )
        pool = v2_pool(hicache_target, rig)
        if pool is not None:
            transfer = [PoolTransfer(name=pool, host_indices=rig.indices(pool, [2]), keys=["a", "b"])]
            expect_refused(f"v2 set of 2 {pool} keys with 1 page", lambda: rig.backend.batch_set_v2(transfer))
            expect_refused(f"v2 get of 2 {pool} keys into 1 page", lambda: rig.backend.batch_get_v2(transfer))


@pytest.mark.parametrize("where", ["one-past-the-end", "far-beyond", "negative"])
def test_indices_outside_the_pool_are_refused(hicache_target: Target, where: str) -> None:
    """Host indices past the pool's end or negative are refused, never read or written."""
    with guarded(hicache_target) as rig:
        for name in dict.fromkeys((PoolName.KV, v2_pool(hicache_target, rig) or PoolName.KV)):
            ps, size = rig.pool(name).page_size, rig.pool(name).size
            start = {"one-past-the-end": size, "far-beyond": size * 1000, "negative": -ps}[where]
            bad = torch.arange(start, start + ps, dtype=torch.int64)
            transfer = [PoolTransfer(name=name, host_indices=bad, keys=["a"])]
            expect_refused(f"v2 set of {name} at {where} slots", partial(rig.backend.batch_set_v2, transfer))
            expect_refused(
                f"v2 get of {name} into {where} slots", partial(rig.backend.batch_get_v2, transfer)
            )
        expect_refused("KV set at slots -4..-1", lambda: rig.set_at(PoolName.KV, ["a"], torch.arange(-4, 0)))


def test_indices_off_a_page_boundary_are_refused(hicache_target: Target) -> None:
    """Host indices that do not start on a page boundary are refused."""
    with guarded(hicache_target) as rig:
        ps = rig.pool(PoolName.KV).page_size
        bad = torch.arange(1, 1 + ps, dtype=torch.int64)
        expect_refused("KV set at slots 1..page_size", lambda: rig.set_at(PoolName.KV, ["a"], bad))
        expect_refused("KV get into slots 1..page_size", lambda: rig.get_at(PoolName.KV, ["keep-0"], bad))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.uint8], ids=str)
def test_index_tensors_of_the_wrong_dtype_are_refused(hicache_target: Target, dtype: torch.dtype) -> None:
    """Index tensors that are not integers of the controller's dtype are refused."""
    with guarded(hicache_target) as rig:
        bad = rig.indices(PoolName.KV, [2]).to(dtype)
        expect_refused(f"KV set with {dtype} indices", lambda: rig.set_at(PoolName.KV, ["a"], bad))
        expect_refused(f"KV get with {dtype} indices", lambda: rig.get_at(PoolName.KV, ["keep-0"], bad))


def test_an_unregistered_pool_is_refused(hicache_target: Target) -> None:
    """A transfer naming a pool that was never registered is refused."""
    with guarded(hicache_target) as rig:
        transfer = [PoolTransfer(name=PoolName.DRAFT, host_indices=torch.arange(0, 1), keys=["a"])]
        expect_refused("v2 set into unregistered pool draft", lambda: rig.backend.batch_set_v2(transfer))
        expect_refused("v2 get from unregistered pool draft", lambda: rig.backend.batch_get_v2(transfer))


def test_duplicate_keys_in_one_batch_are_refused(hicache_target: Target) -> None:
    """One batch naming the same key twice is refused, not stored twice in an unknown order."""
    with guarded(hicache_target) as rig:
        expect_refused(
            "KV set of keys ['a', 'a']",
            lambda: rig.set_at(PoolName.KV, ["a", "a"], rig.indices(PoolName.KV, [2, 3])),
        )
        pool = v2_pool(hicache_target, rig)
        if pool is not None:
            transfer = [rig.transfer(pool, ["b", "b"], [2, 3])]
            expect_refused(f"v2 {pool} set of keys ['b', 'b']", lambda: rig.backend.batch_set_v2(transfer))


def test_an_empty_batch_does_nothing(hicache_target: Target) -> None:
    """Empty batches answer empty results (0 hits) and change nothing."""
    with guarded(hicache_target) as rig:
        empty = torch.empty(0, dtype=torch.int64)
        assert rig.set_at(PoolName.KV, [], empty) == []
        assert rig.get_at(PoolName.KV, [], empty) == []
        assert rig.backend.batch_exists([]) == 0
        assert dict(rig.backend.batch_set_v2([])) == {}
        assert rig.backend.batch_exists_v2([], []).kv_hit_pages == 0


@pytest.mark.parametrize(
    "key", [None, 7, b"bytes", "", "nul\x00inside"], ids=["None", "int", "bytes", "empty", "NUL"]
)
def test_keys_that_are_not_usable_strings_are_refused(hicache_target: Target, key: Any) -> None:
    """Keys that are not non-empty, NUL-free strings are refused."""
    with guarded(hicache_target) as rig:
        expect_refused(
            f"KV set of key {key!r}", lambda: rig.set_at(PoolName.KV, [key], rig.indices(PoolName.KV, [2]))
        )
        pool = v2_pool(hicache_target, rig)
        if pool is not None:
            expect_refused(
                f"v2 {pool} set of key {key!r}",
                lambda: rig.backend.batch_set_v2([rig.transfer(pool, [key], [2])]),
            )


@pytest.mark.parametrize("key", ["../x", "../../x", "a/../../x", "..", "."])
def test_path_traversal_keys_never_leave_the_store(hicache_target: Target, key: str) -> None:
    """Keys spelling relative paths stay inside the store (or are refused) and read back exactly."""
    with guarded(hicache_target) as rig:
        payload = b"\x77" * rig.pool(PoolName.KV).page_nbytes()
        rig.put(PoolName.KV, 2, payload)
        if rig.set(PoolName.KV, [key], [2]) == [True]:
            rig.pool(PoolName.KV).fill(0)
            assert rig.get(PoolName.KV, [key], [3]) == [True]
            rig.expect(PoolName.KV, 3, payload, f"key {key!r}")


def test_an_absolute_path_key_never_leaves_the_store(hicache_target: Target) -> None:
    """A key spelling an absolute path never creates that file outside the store."""
    key = os.path.join(tempfile.gettempdir(), f"hicache-escape-{uuid.uuid4().hex}")
    try:
        with guarded(hicache_target) as rig:
            rig.put(PoolName.KV, 2, b"\x77" * rig.pool(PoolName.KV).page_nbytes())
            rig.set(PoolName.KV, [key], [2])
    finally:
        escaped = glob.glob(glob.escape(key) + "*")
        for path in escaped:
            os.unlink(path)
    assert not escaped, f"wrote outside the store: {escaped}"


def test_keys_over_4_kib_are_stored_apart_or_refused(hicache_target: Target) -> None:
    """Two 5000-character keys that differ in their last character never share an entry."""
    with guarded(hicache_target) as rig:
        keys = ["k" * 5000 + "a", "k" * 5000 + "b"]
        pages = {k: bytes([0x41 + i]) * rig.pool(PoolName.KV).page_nbytes() for i, k in enumerate(keys)}
        for page, key in enumerate(keys, start=2):
            rig.put(PoolName.KV, page, pages[key])
        stored = rig.set(PoolName.KV, keys, [2, 3])
        rig.pool(PoolName.KV).fill(0)
        for page, (key, ok) in enumerate(zip(keys, stored), start=2):
            if ok:
                assert rig.get(PoolName.KV, [key], [page]) == [True]
                rig.expect(PoolName.KV, page, pages[key], "a 5000-character key")
