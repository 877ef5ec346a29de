"""SGLang's sharing rule as ``conformance.model.sharing`` states it, against worked examples from SGLang.

The hand-written cases come from SGLang 0.5.23's code (file names in ``conformance.model.sharing``);
the last tests hold the statement against SGLang's own ``HiCacheStorageConfig`` and ``HiCacheFile``
suffixes where SGLang is importable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.harness.geometry import all_geometries, stated_sharing
from conformance.harness.strategies import rank_sets, shapes
from conformance.model.interface import HiCacheStorageConfig, PoolName
from conformance.model.sglang import UpstreamUnavailable, sglang
from conformance.model.sharing import Shape, entry_identity, fit, is_storage_writer, writer_of


def config(shape: Shape, *, mla: bool = False, model: str = "m") -> HiCacheStorageConfig:
    return HiCacheStorageConfig(
        **shape.config_fields(),
        is_mla_model=mla,
        enable_storage_metrics=False,
        is_page_first_layout=True,
        model_name=model,
    )


def same_entry(a: Shape, b: Shape, pool: PoolName, *, mla: bool) -> bool:
    return entry_identity(config(a, mla=mla), pool, "k") == entry_identity(config(b, mla=mla), pool, "k")


DCP = {"dcp_size": 2, "logical_page_size": 64}


def test_mha_state_is_one_entry_per_tp_rank() -> None:
    # HiCacheFile: tp_config_suffix = f"_{model}_{tp_rank}_{tp_size}" for every non-MLA key
    assert not same_entry(Shape(tp_rank=0, tp_size=4), Shape(tp_rank=1, tp_size=4), PoolName.KV, mla=False)
    assert not same_entry(Shape(tp_rank=0, tp_size=2), Shape(tp_rank=0, tp_size=4), PoolName.KV, mla=False)


def test_mla_state_is_shared_by_the_tp_ranks_of_a_stage_but_mamba_state_is_not() -> None:
    # HiCacheFile / HiCacheNixl: config_suffix = f"_{model}" for MLA; Mamba keys take tp_config_suffix
    a, b = Shape(tp_rank=0, tp_size=8), Shape(tp_rank=5, tp_size=8)
    for pool in (PoolName.KV, PoolName.INDEXER, PoolName.DEEPSEEK_V4_C4):
        assert same_entry(a, b, pool, mla=True)
    assert not same_entry(a, b, PoolName.MAMBA, mla=True)
    # no tp_size in the MLA suffix without DCP: TP2 and TP8 deployments share replicated entries
    assert same_entry(Shape(tp_size=2), Shape(tp_size=8), PoolName.KV, mla=True)


@pytest.mark.parametrize("geometry", all_geometries(), ids=lambda g: g.family)
def test_every_fixture_states_the_tp_sharing_the_rule_gives_each_of_its_pools(geometry: Any) -> None:
    """Each fixture says, pool by pool, what SGLang's code does (``"tp"``: replicated or sharded);
    the rule stated once in ``conformance.model.sharing`` gives each pool of the model the same answer,
    at every TP rank of a 4-way deployment: a replicated pool is one entry for all four ranks,
    written by rank 0 alone; a sharded pool is four entries, each rank writing its own."""
    stated = stated_sharing(geometry.family)
    ranks = [config(Shape(tp_rank=r, tp_size=4), mla=geometry.is_mla, model=geometry.model) for r in range(4)]
    for pool in geometry.pools:
        entries = {entry_identity(c, pool.name, "k") for c in ranks}
        writers = [c.tp_rank for c in ranks if is_storage_writer(c, pool.name)]
        found = "replicated" if len(entries) == 1 else "sharded"
        assert stated[str(pool.name)] == found, f"{geometry.family}: {pool.name} is {found} by the rule"
        assert writers == ([0] if found == "replicated" else [0, 1, 2, 3]), f"{pool.name} writers {writers}"


def test_kimi_linears_kda_state_is_sharded_beside_replicated_mla_kv() -> None:
    # hybrid_cache_controller.should_backup: "Kimi-K3 Mamba/KDA state is TP-sharded even when the
    # primary MLA KV pool is replicated"; the controller's is_mla_model is the MLA full_kv_pool's
    assert stated_sharing("kimi_linear_mla_kda") == {"kv": "replicated", "mamba": "sharded"}
    assert stated_sharing("glm5_next_mla_dsa_kda") == {
        "kv": "replicated",
        "indexer": "replicated",
        "mamba": "sharded",
    }


def test_pipeline_stages_and_cp_ranks_never_share() -> None:
    # HiCacheFile: f"_{pp_size}_{pp_rank}" when pp_size > 1, f"_cp{rank}_{size}" when attn_cp_size > 1
    for mla in (False, True):
        assert not same_entry(Shape(pp_size=2), Shape(pp_rank=1, pp_size=2), PoolName.KV, mla=mla)
        assert not same_entry(Shape(), Shape(pp_size=2), PoolName.KV, mla=mla)
        assert not same_entry(
            Shape(attn_cp_size=2), Shape(attn_cp_rank=1, attn_cp_size=2), PoolName.KV, mla=mla
        )


def test_dcp_shards_are_shared_across_dcp_groups_and_apart_within_one() -> None:
    # HiCacheFile: f"_tp{tp_size}_dcp{dcp_rank}_{dcp_size}_page{logical_page_size}" under DCP;
    # "equivalent MLA shards in different DCP groups share a file"
    tp = [Shape(tp_rank=r, tp_size=4, dcp_rank=r % 2, **DCP) for r in range(4)]
    assert same_entry(tp[0], tp[2], PoolName.KV, mla=True)
    assert same_entry(tp[1], tp[3], PoolName.KV, mla=True)
    assert not same_entry(tp[0], tp[1], PoolName.KV, mla=True)
    other_page = Shape(tp_rank=0, tp_size=4, dcp_size=2, logical_page_size=32)
    assert not same_entry(tp[0], other_page, PoolName.KV, mla=True)
    assert not same_entry(tp[0], Shape(tp_rank=0, tp_size=8, **DCP), PoolName.KV, mla=True)


def test_the_first_dcp_group_writes_replicated_state_and_every_rank_writes_its_own() -> None:
    # HiCacheStorageConfig.is_storage_writer: not is_mla_model or tp_rank == dcp_rank;
    # HybridCacheController.should_backup: Mamba is backed up on every rank
    tp = [Shape(tp_rank=r, tp_size=4, dcp_rank=r % 2, **DCP) for r in range(4)]
    assert [is_storage_writer(config(s, mla=True), PoolName.KV) for s in tp] == [True, True, False, False]
    assert all(is_storage_writer(config(s, mla=True), PoolName.MAMBA) for s in tp)
    assert all(is_storage_writer(config(Shape(tp_rank=r, tp_size=4)), PoolName.KV) for r in range(4))
    assert [
        is_storage_writer(config(Shape(tp_rank=r, tp_size=2), mla=True), PoolName.KV) for r in (0, 1)
    ] == [
        True,
        False,
    ]
    assert [writer_of(s) for s in tp] == [tp[0], tp[1], tp[0], tp[1]]


def test_the_dp_rank_is_no_part_of_an_entry() -> None:
    # DP-attention groups with one attention-TP rank hold the same heads of the same tokens
    a = config(Shape(tp_rank=1, tp_size=2))
    b = HiCacheStorageConfig(**{**a.__dict__, "dp_rank": 3})
    assert entry_identity(a, PoolName.KV, "k") == entry_identity(b, PoolName.KV, "k")


@pytest.mark.parametrize(
    "fields",
    [
        {"tp_rank": 1, "tp_size": 4, "dcp_rank": 0, **DCP},  # tp_rank % dcp_size != dcp_rank
        {"tp_rank": 0, "tp_size": 3, **DCP},  # tp_size not divisible by dcp_size
        {"tp_rank": 0, "tp_size": 4, "dcp_size": 2, "logical_page_size": 3},
        {"tp_rank": 0, "tp_size": 4, "dcp_size": 2},
        {"dcp_rank": 1},
        {"pp_size": 0},
    ],
)
def test_shapes_sglang_refuses_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Shape(**fields)


def test_dcp_is_dropped_for_models_that_cannot_run_it() -> None:
    shape = Shape(tp_rank=1, tp_size=2, dcp_rank=1, **DCP)
    assert fit(shape, dcp=True) == shape
    assert fit(shape, dcp=False) == Shape(tp_rank=1, tp_size=2)


def test_only_an_mla_pool_with_at_most_mamba_beside_it_runs_under_dcp() -> None:
    """SGLang's controller refuses L3 under DCP for MHA, DSA's separate indexer, draft pools and
    V4's anchor ("HiCache L3 with DCP supports only MLA KV and optional KDA state")."""
    assert {g.family for g in all_geometries() if g.runs_dcp} == {
        "deepseek_v3_mla",
        "kimi_linear_mla_kda",
        "ring_2_5_mla_lightning",
    }


@given(shape=shapes())
def test_drawn_shapes_are_ranks_sglang_accepts(shape: Shape) -> None:
    assert 0 <= shape.tp_rank < shape.tp_size and 0 <= shape.pp_rank < shape.pp_size
    assert 0 <= shape.attn_cp_rank < shape.attn_cp_size
    assert Shape.of(config(shape, mla=True)) == shape


@given(ranks=rank_sets())
def test_a_rank_set_is_one_deployment(ranks: list[Shape]) -> None:
    sizes = {(s.tp_size, s.pp_size, s.attn_cp_size, s.dcp_size, s.logical_page_size) for s in ranks}
    assert len(sizes) == 1 and len(set(ranks)) == len(ranks)


@pytest.fixture(scope="module")
def sg() -> Any:
    try:
        return sglang()
    except UpstreamUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for HiCacheFile instances that are only asked for their suffixes."""
    return tmp_path_factory.mktemp("hicache-file")


raw_shapes = st.fixed_dictionaries(
    {
        "tp_rank": st.integers(0, 8),
        "tp_size": st.sampled_from([1, 2, 3, 4, 8]),
        "dcp_rank": st.integers(0, 4),
        "dcp_size": st.sampled_from([1, 2, 4]),
        "logical_page_size": st.sampled_from([None, 1, 2, 3, 64]),
    }
)


@given(fields=raw_shapes)
def test_shape_validation_and_the_writer_are_sglangs_own(sg: Any, fields: dict[str, Any]) -> None:
    base = {"pp_rank": 0, "pp_size": 1, "attn_cp_rank": 0, "attn_cp_size": 1}
    flags = {"is_mla_model": True, "enable_storage_metrics": False, "is_page_first_layout": True}
    try:
        theirs = sg.HiCacheStorageConfig(**fields, **base, **flags, model_name="m")
    except ValueError:
        theirs = None
    try:
        ours = Shape(**fields, **base)
    except ValueError:
        ours = None
    assert (ours is None) == (theirs is None), f"SGLang {'refuses' if theirs is None else 'accepts'} {fields}"
    if ours is not None:
        assert is_storage_writer(config(ours, mla=True), PoolName.KV) == theirs.is_storage_writer


@settings(max_examples=40, deadline=None)
@given(a=shapes(), b=shapes(), mla=st.booleans())
def test_hicache_files_suffixes_agree_with_the_rule(
    sg: Any, store: Path, a: Shape, b: Shape, mla: bool
) -> None:
    """Two ranks' HiCacheFile suffixes are equal exactly when the rule names one entry."""
    a, b = fit(a, mla), fit(b, mla)

    def suffixes(shape: Shape) -> tuple[str, str]:
        conf = sg.HiCacheStorageConfig(**config(shape, mla=mla).__dict__ | {"extra_config": {}})
        backend = sg.HiCacheFile(conf, file_path=str(store))
        return backend.config_suffix, backend.tp_config_suffix

    (kv_a, mamba_a), (kv_b, mamba_b) = suffixes(a), suffixes(b)
    assert (kv_a == kv_b) == same_entry(a, b, PoolName.KV, mla=mla), (kv_a, kv_b)
    assert (mamba_a == mamba_b) == same_entry(a, b, PoolName.MAMBA, mla=mla), (mamba_a, mamba_b)
