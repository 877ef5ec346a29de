"""The suite fails broken backends, and names the property each one breaks.

Each backend in ``tests/broken`` carries one defect. Running the suite's matching family against
it must fail, name the broken property in the report, print hypothesis's minimal example, and
name the backend. A property that no broken backend can fail would be a test that cannot fail.
"""

from __future__ import annotations

import pytest

BROKEN = [
    (
        "dtype_staging",
        "test_dtype_byte_exactness",
        "test_side_pool_pages_round_trip_byte_for_byte_through_v2",
    ),
    ("dtype_staging", "test_dtype_byte_exactness", "test_kv_pages_round_trip_byte_for_byte_through_v1"),
    ("pool_blind_names", "test_pool_isolation", "test_overwriting_one_pool_never_changes_another_pool"),
    (
        "pool_blind_names",
        "test_pool_isolation",
        "test_entries_in_one_pool_are_invisible_to_another_pools_exists",
    ),
    ("scribbling_get", "test_pool_isolation", "test_get_never_touches_host_memory_outside_its_target_slots"),
    (
        "neighbour_reading_store",
        "test_pool_isolation",
        "test_a_store_puts_no_host_byte_it_was_not_handed_into_its_files",
    ),
    (
        "glued_names",
        "test_sidecar_key_uniqueness",
        "test_every_config_pool_and_key_has_its_own_stored_object",
    ),
    ("glued_names", "test_sidecar_key_uniqueness", "test_keys_that_spell_another_pools_suffix_stay_distinct"),
    (
        "rank_blind_names",
        "test_sidecar_key_uniqueness",
        "test_every_config_pool_and_key_has_its_own_stored_object",
    ),
    (
        "partial_exists",
        "test_exists_hit_policies",
        "test_batch_exists_counts_the_leading_run_of_present_keys",
    ),
    ("per_pool_minimum", "test_exists_hit_policies", "test_batch_exists_v2_follows_every_pools_hit_policy"),
    (
        "unaligned_zero_copy",
        "test_alignment_fallback",
        "test_aligned_pools_move_in_place_and_misaligned_pools_are_staged_under_o_direct",
    ),
    (
        "unaligned_zero_copy",
        "test_alignment_fallback",
        "test_every_stride_and_base_alignment_round_trips_in_every_io_mode",
    ),
    ("no_validation", "test_bad_input", "test_keys_and_indices_of_different_lengths_are_refused"),
    ("no_validation", "test_bad_input", "test_duplicate_keys_in_one_batch_are_refused"),
    ("no_validation", "test_bad_input", "test_indices_outside_the_pool_are_refused"),
    ("whole_call_refusal", "test_bad_input", "test_a_malformed_pool_in_a_v2_call_is_refused_alone"),
    (
        "clear_keeps_side_pools",
        "test_stateful_model",
        "test_random_operation_sequences_agree_with_a_dictionary_model",
    ),
    ("forgetful", "test_persistence", "test_a_restarted_backend_reads_back_what_it_stored"),
    ("held_segments", "test_lifecycle", "test_entries_another_process_clears_are_gone_without_a_restart"),
    (
        "racy_staging",
        "test_concurrency",
        "test_threads_storing_and_loading_disjoint_and_shared_keys_never_tear",
    ),
    ("size_blind_exists", "test_crash_and_faults", "test_a_truncated_object_is_neither_present_nor_readable"),
    (
        "in_place_writes",
        "test_crash_and_faults",
        "test_a_writer_killed_mid_batch_leaves_every_key_whole_or_absent",
    ),
    *(
        (broken, family, prop)
        for broken in ("pp_blind_names", "cp_blind_names", "dcp_blind_names", "physical_page_indices")
        for family, prop in (
            ("test_sidecar_key_uniqueness", "test_every_shard_a_deployment_keeps_apart_has_its_own_entry"),
            ("test_pool_isolation", "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share"),
        )
    ),
    (
        "rank_blind_names",
        "test_pool_isolation",
        "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share",
    ),
    (
        "mla_per_rank_names",
        "test_sidecar_key_uniqueness",
        "test_every_tp_rank_reads_the_replicated_entries_its_writer_stored",
    ),
    # issue 13, pool kinds: layer_first side pools (SWA, draft, DSA indexer) and DeepSeek-V4's KV anchor
    (
        "page_first_side_pools",
        "test_dtype_byte_exactness",
        "test_side_pool_pages_round_trip_byte_for_byte_through_v2",
    ),
    ("anchorless_kv", "test_dtype_byte_exactness", "test_kv_pages_round_trip_byte_for_byte_through_v1"),
    (
        "bounded_side_batches",
        "test_large_batches",
        "test_side_pool_batches_over_128_pages_round_trip_in_one_v2_call",
    ),
    ("capped_exists", "test_large_batches", "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle"),
    (
        "bounded_transfer_queue",
        "test_large_batches",
        "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call",
    ),
    (
        "truthy_strings",
        "test_config_spellings",
        "test_every_spelling_of_an_io_mode_behaves_exactly_as_that_mode",
    ),
    (
        "lenient_config",
        "test_config_spellings",
        "test_a_config_the_backend_cannot_honour_is_refused_at_construction",
    ),
    (
        "silent_policies",
        "test_exists_hit_policies",
        "test_a_hit_policy_the_backend_does_not_declare_is_refused_never_answered_zero",
    ),
    (
        "no_restorable_set",
        "test_exists_hit_policies",
        "test_a_trailing_pool_query_fills_the_restorable_prefix_set",
    ),
    (
        "format_blind",
        "test_lifecycle",
        "test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one",
    ),
    ("oldest_version_wins", "test_lifecycle", "test_the_newest_version_wins_across_any_number_of_restarts"),
    ("stale_index", "test_lifecycle", "test_entries_another_process_writes_are_seen_without_a_restart"),
    # issue 16, the legacy generic calls SGLang's controller drives file and AIBrix through
    (
        "aliased_generic_pages",
        "test_generic_interface",
        "test_kv_pages_round_trip_byte_for_byte_through_the_generic_calls",
    ),
    (
        "counting_generic_exists",
        "test_generic_interface",
        "test_generic_exists_counts_the_leading_run_and_exists_answers_each_key",
    ),
    (
        "rank_blind_generic_names",
        "test_generic_interface",
        "test_generic_entries_of_shards_a_deployment_keeps_apart_stay_apart",
    ),
    (
        "sanitised_generic_names",
        "test_generic_interface",
        "test_generic_keys_that_look_alike_keep_their_own_pages",
    ),
    (
        "zipping_generic_set",
        "test_generic_interface",
        "test_generic_calls_refuse_keys_and_pages_of_different_lengths",
    ),
    (
        "raising_generic_get",
        "test_generic_interface",
        "test_generic_get_answers_none_for_missing_keys_and_fills_the_rest",
    ),
    # issue 18, a bounded L3
    (
        "payload_budget",
        "test_capacity_and_eviction",
        "test_stored_bytes_stay_within_the_budget_under_a_stream_of_fresh_writes",
    ),
    (
        "per_process_budget",
        "test_capacity_and_eviction",
        "test_two_processes_writing_at_once_stay_within_one_budget",
    ),
    (
        "partial_family_eviction",
        "test_capacity_and_eviction",
        "test_eviction_takes_whole_entries_and_leaves_exists_and_get_agreeing",
    ),
    (
        "unpinned_exists",
        "test_capacity_and_eviction",
        "test_an_entry_exists_reported_stays_readable_for_the_pin_length",
    ),
    ("recycled_segments", "test_capacity_and_eviction", "test_gets_racing_eviction_are_whole_or_false"),
    (
        "recycled_segments",
        "test_capacity_and_eviction",
        "test_exists_then_eviction_then_get_is_false_or_the_stored_bytes",
    ),
    (
        "folder_wide_tenancy",
        "test_capacity_and_eviction",
        "test_clear_in_one_deployment_never_removes_another_deployments_entries",
    ),
    (
        "folder_wide_tenancy",
        "test_capacity_and_eviction",
        "test_eviction_in_one_deployment_never_removes_another_deployments_entries",
    ),
    (
        "whole_number_sizes",
        "test_capacity_and_eviction",
        "test_a_budget_spelled_with_a_unit_bounds_the_same_bytes",
    ),
    (
        "folder_charged_budget",
        "test_capacity_and_eviction",
        "test_a_deployment_keeps_a_share_of_its_budget_whatever_another_deployment_keeps_in_the_folder",
    ),
    (
        "orphaned_segments",
        "test_capacity_and_eviction",
        "test_what_killed_writers_left_is_evicted_like_any_other_entry",
    ),
    (
        "age_only_eviction",
        "test_capacity_and_eviction",
        "test_entries_read_between_every_two_writes_are_never_evicted",
    ),
    (
        "pinned_segments",
        "test_capacity_and_eviction",
        "test_a_pinned_entry_holds_only_its_own_bytes_against_the_budget",
    ),
    (
        "unreleased_segments",
        "test_capacity_and_eviction",
        "test_stored_bytes_stay_within_the_budget_under_a_stream_of_fresh_writes",
    ),
    (
        "headed_objects",
        "test_crash_and_faults",
        "test_a_truncated_object_in_a_bucket_is_neither_present_nor_readable",
    ),
    (
        "unreclaimed_overwrites",
        "test_capacity_and_eviction",
        "test_overwrites_never_cost_an_entry_while_the_live_ones_fill_a_quarter_of_the_budget",
    ),
    (
        "fixed_size_index",
        "test_large_batches",
        "test_an_instance_holding_thousands_of_entries_finds_and_reads_every_one",
    ),
    (
        "fixed_size_index",
        "test_lifecycle",
        "test_thousands_of_entries_another_process_writes_are_all_seen_without_a_restart",
    ),
    # issue 32, a full store never locks up
    (
        "compaction_without_headroom",
        "test_capacity_and_eviction",
        "test_a_full_store_keeps_accepting_writes_that_fit_once_unpinned_entries_go",
    ),
    # what the controller hands over: sliced index tensors, and nothing handed may change
    (
        "offset_blind_indices",
        "test_controller_handover",
        "test_batches_sliced_from_one_operation_store_and_load_each_pages_own_bytes",
    ),
    (
        "consuming_indices",
        "test_controller_handover",
        "test_a_call_leaves_the_keys_indices_and_prefix_keys_it_was_handed_as_they_were",
    ),
    (
        "prefix_appending",
        "test_controller_handover",
        "test_a_call_leaves_the_keys_indices_and_prefix_keys_it_was_handed_as_they_were",
    ),
    (
        "write_behind",
        "test_controller_handover",
        "test_a_store_has_read_every_page_it_stores_when_it_returns",
    ),
    ("abandoned_reads", "test_controller_handover", "test_a_load_writes_no_host_page_once_it_returns"),
    # issue 29: faults on every read path, keys kept exactly, leases checked both ways
    (
        "unverified_chunks",
        "test_crash_and_faults",
        "test_a_damaged_record_in_a_batch_of_any_size_is_never_served_and_its_neighbours_are_exact",
    ),
    *(
        (
            broken,
            "test_sidecar_key_uniqueness",
            "test_keys_that_differ_only_in_what_a_backend_may_normalize_stay_distinct",
        )
        for broken in (
            "case_folded_names",
            "nfc_names",
            "stripped_names",
            "hex_parsed_names",
            "unified_separator_names",
        )
    ),
    (
        "everlasting_pins",
        "test_capacity_and_eviction",
        "test_a_store_full_of_pinned_entries_takes_writes_again_once_the_pins_lapse",
    ),
    (
        "early_lapsing_pins",
        "test_capacity_and_eviction",
        "test_an_entry_exists_reported_stays_readable_to_the_last_moment_of_its_lease",
    ),
    # issue 29: pool combinations a model really ships, and results attributed per pool
    (
        "kv_kind_sharing",
        "test_pool_combinations",
        "test_every_rank_of_a_pool_combination_reads_exactly_the_entries_it_shares",
    ),
    (
        "kv_kind_sharing",
        "test_sidecar_key_uniqueness",
        "test_every_shard_a_deployment_keeps_apart_has_its_own_entry",
    ),
    (
        "key_only_results",
        "test_pool_combinations",
        "test_one_multi_pool_call_answers_for_every_pool_and_key_on_its_own",
    ),
]

# Properties checked over a fixed table rather than drawn by hypothesis: no example to shrink.
DETERMINISTIC = {
    "test_aligned_pools_move_in_place_and_misaligned_pools_are_staged_under_o_direct",
    "test_keys_and_indices_of_different_lengths_are_refused",
    "test_duplicate_keys_in_one_batch_are_refused",
    "test_indices_outside_the_pool_are_refused",
    "test_a_malformed_pool_in_a_v2_call_is_refused_alone",
    "test_threads_storing_and_loading_disjoint_and_shared_keys_never_tear",
    "test_a_truncated_object_is_neither_present_nor_readable",
    "test_a_truncated_object_in_a_bucket_is_neither_present_nor_readable",
    "test_a_writer_killed_mid_batch_leaves_every_key_whole_or_absent",
    "test_every_spelling_of_an_io_mode_behaves_exactly_as_that_mode",
    "test_a_config_the_backend_cannot_honour_is_refused_at_construction",
    "test_a_hit_policy_the_backend_does_not_declare_is_refused_never_answered_zero",
    "test_generic_calls_refuse_keys_and_pages_of_different_lengths",
    "test_a_long_contexts_side_pool_span_round_trips_in_one_v2_call",
}


WHY = {"partial_family_eviction": "E *' partly evicted: readable only at *"}
"""The failure these must show, not just any failure of their property: this one was caught by
exists missing everything (its exists named keys unlike its gets), not by its defect, until
2026-12-07."""


@pytest.mark.parametrize(
    ("broken", "family", "prop"), BROKEN, ids=[f"{b}-{p.removeprefix('test_')}" for b, _, p in BROKEN]
)
def test_a_backend_with_one_defect_fails_the_property_that_guards_it(
    pytester: pytest.Pytester, broken: str, family: str, prop: str
) -> None:
    """``pytest --backend=<broken>`` exits non-zero and reports the right property."""
    result = pytester.runpytest(
        f"--backend=tests.broken.{broken}:SPEC",
        "-k",
        f"{family} and {prop}",
        "-p",
        "no:cacheprovider",
        "--hypothesis-seed=0",
        "-x",  # one failing parameter set is the proof; shrinking the others only costs time
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1
    result.stdout.fnmatch_lines([f"FAILED *{family}.py::{prop}*"])
    if prop not in DETERMINISTIC:
        # hypothesis says "Falsifying example" before 6.16x, "Failing test case" after
        result.stdout.re_match_lines([r".*(Falsifying|Failing) (example|explicit example|test case).*"])
    result.stdout.fnmatch_lines(["*backend: broken-*"])
    result.stdout.fnmatch_lines([f"*property: *{prop}*"])
    if broken in WHY:
        result.stdout.fnmatch_lines([WHY[broken]])


@pytest.mark.slow
def test_the_memory_backend_passes_the_whole_suite(pytester: pytest.Pytester) -> None:
    """The model backend certifies clean, and the run lists every undeclared skip."""
    result = pytester.runpytest("--backend=memory", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert result.ret == pytest.ExitCode.OK
    assert outcomes.get("failed", 0) == 0 and outcomes["passed"] > 0
    skips = [line for line in result.stdout.lines if line.strip().startswith("SKIP ")]
    assert len(skips) == outcomes.get("skipped", 0)
    assert all("does not declare" in line or "declares no" in line for line in skips)
    result.stdout.fnmatch_lines(["*hicache-conformance: memory*", f"*skipped properties ({len(skips)})*"])


def test_the_suite_runs_spread_over_processes(pytester: pytest.Pytester) -> None:
    """``-n 2`` (pytest-xdist) runs the same suite on workers."""
    result = pytester.runpytest_subprocess(
        "--backend=memory", "-n", "2", "-p", "no:cacheprovider", "-k", "leading_run or pools_hit_policy"
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*passed*"])


def test_an_unknown_backend_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--backend=no-such-backend")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown backend 'no-such-backend'*"])
