"""Pools in the combinations models ship: each pool shared by its own rule, answered on its own.

A hybrid model stores several pools under one page's key, and each pool has rules of its own:
MLA KV is replicated across TP ranks while the recurrent state beside it is sharded per rank
(Kimi-Linear in SGLang 0.5.23); a key can be present in one pool and absent, removed or damaged
in another. The geometries here are drawn compositionally (:mod:`conformance.harness.combinations`: any
KV kind beside any set of side pools), with the combinations SGLang builds given as examples, so a
rule keyed to the KV kind, or a result keyed to the key alone, fails whatever the fixtures hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from conformance.harness.combinations import COMPOSED_KV_KINDS, pool_combinations
from conformance.harness.geometry import ModelGeometry, load_geometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import rank_sets, render_page
from conformance.model.interface import PoolHitPolicy, PoolName
from conformance.model.oracle import check_exists_result, expected_exists_v2
from conformance.model.sharing import Shape, writer_of
from conformance.suite._common import (
    HYBRID,
    entry_identity,
    kv_layouts,
    misaligns,
    runnable,
    store_from_writers,
)
from reference_backend.interface import rank_replicated

KIMI_LINEAR = load_geometry("kimi_linear_mla_kda")
"""MLA KV (replicated) beside KDA state (sharded): the combination whose sharing differs by pool."""
GLM5_NEXT = load_geometry("glm5_next_mla_dsa_kda")
DEEPSEEK_V4 = load_geometry("deepseek_v4")
"""The logical-anchor KV beside its fixed stack of compressed pools: a draw from the fixtures can
land on it on one machine and not on another (hypothesis's draws also follow the constants of
the modules loaded), so what a backend does with it is an example, met on every seed."""

combinations = pool_combinations(min_side=1)
shard_keys = st.lists(
    st.text("0123456789abcdef", min_size=1, max_size=8), min_size=1, max_size=3, unique=True
)


def claimed(target: Target, geometry: ModelGeometry) -> None:
    """Draw only what the backend claims: a KV kind it is built with (``Rig`` would skip the whole
    property at the first draw it does not claim; a KV-only backend gets KV-only combinations)."""
    if not set(COMPOSED_KV_KINDS) & set(target.caps.kv_kinds):
        pytest.skip(f"backend {target.spec.name!r} declares none of the kv_kinds {list(COMPOSED_KV_KINDS)}")
    assume(geometry.kv.kind in target.caps.kv_kinds)


def _label(rig: Rig) -> str:
    return rig.shape.label()


@given(geometry=combinations, keys=shard_keys, ranks=rank_sets())
@example(geometry=KIMI_LINEAR, keys=["0"], ranks=[Shape(tp_rank=0, tp_size=2), Shape(tp_rank=1, tp_size=2)])
@example(
    geometry=GLM5_NEXT,
    keys=["0", "1"],
    ranks=[
        Shape(tp_rank=1, tp_size=4, dcp_rank=1, dcp_size=2, logical_page_size=4),
        Shape(tp_rank=3, tp_size=4, dcp_rank=1, dcp_size=2, logical_page_size=4),
    ],
)
def test_every_rank_of_a_pool_combination_reads_exactly_the_entries_it_shares(
    hicache_target: Target, geometry: ModelGeometry, keys: list[str], ranks: list[Shape]
) -> None:
    """Each rank reads its own entry of every sharded pool and its writer's of every replicated one.

    Ranks of one deployment, each pool shared by its own rule (:mod:`conformance.model.sharing`),
    byte-exact; a pool no rank of the set stored under a rank's identity reads back False."""
    target = hicache_target
    claimed(target, geometry)
    placed = [runnable(target, geometry, s) for s in ranks]
    shapes = list(dict.fromkeys([*placed, *(writer_of(s) for s in placed)]))  # every reader's writer too
    with target.storage() as storage:
        rigs = [Rig(target, geometry, storage, page_num=len(keys), shape=s) for s in shapes]
        try:
            stored = store_from_writers(rigs, keys)
            for rig in rigs:
                for name in rig.pools:
                    want = [stored.get(entry_identity(rig.config, name, key)) for key in keys]
                    rig.pool(name).fill(0x00)
                    got = rig.get(name, keys, range(len(keys)))
                    kind = next(p.kind for p in geometry.pools if p.name is name)
                    rule = "replicated" if rank_replicated(rig.config, name) else "sharded"
                    assert got == [w is not None for w in want], (
                        f"{name} ({kind}, {rule} across TP ranks) get at {_label(rig)} returned {got} "
                        f"in {geometry!r}"
                    )
                    if target.caps.stores_bytes:
                        for i, (key, page) in enumerate(zip(keys, want)):
                            if page is not None:
                                rig.expect(name, i, page, f"key {key!r} at {_label(rig)}")
        finally:
            for rig in rigs:
                rig.close()


STATES = ("present", "absent", "removed", "damaged")
"""What one pool holds for one key: its entry; nothing; an entry stored and then removed (the store
cleared, the others stored again with new bytes); an entry whose stored bytes were damaged."""


@dataclass(frozen=True)
class PartialPresence:
    """Each pool's state for each key (pools past the drawn rows hold every key), and one key
    present in one pool while another pool has lost it: drawn on purpose, not left to chance."""

    rows: tuple[tuple[str, ...], ...]
    split: tuple[int, int, int, str]
    windows: tuple[int, ...]

    def window(self, index: int) -> int:
        """A TRAILING pool's window; pools past the drawn ones (DeepSeek-V4 has eight) get one page."""
        return self.windows[index] if index < len(self.windows) else 1

    @property
    def keys(self) -> int:
        return len(self.rows[0])

    def states(self, pools: int) -> list[list[str]]:
        grid = [list(self.rows[i]) if i < len(self.rows) else ["present"] * self.keys for i in range(pools)]
        have, lost, key, state = self.split
        if pools > 1:
            have, lost = have % pools, lost % pools
            lost = lost if lost != have else (have + 1) % pools
            grid[have][key % self.keys] = "present"
            grid[lost][key % self.keys] = state
        return grid


@st.composite
def partial_presences(draw: st.DrawFn, pools: int = 5) -> PartialPresence:
    n = draw(st.integers(1, 5))
    state = st.sampled_from(["present", "present", *STATES[1:]])
    return PartialPresence(
        rows=tuple(tuple(draw(st.lists(state, min_size=n, max_size=n))) for _ in range(pools)),
        split=(
            draw(st.integers(0, 7)),
            draw(st.integers(0, 7)),
            draw(st.integers(0, 7)),
            draw(st.sampled_from(STATES[1:])),
        ),
        windows=tuple(draw(st.integers(1, 3)) for _ in range(pools)),
    )


def _snapshot(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _damage_what_changed(before: dict[Path, bytes], after: dict[Path, bytes]) -> str:
    """Flip one byte in the middle of what the last write changed, in the file it changed most:
    the entry it wrote, and (in a log or a file of its own) nothing else."""
    spans = []
    for path, data in after.items():
        old = before.get(path, b"")
        if old == data:
            continue
        n = min(len(old), len(data))
        diff = np.flatnonzero(np.frombuffer(old[:n], np.uint8) != np.frombuffer(data[:n], np.uint8))
        first = int(diff[0]) if diff.size else n
        last = len(data) - 1 if len(data) > n else int(diff[-1])
        spans.append((last - first, first, last, path))
    assert spans, "storing an entry changed no file, though stores_files is declared"
    _, first, last, path = max(spans, key=lambda s: s[0])
    at = (first + last) // 2
    damaged = bytearray(after[path])
    damaged[at] ^= 0x5A
    path.write_bytes(damaged)
    return f"byte {at} of {path.name}"


@given(
    geometry=st.one_of(st.sampled_from(HYBRID), combinations),
    presence=partial_presences(),
    layout=kv_layouts,
    misalign=misaligns,
)
@example(
    geometry=KIMI_LINEAR,
    presence=PartialPresence(
        rows=(("present", "present"), ("present", "absent")), split=(0, 1, 1, "absent"), windows=(1, 1)
    ),
    layout="page_first",
    misalign=0,
)
@example(
    geometry=DEEPSEEK_V4,
    presence=PartialPresence(
        rows=(("present", "present"), ("present", "absent")), split=(0, 1, 1, "absent"), windows=(1, 1)
    ),
    layout="page_first",
    misalign=0,
)
def test_one_multi_pool_call_answers_for_every_pool_and_key_on_its_own(
    hicache_target: Target, geometry: ModelGeometry, presence: PartialPresence, layout: str, misalign: int
) -> None:
    """One multi-pool batch_exists_v2 and batch_get_v2 answer every (pool, key) by that pool's own entry.

    A key present in one pool is absent, removed or damaged in another, drawn on purpose: exists
    matches the oracle for every pool; get answers True with the exact bytes, or False."""
    target = hicache_target
    claimed(target, geometry)
    target.require_layout(layout)
    caps = target.caps
    can_damage = caps.stores_files and caps.detects_corruption
    n = presence.keys
    keys = [f"pp-{i}" for i in range(n)]
    with (
        target.storage() as storage,
        Rig(target, geometry, storage, layout=layout, misalign=misalign, page_num=2 * n) as rig,
    ):
        names = list(rig.pools)
        specs = {s.name: s for s in geometry.pools}
        grid = presence.states(len(names))
        state = {
            (name, key): ("removed" if s == "damaged" and not can_damage else s)
            for name, row in zip(names, grid)
            for key, s in zip(keys, row)
        }
        written: dict[tuple[PoolName, str], bytes] = {}

        def store(name: PoolName, which: list[int], salt: int) -> None:
            for i in which:
                written[(name, keys[i])] = render_page(
                    rig.pool(name), 4099 * salt + 97 * names.index(name) + i, 3, salt=salt
                )
                rig.put(name, i, written[(name, keys[i])])
            done = rig.set(name, [keys[i] for i in which], which)
            assert done == [True] * len(which), f"{name} set of {[keys[i] for i in which]} returned {done}"

        if "removed" in state.values():  # every entry stored once, then all of them removed
            for name in names:
                store(name, list(range(n)), salt=1)
            assert rig.backend.clear() is not False, "clear() answered False"
        for name in names:
            present = [i for i, key in enumerate(keys) if state[(name, key)] == "present"]
            if present:
                store(name, present, salt=2)

        # exists: every pool whose hit policy the backend declares, each under its own policy
        transfers = []
        for i, name in enumerate(names[1:]):
            spec = specs[name]
            if spec.hit_policy not in caps.hit_policies:
                continue
            trailing = spec.hit_policy is PoolHitPolicy.TRAILING_PAGES
            transfers.append(
                spec.exists_transfer(keys[max(0, n - presence.window(i)) :] if trailing else keys)
            )
        expected = expected_exists_v2(
            keys, transfers, lambda pool, key: state[(PoolName(pool), key)] == "present"
        )
        result = rig.backend.batch_exists_v2(keys, transfers)
        held = {str(name): "".join(state[(name, k)][0] for k in keys) for name in names}
        problems = check_exists_result(result, expected)
        assert not problems, f"batch_exists_v2 with pools holding {held} (p/a/r/d): " + "; ".join(problems)

        damaged: dict[tuple[PoolName, str], str] = {}
        for name in names:
            for i, key in enumerate(keys):
                if state[(name, key)] == "damaged":
                    before = _snapshot(storage)
                    store(name, [i], salt=3)
                    damaged[(name, key)] = _damage_what_changed(before, _snapshot(storage))

        # one get of every pool into pages n..2n-1; KV rides along where it travels through v2
        for name in names:
            rig.pool(name).fill(0x00)
        in_v2 = [name for name in names if name is not PoolName.KV or caps.kv_through_v2]
        answers = {
            PoolName(k): v
            for k, v in rig.backend.batch_get_v2(
                [rig.transfer(name, keys, range(n, 2 * n)) for name in in_v2]
            ).items()
        }
        if PoolName.KV not in in_v2:
            answers[PoolName.KV] = rig.get(PoolName.KV, keys, range(n, 2 * n))
        for name in names:
            got = answers.get(name)
            assert got is not None and len(got) == n, f"batch_get_v2 answered {got} for pool {name}"
            for i, key in enumerate(keys):
                s = state[(name, key)]
                how = f"{s}, {damaged[(name, key)]}" if s == "damaged" else s
                where = f"pool {name} key {key!r} ({how}; pools hold {held})"
                if s == "present":
                    assert got[i], f"{where}: get answered {got[i]}"
                elif s in ("absent", "removed"):
                    assert not got[i], f"{where}: get answered {got[i]}"
                if got[i] and caps.stores_bytes and s in ("present", "damaged"):
                    rig.expect(name, n + i, written[(name, key)], where)
