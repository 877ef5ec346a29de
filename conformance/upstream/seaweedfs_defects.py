"""What SGLang 0.5.23's SeaweedFSStore fails, property by property (its adapter: ``seaweedfs.py``).

Data only: test id -> the defect, in the form :mod:`conformance.upstream.shared_defects` describes.
"""

from __future__ import annotations

from conformance.upstream.shared_defects import (
    FORMAT_BLIND,
    HANDOVER_PROPERTIES,
    MINIMUM_OVER_POOLS,
    UNCHECKED_INDICES,
)

SEAWEEDFS_ANCHOR = (
    "DeepSeek-V4's KV pool is a LogicalHostPool whose get_page_buffer_meta() is None: batch_set_v1 "
    "raises TypeError and stores nothing, so batch_exists (which gates every side pool) never finds a "
    "DeepSeek-V4 page"
)
SEAWEEDFS_NAMES = (
    "object names are not injective: '/' in a model name becomes '-' (org/m and org-m are one "
    "deployment), and a key that spells another pool's suffix ('<key>.<pool>') names that pool's entry"
)
SGLANG_SEAWEEDFS_DEFECTS: dict[str, str] = {
    "test_indices_outside_the_pool_are_refused[*]": UNCHECKED_INDICES,
    "test_indices_off_a_page_boundary_are_refused": UNCHECKED_INDICES,
    "test_index_tensors_of_the_wrong_dtype_are_refused[torch.bool]": UNCHECKED_INDICES,
    "test_index_tensors_of_the_wrong_dtype_are_refused[torch.uint8]": UNCHECKED_INDICES,
    "test_index_tensors_of_the_wrong_dtype_are_refused[torch.float32]": (
        "float indices become buffer addresses unchecked: ctypes raises ArgumentError deep in the "
        "backend instead of a refusal"
    ),
    "test_keys_and_indices_of_different_lengths_are_refused": (
        "keys and pages are zipped: a batch with fewer pages than keys stores what pairs up and "
        "answers one flag, never refusing the request"
    ),
    "test_duplicate_keys_in_one_batch_are_refused": "a repeated key is stored twice and reported True twice",
    "test_an_empty_batch_does_nothing": "an empty v1 batch divides by zero pages (ZeroDivisionError)",
    "test_keys_that_differ_only_in_what_a_backend_may_normalize_stay_distinct": (
        "clear() raises botocore's ClientError once a stored key holds a control character XML 1.0 "
        "cannot carry (a trailing form feed): its DeleteObjects request lists keys unencoded"
    ),
    **dict.fromkeys(
        [
            f"test_keys_that_are_not_usable_strings_are_refused[{k}]"
            for k in ("None", "int", "bytes", "empty")
        ],
        "keys are formatted into object names unchecked: None, 7, b'bytes' and '' are all stored and "
        "reported True",
    ),
    "test_a_truncated_object_in_a_bucket_is_neither_present_nor_readable[*]": (
        "batch_exists HEADs each object and counts any object of the name: one cut short (empty, "
        "halved, a byte short) is a hit though get answers False for it (finding 25)"
    ),
    "test_keys_that_are_not_usable_strings_are_refused[NUL]@moto": (
        "a key with NUL goes into the object name unchecked, and moto stores it (Ceph's gateway "
        "refuses the name with 400, so on rgw the store answers False)"
    ),
    "test_clear_in_one_deployment_never_removes_another_deployments_entries[slash-or-dash]": SEAWEEDFS_NAMES,
    "test_every_config_pool_and_key_has_its_own_stored_object[*]": SEAWEEDFS_NAMES,
    **dict.fromkeys(
        [
            f"test_keys_that_spell_another_pools_suffix_stay_distinct[{g}]"
            for g in (
                "adversarial",
                "deepseek_v32_dsa",
                "lfm2_conv",
                "mimo_v2_swa_mtp",
                "nemotron_h_mamba2",
                "qwen3_next_hybrid",
                "deepseek_v32_mtp",
                "glm5_next_mla_dsa_kda",
                "inkling_swa_mamba",
                "qwen3_next_mtp",
            )
        ],
        SEAWEEDFS_NAMES,
    ),
    "test_random_operation_sequences_agree_with_a_dictionary_model": (
        "traffic in the controller's order meets the usable prefix taken as the minimum of the "
        "pools' figures (kv_hit_pages 1 != 0); shrunk runs also show batch_exists and single-pool "
        "gets across ranks disagreeing with the model (not yet diagnosed apart)"
    ),
    "test_a_hit_policy_the_backend_does_not_declare_is_refused_never_answered_zero": (
        "every policy other than ALL_PAGES is folded as TRAILING_PAGES: BLOCK_GROUPS and unknown "
        "policies get an answer"
    ),
    **{
        f"test_batch_exists_v2_follows_every_pools_hit_policy[{g}]": MINIMUM_OVER_POOLS
        for g in ("adversarial", "mimo_v2_swa_mtp", "glm5_next_mla_dsa_kda", "inkling_swa_mamba")
    },
    "test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one[kv_dtype]": FORMAT_BLIND,
    "test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one[page_size]": FORMAT_BLIND,
    **dict.fromkeys(
        [
            "test_kv_pages_round_trip_byte_for_byte_through_v1[deepseek_v4]",
            "test_batch_exists_counts_the_leading_run_of_present_keys[deepseek_v4]",
            "test_batch_exists_v2_follows_every_pools_hit_policy[deepseek_v4]",
            "test_exists_over_spans_of_hundreds_of_pages_matches_the_oracle[deepseek_v4]",
            "test_a_restarted_backend_reads_back_what_it_stored[deepseek_v4]",
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[deepseek_v4]",
            "test_entries_in_one_pool_are_invisible_to_another_pools_exists[deepseek_v4]",
            "test_get_never_touches_host_memory_outside_its_target_slots[deepseek_v4]",
            "test_overwriting_one_pool_never_changes_another_pool[deepseek_v4]",
            "test_every_stored_page_of_every_pool_kind_is_found[deepseek_v4]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[deepseek_v4]",
            "test_every_tp_rank_reads_the_replicated_entries_its_writer_stored[deepseek_v4]",
            "test_keys_that_spell_another_pools_suffix_stay_distinct[deepseek_v4]",
            "test_one_multi_pool_call_answers_for_every_pool_and_key_on_its_own",
            *(f"{prop}[deepseek_v4]" for prop in HANDOVER_PROPERTIES),
        ],
        SEAWEEDFS_ANCHOR,
    ),
}
"""SGLang's SeaweedFSStore against S3 on loopback (finding 19)."""
