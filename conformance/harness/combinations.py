"""Pool combinations drawn compositionally: any KV kind beside any set of side pools.

The fixtures in ``fixtures/models/`` are the combinations SGLang 0.5.23 builds
(``docs/pool-combinations.md``). A rule that is right for each pool kind alone can still be wrong
in a combination no fixture has (MLA KV, replicated across TP ranks, beside recurrent state that
is sharded per rank is Kimi-Linear's). So the properties that take a geometry can also draw one:
a KV kind, then any subset of the side pools, each pool with its own kind's shape and dtype rules
(the doubles of :mod:`conformance.doubles.hostpools`), its own layout rule
(:meth:`~conformance.harness.geometry.PoolSpec.layout_for`: page-first-only kinds stay page-first) and
its own TP-sharing rule (:mod:`conformance.model.sharing`, asked per pool, never per model).

Each drawn pool keeps the kind SGLang gives that name (Mamba state is a ``MambaPoolHost``, the SWA
pool an MHA pool, a draft pool the target's KV kind, an indexer a DSA indexer), so a backend that
keys anything by the pool's name meets the shapes it would meet in SGLang; what is drawn freely is
which pools stand beside which KV, and their sizes and dtypes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from conformance.harness.geometry import ModelGeometry, PoolSpec
from conformance.model.interface import PoolHitPolicy, PoolName

COMPOSED_KV_KINDS = ("mha", "mla")
"""KV kinds a drawn combination takes. DeepSeek-V4's logical anchor comes with its own fixed
stack of compressed pools (``build_deepseek_v4_hicache_stack``), which its fixture holds whole."""

Params = st.SearchStrategy[dict[str, Any]]


def _mha(page_size: int | None = None, layers: int = 2) -> Params:
    return st.fixed_dictionaries(
        {
            "layer_num": st.integers(1, layers),
            "head_num": st.integers(1, 2),
            "head_dim": st.sampled_from([32, 64, 128]),
            "page_size": st.just(page_size) if page_size else st.sampled_from([2, 4]),
            "dtype": st.sampled_from(["bfloat16", "float16"]),
        }
    )


def _mla(page_size: int | None = None, layers: int = 2) -> Params:
    return st.fixed_dictionaries(
        {
            "layer_num": st.integers(1, layers),
            "kv_cache_dim": st.sampled_from([576, 192]),
            "page_size": st.just(page_size) if page_size else st.sampled_from([2, 4]),
            "dtype": st.sampled_from(["bfloat16", "float8_e4m3fn"]),
        }
    )


# (temporal state shape, conv state shapes): Mamba2/GDN (both), KDA (its one conv is [K-1,
# channels]), lightning (one conv state of zero elements), a ShortConv model (no temporal state).
MAMBA_STATES = [
    ([2, 8, 8], [[32, 3]]),
    ([2, 8, 8], [[3, 48]]),
    ([1, 4, 8], [[16, 2], [16, 2]]),
    ([2, 8, 8], [[0, 0]]),
    ([1, 48, 0], [[48, 2]]),
]


def _mamba() -> Params:
    return st.builds(
        lambda layers, state, temporal, conv: {
            "num_layers": layers,
            "temporal_shape": state[0],
            "conv_shapes": state[1],
            "temporal_dtype": temporal,
            "conv_dtype": conv,
        },
        st.integers(1, 2),
        st.sampled_from(MAMBA_STATES),
        st.sampled_from(["float32", "bfloat16"]),
        st.sampled_from(["bfloat16", "float16"]),
    )


def _indexer(page_size: int) -> Params:
    return st.fixed_dictionaries(
        {
            "layer_num": st.integers(1, 2),
            "index_head_dim": st.sampled_from([64, 128]),
            "page_size": st.just(page_size),
            "store_dtype": st.just("float8_e4m3fn"),
        }
    )


# A side pool: its kind (given the KV spec) and the strategy for its shape (given the KV spec).
# Pools on the KV indices share KV's page size; SWA-indexed pools draw their own.
SideCatalogue = dict[PoolName, tuple[PoolHitPolicy, Callable[[PoolSpec], str], Callable[[PoolSpec], Params]]]
SIDE_POOLS: SideCatalogue = {
    PoolName.MAMBA: (PoolHitPolicy.TRAILING_PAGES, lambda kv: "mamba", lambda kv: _mamba()),
    PoolName.INDEXER: (
        PoolHitPolicy.ALL_PAGES,
        lambda kv: "dsa_indexer",
        lambda kv: _indexer(kv.params["page_size"]),
    ),
    PoolName.SWA: (PoolHitPolicy.TRAILING_PAGES, lambda kv: "mha", lambda kv: _mha()),
    PoolName.DRAFT: (
        PoolHitPolicy.ALL_PAGES,
        lambda kv: kv.kind,
        lambda kv: (_mla if kv.kind == "mla" else _mha)(kv.params["page_size"], layers=1),
    ),
    PoolName.DRAFT_SWA: (PoolHitPolicy.TRAILING_PAGES, lambda kv: "mha", lambda kv: _mha(layers=1)),
    PoolName.DRAFT_INDEXER: (
        PoolHitPolicy.ALL_PAGES,
        lambda kv: "dsa_indexer",
        lambda kv: _indexer(kv.params["page_size"]),
    ),
}


@st.composite
def pool_combinations(
    draw: st.DrawFn,
    *,
    kv_kinds: tuple[str, ...] = COMPOSED_KV_KINDS,
    side_pools: tuple[PoolName, ...] = tuple(SIDE_POOLS),
    min_side: int = 0,
    max_side: int = 3,
) -> ModelGeometry:
    """A model geometry composed of one KV kind and ``min_side``..``max_side`` side pools.

    ``is_mla`` follows the KV kind, as SGLang's controller derives ``is_mla_model`` from the KV
    device pool alone; every other pool's sharing follows from :mod:`conformance.model.sharing`.
    """
    kind = draw(st.sampled_from([k for k in kv_kinds if k in COMPOSED_KV_KINDS]))
    kv = PoolSpec(PoolName.KV, kind, PoolHitPolicy.ALL_PAGES, draw(_mla() if kind == "mla" else _mha()))
    available = [n for n in SIDE_POOLS if n in side_pools]
    chosen = draw(
        st.lists(
            st.sampled_from(available),
            min_size=min(min_side, len(available)),
            max_size=min(max_side, len(available)),
            unique=True,
        )
        if available
        else st.just([])
    )
    pools = [kv]
    for name in chosen:
        policy, kind_of, params = SIDE_POOLS[name]
        pools.append(PoolSpec(name, kind_of(kv), policy, draw(params(kv))))
    family = "drawn-" + "-".join(f"{p.name}.{p.kind}" for p in pools)
    return ModelGeometry(family, "drawn/" + family, kind == "mla", tuple(pools), drawn=True)
