"""The deployment space a certification run covered, for the report.

Each dimension is a function of the backend's claims and the run's I/O mode that lists the values
the suite drives it with. A new dimension (batch sizes, say) is one more ``@dimension`` function
in this module, reading the constants the properties use, so the report names it without reading
any property's source. It runs on the process that writes the report.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.model.capabilities import Capabilities

Dimension = Callable[[Capabilities, str], list[str]]
DIMENSIONS: dict[str, Dimension] = {}


def dimension(name: str) -> Callable[[Dimension], Dimension]:
    """Register ``fn(capabilities, mode) -> values`` as the dimension ``name`` of the report."""

    def register(fn: Dimension) -> Dimension:
        DIMENSIONS[name] = fn
        return fn

    return register


@dimension("I/O modes")
def _modes(caps: Capabilities, mode: str) -> list[str]:
    crossed = sorted(set(caps.io_modes) - {mode})
    return [f"{mode} (whole suite)", *(f"{m} (alignment properties)" for m in crossed)]


@dimension("model geometries")
def _geometries(caps: Capabilities, mode: str) -> list[str]:
    from conformance.suite._common import GEOMETRIES

    return [g.family for g in GEOMETRIES]


@dimension("pool kinds")
def _pool_kinds(caps: Capabilities, mode: str) -> list[str]:
    from conformance.suite._common import GEOMETRIES

    kinds = {
        f"{p.name}: {p.kind}"
        for g in GEOMETRIES
        for p in g.pools
        if p.name.value == "kv" or p.name in caps.side_pools
    }
    return sorted(kinds)


@dimension("pool names no geometry builds")
def _untested_pools(caps: Capabilities, mode: str) -> list[str]:
    from conformance.harness.geometry import untested_pool_names

    return untested_pool_names() or ["none: every pool name the installed interface knows is drawn"]


@dimension("KV layouts")
def _layouts(caps: Capabilities, mode: str) -> list[str]:
    return sorted(caps.layouts)


@dimension("config shapes")
def _shapes(caps: Capabilities, mode: str) -> list[str]:
    from conformance.harness import strategies

    sizes = {
        "tp": "TP_SIZES",
        "pp": "PP_SIZES",
        "attn_cp": "CP_SIZES",
        "dcp": "DCP_SIZES",
        "tokens per DCP rank": "TOKENS_PER_DCP_RANK",
    }
    return [f"{k} {getattr(strategies, v)}" for k, v in sizes.items() if hasattr(strategies, v)]


def coverage(caps: Capabilities, mode: str) -> dict[str, list[str]]:
    """Every registered dimension's values; a dimension that cannot be computed says why."""
    out: dict[str, list[str]] = {}
    for name, fn in DIMENSIONS.items():
        try:
            out[name] = fn(caps, mode)
        except Exception as exc:  # a report must still be written
            out[name] = [f"unavailable: {type(exc).__name__}: {exc}"]
    return out
