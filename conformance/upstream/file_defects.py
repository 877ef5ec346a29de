"""What SGLang 0.5.23's HiCacheFile fails, property by property (its adapter: ``adapters.py``).

Data only: test id -> the defect, in the form :mod:`conformance.upstream.shared_defects` describes.
"""

from __future__ import annotations

from conformance.upstream.shared_defects import (
    CLEAR_WIPES_THE_FOLDER,
    FORMAT_BLIND,
    KEYS_ARE_PATHS,
    NAMES_COLLIDE,
    SLASH_IS_A_FOLDER,
    TRUNCATED_IS_A_HIT,
    UNCHECKED_INDICES,
)

PER_FILE_LRU = (
    "max_size's LRU evicts file by file: a page's KV goes while its Mamba state stays (or the other "
    "way), and each rank evicts on its own, so one key is left readable in some pools and ranks"
)
PER_INSTANCE_BUDGET = (
    "max_size bounds what one instance wrote or found at start: two processes of one rank sharing "
    "a folder each keep max_size, and neither evicts the other's files"
)
OWNERSHIP_BY_SUFFIX = (
    "an instance starting on a shared folder adopts into its LRU every file whose name ends with "
    "its own suffix: model 'm' evicts model 'org_m''s files, and 'org/m' and 'org-m' (both "
    "spelt 'org-m') each other's"
)
V2_PHYSICAL_PAGES = (
    "batch_set_v2/batch_get_v2 count a page in the host pool's physical page_size; under decode "
    "context parallelism SGLang's widened MLA pool spans logical_page_size slots a page, so every KV "
    "request through v2 is refused (SGLang's controller drives HiCacheFile's KV through the legacy "
    "calls, which pass)"
)
SGLANG_FILE_DEFECTS: dict[str, str] = {
    **dict.fromkeys(
        [
            "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share[deepseek_v3_mla]",
            "test_every_shard_a_deployment_keeps_apart_has_its_own_entry[deepseek_v3_mla]",
            "test_every_tp_rank_reads_the_replicated_entries_its_writer_stored[deepseek_v3_mla]",
            # MLA KV beside Mamba-family state runs under DCP too (Kimi-Linear, Ring-2.5)
            *(
                f"{prop}[{family}]"
                for family in ("kimi_linear_mla_kda", "ring_2_5_mla_lightning")
                for prop in (
                    "test_a_rank_never_sees_the_entries_of_a_shard_it_does_not_share",
                    "test_every_shard_a_deployment_keeps_apart_has_its_own_entry",
                    "test_every_tp_rank_reads_the_replicated_entries_its_writer_stored",
                    "test_overwriting_one_pool_never_changes_another_pool",
                    "test_entries_in_one_pool_are_invisible_to_another_pools_exists",
                )
            ),
        ],
        V2_PHYSICAL_PAGES,
    ),
    "test_clear_in_one_deployment_never_removes_another_deployments_entries[*]": CLEAR_WIPES_THE_FOLDER,
    "test_eviction_takes_whole_entries_and_leaves_exists_and_get_agreeing": PER_FILE_LRU,
    "test_two_processes_writing_at_once_stay_within_one_budget": PER_INSTANCE_BUDGET,
    "test_eviction_in_one_deployment_never_removes_another_deployments_entries[slash-or-dash]": (
        OWNERSHIP_BY_SUFFIX
    ),
    "test_eviction_in_one_deployment_never_removes_another_deployments_entries[suffix]": OWNERSHIP_BY_SUFFIX,
    "test_indices_outside_the_pool_are_refused[*]": UNCHECKED_INDICES,
    "test_indices_off_a_page_boundary_are_refused": UNCHECKED_INDICES,
    "test_index_tensors_of_the_wrong_dtype_are_refused[torch.bool]": UNCHECKED_INDICES,
    "test_index_tensors_of_the_wrong_dtype_are_refused[torch.uint8]": UNCHECKED_INDICES,
    "test_duplicate_keys_in_one_batch_are_refused": "a repeated key is stored once and reported True twice",
    **dict.fromkeys(
        [f"test_keys_that_are_not_usable_strings_are_refused[{k}]" for k in ("None", "int", "bytes")],
        "a key that is not a str raises AttributeError from key.endswith, deep in the backend",
    ),
    "test_keys_that_are_not_usable_strings_are_refused[empty]": "the empty key is stored as a page",
    # the legacy generic calls, HiCacheFile's real KV path
    "test_generic_keys_that_look_alike_keep_their_own_pages": (
        KEYS_ARE_PATHS + "; a key with '/' names a folder that does not exist, and the batch fails"
    ),
    "test_generic_calls_refuse_keys_and_pages_of_different_lengths": (
        "batch_set zips keys with pages: a batch with a page missing stores the keys that have one "
        "and returns True"
    ),
    "test_path_traversal_keys_never_leave_the_store[../x]": KEYS_ARE_PATHS,
    "test_path_traversal_keys_never_leave_the_store[../../x]": KEYS_ARE_PATHS,
    "test_an_absolute_path_key_never_leaves_the_store": KEYS_ARE_PATHS,
    "test_a_truncated_object_is_neither_present_nor_readable[*]": (
        TRUNCATED_IS_A_HIT + "; get raises OSError('Short read') instead of missing"
    ),
    "test_a_damaged_record_in_a_batch_of_any_size_is_never_served_and_its_neighbours_are_exact": (
        TRUNCATED_IS_A_HIT + ": a batch's exists counts a page cut short inside it"
    ),
    "test_keys_that_differ_only_in_what_a_backend_may_normalize_stay_distinct": SLASH_IS_A_FOLDER,
    "test_a_file_size_limit_fails_writes_cleanly[1B]": (
        "numpy's tofile ignores the error when stdio flushes its last buffer at close: on a full "
        "disk a short file is renamed into place and reported stored"
    ),
    "test_a_file_size_limit_fails_writes_cleanly[4KiB]": (
        "numpy's tofile ignores the error when stdio flushes its last buffer at close: on a full "
        "disk a short file is renamed into place and reported stored"
    ),
    "test_every_config_pool_and_key_has_its_own_stored_object[*]": NAMES_COLLIDE,
    "test_keys_that_spell_another_pools_suffix_stay_distinct[*]": NAMES_COLLIDE,
    "test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one[kv_dtype]": FORMAT_BLIND,
    "test_a_restart_in_another_format_never_serves_old_entries_as_the_new_one[page_size]": FORMAT_BLIND,
}
