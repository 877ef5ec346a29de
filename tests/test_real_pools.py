"""Each host-pool double held against SGLang's own class, so the doubles cannot drift.

For every pool of every shipped geometry, in every layout its kind takes and on aligned and
misaligned bases, SGLang 0.5.23's real host pool (``conformance.upstream.host_pools``, sharing the
double's memory) and a free-standing double must agree on what a storage backend sees: page bytes
and their order, buffer meta (the very pointers and sizes, or the same refusal), zero-copy
eligibility, the dummy page's dtype and size, the flat-page codec, ``get_ksize_per_token`` and
``get_hybrid_pool_buffer`` where the real class has them. MLA pools are also held widened for
decode context parallelism (``dcp_size`` 2 and 4), addressed in SGLang's logical slots.
"""

from __future__ import annotations

import enum
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from conformance.certificate.coverage import coverage
from conformance.doubles.hostpools import MISALIGNMENT, HostPoolDouble
from conformance.harness import geometry as geometry_module
from conformance.harness.geometry import PoolSpec, all_geometries, covered_pool_names, untested_pool_names
from conformance.model.capabilities import Capabilities
from conformance.model.interface import PoolName
from conformance.model.sglang import UpstreamUnavailable, sglang

try:
    sglang()
except UpstreamUnavailable as exc:
    UPSTREAM: str | None = str(exc)
else:
    UPSTREAM = None

needs_upstream = pytest.mark.skipif(UPSTREAM is not None, reason=f"SGLang is not importable: {UPSTREAM}")

PAGES = 6
CASES = [
    pytest.param(
        g.family,
        spec,
        layout,
        misalign,
        dcp,
        id=f"{g.family}-{spec.name}-{layout}-{'mis' if misalign else 'al'}{f'-dcp{dcp}' if dcp > 1 else ''}",
    )
    for g in all_geometries()
    for spec in g.pools
    for layout in spec.layouts
    for misalign in (0, MISALIGNMENT)
    for dcp in ((1, 2, 4) if spec.kind == "mla" else (1,))
]


def _pair(
    spec: PoolSpec, layout: str, misalign: int, dcp: int = 1
) -> tuple[HostPoolDouble, Any, HostPoolDouble]:
    """(the suite's double, SGLang's pool, the wrapper that shares that pool's memory)."""
    if spec.kind == "multi_region":
        pytest.skip(
            f"{spec.name}: the generic multi_region double stands for no one SGLang class "
            "(it is the adversarial geometry's odd page sizes)"
        )
    from conformance.upstream.host_pools import build_pool, upstream_of

    wrapper = build_pool(spec, layout=layout, misalign=misalign, page_num=PAGES, dcp_size=dcp)
    double = spec.build(layout=layout, misalign=misalign, page_num=PAGES, dcp_size=dcp)
    return double, upstream_of(wrapper), wrapper


def _bytes(t: torch.Tensor) -> bytes:
    return bytes(t.contiguous().view(torch.uint8).reshape(-1).numpy().tobytes())


def _meta(fn: Any, indices: torch.Tensor) -> Any:
    """What ``get_page_buffer_meta`` answers, or the kind of refusal."""
    try:
        got = fn(indices)
    except (ValueError, NotImplementedError, AssertionError) as exc:
        return type(exc).__name__
    return None if got is None else (list(got[0]), list(got[1]))


@needs_upstream
@pytest.mark.parametrize(("family", "spec", "layout", "misalign", "dcp"), CASES)
def test_the_double_matches_sglangs_host_pool(
    family: str, spec: PoolSpec, layout: str, misalign: int, dcp: int
) -> None:
    """Page bytes, meta, alignment, dummy page, codec and buffers of the double are SGLang's."""
    double, real, shared = _pair(spec, layout, misalign, dcp)
    kind = type(double)
    ps = double.logical_page_size  # the slots one page spans in the indices backends are handed
    theirs = (real.page_size, getattr(real, "logical_page_size", real.page_size), real.size, str(real.layout))
    assert theirs == (double.page_size, ps, double.size, layout), (
        f"SGLang's pool has (page_size, logical_page_size, size, layout) {theirs}"
    )
    assert real.dtype == double.dtype, f"SGLang's dtype is {real.dtype}, the double's {double.dtype}"

    # buffer meta: the same pointers over the shared memory, or the same refusal
    for pages in ([0], [3, 1], list(range(PAGES))):
        idx = torch.tensor([p * ps + t for p in pages for t in range(ps)], dtype=torch.int64)
        want = _meta(lambda i: kind.get_page_buffer_meta(shared, i), idx)
        assert _meta(real.get_page_buffer_meta, idx) == want, (
            f"pages {pages}: SGLang's meta differs from {want}"
        )

    # zero-copy eligibility
    has_check = hasattr(real, "is_stride_page_aligned")
    assert has_check == hasattr(double, "is_stride_page_aligned"), (
        f"SGLang has is_stride_page_aligned: {has_check}"
    )
    if has_check:
        for unit in (4096, 512):
            want_aligned = kind.is_stride_page_aligned(shared, unit)
            assert bool(real.is_stride_page_aligned(unit)) == want_aligned, (
                f"{unit}: SGLang says {not want_aligned}"
            )

    # the dummy page: dtype and size
    dummy, want_dummy = real.get_dummy_flat_data_page(), double.get_dummy_flat_data_page()
    assert (dummy.dtype, dummy.numel()) == (want_dummy.dtype, want_dummy.numel()), (
        f"SGLang's dummy page is {dummy.numel()} x {dummy.dtype}"
    )

    # page bytes: the same pattern, read through SGLang and through the double
    pattern = bytes((7 * i + 3) % 251 for i in range(double.page_nbytes()))
    shared.write_page(2 * ps, pattern)
    double.write_page(2 * ps, pattern)
    assert _bytes(real.get_data_page(2 * ps, flat=True)) == _bytes(double.get_data_page(2 * ps, flat=True)), (
        "SGLang's flat page orders the bytes differently"
    )
    # the flat-page codec: SGLang restores the double's flat page where the double would
    real.set_from_flat_data_page(4 * ps, double.get_data_page(2 * ps, flat=True).clone())
    double.set_from_flat_data_page(4 * ps, double.get_data_page(2 * ps, flat=True).clone())
    assert shared.read_page(4 * ps) == double.read_page(4 * ps), "SGLang restored the page elsewhere"

    if hasattr(real, "get_ksize_per_token"):
        assert real.get_ksize_per_token() == double.get_ksize_per_token(), (  # type: ignore[attr-defined]
            f"SGLang's ksize per token is {real.get_ksize_per_token()}"
        )
    has_buffers = hasattr(real, "get_hybrid_pool_buffer")
    assert has_buffers == hasattr(double, "get_hybrid_pool_buffer"), (
        f"SGLang has get_hybrid_pool_buffer: {has_buffers}"
    )
    if has_buffers:
        got = [(t.data_ptr(), t.nbytes) for t in real.get_hybrid_pool_buffer()]
        want_buffers = [(t.data_ptr(), t.nbytes) for t in shared.get_hybrid_pool_buffer()]  # type: ignore[attr-defined]
        assert got == want_buffers, f"SGLang's hybrid pool buffers are {got}"


@needs_upstream
def test_mamba_state_is_page_first_only_in_sglang_and_the_double() -> None:
    """SGLang refuses a layer_first Mamba host pool; the double and the geometry agree."""
    spec = next(p for g in all_geometries() for p in g.pools if p.kind == "mamba")
    assert "layer_first" not in spec.layouts
    with pytest.raises(ValueError):
        spec.build(layout="layer_first")
    from conformance.upstream.host_pools import build_pool

    with pytest.raises((AssertionError, ValueError)):
        build_pool(spec, layout="layer_first")


def test_side_pools_take_the_kv_layout_where_sglang_allows() -> None:
    """Every kind but Mamba (and the generic double) takes layer_first beside a layer_first KV pool."""
    for spec in (p for g in all_geometries() for p in g.side_pools):
        expected = "page_first" if spec.kind in ("mamba", "multi_region") else "layer_first"
        assert spec.layout_for("layer_first") == expected, (
            f"{spec.name} ({spec.kind}) gets {spec.layout_for('layer_first')}"
        )
        assert spec.layout_for("page_first_direct") == "page_first_direct"


def test_every_pool_name_is_covered_or_listed_as_untested() -> None:
    """untested_pool_names() is exactly the interface's names that no geometry builds."""
    untested = set(untested_pool_names())
    assert not untested & covered_pool_names(), (
        f"listed as untested yet covered: {untested & covered_pool_names()}"
    )
    assert untested | covered_pool_names() >= {str(n) for n in PoolName}, (
        "a PoolName is neither covered nor listed"
    )
    # the kinds issue 13 asks for are covered
    for name in (
        "swa",
        "draft",
        "draft_swa",
        "deepseek_v4_c4",
        "deepseek_v4_c4_state",
        "deepseek_v4_c128_rope",
    ):
        assert name in covered_pool_names(), f"{name} is not covered by any geometry"


@needs_upstream
def test_our_pool_names_mirror_the_installed_sglang() -> None:
    """conformance.model.interface.PoolName carries exactly SGLang's names and values."""
    theirs = {n.name: n.value for n in sglang().PoolName}
    ours = {n.name: n.value for n in PoolName}
    assert ours == theirs, (
        f"only ours: {ours.keys() - theirs.keys()}; only SGLang's: {theirs.keys() - ours.keys()}"
    )


def test_a_pool_name_sglang_adds_shows_up_as_untested(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PoolName the installed SGLang has and nothing builds is reported, never silently absent."""
    grown = enum.Enum("PoolName", {**{n.name: n.value for n in PoolName}, "FUTURE_POOL": "future_pool"})  # type: ignore[misc]
    monkeypatch.setattr(geometry_module, "sglang", lambda: SimpleNamespace(PoolName=grown))
    assert "future_pool" in untested_pool_names()
    assert "future_pool" in coverage(Capabilities(), "default")["pool names no geometry builds"]


def test_without_sglang_our_own_names_still_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """With SGLang absent, the mirrored PoolName alone decides what is untested."""

    def absent() -> Any:
        raise UpstreamUnavailable("not installed")

    monkeypatch.setattr(geometry_module, "sglang", absent)
    assert set(untested_pool_names()) == {str(n) for n in PoolName} - covered_pool_names()
