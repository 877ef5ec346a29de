"""The record format puts every region on an O_DIRECT boundary and fingerprints its geometry."""

from __future__ import annotations

import pytest

from reference_backend.record import UNIT, layout_from_sizes, pad


@pytest.mark.parametrize("sizes", [(704,), (1024, 512), (4096, 512), (256, 448), (8192,)])
def test_regions_start_on_512_byte_offsets_and_the_record_is_whole_units(sizes) -> None:
    layout = layout_from_sizes(sizes)
    assert all(off % UNIT == 0 for off in layout.offsets)
    assert layout.offsets[0] == 0
    assert layout.size % UNIT == 0
    assert layout.size == sum(pad(s) for s in sizes)
    for (off, size), nxt in zip(zip(layout.offsets, sizes), (*layout.offsets[1:], layout.size)):
        assert off + size <= nxt


def test_geometries_that_pad_alike_still_have_different_tags() -> None:
    tags = {layout_from_sizes(s).tag for s in [(704,), (705,), (512, 192), (192, 512), (1024,)]}
    assert len(tags) == 5


@pytest.mark.parametrize("sizes", [(), (0,), (-1, 4)])
def test_empty_geometries_are_refused(sizes) -> None:
    with pytest.raises(ValueError):
        layout_from_sizes(sizes)
