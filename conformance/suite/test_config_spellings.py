"""Configuration as SGLang passes it: ``--hicache-storage-backend-extra-config`` is JSON.

Users write booleans there as JSON strings (``"use_direct_io": "false"``) and upstream's NIXL
backend takes its plugin in a nested form (``{"plugin": {"posix": {"active": true, ...}}}``).
Every spelling of an I/O mode must behave exactly as the mode it spells, and a config the backend
cannot honour must fail at construction: a silent other mode (O_DIRECT for "false") is the defect.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest

from conformance.doubles.hostpools import MISALIGNMENT
from conformance.harness.geometry import load_geometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import render_page
from conformance.model.interface import HiCacheStorageConfig

GEOMETRY = "adversarial"
"""Side pages of 704 B and 4096+512 B: O_DIRECT changes what happens to them."""
PAGES = 2
NONSENSE = "maybe"


def json_strings(extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` with every boolean spelled as the JSON string "true" or "false"."""
    return {
        k: json_strings(v) if isinstance(v, Mapping) else (str(v).lower() if isinstance(v, bool) else v)
        for k, v in extra.items()
    }


def nonsense_flags(extra: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """``extra`` once per boolean setting in it, that setting spelled as a string that means nothing."""
    for key, value in extra.items():
        if isinstance(value, bool):
            yield {**extra, key: NONSENSE}
        elif isinstance(value, Mapping):
            for inner in nonsense_flags(value):
                yield {**extra, key: inner}


def spellings(target: Target) -> list[tuple[str, dict[str, Any]]]:
    """(mode, extra_config) for every further spelling of every declared mode."""
    out = []
    for mode, extra in target.caps.io_modes.items():
        declared = [dict(s) for s in target.caps.config_spellings.get(mode, ())]
        derived = [json_strings(extra)] if target.caps.string_flags else []
        for spelled in [*derived, *declared]:
            if spelled != dict(extra) and (mode, spelled) not in out:
                out.append((mode, spelled))
    return out


def refusals(target: Target) -> list[dict[str, Any]]:
    """Configs that must fail construction: declared ones, and nonsense in each boolean setting."""
    out = [dict(c) for c in target.caps.refused_configs]
    if target.caps.string_flags:
        for extra in target.caps.io_modes.values():
            out += [c for c in nonsense_flags(extra) if c not in out]
    return out


def behaviour(target: Target, extra: dict[str, Any]) -> list[tuple[object, ...]]:
    """What one configuration does with aligned and misaligned pools: each pool's transfer mode
    (where reported), its set and get flags, and whether the bytes came back."""
    spelled = replace(target, extra_config=dict(extra))
    geometry = load_geometry(GEOMETRY)
    keys = [f"cfg-{i}" for i in range(PAGES)]
    seen: list[tuple[object, ...]] = []
    for misalign in (0, MISALIGNMENT):
        with (
            spelled.storage() as storage,
            Rig(spelled, geometry, storage, page_num=PAGES, misalign=misalign) as rig,
        ):
            for n, name in enumerate(rig.pools):
                mode = rig.backend.transfer_mode(name) if target.caps.reports_transfer_mode else None
                pages = [render_page(rig.pool(name), n, 3, salt=i) for i in range(PAGES)]
                for page, data in enumerate(pages):
                    rig.put(name, page, data)
                stored = rig.set(name, keys, range(PAGES))
                rig.pool(name).fill(0)
                loaded = rig.get(name, keys, range(PAGES))
                exact = [rig.take(name, p) == pages[p] for p in range(PAGES)]
                seen.append((misalign, str(name), mode, tuple(stored), tuple(loaded), tuple(exact)))
    return seen


def _skip_unless(found: list[Any], target: Target) -> None:
    if not found:
        pytest.skip(
            f"backend {target.spec.name!r} declares no boolean extra_config setting in its io_modes, "
            "no config_spellings and no refused_configs"
        )


def test_every_spelling_of_an_io_mode_behaves_exactly_as_that_mode(hicache_target: Target) -> None:
    """JSON-string and declared spellings of each I/O mode move, stage and store exactly as that mode."""
    target = hicache_target
    found = spellings(target)
    _skip_unless(found, target)
    canonical = {mode: behaviour(target, dict(extra)) for mode, extra in target.caps.io_modes.items()}
    differ = []
    for mode, extra in found:
        got = behaviour(target, extra)
        if got != canonical[mode]:
            changed = [f"{want} -> {have}" for want, have in zip(canonical[mode], got) if want != have]
            differ.append(f"mode {mode!r} spelled {extra}: {'; '.join(changed)}")
    assert not differ, (
        "spellings behave unlike their mode, as (misalign, pool, transfer mode, set, get, exact): "
        + " | ".join(differ)
    )


def test_a_config_the_backend_cannot_honour_is_refused_at_construction(hicache_target: Target) -> None:
    """An extra_config the backend cannot honour raises at construction, never runs as another mode."""
    target = hicache_target
    found = refusals(target)
    _skip_unless(found, target)
    accepted = []
    for extra in found:
        config = HiCacheStorageConfig(
            tp_rank=0,
            tp_size=1,
            pp_rank=0,
            pp_size=1,
            attn_cp_rank=0,
            attn_cp_size=1,
            is_mla_model=False,
            enable_storage_metrics=False,
            is_page_first_layout=True,
            model_name="config-refusal",
            extra_config=dict(extra),
        )
        with target.storage() as storage:
            try:
                backend = target.spec.factory(config, storage)
            except Exception:  # any exception at construction is the refusal asked for
                continue
            accepted.append(str(extra))
            closer = getattr(backend, "close", None)
            if callable(closer):
                closer()
    assert not accepted, "configs the backend cannot honour were accepted: " + "; ".join(accepted)
