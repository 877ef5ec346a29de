"""What SGLang 0.5.23's own backends fail, property by property: the defects several backends share.

Each backend's own list is data beside its adapter (``<backend>_defects.py``: ``file``, ``nixl``,
``sim``, ``hf3fs``, ``seaweedfs``, ``mooncake``, ``aibrix``); a reason two of them share is stated
once, here. Each key is a test id (the part after the module path), where a trailing ``[*]``
stands for every parameter set, ``@mode`` limits it to one I/O mode and ``@server`` to one server;
each value is the defect that makes it fail. The plugin marks matching properties
``xfail(strict=True)`` (``intermittent`` lists: not strict), so a fixed upstream turns the run red
until its entry goes. ``docs/upstream-findings.md`` has a minimal reproduction of each defect.
"""

from __future__ import annotations

HANDOVER_PROPERTIES = (
    "test_batches_sliced_from_one_operation_store_and_load_each_pages_own_bytes",
    "test_a_call_leaves_the_keys_indices_and_prefix_keys_it_was_handed_as_they_were",
    "test_a_store_has_read_every_page_it_stores_when_it_returns",
    "test_a_load_writes_no_host_page_once_it_returns",
)
"""The controller-handover family: each makes the controller's calls, so it meets whatever
defect stops a backend's first store of a geometry."""

UNCHECKED_INDICES = "host indices are never checked; whatever the slice holds is stored and reported True"
TRUNCATED_IS_A_HIT = "exists is a file-exists test, so an empty or truncated entry is a hit"
SLASH_IS_A_FOLDER = (
    "keys are spliced into paths unchecked: a key with '/' names a folder that does not exist, so a "
    "batch holding one (a key that differs from another only in '-' against '/') is refused"
)
NAMES_COLLIDE = (
    "object names are not injective: '/' in a model name becomes '-', and a key that spells "
    "another pool's suffix names that pool's entry"
)
KEYS_ARE_PATHS = "keys are spliced into paths unchecked: '../' and absolute keys write outside the store"
FORMAT_BLIND = (
    "entries carry no format: restarted with another KV dtype (bf16 -> fp16) or page size of the same "
    "page bytes, the old pages are served into the new pool"
)

CLEAR_WIPES_THE_FOLDER = (
    "clear() removes every file in the storage folder, whichever model's: file names carry the model "
    "name, yet one deployment's clear() empties every deployment that shares the folder"
)
MINIMUM_OVER_POOLS = (
    "batch_exists_v2 takes the minimum of the pools' figures, which can be a prefix no pool set "
    "can restore (a TRAILING_PAGES hole just before an ALL_PAGES gap)"
)
MINIMUM_OVER_POOLS_GEOMETRIES = (
    "adversarial",
    "deepseek_v4",
    "mimo_v2_swa_mtp",
    "glm5_next_mla_dsa_kda",  # an ALL_PAGES indexer beside a TRAILING_PAGES KDA state
    "inkling_swa_mamba",  # two TRAILING_PAGES pools of different windows
)
"""Geometries whose gating pools can each restore a prefix the others cannot."""
