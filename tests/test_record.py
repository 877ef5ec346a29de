"""The record format puts every region on an O_DIRECT boundary and names its entry."""

from __future__ import annotations

import pytest

from reference_backend.record import UNIT, layout_from_sizes, pad


@pytest.mark.parametrize("sizes", [(704,), (1024, 512), (4096, 512), (256, 448), (8192,)])
def test_regions_start_on_512_byte_offsets_and_the_record_is_whole_units(sizes) -> None:
    layout = layout_from_sizes(sizes)
    assert all(off % UNIT == 0 for off in layout.offsets)
    assert layout.offsets[0] == UNIT
    assert layout.size % UNIT == 0
    assert layout.size == UNIT + sum(pad(s) for s in sizes)
    for (off, size), nxt in zip(zip(layout.offsets, sizes), (*layout.offsets[1:], layout.size)):
        assert off + size <= nxt


def test_a_header_matches_only_its_own_entry_and_geometry() -> None:
    layout = layout_from_sizes((704,))
    header = layout.header(b"a" * 16, checksum=1234)
    assert len(header) == UNIT
    assert layout.read_header(header, b"a" * 16) == (True, 1234)
    assert layout.read_header(layout.header(b"a" * 16), b"a" * 16) == (True, None)
    assert not layout.read_header(header, b"b" * 16)[0]
    assert not layout_from_sizes((705,)).read_header(header, b"a" * 16)[0]
    assert not layout.read_header(bytes(UNIT), b"a" * 16)[0]
    assert not layout.read_header(header[:100], b"a" * 16)[0]


@pytest.mark.parametrize("sizes", [(), (0,), (-1, 4)])
def test_empty_geometries_are_refused(sizes) -> None:
    with pytest.raises(ValueError):
        layout_from_sizes(sizes)
