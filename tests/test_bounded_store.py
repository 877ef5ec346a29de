"""The reference backend's bounded store, from inside: exact peaks, and evictions that last.

The conformance suite samples a folder's bytes from outside (``conformance.servers.folder_peak``): an
overshoot shorter than a few of its walks it sees only by luck. Here every step that grows a file
(presizing an extent, a seal) is followed by a count of the tenant's bytes, so the peak is exact,
and hypothesis drives eviction through every path: tombstones, compaction moving live records,
tombstones carried forward, a segment filling up mid-eviction.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.servers.folder_peak import held_after_deletion, stored_bytes
from reference_backend import closer
from reference_backend.capacity import TOMB_ROOM, Budget, Capacity
from reference_backend.log import Layout, Segment, SegmentLog, Stamp
from reference_backend.record import BLOCK


class WatchedLog(SegmentLog):
    """A segment log that counts its tenant's bytes after every step that can grow a file."""

    peak = 0
    capacity: Capacity | None = None

    def _grew(self) -> None:
        if self.capacity is not None:
            self.peak = max(self.peak, self.capacity.stored())

    def _presize(self, segment: Segment, extent: int) -> bool:  # type: ignore[override]
        done = SegmentLog._presize(segment, extent)
        self._grew()
        return done

    def _put_block(self, segment: Segment, start: int, block: bytes) -> bool:
        done = super()._put_block(segment, start, block)
        self._grew()
        return done


def digest(key: int, pool: int) -> bytes:
    """One entry's record digest: the family (first 8 bytes) is the key, shared by its pools."""
    return hashlib.blake2b(key.to_bytes(8, "little"), digest_size=8).digest() + pool.to_bytes(8, "little")


batches = st.lists(
    st.tuples(
        st.lists(st.integers(0, 40), min_size=1, max_size=6, unique=True),
        st.sampled_from([512, 4096, 3 * 4096, 7 * 4096 + 512]),  # record bytes per pool
        st.integers(1, 3),  # pools per key
        st.booleans(),  # fresh keys each time round, or the same ones overwritten
    ),
    min_size=1,
    max_size=12,
)
FLOOD = 3
"""Budgets' worth of bytes each example writes, going round its batches."""


@settings(max_examples=200, deadline=None)
@given(
    blocks=st.integers(24, 160),
    segment_share=st.integers(4, 16),
    high=st.sampled_from([1.0, 0.95]),
    low=st.sampled_from([0.9, 0.5]),
    pattern=batches,
)
def test_stored_bytes_never_pass_the_budget_while_evicting(
    blocks: int, segment_share: int, high: float, low: float, pattern: list[tuple[list[int], int, int, bool]]
) -> None:
    budget = Budget(limit=blocks * BLOCK, high=high, low=min(low, high), pin_seconds=0)
    with tempfile.TemporaryDirectory() as root:
        log = WatchedLog(
            root, direct=False, fsync=False, segment_bytes=blocks * BLOCK // segment_share, tenant="ab"
        )
        capacity = log.capacity = Capacity(log, budget)
        room = budget.ceiling - TOMB_ROOM - capacity.pins.size
        written, giant_admitted = 0, False
        try:
            for round_ in itertools.count():
                if written > FLOOD * budget.limit:
                    break
                keys, size, pools, fresh = pattern[round_ % len(pattern)]
                stamps = [
                    Stamp(digest(k + 64 * round_ * fresh, p), 1, None, depth)
                    for depth, k in enumerate(keys)
                    for p in range(pools)
                ]
                layout = Layout.of([[size] * len(stamps)])
                written += layout.size
                giant = 4 * log.reservation(layout.size) > room
                extent = capacity.reserve(layout)
                if extent is None:
                    # the store evicts, it does not just refuse; a batch of over a quarter of the room
                    # may not fit, and one admitted may leave too little room to compact around it
                    assert giant or giant_admitted, "refused, though eviction could make room"
                    continue
                giant_admitted |= giant
                for at, length in zip(layout.offsets, layout.sizes, strict=True):
                    os.pwrite(extent.fd, b"\x5a" * length, extent.start + at)
                assert log.commit(extent, stamps)
                assert log.peak <= budget.limit, f"{log.peak} bytes stored under a budget of {budget.limit}"
        finally:
            log.close()


def write(log: SegmentLog, stamps: list[Stamp], size: int = 512) -> None:
    """Append and commit one batch of ``size``-byte records, outside any budget."""
    layout = Layout.of([[size] * len(stamps)])
    extent = log.reserve(layout)
    assert extent is not None
    for at in layout.offsets:
        os.pwrite(extent.fd, b"\x5a" * size, extent.start + at)
    assert log.commit(extent, stamps)


def test_an_eviction_outlives_the_segment_that_recorded_it() -> None:
    """A tombstone's segment is deleted only once no older segment can hold its family.

    Rank A's page of an entry lies in A's open segment; rank B evicts the entry, then supersedes
    everything else in the segment holding the tombstone. Deleting that segment then would bring
    A's page back: half an entry, which exists and get would report to a fresh reader."""
    with tempfile.TemporaryDirectory() as root:
        logs = [
            SegmentLog(root, direct=False, fsync=False, segment_bytes=4 * BLOCK, tenant="ab")
            for _ in range(3)
        ]
        a, b, reader = logs
        try:
            write(a, [Stamp(digest(0, 0), 1, None)])
            write(b, [Stamp(digest(0, 1), 1, None)])
            assert b.tombstone([digest(0, 0)[:8]])
            b.live()  # what eviction then looks at: b's own page of the entry leaves its index
            for _ in range(3):  # fills b's segment, then supersedes all it holds from the next one
                write(b, [Stamp(digest(1, 1), 1, None)])
            assert reader.locate([digest(0, 0), digest(0, 1), digest(1, 1)])[:2] == [None, None]
        finally:
            for log in logs:
                log.close()


def test_deleted_segments_count_against_the_budget_until_they_are_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A deleted segment's blocks are free only once its descriptor is closed, which the log does
    off the writer's thread, a slice at a time (:mod:`reference_backend.closer`). Slowed here to a
    crawl, the closes lag every eviction: the bytes on disk, deleted files held open included, must
    still stay within the budget, because the capacity counts them and closes them at once when
    it needs their room."""
    monkeypatch.setattr(closer, "SLICE", BLOCK)
    monkeypatch.setattr(closer, "AT_ONCE", BLOCK)
    monkeypatch.setattr(closer, "PAUSE", 0.05)
    budget = Budget(limit=96 * BLOCK, high=1.0, low=0.9, pin_seconds=0)
    with tempfile.TemporaryDirectory() as root:
        log = SegmentLog(root, direct=False, fsync=False, segment_bytes=12 * BLOCK, tenant="ab")
        capacity = Capacity(log, budget)
        flushed = 0
        original = log.finish_closing

        def finish_closing() -> bool:
            nonlocal flushed
            done = original()
            flushed += done
            return done

        monkeypatch.setattr(log, "finish_closing", finish_closing)
        try:
            for round_ in range(3 * 96 // 2):
                log.bury()  # as a backend's write does first
                stamps = [Stamp(digest(2 * round_ + k, 0), 1, None) for k in range(2)]
                layout = Layout.of([[BLOCK] * len(stamps)])
                extent = capacity.reserve(layout)
                assert extent is not None, f"refused at round {round_}, though eviction could make room"
                for at, length in zip(layout.offsets, layout.sizes, strict=True):
                    os.pwrite(extent.fd, b"\x5a" * length, extent.start + at)
                assert log.commit(extent, stamps)
                on_disk = stored_bytes(root) + held_after_deletion(root)
                assert on_disk <= budget.limit, (
                    f"{on_disk} bytes on disk after round {round_}, budget {budget.limit} "
                    f"({held_after_deletion(root)} in deleted files still open)"
                )
        finally:
            log.close()
        assert flushed, "the closes never lagged an eviction: the test did not test"
        assert not held_after_deletion(root)
