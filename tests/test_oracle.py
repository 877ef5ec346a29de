"""The hit-policy oracle states the documented semantics; worked examples pin it down."""

from __future__ import annotations

import pytest

from conformance.model.interface import PoolHitPolicy, PoolName, PoolTransfer, PoolTransferResult
from conformance.model.oracle import (
    ExpectedExists,
    check_exists_result,
    expected_exists_v2,
    leading_run,
    reduce_across_ranks,
    reduced_expected_hit,
)

ALL, TRAIL, BLOCK = PoolHitPolicy.ALL_PAGES, PoolHitPolicy.TRAILING_PAGES, PoolHitPolicy.BLOCK_GROUPS
KEYS = [f"k{i}" for i in range(6)]


def presence(table: dict[str, str]):
    """``{"kv": "111101"}``: which keys each pool holds, as a bit string."""
    return lambda pool, key: table.get(pool, "").ljust(len(KEYS), "0")[KEYS.index(key)] == "1"


def own(pool: str, name: PoolName, policy: PoolHitPolicy, keys=KEYS, **kw) -> PoolTransfer:
    return PoolTransfer(name=name, keys=list(keys), hit_policy=policy, **kw)


def test_leading_run_stops_at_the_first_gap() -> None:
    assert leading_run([True, True, False, True]) == 2
    assert leading_run([]) == 0
    assert leading_run([True] * 3) == 3


def test_kv_alone_is_the_leading_run() -> None:
    got = expected_exists_v2(KEYS, [], presence({"kv": "111011"}))
    assert (got.kv_hit_pages, got.extra_pool_hit_pages) == (3, {"kv": 3})


def test_all_pages_cuts_the_prefix_at_the_pools_first_gap() -> None:
    got = expected_exists_v2(
        KEYS, [own("indexer", PoolName.INDEXER, ALL)], presence({"kv": "111111", "indexer": "110111"})
    )
    assert got.kv_hit_pages == 2
    assert got.extra_pool_hit_pages == {"kv": 6, "indexer": 2}


def test_trailing_pages_needs_only_the_window_ending_at_the_prefix() -> None:
    t = own("mamba", PoolName.MAMBA, TRAIL, keys=KEYS[-2:])
    got = expected_exists_v2(KEYS, [t], presence({"kv": "111111", "mamba": "000011"}))
    assert got.kv_hit_pages == 6
    assert got.restorable_prefix_pages == [6]


def test_the_usable_prefix_is_restorable_by_every_pool_not_the_minimum_of_their_figures() -> None:
    mamba = own("mamba", PoolName.MAMBA, TRAIL, keys=KEYS[-1:])
    indexer = own("indexer", PoolName.INDEXER, ALL)
    got = expected_exists_v2(
        KEYS[:5], [mamba, indexer], presence({"kv": "11111", "mamba": "11101", "indexer": "11110"})
    )
    assert got.extra_pool_hit_pages == {"kv": 5, "mamba": 5, "indexer": 4}
    assert got.kv_hit_pages == 3


def test_block_groups_reports_whole_leading_groups_and_never_gates() -> None:
    c4 = own("c4", PoolName.DEEPSEEK_V4_C4, BLOCK, keys=KEYS[:5], block_pages=4, group_pages=2)
    got = expected_exists_v2(KEYS, [c4], presence({"kv": "111111", "deepseek_v4_c4": "111101"}))
    assert got.kv_hit_pages == 6
    assert got.extra_pool_hit_pages["deepseek_v4_c4"] == 8


def test_block_groups_without_geometry_is_refused() -> None:
    with pytest.raises(ValueError):
        expected_exists_v2(KEYS, [own("c4", PoolName.DEEPSEEK_V4_C4, BLOCK)], presence({"kv": "1"}))


def test_the_checker_names_each_departure_and_forgives_omitted_pools_only_at_zero() -> None:
    indexer = own("indexer", PoolName.INDEXER, ALL)
    expected = expected_exists_v2(KEYS, [indexer], presence({"kv": "111111", "indexer": "111111"}))
    assert check_exists_result(PoolTransferResult(6, {"kv": 6, "indexer": 6}), expected) == []
    assert check_exists_result(PoolTransferResult(6, {"kv": 6}), expected) == [
        "pool 'indexer' hit pages None != 6"
    ]
    assert check_exists_result(PoolTransferResult(5, {"kv": 6, "indexer": 6}), expected) == [
        "kv_hit_pages 5 != 6"
    ]
    nothing = expected_exists_v2(KEYS, [indexer], presence({"kv": "111111"}))
    assert check_exists_result(PoolTransferResult(0, {"kv": 6}), nothing) == []


def test_ranks_reduce_through_their_restorable_sets_not_their_hits() -> None:
    """Rank A restores 3 and 5, rank B 1..4: each rank's best is 5 and 4, yet only 3 is shared."""
    a = PoolTransferResult(5, {}, [3, 5])
    b = PoolTransferResult(4, {}, [1, 2, 3, 4])
    assert reduce_across_ranks([a, b], 6) == 3
    assert reduced_expected_hit([ExpectedExists(5, {}, [3, 5]), ExpectedExists(4, {}, [1, 2, 3, 4])]) == 3


def test_a_rank_without_a_restorable_set_counts_every_prefix_up_to_its_hit() -> None:
    """SGLang's controller reads a missing set as 1..hit, which can overstate the shared hit."""
    a = PoolTransferResult(5, {}, None)
    b = PoolTransferResult(4, {}, [1, 2, 3, 4])
    assert reduce_across_ranks([a, b], 6) == 4
    assert reduce_across_ranks([PoolTransferResult(0, {}, None)], 3) == 0
