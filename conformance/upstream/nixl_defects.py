"""What SGLang 0.5.23's HiCacheNixl fails, property by property (its adapter: ``adapters.py``).

Data only: test id -> the defect, in the form :mod:`conformance.upstream.shared_defects` describes.
"""

from __future__ import annotations

from conformance.upstream.shared_defects import (
    CLEAR_WIPES_THE_FOLDER,
    FORMAT_BLIND,
    HANDOVER_PROPERTIES,
    KEYS_ARE_PATHS,
    MINIMUM_OVER_POOLS,
    MINIMUM_OVER_POOLS_GEOMETRIES,
    NAMES_COLLIDE,
    SLASH_IS_A_FOLDER,
    TRUNCATED_IS_A_HIT,
    UNCHECKED_INDICES,
)

ODIRECT_ODD_PAGES = (
    "under O_DIRECT a page whose size is not a multiple of 512 B (704-B Mamba and SWA pages, "
    "1536-B DSA indexer pages) fails to write, and the empty file left behind is a hit"
)
DIRECT_MODES = ("direct", "direct-uring")
DIRECT_ODD_PAGE_FALLOUT = [
    # the bad-input sandbox stores two entries in every pool of a model with 704-B Mamba pages
    "test_an_empty_batch_does_nothing",
    "test_an_unregistered_pool_is_refused",
    "test_indices_outside_the_pool_are_refused[*]",
    "test_keys_and_indices_of_different_lengths_are_refused",
    "test_keys_over_4_kib_are_stored_apart_or_refused",
    "test_keys_that_are_not_usable_strings_are_refused[*]",
    "test_path_traversal_keys_never_leave_the_store[*]",
    "test_a_read_only_store_refuses_writes_and_keeps_its_entries",
    "test_threads_storing_and_loading_disjoint_and_shared_keys_never_tear",
    *(
        f"{t}[{g}]"
        for g in (
            "adversarial",
            "deepseek_v32_dsa",
            "qwen3_next_hybrid",
            "deepseek_v4",
            "lfm2_conv",
            "glm5_next_mla_dsa_kda",
            "deepseek_v32_mtp",
        )
        for t in (
            "test_every_stored_page_of_every_pool_kind_is_found",
            "test_side_pool_pages_round_trip_byte_for_byte_through_v2",
            "test_a_restarted_backend_reads_back_what_it_stored",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists",
            "test_get_never_touches_host_memory_outside_its_target_slots",
            "test_overwriting_one_pool_never_changes_another_pool",
            "test_keys_that_spell_another_pools_suffix_stay_distinct",
            *HANDOVER_PROPERTIES,
        )
    ),
    "test_batch_exists_v2_follows_every_pools_hit_policy[deepseek_v32_dsa]",
    "test_batch_exists_v2_follows_every_pools_hit_policy[qwen3_next_hybrid]",
    "test_random_operation_sequences_agree_with_a_dictionary_model",
    # the MLA writer stores every replicated pool: 1536-B DSA indexer and DeepSeek-V4 SWA pages
    "test_every_tp_rank_reads_the_replicated_entries_its_writer_stored[deepseek_v32_dsa]",
    "test_every_tp_rank_reads_the_replicated_entries_its_writer_stored[deepseek_v4]",
    # the 528-B DSA indexer pages of the combinations issue 29 added (GLM-5-Next, V3.2 with MTP)
    *(
        f"{t}[{g}]"
        for g in ("glm5_next_mla_dsa_kda", "deepseek_v32_mtp")
        for t in (
            "test_batch_exists_v2_follows_every_pools_hit_policy",
            "test_every_tp_rank_reads_the_replicated_entries_its_writer_stored",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle",
        )
    ),
    "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call[glm5_next_mla_dsa_kda]",
    "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call[glm5_next_mla_dsa_kda]",
]

COMPONENTS_MISCOUNTED = (
    "set writes one object per region get_page_buffer_meta gives a page, exists looks for as many "
    "as the pool name suggests (K and V, or temporal plus conv): a zero-copy side pool whose "
    "regions differ (SWA, draft and DeepSeek-V4 pools in layer_first, conv-only Mamba with no "
    "temporal state) is stored and never found, so the usable prefix is 0"
)
META_REFUSAL_RAISES = (
    "every side pool with get_page_buffer_meta is taken as zero-copy: SGLang's own DSA indexer "
    "pool in layer_first refuses meta (ValueError), and batch_set_v2 raises it to the caller"
)

STAGE_AND_CP_BLIND = (
    "object names carry neither the pipeline stage nor the attention-CP rank (HiCacheFile's do): "
    "the stages, or the CP ranks, of one deployment write one file per page and the last write wins"
)

ONE_FLAG_A_BATCH = (
    "a pool's v2 batch is one NIXL transfer and every key takes its one success flag "
    "(_batch_xfer: [success] * len): a key a pool holds reads back False when another key of the "
    "same batch_get_v2 is missing from that pool"
)
BOUNCE_BUFFERS = (
    "a staged side pool moves through 128-page bounce buffers: a v2 batch of more pages is refused "
    "whole (every flag False), though the controller hands side pools over whole"
)
TRUTHY_STRINGS = (
    'use_direct_io is read with bool(): the JSON string "false" turns O_DIRECT on, and "maybe" is accepted'
)
POLICY_AS_ZERO = (
    "a hit policy it does not implement (BLOCK_GROUPS, or an unknown value) silently makes the hit 0"
)
TRAFFIC_DIRECT_FALLOUT = [
    # the 704-B and 4096+512-B side pages fail to write under O_DIRECT (see ODIRECT_ODD_PAGES)
    *(
        f"{t}[{g}]"
        for t in (
            "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call",
            "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call",
        )
        for g in (
            "deepseek_v32_dsa",
            "deepseek_v4",
            "lfm2_conv",
            "mimo_v2_swa_mtp",
            "nemotron_h_mamba2",
            "qwen3_next_hybrid",
        )
    ),
    *(
        f"test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[{g}]"
        for g in ("adversarial", "deepseek_v32_dsa", "deepseek_v4", "qwen3_next_hybrid")
    ),
    "test_the_newest_version_wins_across_any_number_of_restarts",
    "test_entries_another_process_writes_are_seen_without_a_restart",
    "test_entries_another_process_clears_are_gone_without_a_restart",
    "test_thousands_of_entries_another_process_writes_are_all_seen_without_a_restart",
]

SGLANG_NIXL_DEFECTS: dict[str, str] = {
    "test_clear_in_one_deployment_never_removes_another_deployments_entries[*]": CLEAR_WIPES_THE_FOLDER,
    "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call[adversarial]": BOUNCE_BUFFERS,
    "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call[adversarial]": BOUNCE_BUFFERS,
    "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[lfm2_conv]": COMPONENTS_MISCOUNTED,
    "test_every_spelling_of_an_io_mode_behaves_exactly_as_that_mode": TRUTHY_STRINGS,
    "test_a_config_the_backend_cannot_honour_is_refused_at_construction": TRUTHY_STRINGS,
    "test_a_hit_policy_the_backend_does_not_declare_is_refused_never_answered_zero": POLICY_AS_ZERO,
    "test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one[kv_dtype]": FORMAT_BLIND,
    "test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one[page_size]": FORMAT_BLIND,
    **{f"{t}@{mode}": ODIRECT_ODD_PAGES for t in TRAFFIC_DIRECT_FALLOUT for mode in DIRECT_MODES},
    "test_random_operation_sequences_agree_with_a_dictionary_model@buffered": (
        "the machine's ranks are drawn deployments with pipeline stages and CP ranks, which HiCacheNixl's "
        "names leave out: one rank's set overwrites, and its exists counts, another rank's entries"
    ),
    "test_indices_off_a_page_boundary_are_refused": UNCHECKED_INDICES,
    "test_index_tensors_of_the_wrong_dtype_are_refused[torch.float32]": (
        "float indices reach NIXL's bindings and fail there with a pybind11 cast error"
    ),
    "test_index_tensors_of_the_wrong_dtype_are_refused[torch.bool]": UNCHECKED_INDICES,
    "test_index_tensors_of_the_wrong_dtype_are_refused[torch.uint8]": UNCHECKED_INDICES,
    "test_duplicate_keys_in_one_batch_are_refused": "a repeated key is written twice and reported True twice",
    "test_keys_that_are_not_usable_strings_are_refused[empty]": "the empty key is stored as a page",
    "test_keys_that_are_not_usable_strings_are_refused[NUL]": (
        "a key with a NUL byte reaches the NIXL path-mode open and is reported stored"
    ),
    "test_path_traversal_keys_never_leave_the_store[../../x]": KEYS_ARE_PATHS,
    "test_an_absolute_path_key_never_leaves_the_store": KEYS_ARE_PATHS,
    "test_every_stride_and_base_alignment_round_trips_in_every_io_mode[aligned-base-unaligned]": (
        ODIRECT_ODD_PAGES
    ),
    "test_every_stride_and_base_alignment_round_trips_in_every_io_mode[misaligned-base-unaligned]": (
        ODIRECT_ODD_PAGES
    ),
    "test_a_truncated_object_is_neither_present_nor_readable[*]": TRUNCATED_IS_A_HIT,
    "test_a_damaged_record_in_a_batch_of_any_size_is_never_served_and_its_neighbours_are_exact": (
        TRUNCATED_IS_A_HIT + ": a batch's exists counts a page cut short inside it"
    ),
    "test_keys_that_differ_only_in_what_a_backend_may_normalize_stay_distinct": SLASH_IS_A_FOLDER,
    "test_a_file_size_limit_fails_writes_cleanly[1B]": (
        "a write that fails leaves an empty file, which exists counts: a torn entry is a hit"
    ),
    "test_every_config_pool_and_key_has_its_own_stored_object[*]": NAMES_COLLIDE,
    **{
        f"test_batch_exists_v2_follows_every_pools_hit_policy[{g}]": MINIMUM_OVER_POOLS
        for g in MINIMUM_OVER_POOLS_GEOMETRIES
    },
    **{
        f"test_every_stored_page_of_every_pool_kind_is_found[{g}]@buffered": COMPONENTS_MISCOUNTED
        for g in ("deepseek_v4", "lfm2_conv", "mimo_v2_swa_mtp")
    },
    # the DSA indexer's refusal, seen by the round trip and by properties that guard something
    # else, in every geometry with a DSA indexer: V3.2, and the combinations issue 29 added (beside
    # KDA state, and beside an MTP draft)
    **{
        f"{t}[{g}]@buffered": META_REFUSAL_RAISES
        for g in ("deepseek_v32_dsa", "glm5_next_mla_dsa_kda", "deepseek_v32_mtp")
        for t in (
            "test_side_pool_pages_round_trip_byte_for_byte_through_v2",
            "test_every_stored_page_of_every_pool_kind_is_found",
            "test_overwriting_one_pool_never_changes_another_pool",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists",
            "test_get_never_touches_host_memory_outside_its_target_slots",
            "test_a_store_has_read_every_page_it_stores_when_it_returns",
            "test_a_load_writes_no_host_page_once_it_returns",
            "test_a_store_puts_no_host_byte_it_was_not_handed_into_its_files",
        )
    },
    "test_every_stored_page_of_every_pool_kind_is_found[inkling_swa_mamba]@buffered": COMPONENTS_MISCOUNTED,
    "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call[deepseek_v32_mtp]": BOUNCE_BUFFERS,
    "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call[deepseek_v32_mtp]": BOUNCE_BUFFERS,
    # under O_DIRECT their Mamba pools (every region 512-B aligned) are staged, through the bounce buffers
    **{
        f"{t}[{g}]@{mode}": BOUNCE_BUFFERS
        for t in (
            "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call",
            "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call",
        )
        for g in ("kimi_linear_mla_kda", "ring_2_5_mla_lightning", "inkling_swa_mamba", "qwen3_next_mtp")
        for mode in DIRECT_MODES
    },
    "test_one_multi_pool_call_answers_for_every_pool_and_key_on_its_own": ONE_FLAG_A_BATCH,
    "test_every_rank_of_a_pool_combination_reads_exactly_the_entries_it_shares": STAGE_AND_CP_BLIND,
    "test_batch_exists_v2_follows_every_pools_hit_policy[lfm2_conv]": COMPONENTS_MISCOUNTED,
    "test_a_restarted_backend_reads_back_what_it_stored[lfm2_conv]@buffered": COMPONENTS_MISCOUNTED,
    "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[*]": STAGE_AND_CP_BLIND,
    "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[*]": STAGE_AND_CP_BLIND,
    **{f"{t}@{mode}": ODIRECT_ODD_PAGES for t in DIRECT_ODD_PAGE_FALLOUT for mode in DIRECT_MODES},
}

SGLANG_NIXL_INTERMITTENT: dict[str, str] = {
    "test_a_writer_killed_mid_batch_leaves_every_key_whole_or_absent[*]": (
        "writes go in place (O_CREAT without truncation or rename): a kill inside a write leaves "
        "a torn entry that reads back as stored"
    ),
}
