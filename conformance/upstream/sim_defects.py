"""What SGLang 0.5.23's Sim fails, property by property (its adapter: ``sim.py``).

Data only: test id -> the defect, in the form :mod:`conformance.upstream.shared_defects` describes.
"""

from __future__ import annotations

from conformance.upstream.shared_defects import MINIMUM_OVER_POOLS, MINIMUM_OVER_POOLS_GEOMETRIES

SIM_TAKES_ANY_INPUT = (
    "Sim records the keys and never reads the indices: any index tensor, any hashable key and "
    "a repeated key are reported stored"
)

SGLANG_SIM_DEFECTS: dict[str, str] = {
    "test_indices_outside_the_pool_are_refused[*]": SIM_TAKES_ANY_INPUT,
    "test_indices_off_a_page_boundary_are_refused": SIM_TAKES_ANY_INPUT,
    "test_index_tensors_of_the_wrong_dtype_are_refused[*]": SIM_TAKES_ANY_INPUT,
    "test_keys_and_indices_of_different_lengths_are_refused": SIM_TAKES_ANY_INPUT,
    "test_keys_that_are_not_usable_strings_are_refused[*]": SIM_TAKES_ANY_INPUT,
    "test_duplicate_keys_in_one_batch_are_refused": SIM_TAKES_ANY_INPUT,
    "test_a_hit_policy_the_backend_does_not_declare_is_refused_never_answered_zero": (
        "every policy other than ALL_PAGES is folded as TRAILING_PAGES: BLOCK_GROUPS and unknown "
        "policies get an answer"
    ),
    **dict.fromkeys(
        [f"test_batch_exists_v2_follows_every_pools_hit_policy[{g}]" for g in MINIMUM_OVER_POOLS_GEOMETRIES],
        MINIMUM_OVER_POOLS,
    ),
    **dict.fromkeys(
        [
            "test_every_tp_rank_reads_the_replicated_entries_its_writer_stored[*]",
            "test_every_rank_of_a_pool_combination_reads_exactly_the_entries_it_shares",
        ],
        "each rank's Sim keeps its own key set and only the MLA writer rank stores, so the other "
        "ranks never hit: under TP > 1 an MLA model's prefetches all miss",
    ),
}
"""SGLang's Sim (keys only: byte checks are not claimed, see ``stores_bytes``)."""
