"""What SGLang 0.5.23's HiCacheHF3FS fails, property by property (its adapter: ``hf3fs.py``).

Data only: test id -> the defect, in the form :mod:`conformance.upstream.shared_defects` describes.
"""

from __future__ import annotations

from conformance.upstream.shared_defects import HANDOVER_PROPERTIES, MINIMUM_OVER_POOLS

HF3FS_FLAG_PER_HALF = (
    "MHA KV in the page-first layouts is stored as two objects a page ('<key>-k', '<key>-v') and "
    "batch_set_v1 answers one flag per object: 2N flags for N keys (the first defect these "
    "properties meet; it may hide others behind it)"
)
HF3FS_SIDE_POOLS_SIZED_BY_K = (
    "side-pool file pages are sized by get_ksize_per_token(), which for MHA-shaped side pools (SWA, "
    "draft) is the K half: every SWA and draft page is longer than its slot and fails to store"
)
HF3FS_ANCHOR_WITHOUT_BYTES = (
    "DeepSeek-V4's KV anchor holds no bytes: HF3FS sizes its KV file pages from it (0 bytes) and "
    "construction divides by zero; in layer_first, LogicalHostPool has no get_size_per_token"
)
HF3FS_NAMES_BLIND = (
    "entries are named by key and TP rank only (MLA: rank 0 for all): the model name, pipeline stage "
    "and CP rank are not part of the name, so other models and stages at one location read each "
    "other's pages"
)
HF3FS_PREALLOCATED_FILES = (
    "each 3FS file is preallocated (ftruncate to file_size) when the backend is built: a writer "
    "whose files cannot grow (RLIMIT_FSIZE) or be created (read-only folder) fails or hangs before "
    "its first set instead of refusing the write"
)
HF3FS_FIXED_CAPACITY = (
    "each pool's 3FS file holds a fixed number of pages (file_size, 8 MiB in the suite's config) and "
    "HF3FS evicts its least recently used pages once it is full, with no budget key to declare: "
    "2,048 entries another process writes overflow the adversarial geometry's files, and the first "
    "rounds are gone (HF3FS working as configured; the suite cannot size its files for this "
    "property alone: larger files exhaust its host-memory check elsewhere)"
)
HF3FS_TRUTHY_FLAG = 'use_mock_hf3fs_client is read for truthiness: any string, "maybe" too, is accepted'

SGLANG_HF3FS_DEFECTS: dict[str, str] = {
    "test_thousands_of_entries_another_process_writes_are_all_seen_without_a_restart": HF3FS_FIXED_CAPACITY,
    **dict.fromkeys(
        [
            "test_a_hit_policy_the_backend_does_not_declare_is_refused_never_answered_zero",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[adversarial]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[lfm2_conv]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[llama3_mha]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[mimo_v2_swa_mtp]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[nemotron_h_mamba2]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[qwen3_next_hybrid]",
            "test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one[kv_dtype]",
            "test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one[layout]",
            "test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one[page_size]",
            "test_a_restarted_backend_reads_back_what_it_stored[adversarial]",
            "test_a_restarted_backend_reads_back_what_it_stored[lfm2_conv]",
            "test_a_restarted_backend_reads_back_what_it_stored[mimo_v2_swa_mtp]",
            "test_a_restarted_backend_reads_back_what_it_stored[nemotron_h_mamba2]",
            "test_a_restarted_backend_reads_back_what_it_stored[qwen3_next_hybrid]",
            "test_a_truncated_object_is_neither_present_nor_readable[empty]",
            "test_a_truncated_object_is_neither_present_nor_readable[halved]",
            "test_a_truncated_object_is_neither_present_nor_readable[one-byte-short]",
            "test_an_absolute_path_key_never_leaves_the_store",
            "test_an_empty_batch_does_nothing",
            "test_an_unregistered_pool_is_refused",
            "test_batch_exists_counts_the_leading_run_of_present_keys[adversarial]",
            "test_batch_exists_counts_the_leading_run_of_present_keys[lfm2_conv]",
            "test_batch_exists_counts_the_leading_run_of_present_keys[llama3_mha]",
            "test_batch_exists_counts_the_leading_run_of_present_keys[mimo_v2_swa_mtp]",
            "test_batch_exists_counts_the_leading_run_of_present_keys[nemotron_h_mamba2]",
            "test_batch_exists_counts_the_leading_run_of_present_keys[qwen3_next_hybrid]",
            "test_batch_exists_v2_follows_every_pools_hit_policy[adversarial]",
            "test_batch_exists_v2_follows_every_pools_hit_policy[lfm2_conv]",
            "test_batch_exists_v2_follows_every_pools_hit_policy[mimo_v2_swa_mtp]",
            "test_batch_exists_v2_follows_every_pools_hit_policy[nemotron_h_mamba2]",
            "test_batch_exists_v2_follows_every_pools_hit_policy[qwen3_next_hybrid]",
            "test_duplicate_keys_in_one_batch_are_refused",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists[adversarial]",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists[lfm2_conv]",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists[nemotron_h_mamba2]",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists[qwen3_next_hybrid]",
            "test_every_config_pool_and_key_has_its_own_stored_object[adversarial]",
            "test_every_config_pool_and_key_has_its_own_stored_object[lfm2_conv]",
            "test_every_config_pool_and_key_has_its_own_stored_object[llama3_mha]",
            "test_every_config_pool_and_key_has_its_own_stored_object[mimo_v2_swa_mtp]",
            "test_every_config_pool_and_key_has_its_own_stored_object[nemotron_h_mamba2]",
            "test_every_config_pool_and_key_has_its_own_stored_object[qwen3_next_hybrid]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[adversarial]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[lfm2_conv]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[llama3_mha]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[mimo_v2_swa_mtp]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[nemotron_h_mamba2]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[qwen3_next_hybrid]",
            "test_every_stored_page_of_every_pool_kind_is_found[adversarial]",
            "test_every_stored_page_of_every_pool_kind_is_found[lfm2_conv]",
            "test_every_stored_page_of_every_pool_kind_is_found[nemotron_h_mamba2]",
            "test_every_stored_page_of_every_pool_kind_is_found[qwen3_next_hybrid]",
            "test_every_stride_and_base_alignment_round_trips_in_every_io_mode[aligned-base-4096-multiple]",
            "test_every_stride_and_base_alignment_round_trips_in_every_io_mode[aligned-base-512-multiple]",
            "test_every_stride_and_base_alignment_round_trips_in_every_io_mode[aligned-base-unaligned]",
            "test_every_stride_and_base_alignment_round_trips_in_every_io_mode[misaligned-base-4096-multiple]",
            "test_every_stride_and_base_alignment_round_trips_in_every_io_mode[misaligned-base-512-multiple]",
            "test_every_stride_and_base_alignment_round_trips_in_every_io_mode[misaligned-base-unaligned]",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[adversarial]",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[lfm2_conv]",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[mimo_v2_swa_mtp]",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[nemotron_h_mamba2]",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[qwen3_next_hybrid]",
            "test_get_never_touches_host_memory_outside_its_target_slots[adversarial]",
            "test_get_never_touches_host_memory_outside_its_target_slots[lfm2_conv]",
            "test_get_never_touches_host_memory_outside_its_target_slots[nemotron_h_mamba2]",
            "test_get_never_touches_host_memory_outside_its_target_slots[qwen3_next_hybrid]",
            "test_index_tensors_of_the_wrong_dtype_are_refused[torch.bool]",
            "test_index_tensors_of_the_wrong_dtype_are_refused[torch.float32]",
            "test_index_tensors_of_the_wrong_dtype_are_refused[torch.uint8]",
            "test_indices_off_a_page_boundary_are_refused",
            "test_indices_outside_the_pool_are_refused[far-beyond]",
            "test_indices_outside_the_pool_are_refused[negative]",
            "test_indices_outside_the_pool_are_refused[one-past-the-end]",
            "test_keys_and_indices_of_different_lengths_are_refused",
            "test_keys_over_4_kib_are_stored_apart_or_refused",
            "test_keys_that_are_not_usable_strings_are_refused[NUL]",
            "test_keys_that_are_not_usable_strings_are_refused[None]",
            "test_keys_that_are_not_usable_strings_are_refused[bytes]",
            "test_keys_that_are_not_usable_strings_are_refused[empty]",
            "test_keys_that_are_not_usable_strings_are_refused[int]",
            "test_keys_that_spell_another_pools_suffix_stay_distinct[adversarial]",
            "test_keys_that_spell_another_pools_suffix_stay_distinct[lfm2_conv]",
            "test_keys_that_spell_another_pools_suffix_stay_distinct[mimo_v2_swa_mtp]",
            "test_keys_that_spell_another_pools_suffix_stay_distinct[nemotron_h_mamba2]",
            "test_keys_that_spell_another_pools_suffix_stay_distinct[qwen3_next_hybrid]",
            "test_kv_pages_round_trip_byte_for_byte_through_v1[adversarial]",
            "test_kv_pages_round_trip_byte_for_byte_through_v1[lfm2_conv]",
            "test_kv_pages_round_trip_byte_for_byte_through_v1[llama3_mha]",
            "test_kv_pages_round_trip_byte_for_byte_through_v1[mimo_v2_swa_mtp]",
            "test_kv_pages_round_trip_byte_for_byte_through_v1[nemotron_h_mamba2]",
            "test_kv_pages_round_trip_byte_for_byte_through_v1[qwen3_next_hybrid]",
            "test_overwriting_one_pool_never_changes_another_pool[adversarial]",
            "test_overwriting_one_pool_never_changes_another_pool[lfm2_conv]",
            "test_overwriting_one_pool_never_changes_another_pool[nemotron_h_mamba2]",
            "test_overwriting_one_pool_never_changes_another_pool[qwen3_next_hybrid]",
            "test_path_traversal_keys_never_leave_the_store[../../x]",
            "test_path_traversal_keys_never_leave_the_store[../x]",
            "test_path_traversal_keys_never_leave_the_store[..]",
            "test_path_traversal_keys_never_leave_the_store[.]",
            "test_path_traversal_keys_never_leave_the_store[a/../../x]",
            "test_random_operation_sequences_agree_with_a_dictionary_model",
            "test_the_newest_version_wins_across_any_number_of_restarts",
            "test_threads_storing_and_loading_disjoint_and_shared_keys_never_tear",
            "test_two_processes_sharing_a_store_lose_nothing",
            "test_a_damaged_record_in_a_batch_of_any_size_is_never_served_and_its_neighbours_are_exact",
            "test_keys_that_differ_only_in_what_a_backend_may_normalize_stay_distinct",
            *(
                f"{prop}[{g}]"
                for prop in HANDOVER_PROPERTIES
                for g in (
                    "adversarial",
                    "lfm2_conv",
                    "llama3_mha",
                    "mimo_v2_swa_mtp",
                    "nemotron_h_mamba2",
                    "qwen3_next_hybrid",
                )
            ),
            # issue 29's MHA combinations (Inkling, Qwen3-Next with MTP) and the combinations family
            "test_a_call_leaves_the_keys_indices_and_prefix_keys_it_was_handed_as_they_were[inkling_swa_mamba]",
            "test_a_call_leaves_the_keys_indices_and_prefix_keys_it_was_handed_as_they_were[qwen3_next_mtp]",
            "test_a_load_writes_no_host_page_once_it_returns[inkling_swa_mamba]",
            "test_a_load_writes_no_host_page_once_it_returns[qwen3_next_mtp]",
            "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call[inkling_swa_mamba]",
            "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call[qwen3_next_mtp]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[inkling_swa_mamba]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[qwen3_next_mtp]",
            "test_a_restarted_backend_reads_back_what_it_stored[inkling_swa_mamba]",
            "test_a_restarted_backend_reads_back_what_it_stored[qwen3_next_mtp]",
            "test_a_store_has_read_every_page_it_stores_when_it_returns[inkling_swa_mamba]",
            "test_a_store_has_read_every_page_it_stores_when_it_returns[qwen3_next_mtp]",
            "test_batch_exists_counts_the_leading_run_of_present_keys[inkling_swa_mamba]",
            "test_batch_exists_counts_the_leading_run_of_present_keys[qwen3_next_mtp]",
            "test_batch_exists_v2_follows_every_pools_hit_policy[inkling_swa_mamba]",
            "test_batch_exists_v2_follows_every_pools_hit_policy[qwen3_next_mtp]",
            "test_batches_sliced_from_one_operation_store_and_load_each_pages_own_bytes[inkling_swa_mamba]",
            "test_batches_sliced_from_one_operation_store_and_load_each_pages_own_bytes[qwen3_next_mtp]",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists[inkling_swa_mamba]",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists[qwen3_next_mtp]",
            "test_every_config_pool_and_key_has_its_own_stored_object[inkling_swa_mamba]",
            "test_every_config_pool_and_key_has_its_own_stored_object[qwen3_next_mtp]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[inkling_swa_mamba]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[qwen3_next_mtp]",
            "test_every_stored_page_of_every_pool_kind_is_found[inkling_swa_mamba]",
            "test_every_stored_page_of_every_pool_kind_is_found[qwen3_next_mtp]",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[inkling_swa_mamba]",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[qwen3_next_mtp]",
            "test_get_never_touches_host_memory_outside_its_target_slots[inkling_swa_mamba]",
            "test_get_never_touches_host_memory_outside_its_target_slots[qwen3_next_mtp]",
            "test_keys_that_spell_another_pools_suffix_stay_distinct[inkling_swa_mamba]",
            "test_keys_that_spell_another_pools_suffix_stay_distinct[qwen3_next_mtp]",
            "test_kv_pages_round_trip_byte_for_byte_through_v1[inkling_swa_mamba]",
            "test_kv_pages_round_trip_byte_for_byte_through_v1[qwen3_next_mtp]",
            "test_overwriting_one_pool_never_changes_another_pool[inkling_swa_mamba]",
            "test_overwriting_one_pool_never_changes_another_pool[qwen3_next_mtp]",
            "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call[inkling_swa_mamba]",
            "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call[qwen3_next_mtp]",
            "test_side_pool_pages_round_trip_byte_for_byte_through_v2[inkling_swa_mamba]",
            "test_side_pool_pages_round_trip_byte_for_byte_through_v2[qwen3_next_mtp]",
            "test_every_rank_of_a_pool_combination_reads_exactly_the_entries_it_shares",
            "test_one_multi_pool_call_answers_for_every_pool_and_key_on_its_own",
            "test_entries_another_process_clears_are_gone_without_a_restart",
            "test_an_instance_holding_thousands_of_entries_finds_and_reads_every_one",
        ],
        HF3FS_FLAG_PER_HALF,
    ),
    **dict.fromkeys(
        [
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists[mimo_v2_swa_mtp]",
            "test_every_stored_page_of_every_pool_kind_is_found[mimo_v2_swa_mtp]",
            "test_get_never_touches_host_memory_outside_its_target_slots[mimo_v2_swa_mtp]",
            "test_overwriting_one_pool_never_changes_another_pool[mimo_v2_swa_mtp]",
            "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call[mimo_v2_swa_mtp]",
            "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call[mimo_v2_swa_mtp]",
            "test_side_pool_pages_round_trip_byte_for_byte_through_v2[mimo_v2_swa_mtp]",
        ],
        HF3FS_SIDE_POOLS_SIZED_BY_K,
    ),
    **dict.fromkeys(
        [
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[deepseek_v4]",
            "test_a_restarted_backend_reads_back_what_it_stored[deepseek_v4]",
            "test_batch_exists_counts_the_leading_run_of_present_keys[deepseek_v4]",
            "test_batch_exists_v2_follows_every_pools_hit_policy[deepseek_v4]",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists[deepseek_v4]",
            "test_every_config_pool_and_key_has_its_own_stored_object[deepseek_v4]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[deepseek_v4]",
            "test_every_stored_page_of_every_pool_kind_is_found[deepseek_v4]",
            "test_every_tp_rank_reads_the_replicated_entries_its_writer_stored[deepseek_v4]",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[deepseek_v4]",
            "test_get_never_touches_host_memory_outside_its_target_slots[deepseek_v4]",
            "test_keys_that_spell_another_pools_suffix_stay_distinct[deepseek_v4]",
            "test_kv_pages_round_trip_byte_for_byte_through_v1[deepseek_v4]",
            "test_overwriting_one_pool_never_changes_another_pool[deepseek_v4]",
            "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call[deepseek_v4]",
            "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call[deepseek_v4]",
            "test_side_pool_pages_round_trip_byte_for_byte_through_v2[deepseek_v4]",
            "test_a_store_puts_no_host_byte_it_was_not_handed_into_its_files[deepseek_v4]",
            *(f"{prop}[deepseek_v4]" for prop in HANDOVER_PROPERTIES),
        ],
        HF3FS_ANCHOR_WITHOUT_BYTES,
    ),
    **dict.fromkeys(
        [
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[deepseek_v32_dsa]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[deepseek_v3_mla]",
            "test_every_config_pool_and_key_has_its_own_stored_object[deepseek_v32_dsa]",
            "test_every_config_pool_and_key_has_its_own_stored_object[deepseek_v3_mla]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[deepseek_v32_dsa]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[deepseek_v3_mla]",
            # issue 29's MLA combinations
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[deepseek_v32_mtp]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[glm5_next_mla_dsa_kda]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[kimi_linear_mla_kda]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[ring_2_5_mla_lightning]",
            "test_every_config_pool_and_key_has_its_own_stored_object[deepseek_v32_mtp]",
            "test_every_config_pool_and_key_has_its_own_stored_object[glm5_next_mla_dsa_kda]",
            "test_every_config_pool_and_key_has_its_own_stored_object[kimi_linear_mla_kda]",
            "test_every_config_pool_and_key_has_its_own_stored_object[ring_2_5_mla_lightning]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[deepseek_v32_mtp]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[glm5_next_mla_dsa_kda]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[kimi_linear_mla_kda]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[ring_2_5_mla_lightning]",
        ],
        HF3FS_NAMES_BLIND,
    ),
    **dict.fromkeys(
        [
            "test_a_file_size_limit_fails_writes_cleanly[1B]",
            "test_a_file_size_limit_fails_writes_cleanly[2KiB]",
            "test_a_file_size_limit_fails_writes_cleanly[4KiB]",
            "test_a_read_only_store_refuses_writes_and_keeps_its_entries",
        ],
        HF3FS_PREALLOCATED_FILES,
    ),
    **dict.fromkeys(
        [
            "test_a_config_the_backend_cannot_honour_is_refused_at_construction",
        ],
        HF3FS_TRUTHY_FLAG,
    ),
    # an MLA model (no per-half flag) with an ALL_PAGES indexer beside a TRAILING_PAGES KDA state
    "test_batch_exists_v2_follows_every_pools_hit_policy[glm5_next_mla_dsa_kda]": MINIMUM_OVER_POOLS,
}
"""SGLang's HiCacheHF3FS with its mock file client and global metadata server."""
