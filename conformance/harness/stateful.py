"""A reusable state machine: traffic in SGLang's hybrid cache controller's order, against a model.

``HiCacheStoreMachine`` drives one store from several TP ranks the way
``srt/mem_cache/hybrid_cache/hybrid_cache_controller.py`` (SGLang 0.5.23) does, and checks every
answer against a dictionary model of the store:

- a backup writes the side pools first, in one ``batch_set_v2`` whose pools carry different key
  lists (a TRAILING_PAGES pool only the tail of the span, some pools left out), then the KV pages;
- a prefetch asks ``batch_exists_v2`` about the whole span, loads the KV hit, realigns trailing
  keys to the hit and loads every side pool in one ``batch_get_v2``, each pool checked on its own;
- a cross-rank query reduces the ranks' answers through ``restorable_prefix_pages`` as the
  controller's MIN all-reduce does;
- overwrites read back at once, and clear and restart interleave with the rest.

Run it against a target with :meth:`HiCacheStoreMachine.bound_to` (which sets the ``target`` class
attribute), or subclass it to change the geometry, the page count or the key names, or to add
rules and invariants of a backend's own::

    from hypothesis.stateful import run_state_machine_as_test
    from conformance.stateful import HiCacheStoreMachine

    run_state_machine_as_test(HiCacheStoreMachine.bound_to(target))
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, TypeVar, cast

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from conformance.harness.geometry import ModelGeometry, PoolSpec, load_geometry
from conformance.harness.reaper import REAPER
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import rank_sets, render_page
from conformance.model.capabilities import Capabilities
from conformance.model.interface import PoolHitPolicy, PoolName, PoolTransfer, PoolTransferResult
from conformance.model.oracle import (
    ExpectedExists,
    check_exists_result,
    expected_exists_v2,
    leading_run,
    reduce_across_ranks,
    reduced_expected_hit,
)
from conformance.model.sharing import Shape, entry_identity, is_storage_writer

KEY_NAMES = tuple(f"s{i}" for i in range(6))
"""Few keys, so spans overlap and operations meet each other's entries."""
MAX_SPAN = len(KEY_NAMES)
spans = st.lists(st.sampled_from(KEY_NAMES), min_size=1, max_size=MAX_SPAN, unique=True)
rank_draws = st.integers(0, 7)
"""Drawn as an index into the machine's own ranks, so a subclass may change them."""
rotations = st.integers(0, 7)
"""Where a multi-pool batch starts in the pool list: a backend must not rely on the pools' order."""

T = TypeVar("T")


def rotated(items: list[T], by: int) -> list[T]:
    """``items`` starting at position ``by`` (wrapping)."""
    if not items:
        return items
    by %= len(items)
    return items[by:] + items[:by]


Identity = tuple[object, ...]


class HiCacheStoreMachine(RuleBasedStateMachine):
    """A store driven by 2-4 ranks of a drawn deployment in the controller's order, against a model."""

    target: ClassVar[Target | None] = None
    """The backend under test; set by :meth:`bound_to` or by a subclass."""
    family: ClassVar[str] = "adversarial"
    """The model geometry: its side pools cover all three hit policies."""
    pages: ClassVar[int] = MAX_SPAN
    """Host pages in every pool; at least ``MAX_SPAN``, the longest span a rule draws."""
    max_ranks: ClassVar[int] = 4
    """At most this many ranks of one drawn deployment share the store."""

    @classmethod
    def bound_to(cls, target: Target) -> type[HiCacheStoreMachine]:
        """This machine, or a subclass of it, driving ``target``."""
        return cast(
            type[HiCacheStoreMachine], type(f"{cls.__name__}[{target.spec.name}]", (cls,), {"target": target})
        )

    def __init__(self) -> None:
        super().__init__()
        if self.target is None:
            raise TypeError("bind a target first: HiCacheStoreMachine.bound_to(target)")
        if self.pages < MAX_SPAN:
            raise ValueError(f"pages must be at least {MAX_SPAN}, the longest span the rules draw")
        self.geometry: ModelGeometry = load_geometry(self.family)
        self.side: list[PoolSpec] = self.target.usable_pools(self.geometry)
        self.storage = Path(tempfile.mkdtemp(prefix="stateful-", dir=self.target.root))
        self.model: dict[Identity, bytes] = {}
        self.version = 0  # every store renders new bytes, so a stale overwrite always shows
        self.shapes: list[Shape] = []
        self.rigs: dict[int, Rig] = {}

    # -- helpers -----------------------------------------------------------------------------

    @property
    def caps(self) -> Capabilities:
        assert self.target is not None
        return self.target.caps

    def who(self, rank: int) -> str:
        """A rank as failure messages name it: its place in the deployment."""
        return f"rank {rank} ({self.shapes[rank].label()})"

    def rank(self, draw: int) -> int:
        """A drawn number as one of the deployment's ranks (an index into ``shapes``)."""
        return draw % len(self.shapes)

    def _open(self) -> None:
        assert self.target is not None
        self.rigs = {
            r: Rig(self.target, self.geometry, self.storage, page_num=self.pages, shape=shape)
            for r, shape in enumerate(self.shapes)
        }

    def identity(self, rank: int, pool: PoolName, key: str) -> Identity:
        return entry_identity(self.rigs[rank].config, pool, key)

    def writes(self, rank: int, pool: PoolName) -> bool:
        return is_storage_writer(self.rigs[rank].config, pool)

    def present(self, rank: int, pool: str, key: str) -> bool:
        return self.identity(rank, PoolName(pool), key) in self.model

    def queryable(self) -> list[PoolSpec]:
        return [s for s in self.side if s.hit_policy in self.caps.hit_policies]

    @staticmethod
    def own_keys(spec: PoolSpec, span: Sequence[str], window: int) -> list[str]:
        """What the controller hands a pool: a TRAILING_PAGES pool only the span's tail."""
        if spec.hit_policy is PoolHitPolicy.TRAILING_PAGES:
            return list(span[-window:])
        return list(span)

    def _render(self, rig: Rig, pool: PoolName, page: int) -> bytes:
        self.version += 1
        return render_page(rig.pool(pool), self.version, 3, salt=page)

    def _store_pool(
        self, rank: int, pool: PoolName, keys: Sequence[str], pages: Sequence[int]
    ) -> PoolTransfer:
        """Fill the host pages and remember what the store must hold once the set succeeds."""
        rig = self.rigs[rank]
        for page, key in zip(pages, keys):
            data = self._render(rig, pool, page)
            rig.put(pool, page, data)
            identity = self.identity(rank, pool, key)
            if self.caps.overwrites or identity not in self.model:
                self.model[identity] = data
        return rig.transfer(pool, keys, pages)

    def _read_back(
        self,
        rank: int,
        pool: PoolName,
        keys: Sequence[str],
        pages: Sequence[int],
        got: Sequence[bool],
        what: str,
    ) -> None:
        """Each key's flag and bytes agree with the model."""
        rig = self.rigs[rank]
        assert len(got) == len(keys), f"{what}: {pool} answered {len(got)} flags for {len(keys)} keys"
        for page, key, ok in zip(pages, keys, got):
            want = self.model.get(self.identity(rank, pool, key))
            assert ok == (want is not None), (
                f"{what}: {pool} {key!r} on {self.who(rank)}: get {ok}, "
                f"model {'present' if want else 'absent'}"
            )
            if want is not None:
                rig.expect(pool, page, want, f"{what}: {key!r} on {self.who(rank)}")

    def _check_read_back(
        self, rank: int, pool: PoolName, keys: Sequence[str], pages: Sequence[int], what: str
    ) -> None:
        rig = self.rigs[rank]
        rig.pool(pool).fill(0)
        self._read_back(rank, pool, keys, pages, rig.get(pool, keys, pages), what)

    # -- rules -------------------------------------------------------------------------------

    @initialize(
        data=st.data(), span=st.lists(st.sampled_from(KEY_NAMES), min_size=1, max_size=3, unique=True)
    )
    def open_and_seed(self, data: st.DataObject, span: list[str]) -> None:
        """Ranks of one drawn deployment open the store; the first stores some KV, so overwrites
        and hits come early in every run."""
        self.shapes = data.draw(rank_sets(mla=self.geometry.is_mla, max_ranks=self.max_ranks), label="ranks")
        note(f"ranks: {[s.label() for s in self.shapes]}")
        self._open()
        writers = [r for r in self.rigs if self.writes(r, PoolName.KV)]
        if writers:
            self._store_pool(writers[0], PoolName.KV, span, range(len(span)))
            assert self.rigs[writers[0]].set(PoolName.KV, span, range(len(span))) == [True] * len(span)

    @rule(
        rank=rank_draws,
        span=spans,
        window=st.integers(1, 3),
        pool_mask=st.integers(0, 255),
        rotation=rotations,
    )
    def backup(self, rank: int, span: list[str], window: int, pool_mask: int, rotation: int) -> None:
        """Side pools first, in one batch_set_v2 with per-pool key lists, then the span's KV;
        a rank backs up only the pools it writes (``is_storage_writer``), as the controller does."""
        rank = self.rank(rank)
        rig = self.rigs[rank]
        chosen = rotated(
            [s for i, s in enumerate(self.side) if pool_mask >> i & 1 and self.writes(rank, s.name)], rotation
        )
        kv = [PoolName.KV] if self.writes(rank, PoolName.KV) else []
        overwritten = [
            (pool, key)
            for pool in [*kv, *(s.name for s in chosen)]
            for key in span
            if self.identity(rank, pool, key) in self.model
        ]
        transfers = []
        for spec in chosen:
            own = self.own_keys(spec, span, window)
            transfers.append(self._store_pool(rank, spec.name, own, range(len(span) - len(own), len(span))))
        note(f"backup {self.who(rank)}: span {span}, side pools {[str(t.name) for t in transfers]}")
        if transfers:
            answers = rig.backend.batch_set_v2(transfers)
            for t in transfers:
                flags = answers.get(str(t.name))
                assert flags == [True] * len(t.keys or []), (
                    f"batch_set_v2 over {[str(x.name) for x in transfers]}: pool {t.name} answered {flags}"
                )
        if kv:
            self._store_pool(rank, PoolName.KV, span, range(len(span)))
            assert rig.set(PoolName.KV, span, range(len(span))) == [True] * len(span), "KV backup failed"
        if overwritten:  # read every overwritten entry back at once: stale bytes show here
            positions = {key: i for i, key in enumerate(span)}
            for spec in [self.geometry.kv, *chosen]:
                keys = [k for p, k in overwritten if p is spec.name]
                if keys:
                    pages = [positions[k] for k in keys]
                    self._check_read_back(rank, spec.name, keys, pages, "right after an overwrite")

    @rule(
        rank=rank_draws,
        span=spans,
        window=st.integers(1, 3),
        rotation=rotations,
    )
    def prefetch(self, rank: int, span: list[str], window: int, rotation: int) -> None:
        """Exists over the whole span, KV up to the hit, then every side pool realigned to the hit."""
        rank = self.rank(rank)
        rig = self.rigs[rank]
        queried = self.queryable()
        transfers = [s.exists_transfer(self.own_keys(s, span, window)) for s in queried]
        result = rig.backend.batch_exists_v2(span, transfers)
        expected = expected_exists_v2(span, transfers, lambda pool, key: self.present(rank, pool, key))
        problems = check_exists_result(result, expected)
        assert not problems, f"exists_v2 over {span} on {self.who(rank)}: " + "; ".join(problems)
        hit = result.kv_hit_pages
        note(f"prefetch {self.who(rank)}: span {span}, hit {hit}")
        if hit == 0:
            return
        prefix = span[:hit]
        self._check_read_back(rank, PoolName.KV, prefix, range(hit), "prefetch KV")
        loads: list[tuple[PoolSpec, list[str], range]] = []
        for spec in queried:
            if spec.hit_policy is PoolHitPolicy.BLOCK_GROUPS:
                continue  # restored from its own blocks, not realigned to the KV hit
            own = self.own_keys(spec, prefix, window)
            loads.append((spec, own, range(hit - len(own), hit)))
        if not loads:
            return
        for spec, _, _ in loads:
            rig.pool(spec.name).fill(0)
        loads = rotated(loads, rotation)
        answers = rig.backend.batch_get_v2([rig.transfer(s.name, keys, pages) for s, keys, pages in loads])
        for spec, keys, pages in loads:
            got = answers.get(str(spec.name))
            assert got is not None, f"batch_get_v2 left pool {spec.name} out of its answer: {answers}"
            self._read_back(rank, spec.name, keys, pages, got, "prefetch side pools in one call")

    @precondition(lambda self: any(s.hit_policy is PoolHitPolicy.TRAILING_PAGES for s in self.queryable()))
    @rule(
        span=spans,
        window=st.integers(1, 3),
    )
    def hit_across_ranks(self, span: list[str], window: int) -> None:
        """Every rank's restorable set, MIN-reduced as the controller does, gives the shared hit."""
        transfers = [s.exists_transfer(self.own_keys(s, span, window)) for s in self.queryable()]
        results: list[PoolTransferResult] = []
        expected: list[ExpectedExists] = []
        for rank, rig in self.rigs.items():
            results.append(rig.backend.batch_exists_v2(span, transfers))
            expected.append(expected_exists_v2(span, transfers, functools.partial(self.present, rank)))
        got, want = reduce_across_ranks(results, len(span)), reduced_expected_hit(expected)
        assert got == want, (
            f"hit over {span} reduced across ranks: {got} pages, the model says {want}; "
            f"ranks answered {[(r.kv_hit_pages, r.restorable_prefix_pages) for r in results]}"
        )

    @rule(
        rank=rank_draws,
        pool=st.integers(0, 3),
        keys=st.lists(st.sampled_from(KEY_NAMES), min_size=1, max_size=3, unique=True),
    )
    def load_one_pool(self, rank: int, pool: int, keys: list[str]) -> None:
        """A get of one pool alone, keys in any order."""
        rank = self.rank(rank)
        names = [PoolName.KV, *(s.name for s in self.side)]
        self._check_read_back(rank, names[pool % len(names)], keys, range(len(keys)), "single-pool get")

    @rule(rank=rank_draws, keys=st.lists(st.sampled_from(KEY_NAMES), max_size=4))
    def exists_v1(self, rank: int, keys: list[str]) -> None:
        """batch_exists is the leading run of the rank's KV entries."""
        rank = self.rank(rank)
        expected = leading_run([self.present(rank, "kv", k) for k in keys])
        got = self.rigs[rank].backend.batch_exists(keys)
        assert got == expected, f"batch_exists({keys}) on {self.who(rank)}: {got}, model {expected}"

    @rule()
    def clear(self) -> None:
        note("clear")
        self.rigs[0].backend.clear()
        self.model.clear()

    @precondition(lambda self: self.caps.persistence)
    @rule()
    def restart(self) -> None:
        note("restart")
        for rig in self.rigs.values():
            rig.close()
        self._open()

    # -- invariants --------------------------------------------------------------------------

    @precondition(lambda self: self.caps.enumerates_objects)
    @invariant()
    def every_modelled_entry_is_one_object(self) -> None:
        """The store holds one object per entry the model holds, no more and no fewer."""
        count = self.rigs[0].backend.stored_object_count()
        assert count == len(self.model), (
            f"stored_object_count() is {count}; the model holds {len(self.model)}"
        )

    def teardown(self) -> None:
        for rig in self.rigs.values():
            rig.close()
        REAPER.discard(self.storage)
