"""What SGLang 0.5.23's MooncakeStore fails, property by property (its adapter: ``mooncake.py``).

Data only: test id -> the defect, in the form :mod:`conformance.upstream.shared_defects` describes.
"""

from __future__ import annotations

MOONCAKE_UNCHECKED = (
    "keys and host indices reach the cluster unchecked: a repeated key, the empty key, None, 7, "
    "b'bytes' and a key with NUL are stored and reported True, and so are indices off a page "
    "boundary, outside the pool or of a bool/uint8 tensor"
)
MOONCAKE_ASSERTS = (
    "malformed batches end in a bare AssertionError (assert len(keys) > 0, assert len(keys) == "
    "len(host_indices) // page_size) instead of a refusal"
)
MOONCAKE_NAMES = (
    "the key prefix spells the model name with '/' as '-': 'org/m' and 'org-m' share every object, "
    "and first write wins, so one model reads the other's pages"
)
MOONCAKE_CLEAR = (
    "clear() is remove_all() on the whole cluster: one deployment's clear() removes every model's "
    "and every location's objects"
)
MOONCAKE_CP_BLIND = (
    "object keys carry neither the attention-CP rank nor the TP size (the DCP prefix that names "
    "them is used only when dcp_size > 1): the CP ranks of one deployment share one object per page "
    "and first write wins"
)
MOONCAKE_ANCHOR = (
    "DeepSeek-V4's logical KV anchor is answered without an object: batch_set_v1 and batch_get_v1 "
    "return True for any key, never stored or another shard's, batch_exists looks for a '_k' object "
    "that is never written (0), and batch_exists_v2 counts every queried key as a KV hit"
)
MOONCAKE_QUEUE = (
    "one batch_set_v2 puts a side pool's whole span in one batch_put_from, an object a page part; "
    "past the TCP transport's per-peer queue (1,024 transfers queued, 1,024 more waiting) a transfer "
    "is rejected at once, and the batch waits out its fixed 60-second timeout and fails (-800) far "
    "more objects than were rejected: most of the span answers False, a minute later (finding 24)"
)
MOONCAKE_EMPTY_REGION = (
    "a page region of no bytes (lightning attention's empty conv state, which SGLang's own "
    "MambaPoolHost reports in get_page_buffer_meta) fails the whole page's put: Ring-2.5's "
    "lightning state is never stored"
)
MOONCAKE_LEASED_CLEAR = (
    "clear() (remove_all) skips objects still under Mooncake's 10 s lease: an entry written or "
    "read just before a clear is still found after it"
)
SGLANG_MOONCAKE_DEFECTS: dict[str, str] = {
    "test_indices_outside_the_pool_are_refused[*]": MOONCAKE_UNCHECKED,
    "test_indices_off_a_page_boundary_are_refused": MOONCAKE_UNCHECKED,
    "test_index_tensors_of_the_wrong_dtype_are_refused[torch.bool]": MOONCAKE_UNCHECKED,
    "test_index_tensors_of_the_wrong_dtype_are_refused[torch.uint8]": MOONCAKE_UNCHECKED,
    "test_duplicate_keys_in_one_batch_are_refused": MOONCAKE_UNCHECKED,
    "test_keys_that_are_not_usable_strings_are_refused[*]": MOONCAKE_UNCHECKED,
    "test_keys_and_indices_of_different_lengths_are_refused": MOONCAKE_ASSERTS,
    "test_an_empty_batch_does_nothing": MOONCAKE_ASSERTS,
    "test_every_config_pool_and_key_has_its_own_stored_object[*]": MOONCAKE_NAMES,
    "test_clear_in_one_deployment_never_removes_another_deployments_entries[*]": MOONCAKE_CLEAR,
    "test_keys_that_differ_only_in_what_a_backend_may_normalize_stay_distinct": MOONCAKE_LEASED_CLEAR,
    **dict.fromkeys(
        [
            f"{t}[{g}]"
            for g in (
                "adversarial",
                "deepseek_v32_dsa",
                "deepseek_v3_mla",
                "lfm2_conv",
                "llama3_mha",
                "mimo_v2_swa_mtp",
                "nemotron_h_mamba2",
                "qwen3_next_hybrid",
                "deepseek_v32_mtp",
                "glm5_next_mla_dsa_kda",
                "inkling_swa_mamba",
                "kimi_linear_mla_kda",
                "qwen3_next_mtp",
                "ring_2_5_mla_lightning",
            )
            for t in (
                "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share",
                "test_every_shard_a_deployment_keeps_apart_has_its_own_entry",
            )
        ],
        MOONCAKE_CP_BLIND,
    ),
    "test_every_rank_of_a_pool_combination_reads_exactly_the_entries_it_shares": MOONCAKE_CP_BLIND,
    **dict.fromkeys(
        [
            "test_a_call_leaves_the_keys_indices_and_prefix_keys_it_was_handed_as_they_were[ring_2_5_mla_lightning]",
            "test_a_load_writes_no_host_page_once_it_returns[ring_2_5_mla_lightning]",
            "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call[ring_2_5_mla_lightning]",
            "test_a_restarted_backend_reads_back_what_it_stored[ring_2_5_mla_lightning]",
            "test_a_store_has_read_every_page_it_stores_when_it_returns[ring_2_5_mla_lightning]",
            "test_a_trailing_pool_query_fills_the_restorable_prefix_set[ring_2_5_mla_lightning]",
            "test_batch_exists_v2_follows_every_pools_hit_policy[ring_2_5_mla_lightning]",
            "test_batches_sliced_from_one_operation_store_and_load_each_pages_own_bytes[ring_2_5_mla_lightning]",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists[ring_2_5_mla_lightning]",
            "test_every_stored_page_of_every_pool_kind_is_found[ring_2_5_mla_lightning]",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[ring_2_5_mla_lightning]",
            "test_get_never_touches_host_memory_outside_its_target_slots[ring_2_5_mla_lightning]",
            "test_keys_that_spell_another_pools_suffix_stay_distinct[ring_2_5_mla_lightning]",
            "test_overwriting_one_pool_never_changes_another_pool[ring_2_5_mla_lightning]",
            "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call[ring_2_5_mla_lightning]",
            "test_side_pool_pages_round_trip_byte_for_byte_through_v2[ring_2_5_mla_lightning]",
            "test_one_multi_pool_call_answers_for_every_pool_and_key_on_its_own",
        ],
        MOONCAKE_EMPTY_REGION,
    ),
    "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[deepseek_v4]": MOONCAKE_CP_BLIND,
    "test_random_operation_sequences_agree_with_a_dictionary_model": MOONCAKE_CP_BLIND,
    **dict.fromkeys(
        [
            f"{t}[deepseek_v4]"
            for t in (
                "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share",
                "test_batch_exists_counts_the_leading_run_of_present_keys",
                "test_batch_exists_v2_follows_every_pools_hit_policy",
                "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle",
                "test_a_restarted_backend_reads_back_what_it_stored",
                "test_entries_in_one_pool_are_invisible_to_another_pools_exists",
                "test_every_stored_page_of_every_pool_kind_is_found",
                "test_every_tp_rank_reads_the_replicated_entries_its_writer_stored",
                "test_a_call_leaves_the_keys_indices_and_prefix_keys_it_was_handed_as_they_were",
            )
        ],
        MOONCAKE_ANCHOR,
    ),
    # 512 pages: DeepSeek-V4 is 4,096 objects (8 parts a page), MiMo-V2 3,072 (K and V of 3 pools)
    "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call[deepseek_v4]": MOONCAKE_QUEUE,
    "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call[mimo_v2_swa_mtp]": MOONCAKE_QUEUE,
}
"""SGLang's MooncakeStore on a Mooncake cluster on loopback (findings 21 and 24)."""

SGLANG_MOONCAKE_INTERMITTENT: dict[str, str] = {
    "test_threads_storing_and_loading_disjoint_and_shared_keys_never_tear": (
        "a put of a key whose first put is still in flight succeeds at once (is_exist said 0, "
        "put_from returns 0) and a get right after fails (-703) until the first put ends: "
        "batch_set_v2 reports True for a page that does not yet read back (finding 23; only when "
        "two writers' puts of one key overlap)"
    ),
    # the clear runs in a worker process: one that takes over 10 s to start (a loaded machine) finds
    # the lease over and clears everything
    "test_entries_another_process_clears_are_gone_without_a_restart": (
        f"{MOONCAKE_LEASED_CLEAR}; here the clear comes from another process, which clears everything "
        "when it starts more than 10 s after the last read, as on a loaded machine"
    ),
    # up to 300 pages of DeepSeek-V4 is up to 2,400 objects: over 2,048 only the drain's speed decides
    "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call[deepseek_v4]": (
        f"{MOONCAKE_QUEUE}; up to 300 pages of DeepSeek-V4 straddle that queue, so whether the batch "
        "fits depends on how fast the holder drains it (it failed in 3 runs of 9)"
    ),
}
"""Defects of MooncakeStore that show only when timing goes just so (two writers' puts overlap, a
queue drains slowly, a clear comes within the lease): non-strict."""
