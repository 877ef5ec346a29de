"""Entry names: safe inside the root, injective over keys, pools, models and ranks."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from conformance.interface import HiCacheStorageConfig, PoolName
from reference_backend.naming import MAX_NAME, encode_component, entry_digest, entry_path, scope_for

texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=300)


def config(model: str = "m", rank: int = 0, size: int = 1, mla: bool = False) -> HiCacheStorageConfig:
    return HiCacheStorageConfig(rank, size, 0, 1, 0, 1, mla, False, True, model)


@given(a=texts, b=texts)
def test_distinct_texts_never_share_an_encoding(a: str, b: str) -> None:
    if a != b:
        assert encode_component(a) != encode_component(b)


@given(text=texts)
def test_an_encoding_is_one_safe_file_name(text: str) -> None:
    name = encode_component(text)
    assert "/" not in name and "\x00" not in name and not name.startswith(".")
    assert 0 < len(name.encode()) <= MAX_NAME + 1


@given(
    key=st.one_of(texts, st.sampled_from(["../x", "/etc/passwd", "..", ".", "a/../../b", "~x", "x" * 5000]))
)
def test_every_key_lands_inside_the_root(key: str) -> None:
    root = "/srv/store"
    path = entry_path(root, scope_for(config(), PoolName.KV), PoolName.KV, key)
    assert os.path.commonpath([root, os.path.normpath(path)]) == root
    assert os.path.normpath(path) == path


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
    scopes = {
        scope_for(config(model=m, rank=r, size=s), PoolName.KV)
        for m in ("org/m", "org-m", "org_m")
        for r, s in ((1, 12), (11, 2))
    }
    assert len(scopes) == 6


def test_the_digest_binds_scope_pool_and_key() -> None:
    scope = scope_for(config(), PoolName.KV)
    digests = {entry_digest(scope, p, k) for p in (PoolName.KV, PoolName.SWA) for k in ("a", "a_swa")}
    assert len(digests) == 4
