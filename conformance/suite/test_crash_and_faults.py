"""Crashes, full disks, read-only stores and damaged files never surface as torn data.

Real processes: a writer is SIGKILLed mid-batch, or runs under RLIMIT_FSIZE, or against a
read-only view of its store. Afterwards a fresh instance must see every key either whole (one of
the versions that were written) or absent, and every key reported stored must still be there.

The damage properties find a backend's files by what a write changed (``stores_files`` promises
no file layout): they damage every file the write created or changed, and nothing else, or, inside a
batch, only the bytes the one victim's write changed, so its neighbours' records stay whole.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import given, note
from hypothesis import strategies as st

from conformance.doubles.hostpools import MISALIGNMENT
from conformance.doubles.side_pools import MultiRegionHostPool
from conformance.harness.geometry import load_geometry
from conformance.harness.rig import Rig, Target, byte_difference
from conformance.harness.worker import Job, payload, reports, run_to_end
from conformance.model.capabilities import BucketObjects
from conformance.model.interface import PoolName

KILL_FAMILY = "nemotron_h_mamba2"
LIMIT_FAMILY = "adversarial"


def _versions(rig: Rig, name: PoolName, key: str, seed: int, rounds: int) -> list[bytes]:
    return [payload(rig.pool(name), seed, r, name, key) for r in range(rounds)]


def _audit(rig: Rig, keys: list[str], seed: int, rounds: int) -> dict[str, int]:
    """Read every key of every pool; each must be one written version or absent, never torn."""
    seen = {"whole": 0, "absent": 0}
    for name in rig.pools:
        for page, key in enumerate(keys):
            present = rig.backend.batch_exists([key]) == 1 if name is PoolName.KV else None
            ok = rig.get(name, [key], [page])[0]
            if present and not ok:
                raise AssertionError(f"{name} key {key!r} exists but cannot be read: a torn entry is visible")
            if not ok:
                seen["absent"] += 1
                continue
            got = rig.take(name, page)
            if all(byte_difference(got, v) for v in _versions(rig, name, key, seed, rounds)):
                raise AssertionError(f"{name} key {key!r} reads back bytes no writer ever stored (torn)")
            seen["whole"] += 1
    return seen


@pytest.mark.parametrize("fresh", [False, True], ids=["overwriting", "fresh-keys"])
@pytest.mark.parametrize("share", [0.0, 0.5], ids=["at-once", "mid-batch"])
@pytest.mark.hicache_requires("persistence", reason="a restart must see what was stored")
def test_a_writer_killed_mid_batch_leaves_every_key_whole_or_absent(
    hicache_target: Target, share: float, fresh: bool
) -> None:
    """SIGKILL during batch_set_v2: after a restart no key is torn and no stored key is lost.

    The kill comes ``share`` of the way through the second round, timed by the first round's own
    length on this machine, so a loaded machine moves the kill with the writes it must land in."""
    geometry = load_geometry(KILL_FAMILY)
    keys = [f"kill-{i:03d}" for i in range(48)]
    with hicache_target.storage() as storage:
        job = Job(
            hicache_target.ref,
            hicache_target.mode,
            str(storage),
            KILL_FAMILY,
            keys,
            seed=11,
            rounds=10_000,
            fresh_keys=fresh,
        )
        # the with block closes both pipes, so no ResourceWarning reaches a -W error run
        with subprocess.Popen(job.argv(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            try:
                assert proc.stdout is not None
                lines = reports(proc.stdout)
                first = next((r for r in lines if "round" in r), {})
                if first.get("round") != 0 or next(lines, {}).get("writing") != 1:
                    proc.wait(timeout=60)
                    raise AssertionError(
                        f"worker never finished a round: {proc.stderr.read() if proc.stderr else ''}"
                    )
                time.sleep(share * first["seconds"])  # round 1's sets have begun
                proc.send_signal(signal.SIGKILL)
                rest = proc.stdout.read()
            finally:
                proc.kill()
                proc.wait()
        rounds_done = 1 + sum(1 for line in rest.splitlines() if line.startswith('{"round"'))
        stored_in_round0 = {name: flags for name, flags in first["results"].items()}
        with Rig(hicache_target, geometry, storage, page_num=len(keys)) as rig:
            seen = {"whole": 0, "absent": 0}
            for round_ in range(rounds_done + 1 if fresh else 1):
                for state, count in _audit(rig, job.keys_of(round_), job.seed, rounds_done + 1).items():
                    seen[state] += count
            for name, flags in stored_in_round0.items():
                for page, (key, stored) in enumerate(zip(job.keys_of(0), flags)):
                    if stored:
                        assert rig.get(PoolName(name), [key], [page]) == [True], (
                            f"{name} key {key!r} was lost"
                        )
        assert seen["whole"] > 0, f"after the kill a fresh instance reads no key at all: {seen}"


@pytest.mark.parametrize("limit", [1, 2048, 4096], ids=["1B", "2KiB", "4KiB"])
@pytest.mark.hicache_requires("persistence", reason="the writer runs in its own process")
def test_a_file_size_limit_fails_writes_cleanly(hicache_target: Target, limit: int) -> None:
    """Under RLIMIT_FSIZE (a full disk), a set reports False and leaves nothing behind."""
    keys = [f"full-{i}" for i in range(4)]
    geometry = load_geometry(LIMIT_FAMILY)
    with hicache_target.storage() as storage:
        job = Job(
            hicache_target.ref,
            hicache_target.mode,
            str(storage),
            LIMIT_FAMILY,
            keys,
            seed=5,
            file_size_limit=limit,
        )
        (report,) = run_to_end(job)
        results = report["results"]
        assert isinstance(results, dict)
        with Rig(hicache_target, geometry, storage, page_num=len(keys)) as rig:
            _audit(rig, keys, job.seed, 1)
            for name, flags in results.items():
                got = rig.get(PoolName(name), keys, range(len(keys)))
                assert got == flags, f"{name}: set said {flags}, a fresh instance reads {got}"


@contextlib.contextmanager
def read_only_view(storage: Path) -> Iterator[Path]:
    """The store, mounted read-only beside itself (root), or with write bits removed (others)."""
    view = storage.with_name(storage.name + "-ro")
    view.mkdir()
    if os.geteuid() == 0:
        bound = subprocess.run(["mount", "--bind", str(storage), str(view)], capture_output=True, check=False)
        if bound.returncode != 0:
            view.rmdir()
            pytest.skip(f"cannot make a read-only view here: {bound.stderr.decode().strip()}")
        try:
            subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], check=True, capture_output=True)
            yield view
        finally:
            subprocess.run(["umount", str(view)], check=False, capture_output=True)
            view.rmdir()
    else:
        view.rmdir()
        modes = {p: p.stat().st_mode for p in [storage, *storage.rglob("*")]}
        for p, mode in modes.items():
            p.chmod(mode & ~0o222)
        try:
            yield storage
        finally:
            for p, mode in modes.items():
                p.chmod(mode)


@pytest.mark.hicache_requires(
    "persistence", "stores_files", reason="the writer runs in its own process, on a read-only folder"
)
def test_a_read_only_store_refuses_writes_and_keeps_its_entries(hicache_target: Target) -> None:
    """Writing to a read-only store reports False for every key, and the old entries survive.

    New keys must be refused; so must stored ones, unless the backend declares first-write-wins,
    where a set of a stored key writes nothing.
    """
    keys = [f"ro-{i}" for i in range(3)]
    new_keys = [f"ro-new-{i}" for i in range(2)]
    geometry = load_geometry(LIMIT_FAMILY)
    with hicache_target.storage() as storage:
        (first,) = run_to_end(
            Job(hicache_target.ref, hicache_target.mode, str(storage), LIMIT_FAMILY, keys, seed=1)
        )
        assert all(all(flags) for flags in first["results"].values()), (
            f"the first set answered {first['results']}"
        )
        with read_only_view(storage) as view:
            (second,) = run_to_end(
                Job(hicache_target.ref, hicache_target.mode, str(view), LIMIT_FAMILY, keys + new_keys, seed=2)
            )
        results = second["results"]
        assert isinstance(results, dict)
        for name, flags in results.items():
            old, new = flags[: len(keys)], flags[len(keys) :]
            assert new == [False] * len(new_keys), f"{name}: a read-only store accepted new keys {new}"
            if hicache_target.caps.overwrites:
                assert old == [False] * len(keys), f"{name}: a read-only store accepted overwrites {old}"
        with Rig(hicache_target, geometry, storage, page_num=len(keys)) as rig:
            for name in rig.pools:
                got = rig.get(name, keys, range(len(keys)))
                assert got == [True] * len(keys), f"{name}: after the refused write, get answered {got}"
                for page, key in enumerate(keys):
                    rig.expect(
                        name, page, payload(rig.pool(name), 1, 0, name, key), "after the refused write"
                    )


class Victim(NamedTuple):
    """One stored file or object that holds the victim entry, as a property damages it."""

    label: str
    read: Callable[[], bytes]
    write: Callable[[bytes], object]


def _bucket(rig: Rig) -> BucketObjects | None:
    """The location's objects where the backend stores objects the suite reaches; None: files."""
    bucket = rig.target.spec.bucket
    return bucket(rig.storage) if rig.target.caps.stores_objects and bucket is not None else None


def _stored_states(rig: Rig, objects: BucketObjects | None) -> dict[str, Any]:
    """Every stored file under the folder, or object under the location's prefix, with its state."""
    if objects is not None:
        return dict(objects.states())
    states = {}
    for path in rig.storage.rglob("*"):
        if path.is_file():
            st = path.stat()
            states[str(path.relative_to(rig.storage))] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return states


def _victim(rig: Rig, objects: BucketObjects | None, name: str) -> Victim:
    if objects is not None:
        return Victim(name, lambda: objects.read(name), lambda data: objects.write(name, data))
    path = rig.storage / name
    return Victim(name, path.read_bytes, path.write_bytes)


def _store_victim(rig: Rig, data: bytes) -> list[Victim]:
    """Store ``data`` under "victim"; the files or objects that write created or changed, which hold it."""
    objects = _bucket(rig)
    before = _stored_states(rig, objects)
    rig.put(PoolName.KV, 0, data)
    assert rig.set(PoolName.KV, ["victim"], [0]) == [True], "the victim entry was not stored"
    after = _stored_states(rig, objects)
    written = sorted(name for name, state in after.items() if before.get(name) != state)
    assert written, (
        f"storing an entry changed nothing under {rig.storage}, though the backend says the suite reaches it"
    )
    return [_victim(rig, objects, name) for name in written]


@contextlib.contextmanager
def _victim_rig(target: Target) -> Iterator[Rig]:
    """A fresh location for a damage property: one KV page to store, one to read it back into."""
    with target.storage() as storage, Rig(target, load_geometry("llama3_mha"), storage, page_num=2) as rig:
        yield rig


def _truncated_is_absent(rig: Rig, damage: str) -> None:
    written = _store_victim(rig, b"\x5a" * rig.pool(PoolName.KV).page_nbytes())
    for victim in written:
        data = victim.read()
        victim.write(
            data[: {"empty": 0, "halved": len(data) // 2, "one-byte-short": max(0, len(data) - 1)}[damage]]
        )
    names = ", ".join(v.label for v in written)
    hits = rig.backend.batch_exists(["victim"])
    assert hits == 0, f"{damage} ({names}): batch_exists answered {hits}, not 0"
    got = rig.get(PoolName.KV, ["victim"], [1])
    assert got == [False], f"{damage} ({names}): get answered {got}, not [False]"


def _flips_never_read_back(rig: Rig) -> None:
    want = bytes(range(256)) * (rig.pool(PoolName.KV).page_nbytes() // 256)
    for victim in _store_victim(rig, want):
        pristine = victim.read()
        for offset in range(0, len(pristine), max(1, len(pristine) // 97)):
            damaged = bytearray(pristine)
            damaged[offset] ^= 0x01
            victim.write(bytes(damaged))
            rig.pool(PoolName.KV).fill(0)
            if rig.get(PoolName.KV, ["victim"], [1]) == [True]:
                rig.expect(PoolName.KV, 1, want, f"after flipping a bit at offset {offset} of {victim.label}")
        victim.write(pristine)


@pytest.mark.parametrize("damage", ["empty", "halved", "one-byte-short"])
@pytest.mark.hicache_requires("stores_files", reason="the suite must reach the stored files")
def test_a_truncated_object_is_neither_present_nor_readable(hicache_target: Target, damage: str) -> None:
    """A short or empty stored object is absent to exists and get (upstream counts 0-byte files)."""
    with _victim_rig(hicache_target) as rig:
        _truncated_is_absent(rig, damage)


@pytest.mark.parametrize("damage", ["empty", "halved", "one-byte-short"])
@pytest.mark.hicache_requires("stores_objects", reason="the suite must reach the stored objects")
def test_a_truncated_object_in_a_bucket_is_neither_present_nor_readable(
    hicache_target: Target, damage: str
) -> None:
    """An object rewritten short or empty in the bucket is absent to exists and get, as a short file is.

    A GET returns what the object holds now, fewer bytes than were stored: a reader that staged
    anything in the bytes the GET leaves unwritten must not take them for the record."""
    with _victim_rig(hicache_target) as rig:
        _truncated_is_absent(rig, damage)


@pytest.mark.hicache_requires(
    "stores_files", "detects_corruption", reason="the suite must reach the stored files"
)
def test_a_corrupted_object_never_reads_back_as_wrong_bytes(hicache_target: Target) -> None:
    """Bit flips anywhere in a stored object give False or the exact bytes, never garbage."""
    with _victim_rig(hicache_target) as rig:
        _flips_never_read_back(rig)


@pytest.mark.hicache_requires(
    "stores_objects", "detects_corruption", reason="the suite must reach the stored objects"
)
def test_a_corrupted_object_in_a_bucket_never_reads_back_as_wrong_bytes(hicache_target: Target) -> None:
    """Bit flips anywhere in an object in the bucket give False or the exact bytes, never garbage."""
    with _victim_rig(hicache_target) as rig:
        _flips_never_read_back(rig)


@pytest.mark.parametrize("misalign", [0, 64], ids=["aligned-base", "misaligned-base"])
@pytest.mark.hicache_requires("direct_io_modes")
def test_a_704_byte_page_under_o_direct_is_stored_or_cleanly_refused(
    hicache_target: Target, misalign: int
) -> None:
    """Upstream's O_DIRECT defect: a failed 704-byte write left a 0-byte file that exists counted."""
    modes = sorted(hicache_target.caps.direct_io_modes)
    if PoolName.SWA not in hicache_target.caps.side_pools - hicache_target.caps.shaped_side_pools:
        pytest.skip(f"backend {hicache_target.spec.name!r} does not declare pool swa in a generic shape")
    geometry = load_geometry(LIMIT_FAMILY)
    for mode in modes:
        moded = hicache_target.with_mode(mode)
        pools = {
            geometry.kv.name: moded.build_pool(geometry.kv, layout="page_first", page_num=2),
            PoolName.SWA: MultiRegionHostPool(
                regions=[(torch.float32, (64,)), (torch.bfloat16, (224,))],
                page_size=1,
                page_num=2,
                dtype=torch.uint8,
                misalign=misalign,
            ),
        }
        with moded.storage() as storage, Rig(moded, geometry, storage, pools=pools) as rig:
            assert rig.pool(PoolName.SWA).page_nbytes() == 704
            rig.put(PoolName.SWA, 0, bytes(range(176)) * 4)
            (stored,) = rig.set(PoolName.SWA, ["odd"], [0])
            hits = rig.backend.batch_exists_v2(
                ["odd"], [rig.transfer(PoolName.SWA, ["odd"], [0])]
            ).extra_pool_hit_pages
            if stored:
                got = rig.get(PoolName.SWA, ["odd"], [1])
                assert got == [True], f"{mode}: the set answered True, then get answered {got}"
                rig.expect(PoolName.SWA, 1, bytes(range(176)) * 4, mode)
            else:
                assert dict(hits).get("swa", 0) == 0, f"{mode}: a failed write is reported as a hit"


READ_PATH_FAMILY = "llama3_mha"
"""Its KV page is 2 KiB a token: 4, 8 or 16 KiB at 2, 4 or 8 tokens a page."""
BATCH_CLASSES: dict[str, tuple[int, int, tuple[int, ...]]] = {
    "one page": (1, 1, (2, 4, 8)),
    "a few": (2, 6, (2, 4, 8)),
    "chunked, up to 128": (96, 128, (8,)),
    "past 128": (129, 144, (8,)),
    "past 512": (513, 530, (2,)),
}
"""Batch size classes a backend may read differently: ``(fewest pages, most pages, tokens a page
drawn from)``. The last three move 1.5-2.3 MiB, past any cut of a read into pipelined chunks (the
reference backend cuts at 1-1.4 MiB, into chunks of 512 KiB at least) and past 128 and 512 pages
(SGLang's controller batch, a 32K context's span); their pages are bounded so an example stays
a fraction of a second."""
DAMAGES = ("bit-flipped", "zeroed", "truncated")
FLIP_EVERY = 61
"""A bit-flipped record has one bit flipped every this many bytes of what its write changed, so
every part of it (header, payload, padding) is hit whatever its layout."""


def _contents(storage: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in storage.rglob("*") if p.is_file()}


def _changed_ranges(before: dict[Path, bytes], storage: Path) -> dict[Path, list[tuple[int, int]]]:
    """Per file, the byte ranges a write created, appended or rewrote, merged where they touch."""
    out: dict[Path, list[tuple[int, int]]] = {}
    for path, now in _contents(storage).items():
        old = before.get(path, b"")
        if now == old:
            continue
        span = min(len(old), len(now))
        if span:
            a = np.frombuffer(old[:span], dtype=np.uint8)
            b = np.frombuffer(now[:span], dtype=np.uint8)
            marks = np.flatnonzero(a != b)
        else:
            marks = np.empty(0, dtype=np.int64)
        ranges: list[tuple[int, int]] = []
        for at in marks.tolist():
            if ranges and at == ranges[-1][1]:
                ranges[-1] = (ranges[-1][0], at + 1)
            else:
                ranges.append((at, at + 1))
        if len(now) > len(old):
            ranges.append((len(old), len(now)))
        out[path] = ranges
    return out


def _damage(path: Path, ranges: list[tuple[int, int]], damage: str) -> None:
    """Flip, zero or cut off what one write changed in ``path``; no other byte of it moves."""
    if damage == "truncated":
        first, end = ranges[-1]
        os.truncate(path, first + (end - first) // 2)
        return
    data = bytearray(path.read_bytes())
    for first, end in ranges:
        if damage == "zeroed":
            data[first:end] = bytes(end - first)
        else:
            for at in [*range(first, end, FLIP_EVERY), end - 1]:
                data[at] ^= 0x01
    path.write_bytes(bytes(data))


def _batch_pages(nbytes: int, count: int, seed: int) -> list[bytes]:
    """``count`` pages of distinct bytes (no two alike, so a page served for another shows)."""
    rng = np.random.default_rng(seed)
    return [rng.bytes(nbytes) for _ in range(count)]


@given(
    size_class=st.sampled_from(sorted(BATCH_CLASSES)),
    data=st.data(),
    where=st.sampled_from(["first", "middle", "last"]),
    damage=st.sampled_from(DAMAGES),
    misalign=st.sampled_from([0, MISALIGNMENT]),
    seed=st.integers(0, 2**32 - 1),
)
@pytest.mark.hicache_requires("stores_files", reason="the suite must reach the stored files")
def test_a_damaged_record_in_a_batch_of_any_size_is_never_served_and_its_neighbours_are_exact(
    hicache_target: Target,
    size_class: str,
    data: st.DataObject,
    where: str,
    damage: str,
    misalign: int,
    seed: int,
) -> None:
    """A damaged record in a batch of any size is never served as data; its neighbours read back exact.

    One record bit-flipped, zeroed or cut short, at the batch's first, a middle or its last page,
    in a batch of each size a read may take another path for, in every I/O mode: the get answers
    False for it (or its exact bytes) and True with the exact bytes for every other page. A backend
    that checks what it reads on one path and not on another (a pipelined read of many pages, its
    middle chunks) serves garbage only there. A cut record is also absent to exists, so the hit
    ends just before it. Flips and zeros need ``detects_corruption``; a cut record does not, since
    its size shows it."""
    caps = hicache_target.caps
    if damage != "truncated" and not caps.detects_corruption:
        damage = "truncated"  # a backend that claims no checksum is held to what a size shows
    low, high, tokens = BATCH_CLASSES[size_class]
    count = data.draw(st.integers(low, high), label="pages")
    page_tokens = data.draw(st.sampled_from(tokens), label="tokens a page")
    mode = data.draw(st.sampled_from(sorted(caps.io_modes)), label="I/O mode")
    victim = {"first": 0, "middle": count // 2, "last": count - 1}[where]
    moded = hicache_target.with_mode(mode)
    geometry = load_geometry(READ_PATH_FAMILY)
    pools = {
        PoolName.KV: moded.build_pool(
            geometry.kv.with_page_size(page_tokens), layout="page_first", misalign=misalign, page_num=count
        )
    }
    keys = [f"batch-{i}" for i in range(count)]
    with moded.storage() as storage, Rig(moded, geometry, storage, pools=pools) as rig:
        nbytes = rig.pool(PoolName.KV).page_nbytes()
        pages = _batch_pages(nbytes, count, seed)
        note(f"{count} pages of {nbytes} bytes ({count * nbytes} in all), {mode}, victim page {victim}")
        for page, payload_bytes in enumerate(pages):
            rig.put(PoolName.KV, page, payload_bytes)
        rest = [i for i in range(count) if i != victim]
        if rest:
            stored = rig.set(PoolName.KV, [keys[i] for i in rest], rest)
            assert stored == [True] * len(rest), f"the batch around the victim was not stored: {stored}"
        before = _contents(storage)
        assert rig.set(PoolName.KV, [keys[victim]], [victim]) == [True], "the victim was not stored"
        changed = _changed_ranges(before, storage)
        assert changed, f"storing an entry changed no file under {storage}, though stores_files is declared"
        if damage == "truncated" and not all(r[-1][0] >= len(before.get(p, b"")) for p, r in changed.items()):
            # cutting a file the write rewrote in place would cut other records with the victim's
            if not caps.detects_corruption:
                pytest.skip(
                    f"backend {hicache_target.spec.name!r} writes records in place: none can be cut alone"
                )
            damage = "zeroed"
        for path, ranges in changed.items():
            _damage(path, ranges, damage)
        what = f"{damage} record at page {victim} of {count} ({size_class}, {mode}, {nbytes}-byte pages)"
        if damage == "truncated":
            run = rig.backend.batch_exists(keys) if caps.v1_kv else None
            if run is None:
                run = rig.backend.batch_exists_v2(keys, []).kv_hit_pages
            assert run == victim, f"{what}: exists counts {run} leading pages, not {victim}"
        rig.pool(PoolName.KV).fill(0)
        got = rig.get(PoolName.KV, keys, range(count))
        wrong = [i for i, ok in enumerate(got) if i != victim and not ok]
        assert not wrong, f"{what}: pages {wrong[:8]} of the batch were refused with it"
        if got[victim]:
            rig.expect(PoolName.KV, victim, pages[victim], f"{what}: served as data")
        for page in rest:
            rig.expect(PoolName.KV, page, pages[page], what)
