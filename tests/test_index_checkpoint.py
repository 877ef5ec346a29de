"""The compact index and its checkpoint: the index agrees with a dictionary through any history,
and a restart trusts a checkpoint only where the segment log agrees with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from reference_backend import index as index_module
from reference_backend.index import Index, Record
from reference_backend.log import SegmentLog, Stamp
from tests.test_bounded_store import write

digests = st.binary(min_size=16, max_size=16)
records = st.builds(
    Record,
    segment=st.integers(1, 4),
    offset=st.integers(0, 1 << 40),
    size=st.sampled_from([512, 4096, 16384]),
    tag=st.integers(0, 3),
    checksum=st.one_of(st.none(), st.integers(0, (1 << 64) - 1)),
    seq=st.integers(0, 1 << 62),
    depth=st.integers(0, 1000),
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), digests, records),
        st.tuples(st.just("remove"), st.integers(0, 1 << 16)),
        st.tuples(st.just("drop_segment"), st.integers(1, 4)),
        st.tuples(
            st.just("append"), st.lists(st.tuples(digests, records), max_size=40, unique_by=lambda r: r[0])
        ),
    ),
    max_size=300,
)
"""A history: single puts and removals, a segment's records dropped, a commit's fresh records
appended in one step (``append`` takes those the index does not hold yet)."""


def fresh(index: Index, batch: list[tuple[bytes, Record]]) -> tuple[list[bytes], list[Record]]:
    """The part of an ``append`` op new to ``index``, as ``append``'s arguments."""
    new = [(d, r) for d, r in batch if index.find(d) < 0]
    return [d for d, _ in new], [r for _, r in new]


IMPLEMENTATIONS = [
    pytest.param(False, id="python"),
    pytest.param(
        True,
        id="native",
        marks=pytest.mark.skipif(
            bool(index_module._NATIVE_MISSING),
            reason=f"the C++ kernel was not built (no compiler at install?): {index_module._NATIVE_MISSING}",
        ),
    ),
]
"""Both implementations of the index's probing, each certified by the same tests."""


def test_the_native_index_is_built_wherever_it_is_required() -> None:
    """CI builds the kernel at install and requires it (``HICACHE_NATIVE=1``) in its native runs,
    so a build that failed quietly (the extension is optional) fails here instead of certifying
    the pure-Python path twice."""
    if os.environ.get("HICACHE_NATIVE") == "1":
        assert not index_module._NATIVE_MISSING, index_module._NATIVE_MISSING
        assert Index().native


def test_hicache_native_selects_the_implementation_and_a_required_one_that_is_missing_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HICACHE_NATIVE", "0")
    assert not Index().native
    monkeypatch.setenv("HICACHE_NATIVE", "yes")
    with pytest.raises(ValueError, match="HICACHE_NATIVE"):
        Index()
    monkeypatch.setattr(index_module, "_NATIVE_MISSING", "no module named _index_native")
    monkeypatch.delenv("HICACHE_NATIVE")
    assert not Index().native
    monkeypatch.setenv("HICACHE_NATIVE", "1")
    with pytest.raises(ImportError, match="no module named _index_native"):
        Index()
    with pytest.raises(ImportError):
        Index(native=True)


@pytest.mark.parametrize("native", IMPLEMENTATIONS)
@settings(max_examples=60, deadline=None)
@given(history=ops, crowd=st.integers(0, 3000))
def test_the_index_agrees_with_a_dictionary_through_puts_removals_and_drops(native, history, crowd) -> None:
    """``crowd`` records first, so the table grows and probe runs meet; then a drawn history."""
    index, model = Index(native), {}
    rng = np.random.default_rng(crowd)
    for raw in rng.integers(0, 255, (crowd, 16), dtype=np.uint8):
        digest = raw.tobytes()
        model[digest] = Record(1, 0, 512, 0, None, 1, 0)
        index.put(digest, model[digest], index.find(digest))
    for op in history:
        note(repr(op))
        if op[0] == "put":
            _, digest, record = op
            index.put(digest, record, index.find(digest))
            model[digest] = record._replace(depth=min(record.depth, 32767))
        elif op[0] == "remove" and model:
            digest = sorted(model)[op[1] % len(model)]
            index.remove(index.find(digest))
            del model[digest]
        elif op[0] == "drop_segment":
            index.drop(index.in_segment(op[1]))
            model = {d: r for d, r in model.items() if r.segment != op[1]}
        elif op[0] == "append":
            added, their = fresh(index, op[1])
            index.append(added, their)
            model.update((d, r._replace(depth=min(r.depth, 32767))) for d, r in zip(added, their))
    assert len(index) == len(model)
    for digest, record in model.items():
        assert index.record(index.find(digest)) == record
    rids = index.find_many(list(model))
    assert [Record(*row) for row in index.rows(rids)] == list(model.values())  # gathered from 16
    absent = [bytes(16), b"\xff" * 16]
    assert index.find_many([*model, *absent]) == [
        *(index.find(d) for d in model),
        *(index.find(d) if d in model else -1 for d in absent),
    ]
    restored = Index.from_arrays(index.arrays(), native)
    assert {d: restored.record(restored.find(d)) for d in model} == model
    assert restored.find(b"\x01" * 16) == (-1 if b"\x01" * 16 not in model else restored.find(b"\x01" * 16))


def same(one: Index, other: Index) -> None:
    """The two hold the same records under the same ids, in byte-equal slot tables."""
    assert len(one) == len(other)
    assert bytes(one._table) == bytes(other._table)
    assert bytes(one._raw[: 48 * len(one)]) == bytes(other._raw[: 48 * len(other)])


@pytest.mark.skipif(bool(index_module._NATIVE_MISSING), reason="the C++ kernel was not built")
@settings(max_examples=40, deadline=None)
@given(history=ops, crowd=st.integers(0, 3000))
def test_both_implementations_place_every_record_in_the_same_slot(history, crowd) -> None:
    """Through the same history the native and the pure-Python index, and one that changes
    implementation at every step, leave byte-equal tables and records; a checkpoint of either
    restores into the other the same. So either may serve what the other filled or saved."""
    native, python, mixed = Index(native=True), Index(native=False), Index(native=True)
    both = (native, python, mixed)
    rng = np.random.default_rng(crowd)
    for raw in rng.integers(0, 255, (crowd, 16), dtype=np.uint8):  # growth: rehashes
        for index in both:
            index.put(raw.tobytes(), Record(1, 0, 512, 0, None, 1, 0), index.find(raw.tobytes()))
    for op in history:
        note(repr(op))
        mixed.native = not mixed.native
        for index in both:
            if op[0] == "put":
                index.put(op[1], op[2], index.find(op[1]))
            elif op[0] == "remove" and len(index):
                index.remove(op[1] % len(index))
            elif op[0] == "drop_segment":  # one removal at a time, or (many) compaction and rehash
                index.drop(index.in_segment(op[1]))
            elif op[0] == "append":
                index.append(*fresh(index, op[1]))
        same(native, python)
        same(native, mixed)
    same(Index.from_arrays(native.arrays(), native=False), Index.from_arrays(python.arrays(), native=True))


MEASURE = textwrap.dedent(
    """
    import numpy as np
    from reference_backend.index import Index, Record
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    count = 300_000
    raw = np.random.default_rng(0).integers(0, 255, (count, 16), dtype=np.uint8)
    record = Record(1, 0, 4096, 0, 7, 1, 0)
    before = rss()
    index = Index()
    for row in raw:
        index.put(row.tobytes(), record)
    print((rss() - before) / count, index.nbytes / count)
    """
)


def test_an_index_entry_takes_at_most_64_bytes_of_memory() -> None:
    """Measured as the process's resident memory, in a process of its own."""
    out = subprocess.run(
        [sys.executable, "-c", MEASURE],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
    )
    resident, counted = map(float, out.stdout.split())
    assert resident <= 64 and counted <= 64, f"{resident:.1f} bytes resident, {counted:.1f} counted an entry"


def stamps(round_: int, count: int = 8) -> list[Stamp]:
    return [Stamp(f"{round_:08d}{i:08d}".encode(), 1, None) for i in range(count)]


def open_log(root: Path, checkpoints: bool = True) -> SegmentLog:
    return SegmentLog(
        str(root), direct=False, fsync=False, segment_bytes=64 << 10, tenant="ab", checkpoints=checkpoints
    )


def view(log: SegmentLog) -> dict[bytes, tuple[str, int, int, int]]:
    """What the log would serve: each digest's segment, offset, size and sequence."""
    return {d: (loc.segment.name, loc.offset, loc.size, loc.seq) for d, loc in log.live()}


def from_the_log(root: Path) -> dict[bytes, tuple[str, int, int, int]]:
    log = open_log(root, checkpoints=False)
    try:
        return view(log)
    finally:
        log.close()


def checkpointed(root: Path, rounds: int) -> None:
    """``rounds`` batches written, then a clean close: the index checkpointed."""
    log = open_log(root)
    for round_ in range(rounds):
        write(log, stamps(round_))
    log.refresh()
    log.close()


def test_a_restart_starts_from_the_checkpoint_and_scans_on_from_it(tmp_path: Path) -> None:
    checkpointed(tmp_path, 40)
    later = open_log(tmp_path, checkpoints=False)  # a writer that crashed: no checkpoint of its own
    for round_ in range(40, 60):
        write(later, stamps(round_))
    restarted = open_log(tmp_path)
    try:
        assert restarted.restored
        assert view(restarted) == from_the_log(tmp_path)
        assert len(view(restarted)) == 60 * 8
    finally:
        restarted.close()
        later.close()


def test_a_torn_foreign_or_contradicted_checkpoint_is_never_trusted(tmp_path: Path) -> None:
    checkpointed(tmp_path, 30)
    path = Path(open_log(tmp_path, checkpoints=True).checkpoint_path)
    whole = path.read_bytes()
    truth = from_the_log(tmp_path)
    path.write_bytes(whole[: len(whole) // 2])  # torn
    assert not open_log(tmp_path).restored
    path.write_bytes(whole.replace(b"\x93NUMPY", b"\x93NUMPZ", 1))  # not numpy's: another version
    assert not open_log(tmp_path).restored
    path.write_bytes(whole)
    assert open_log(tmp_path).restored
    segment = next((tmp_path / "segments").glob("*.seg"))
    copy = segment.read_bytes()
    segment.unlink()
    segment.write_bytes(copy)  # the same name and bytes, another file: not the one scanned
    contradicted = open_log(tmp_path)
    assert not contradicted.restored
    contradicted.close()
    rebuilt = open_log(tmp_path)
    try:
        assert view(rebuilt) == truth
    finally:
        rebuilt.close()


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from reference_backend.log import SegmentLog, Stamp
    from tests.test_bounded_store import write
    root = Path(sys.argv[1])
    for round_ in range(10**6):
        log = SegmentLog(str(root), direct=False, fsync=False, segment_bytes=1 << 20, tenant="ab",
                         checkpoints=True)
        log.refresh()
        for batch in range(20):
            write(log, [Stamp(f"{round_:08d}{batch:04d}{i:04d}".encode(), 1, None) for i in range(64)])
        print(round_, flush=True)
        log.close()  # the checkpoint: most of each round's time
    """
)


def test_a_process_killed_while_it_checkpoints_leaves_a_restart_that_agrees_with_the_log(
    tmp_path: Path,
) -> None:
    """A real process writes and checkpoints in a loop and is killed with SIGKILL at drawn moments;
    every restart must serve exactly what the log holds."""
    root = Path(__file__).resolve().parents[1]
    for moment in (0.9, 1.3, 1.7):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(tmp_path)], cwd=root, stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        child.stdout.readline()  # it has written a round: a checkpoint is being written now or soon
        time.sleep(moment / 10)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        restarted = open_log(tmp_path)
        try:
            assert view(restarted) == from_the_log(tmp_path)
        finally:
            restarted.close()


RUNNING = textwrap.dedent(
    """
    import sys
    from reference_backend.log import SegmentLog, Stamp
    from tests.test_bounded_store import write
    log = SegmentLog(sys.argv[1], direct=False, fsync=False, segment_bytes=1 << 20, tenant="ab",
                     checkpoints=True, checkpoint_every=256)
    log.refresh()
    for batch in range(10**6):
        write(log, [Stamp(f"{batch:08d}{i:08d}".encode(), 1, None) for i in range(64)])
        print(batch, flush=True)
    """
)


def test_a_running_log_checkpoints_as_it_goes_so_a_crash_restarts_from_one_and_agrees_with_the_log(
    tmp_path: Path,
) -> None:
    """A process that never closes still leaves checkpoints (every 256 records here): killed with
    SIGKILL at drawn moments while it writes (and checkpoints on its own thread), it restarts from
    a checkpoint, scans on from it, and serves exactly what the log holds."""
    root = Path(__file__).resolve().parents[1]
    checkpoint_path = Path(open_log(tmp_path, checkpoints=True).checkpoint_path)
    for moment in (0.2, 0.5, 1.1):
        checkpoint_path.unlink(missing_ok=True)  # what the last restart's close wrote
        child = subprocess.Popen(
            [sys.executable, "-c", RUNNING, str(tmp_path)], cwd=root, stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        deadline = time.monotonic() + 60
        while not checkpoint_path.exists():  # the running log's first checkpoint has landed
            assert child.stdout.readline(), "the writer died"
            assert time.monotonic() < deadline, "no checkpoint a minute into the run"
        time.sleep(moment / 10)  # and it writes on: commits past it, maybe a checkpoint under way
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        restarted = open_log(tmp_path)
        try:
            assert restarted.restored, "a crashed log left no checkpoint a restart could trust"
            assert view(restarted) == from_the_log(tmp_path)
            left = list(checkpoint_path.parent.glob(f"{checkpoint_path.name}.*.tmp"))
            assert not left, f"a killed writer's temporary checkpoints outlive the restart: {left}"
        finally:
            restarted.close()


def test_a_deleted_segments_records_read_absent_at_once_and_leave_the_index_a_few_at_a_time(
    tmp_path: Path,
) -> None:
    """Deleting a segment costs no pass over the index: its records read as absent at once and
    later commits purge them, a bounded number each; a key rewritten meanwhile is found."""
    log = open_log(tmp_path, checkpoints=False)
    try:
        doomed = stamps(0, count=600)
        write(log, doomed)
        (victim,) = log.segments()
        assert log.rotate()
        assert log.tombstone(sorted({s.digest[:8] for s in doomed}))
        assert log.compact(victim, keep=set())
        assert log.locate([s.digest for s in doomed]) == [None] * 600
        held = len(log._index)
        write(log, [doomed[0]])  # a key of the deleted segment, written again
        assert log.locate([doomed[0].digest])[0] is not None
        assert held - len(log._index) <= 2 * 1 + 32  # one commit purges a bounded share
        for round_ in range(1, 21):
            write(log, stamps(round_))
        assert len(log._index) == len(log.live()) == 1 + 20 * 8
    finally:
        log.close()


@pytest.mark.skipif(bool(index_module._NATIVE_MISSING), reason="the C++ kernel was not built")
@pytest.mark.parametrize("writer", [True, False], ids=["native-writes", "python-writes"])
def test_a_store_either_implementation_wrote_reads_back_the_same_under_the_other(
    tmp_path: Path, writer: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index lives in memory; what is on disk (segments, commits, the checkpoint) is the same
    whichever implementation indexed it. A log written and checkpointed under one implementation
    serves the same records under the other, restored from its checkpoint or scanned from the
    log, and goes on taking commits (fresh ones appended in one step, overwrites one by one)."""
    monkeypatch.setenv("HICACHE_NATIVE", "1" if writer else "0")
    log = open_log(tmp_path)
    for round_ in range(30):
        write(log, stamps(round_, count=24))  # 24 a commit: gathered lookups, one-step appends
    write(log, stamps(3, count=24))  # overwrites: indexed record by record
    log.refresh()
    written = view(log)
    log.close()
    monkeypatch.setenv("HICACHE_NATIVE", "0" if writer else "1")
    restored = open_log(tmp_path)
    try:
        assert restored.restored and restored._index.native != writer
        assert view(restored) == written == from_the_log(tmp_path)
        locations = restored.locate([d for d in written])
        assert [(loc.segment.name, loc.offset, loc.size, loc.seq) for loc in locations if loc] == list(
            written.values()
        )
        write(restored, stamps(30, count=24))
        write(restored, stamps(4, count=24))
        restored.refresh()
        assert view(restored) == from_the_log(tmp_path)
    finally:
        restored.close()
