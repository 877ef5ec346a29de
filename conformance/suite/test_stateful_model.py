"""Traffic in the cache controller's order agrees with a dictionary model of the store.

The machine is :class:`conformance.harness.stateful.HiCacheStoreMachine`: multi-pool backups (side pools
first, trailing pools carrying only the tail), prefetches (exists over the span, KV, side pools
realigned to the hit in one call), hits reduced across two TP ranks, single-pool gets, overwrites
read back at once, clear and restart. Present means byte-exact, and nothing changes unless written.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from conformance.harness.rig import Target
from conformance.harness.stateful import HiCacheStoreMachine


def test_random_operation_sequences_agree_with_a_dictionary_model(hicache_target: Target) -> None:
    """Backups, prefetches, cross-rank hits, gets, overwrites, clear and restart match the model."""
    run_state_machine_as_test(  # type: ignore[no-untyped-call, unused-ignore]  # untyped in hypothesis
        HiCacheStoreMachine.bound_to(hicache_target),
        settings=settings(settings(), max_examples=4 * settings().max_examples, stateful_step_count=30),
    )
