"""A backend that declares fewer KV layouts has its layout properties run in those, not skipped.

Properties draw the layout with hypothesis; a skip raised for an undeclared draw would end the whole
property at its first such example (layer_first is hypothesis's first choice), so a backend that
declares only the page-first layouts (SGLang's Mooncake) would have every one of them skipped.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings

from conformance.doubles.memory_backend import SPEC as MEMORY
from conformance.harness.rig import Target
from conformance.suite._common import kv_layouts


def test_a_property_draws_only_the_layouts_the_backend_declares(tmp_path: Path) -> None:
    caps = replace(MEMORY.capabilities, layouts=frozenset({"page_first"}))
    target = Target(replace(MEMORY, capabilities=caps), "default", tmp_path)
    seen: list[str] = []

    @settings(max_examples=10, database=None, derandomize=True)
    @given(layout=kv_layouts)
    def prop(layout: str) -> None:
        target.require_layout(layout)
        seen.append(layout)

    try:
        prop()
    except pytest.skip.Exception as exc:  # a skip here would end a whole property at one draw
        pytest.fail(f"the property was skipped: {exc}")
    assert seen and set(seen) == {"page_first"}
