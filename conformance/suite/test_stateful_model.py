"""Random sequences of operations agree with a dictionary model of the store.

Sets, gets, overwrites, exists (v1 and v2 under every hit policy), clear and restart interleave
over several pools and two TP ranks. Present means byte-exact, and nothing changes unless written.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from conformance.geometry import load_geometry
from conformance.interface import PoolHitPolicy, PoolName
from conformance.oracle import check_exists_result, expected_exists_v2, leading_run
from conformance.rig import Rig, Target
from conformance.strategies import render_page
from conformance.suite._common import entry_identity

FAMILY = "adversarial"
PAGES = 4
NAMES = [f"s{i}" for i in range(4)]  # few keys, so operations meet each other's entries
KEYS = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True)
RANKS = st.sampled_from([0, 1])


def test_random_operation_sequences_agree_with_a_dictionary_model(hicache_target: Target) -> None:
    """Interleaved set/get/overwrite/exists/clear/restart over pools and ranks match the model."""
    geometry = load_geometry(FAMILY)
    usable = [PoolName.KV, *(p.name for p in hicache_target.usable_pools(geometry))]
    specs = {p.name: p for p in geometry.pools}
    policies = hicache_target.caps.hit_policies

    class StoreModel(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.storage = Path(tempfile.mkdtemp(prefix="stateful-", dir=hicache_target.root))
            self.model: dict[tuple[object, ...], bytes] = {}
            self.rigs = self._open()

        def _open(self) -> dict[int, Rig]:
            return {
                r: Rig(hicache_target, geometry, self.storage, page_num=PAGES, tp_rank=r, tp_size=2)
                for r in (0, 1)
            }

        def _present(self, rig: Rig, pool: str, key: str) -> bool:
            return entry_identity(rig.config, PoolName(pool), key) in self.model

        @rule(rank=RANKS, pool=st.sampled_from(usable), keys=KEYS, seed=st.integers(0, 2**16))
        def store(self, rank: int, pool: PoolName, keys: list[str], seed: int) -> None:
            rig = self.rigs[rank]
            for page, key in enumerate(keys):
                data = render_page(rig.pool(pool), seed, 3, salt=page)
                rig.put(pool, page, data)
                identity = entry_identity(rig.config, pool, key)
                if hicache_target.caps.overwrites or identity not in self.model:
                    self.model[identity] = data
            assert rig.set(pool, keys, range(len(keys))) == [True] * len(keys)

        @rule(rank=RANKS, pool=st.sampled_from(usable), keys=KEYS)
        def load(self, rank: int, pool: PoolName, keys: list[str]) -> None:
            rig = self.rigs[rank]
            rig.pool(pool).fill(0)
            got = rig.get(pool, keys, range(len(keys)))
            for page, (key, ok) in enumerate(zip(keys, got)):
                want = self.model.get(entry_identity(rig.config, pool, key))
                assert ok == (want is not None), (
                    f"{pool} {key!r} on rank {rank}: get {ok}, model {want is not None}"
                )
                if want is not None:
                    rig.expect(pool, page, want, f"{key!r} on rank {rank}")

        @rule(rank=RANKS, keys=st.lists(st.sampled_from(NAMES), max_size=4))
        def exists_v1(self, rank: int, keys: list[str]) -> None:
            rig = self.rigs[rank]
            expected = leading_run([self._present(rig, "kv", k) for k in keys])
            assert rig.backend.batch_exists(keys) == expected

        @rule(
            rank=RANKS,
            keys=st.lists(st.sampled_from(NAMES), max_size=4, unique=True),
            window=st.integers(1, 3),
        )
        def exists_v2(self, rank: int, keys: list[str], window: int) -> None:
            rig = self.rigs[rank]
            transfers = []
            for name in usable[1:]:
                spec = specs[name]
                if spec.hit_policy not in policies:
                    continue
                own = keys[-window:] if spec.hit_policy is PoolHitPolicy.TRAILING_PAGES else keys
                transfers.append(spec.exists_transfer(own))
            expected = expected_exists_v2(keys, transfers, lambda pool, key: self._present(rig, pool, key))
            problems = check_exists_result(rig.backend.batch_exists_v2(keys, transfers), expected)
            assert not problems, "; ".join(problems)

        @rule()
        def clear(self) -> None:
            self.rigs[0].backend.clear()
            self.model.clear()

        @precondition(lambda self: hicache_target.caps.persistence)
        @rule()
        def restart(self) -> None:
            for rig in self.rigs.values():
                rig.close()
            self.rigs = self._open()

        def teardown(self) -> None:
            for rig in self.rigs.values():
                rig.close()
            shutil.rmtree(self.storage, ignore_errors=True)

    run_state_machine_as_test(  # type: ignore[no-untyped-call, unused-ignore]  # untyped in hypothesis
        StoreModel,
        settings=settings(settings(), max_examples=4 * settings().max_examples, stateful_step_count=30),
    )
