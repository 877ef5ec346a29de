"""Entry identity: injective over keys, pools, models and ranks."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.model.interface import HiCacheStorageConfig, PoolName
from reference_backend import naming
from reference_backend.naming import Digester, Scope, entry_digest, family_digest, scope_for, spell

texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


def config(model: str = "m", rank: int = 0, size: int = 1, mla: bool = False) -> HiCacheStorageConfig:
    return HiCacheStorageConfig(rank, size, 0, 1, 0, 1, mla, False, True, model)


@given(a=st.lists(texts, min_size=4, max_size=4), b=st.lists(texts, min_size=4, max_size=4))
def test_distinct_identities_never_share_a_spelling(a: list[str], b: list[str]) -> None:
    if a != b:
        assert spell(*a) != spell(*b)


def test_mla_kv_is_shared_across_ranks_but_mamba_is_not() -> None:
    kv0, kv1 = (
        scope_for(config(rank=0, size=2, mla=True), PoolName.KV),
        scope_for(config(rank=1, size=2, mla=True), PoolName.KV),
    )
    assert kv0 == kv1
    m0, m1 = (
        scope_for(config(rank=0, size=2, mla=True), PoolName.MAMBA),
        scope_for(config(rank=1, size=2, mla=True), PoolName.MAMBA),
    )
    assert m0 != m1
    assert scope_for(config(rank=0, size=2), PoolName.KV) != scope_for(config(rank=1, size=2), PoolName.KV)


def test_model_spellings_and_rank_splits_stay_apart() -> None:
    digests = {
        entry_digest(scope_for(config(model=m, rank=r, size=s), PoolName.KV), PoolName.KV, "k")
        for m in ("org/m", "org-m", "org_m")
        for r, s in ((1, 12), (11, 2))
    }
    assert len(digests) == 6


def test_the_digest_binds_scope_pool_and_key() -> None:
    scope = scope_for(config(), PoolName.KV)
    digests = {entry_digest(scope, p, k) for p in (PoolName.KV, PoolName.SWA) for k in ("a", "a_swa")}
    assert len(digests) == 4


@given(
    model=texts,
    rank=st.integers(0, 3),
    pool=st.sampled_from(list(PoolName)),
    keys=st.lists(texts, max_size=5),
)
def test_a_pools_digester_names_every_key_as_entry_digest_does(
    model: str, rank: int, pool: PoolName, keys: list[str]
) -> None:
    """The planner names keys through a digester made once per pool: the same 16 bytes, the
    family's 8 first, for any key, model and rank, one key after another from the same states."""
    scope = scope_for(config(model=model, rank=rank, size=4), pool)
    digester = Digester(scope, pool)
    for key in [*keys, *keys]:
        assert digester(key) == entry_digest(scope, pool, key)
        assert digester(key)[:8] == family_digest(model, key)


needs_kernel = pytest.mark.skipif(
    bool(naming._NATIVE_MISSING), reason=f"the naming kernel was not built: {naming._NATIVE_MISSING}"
)
any_texts = st.text(st.characters(codec="utf-8", exclude_categories=[]), max_size=300)
"""Keys as a caller may pass them, lone surrogates included (named as ``surrogatepass`` spells them)."""


@pytest.mark.skipif(
    bool(naming._NATIVE_MISSING), reason=f"the naming kernel was not built: {naming._NATIVE_MISSING}"
)
@given(model=texts, shard=texts, pool=texts, keys=st.lists(st.text(max_size=300) | any_texts, max_size=20))
def test_the_naming_kernel_names_every_key_as_the_python_path_does(
    model: str, shard: str, pool: str, keys: list[str]
) -> None:
    """The C++ kernel (BLAKE2b written from its specification) and hashlib agree byte for byte: a
    store one path wrote reads back under the other."""
    scope = Scope(model, shard)
    native, python = Digester(scope, pool, native=True), Digester(scope, pool, native=False)
    assert native.many(keys) == python.many(keys) == [entry_digest(scope, pool, k) for k in keys]


@pytest.mark.skipif(
    bool(naming._NATIVE_MISSING), reason=f"the naming kernel was not built: {naming._NATIVE_MISSING}"
)
def test_the_naming_kernel_refuses_a_key_that_is_no_string() -> None:
    with pytest.raises(TypeError, match="a key is a str"):
        Digester(Scope("m", "s"), "kv", native=True).many([b"raw"])  # type: ignore[list-item]


def test_the_naming_kernel_is_built_wherever_it_is_required() -> None:
    """As the index's: CI requires the kernels (``HICACHE_NATIVE=1``), so a build that failed
    quietly fails here instead of certifying the pure-Python path twice."""
    if os.environ.get("HICACHE_NATIVE") == "1":
        assert not naming._NATIVE_MISSING, naming._NATIVE_MISSING
        assert Digester(Scope("m", "s"), "kv").native
