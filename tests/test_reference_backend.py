"""The reference backend's decisions, transfer assembly and on-disk discipline, on real NIXL files."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import torch

from conformance.doubles.hostpools import MISALIGNMENT
from conformance.doubles.kv_pools import MHAHostPool
from conformance.doubles.side_pools import MultiRegionHostPool
from conformance.model.interface import HiCacheStorageConfig, PoolHitPolicy, PoolName, PoolTransfer
from conformance.model.oracle import expected_exists_v2
from reference_backend import staging
from reference_backend.backend import NixlBackend
from reference_backend.config import DIRECT_IO_ENV, BackendConfig, direct_io_refusal
from reference_backend.descriptors import file_rows
from reference_backend.interface import aligned_empty
from reference_backend.log import (
    FOLDER,
    HAS_SUM,
    SUFFIX,
    Entry,
    block_local,
    coarse_tick,
    commit_size,
    encode_commit,
    segment_id,
)
from reference_backend.record import BLOCK, pad

PAGES = 4


def config(direct: bool = False, **extra) -> HiCacheStorageConfig:
    return HiCacheStorageConfig(
        0, 1, 0, 1, 0, 1, False, False, True, "org/model", extra_config={"use_direct_io": direct, **extra}
    )


def kv_pool(misalign: int = 0, head_dim: int = 256) -> MHAHostPool:
    return MHAHostPool(
        layer_num=1,
        head_num=1,
        head_dim=head_dim,
        page_size=8,
        page_num=PAGES,
        dtype=torch.bfloat16,
        layout="page_first",
        misalign=misalign,
    )


def side_pool(misalign: int = 0) -> MultiRegionHostPool:
    return MultiRegionHostPool(
        regions=[(torch.float32, (64,)), (torch.bfloat16, (224,))],
        page_size=1,
        page_num=PAGES,
        dtype=torch.uint8,
        misalign=misalign,
    )


@pytest.fixture
def make(tmp_path: Path):
    made: list[NixlBackend] = []

    def build(direct: bool = False, kv: MHAHostPool | None = None, **side) -> NixlBackend:
        backend = NixlBackend(config(direct), tmp_path)
        backend.register_mem_pool_host(kv or kv_pool())
        for name, pool in side.items():
            backend.register_mem_host_pool_v2(pool, PoolName(name))
        made.append(backend)
        return backend

    yield build
    for backend in made:
        backend.close()


def indices(pool, pages) -> torch.Tensor:
    return torch.tensor([p * pool.page_size + t for p in pages for t in range(pool.page_size)])


@pytest.mark.parametrize(
    ("direct", "misalign", "head_dim", "expected"),
    [
        (True, 0, 256, "zero_copy"),
        (True, MISALIGNMENT, 256, "staged"),
        (True, 0, 32, "staged"),
        (False, MISALIGNMENT, 32, "zero_copy"),
        (False, 0, 256, "zero_copy"),
    ],
)
def test_pages_move_in_place_only_where_o_direct_allows(make, direct, misalign, head_dim, expected) -> None:
    backend = make(direct, kv=kv_pool(misalign, head_dim))
    assert backend.transfer_mode(PoolName.KV) == expected


def test_staging_buffers_are_raw_bytes_owned_by_one_pool_and_one_direction(make) -> None:
    kv, swa, idx = kv_pool(MISALIGNMENT), side_pool(), side_pool(MISALIGNMENT)
    backend = make(True, kv=kv, swa=swa, indexer=idx)
    keys = ["a", "b"]
    transfers = [
        PoolTransfer(name=n, host_indices=indices(p, [0, 1]), keys=keys)
        for n, p in ((PoolName.KV, kv), (PoolName.SWA, swa), (PoolName.INDEXER, idx))
    ]
    assert all(all(v) for v in backend.batch_set_v2(transfers).values())
    assert all(all(v) for v in backend.batch_get_v2(transfers).values())
    buffers = [buf for lane in backend.lanes.values() for buf, _ in lane.staging.held.values()]
    assert len(buffers) == 6
    assert all(b.dtype is torch.uint8 for b in buffers)
    assert len({b.data_ptr() for b in buffers}) == 6


def test_a_multi_pool_batch_is_one_nixl_transfer(make) -> None:
    kv, swa = kv_pool(), side_pool()
    backend = make(True, kv=kv, swa=swa)
    lane = backend.lanes["WRITE"]
    calls = []
    real = lane.agent.initialize_xfer

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    lane.agent.initialize_xfer = counting
    try:
        result = backend.batch_set_v2(
            [
                PoolTransfer(name=PoolName.KV, host_indices=indices(kv, range(PAGES)), keys=list("abcd")),
                PoolTransfer(name=PoolName.SWA, host_indices=indices(swa, range(PAGES)), keys=list("abcd")),
            ]
        )
    finally:
        del lane.agent.initialize_xfer
    assert result == {"kv": [True] * 4, "swa": [True] * 4}
    assert len(calls) == 1
    dram = calls[0][1]
    # zero-copy KV: K and V per page; staged SWA: its records back to back, one run of whole blocks
    assert dram.descCount() == PAGES * 2 + 1


def test_descriptors_place_regions_at_the_records_offsets(make) -> None:
    kv = kv_pool()
    backend = make(False, kv=kv)
    items = backend.plan("kv", ["x"], indices(kv, [2]))
    for item in items:
        item.fd, item.offset = 99, 8192
    backend.stage(backend.lanes["WRITE"], items, writing=True)
    dram, file = file_rows(items, writing=True)
    layout = backend.planner.pools["kv"].layout
    ptrs, sizes = kv.get_page_buffer_meta(indices(kv, [2]))
    assert [tuple(r) for r in file.tolist()] == [(8192 + o, s, 99) for o, s in zip(layout.offsets, sizes)]
    assert [r[0] for r in dram.tolist()] == ptrs


def test_a_staged_pools_records_move_as_one_run_of_whole_blocks(make) -> None:
    swa = side_pool(MISALIGNMENT)
    backend = make(True, swa=swa)
    assert backend.transfer_mode(PoolName.SWA) == "staged"
    items = backend.plan("swa", list("abc"), indices(swa, [0, 1, 2]))
    for n, item in enumerate(items):
        item.fd, item.offset = 99, 4096 + n * item.pool.layout.size
    backend.stage(backend.lanes["WRITE"], items, writing=True)
    dram, file = file_rows(items, writing=True)
    assert [tuple(r) for r in file.tolist()] == [(4096, 4096, 99)]
    assert dram.tolist()[0][1] == 4096


def test_a_staged_write_carries_no_byte_but_its_pages(make, tmp_path: Path, monkeypatch) -> None:
    """Region padding and the block a write rounds up to are zeros in the file, whatever the
    allocator left in the staging buffer and whatever a larger batch staged before."""

    def poisoned(shape, dtype, misalign=0, alignment=4096):
        return aligned_empty(shape, dtype, misalign, alignment).fill_(0xA5)

    monkeypatch.setattr(staging, "aligned_empty", poisoned)
    swa = side_pool(MISALIGNMENT)
    backend = make(True, swa=swa)
    assert backend.transfer_mode(PoolName.SWA) == "staged"
    layout = backend.planner.pools["swa"].layout
    ends = [(off + size, off + pad(size)) for off, size in zip(layout.offsets, layout.region_sizes)]
    assert any(a < b for a, b in ends), "the pool's regions are padded"
    for keys in (list("abcd"), ["e"]):  # the second batch's block holds three of the first's slots
        transfer = PoolTransfer(name=PoolName.SWA, host_indices=indices(swa, range(len(keys))), keys=keys)
        assert backend.batch_set_v2([transfer])["swa"] == [True] * len(keys)
    digests = [backend.digest("swa", k) for k in "abcde"]
    for key, loc in zip("abcde", backend.log.locate(digests)):
        assert loc is not None
        with open(loc.segment.path, "rb") as f:
            f.seek(loc.offset)
            record = f.read(pad(loc.size, BLOCK) if key == "e" else loc.size)
        gaps = [record[a:b] for a, b in ends] + [record[loc.size :]]
        assert all(gap == bytes(len(gap)) for gap in gaps), f"record {key!r} carries stray bytes"


def segments(root: Path) -> list[Path]:
    return sorted((root / FOLDER).glob(f"*{SUFFIX}"))


def test_a_batch_is_one_extent_of_one_segment_file(make, tmp_path: Path) -> None:
    kv, swa = kv_pool(), side_pool()
    backend = make(False, kv=kv, swa=swa)
    keys = list("abcd")
    transfers = [
        PoolTransfer(name=PoolName.KV, host_indices=indices(kv, range(PAGES)), keys=keys),
        PoolTransfer(name=PoolName.SWA, host_indices=indices(swa, range(PAGES)), keys=keys),
    ]
    assert all(all(v) for v in backend.batch_set_v2(transfers).values())
    (segment,) = segments(tmp_path)
    kv_run, swa_run = (PAGES * backend.planner.pools[n].layout.size for n in ("kv", "swa"))
    assert segment.stat().st_size == commit_size(2 * PAGES) + pad(kv_run, BLOCK) + pad(swa_run, BLOCK)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [segment]


def test_a_truncated_segment_hides_exactly_the_records_past_its_end(make, tmp_path: Path) -> None:
    kv = kv_pool()
    backend = make(False, kv=kv)
    assert backend.batch_set_v1(["good", "short"], indices(kv, [0, 1])) == [True, True]
    (segment,) = segments(tmp_path)
    os.truncate(segment, segment.stat().st_size - 100)
    assert backend.batch_exists(["good", "short"]) == 1
    assert backend.batch_get_v1(["good", "short"], indices(kv, [2, 3])) == [True, False]
    assert backend.batch_set_v1(["after"], indices(kv, [0])) == [True]
    assert len(segments(tmp_path)) == 2, "a damaged segment must not be appended to"
    assert backend.batch_get_v1(["after", "short"], indices(kv, [2, 3])) == [True, False]


def test_an_uncommitted_extent_is_never_an_entry(make, tmp_path: Path) -> None:
    """A writer killed between its transfer and its commit leaves bytes no reader indexes."""
    kv = kv_pool()
    backend = make(False, kv=kv)
    assert backend.batch_set_v1(["a"], indices(kv, [0])) == [True]
    backend.log.commit = lambda *args: False
    assert backend.batch_set_v1(["b"], indices(kv, [1])) == [False]
    fresh = make(False, kv=kv_pool())
    assert fresh.stored_object_count() == 1
    assert fresh.batch_exists(["a", "b"]) == 1


def test_a_damaged_commit_hides_its_batch_from_a_new_reader(make, tmp_path: Path) -> None:
    kv = kv_pool()
    backend = make(False, kv=kv)
    assert backend.batch_set_v1(["a"], indices(kv, [0])) == [True]
    (segment,) = segments(tmp_path)
    raw = bytearray(segment.read_bytes())
    raw[40] ^= 0x01  # inside the first commit's entry table
    segment.write_bytes(raw)
    assert make(False, kv=kv_pool()).batch_exists(["a"]) == 0


@pytest.mark.parametrize("lie", ["checksum", "geometry"])
def test_a_record_that_is_not_what_its_commit_promised_is_refused(make, tmp_path: Path, lie: str) -> None:
    """A commit naming bytes it does not describe (a misdirected write) never yields them."""
    kv = kv_pool()
    backend = make(False, kv=kv)
    assert backend.batch_set_v1(["a"], indices(kv, [0])) == [True]
    (segment,) = segments(tmp_path)
    layout = backend.planner.pools["kv"].layout
    head = commit_size(1)
    record = segment.read_bytes()[head : head + layout.size]
    tag, checksum = (layout.tag, 12345) if lie == "checksum" else (layout.tag ^ 1, 0)
    entry = Entry(backend.digest("kv", "b"), head, layout.size, tag, HAS_SUM, checksum)
    name = f"forged.{backend.log.tenant}{SUFFIX}"  # a segment of this deployment (tenant)
    forged = encode_commit([entry], head + layout.size, seq=1, segment=segment_id(name))
    (tmp_path / FOLDER / name).write_bytes(forged + record)
    assert backend.batch_exists(["b"]) == (1 if lie == "checksum" else 0)
    assert backend.batch_get_v1(["b"], indices(kv, [1])) == [False]


def test_the_newest_commit_wins_across_instances(make) -> None:
    kv1, kv2 = kv_pool(), kv_pool()
    kv1.fill(0x11)
    kv2.fill(0x22)
    first, second = make(False, kv=kv1), make(False, kv=kv2)
    assert first.batch_set_v1(["k"], indices(kv1, [0])) == [True]
    assert second.batch_exists(["k"]) == 1, "a live instance sees another's commit"
    assert second.batch_set_v1(["k"], indices(kv2, [0])) == [True]
    assert first.batch_get_v1(["k"], indices(kv1, [1])) == [True]
    assert kv1.read_page(kv1.page_size) == b"\x22" * kv1.page_nbytes()


def test_clear_by_another_instance_hides_entries_and_writing_continues(make, tmp_path: Path) -> None:
    kv = kv_pool()
    first, second = make(False, kv=kv), make(False, kv=kv_pool())
    assert first.batch_set_v1(["a"], indices(kv, [0])) == [True]
    assert second.clear()
    assert first.batch_exists(["a"]) == 0
    assert first.batch_set_v1(["b"], indices(kv, [1])) == [True]
    assert second.batch_exists(["b"]) == 1
    assert len(segments(tmp_path)) == 1


def test_a_segment_created_in_the_tick_of_the_last_listing_is_still_found(make, tmp_path: Path) -> None:
    """A second folder change that keeps the stamp a reader listed under (same clock tick) must not
    hide the new segment: a listing is trusted only once the clock has moved past that stamp."""
    kv = kv_pool()
    first, reader = make(False, kv=kv), make(False, kv=kv_pool())
    assert first.batch_set_v1(["a"], indices(kv, [0])) == [True]
    folder = tmp_path / FOLDER
    tick = time.time_ns() + 10_000_000_000 + 123  # a stamp no clock has reached: every listing is racy
    os.utime(folder, ns=(tick, tick))
    assert reader.batch_exists(["a"]) == 1
    late = make(False, kv=kv)
    assert late.batch_set_v1(["b"], indices(kv, [1])) == [True]
    os.utime(folder, ns=(tick, tick))  # the change kept the stamp the reader listed under
    assert len(segments(tmp_path)) == 2
    assert reader.batch_exists(["b"]) == 1, "a segment made in the listed tick was missed"


def test_the_coarse_tick_is_truncated_as_far_as_a_stamp_may_have_been() -> None:
    second = 1_000_000_000
    assert coarse_tick(1_700_000_000 * second) % second == 0, "whole-second stamps: a whole-second tick"
    assert coarse_tick(1_700_000_000 * second + 120_000_000) % 10_000_000 == 0
    assert abs(coarse_tick(1_700_000_000 * second + 123_456_789) - time.time_ns()) < second


MOUNTINFO = """\
22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 253:16 / /shared rw,relatime shared:9 - gfs2 /dev/mapper/cluster-lv rw
41 22 253:32 / /ocfs rw,relatime shared:10 - ocfs2 /dev/sdc rw
42 22 0:53 / /mnt/nfs rw,relatime shared:11 - nfs4 server:/export rw
"""


def test_only_a_block_device_file_system_that_is_not_a_cluster_one_is_stamped_by_this_kernel() -> None:
    """GFS2 and OCFS2 sit on block devices, yet each node stamps with its own clock: they get the
    one-second listing rule, as NFS does; so does a device no mount names."""
    assert block_local(os.makedev(253, 0), MOUNTINFO)
    assert not block_local(os.makedev(253, 16), MOUNTINFO)
    assert not block_local(os.makedev(253, 32), MOUNTINFO)
    assert not block_local(os.makedev(0, 53), MOUNTINFO)
    assert not block_local(os.makedev(8, 1), MOUNTINFO)


def test_a_writer_starts_a_new_segment_at_the_configured_size(tmp_path: Path) -> None:
    kv = kv_pool(head_dim=8192)  # 256 KiB pages: four fill a 1 MiB segment
    backend = NixlBackend(config(segment_mib=1), tmp_path)
    backend.register_mem_pool_host(kv)
    try:
        for page in range(PAGES):
            assert backend.batch_set_v1([f"p{page}"], indices(kv, [page])) == [True]
    finally:
        backend.close()
    assert len(segments(tmp_path)) >= 2
    assert all(s.stat().st_size <= 1 << 20 for s in segments(tmp_path))
    reopened = NixlBackend(config(), tmp_path)
    reopened.register_mem_pool_host(kv)
    try:
        assert reopened.batch_get_v1([f"p{p}" for p in range(PAGES)], indices(kv, range(PAGES))) == [True] * 4
    finally:
        reopened.close()


def test_a_finished_segment_whose_records_were_all_superseded_is_deleted(tmp_path: Path) -> None:
    """Overwrites append; without reclaiming dead segments the store would grow without bound."""
    kv = kv_pool(head_dim=8192)  # three 257 KiB extents fill a 1 MiB segment
    backend = NixlBackend(config(segment_mib=1), tmp_path)
    backend.register_mem_pool_host(kv)
    try:
        for round_ in range(3):
            for page in range(PAGES):
                kv.write_page(page * kv.page_size, bytes([round_ * 16 + page]) * kv.page_nbytes())
                assert backend.batch_set_v1([f"p{page}"], indices(kv, [page])) == [True]
        assert len(segments(tmp_path)) == 2, "12 extents, 4 live, need two segments"
        assert backend.stored_object_count() == PAGES
    finally:
        backend.close()
    reader = NixlBackend(config(), tmp_path)
    reader.register_mem_pool_host(kv)
    try:
        kv.fill(0)
        assert reader.batch_get_v1([f"p{p}" for p in range(PAGES)], indices(kv, range(PAGES))) == [True] * 4
        for page in range(PAGES):
            assert kv.read_page(page * kv.page_size) == bytes([32 + page]) * kv.page_nbytes()
    finally:
        reader.close()


def test_a_closed_writer_seals_its_segment_and_readers_stop_watching_it(make, tmp_path: Path) -> None:
    kv = kv_pool()
    writer = make(False, kv=kv)
    assert writer.batch_set_v1(["a"], indices(kv, [0])) == [True]
    reader = make(False, kv=kv_pool())
    assert reader.batch_exists(["a"]) == 1
    (watched,) = reader.log._segments.values()
    assert not watched.sealed, "a live writer's segment may still grow"
    writer.close()
    assert reader.batch_exists(["a"]) == 1
    assert watched.sealed


def test_clear_removes_every_entry(make, tmp_path: Path) -> None:
    kv = kv_pool()
    backend = make(False, kv=kv)
    assert backend.batch_set_v1(list("abc"), indices(kv, [0, 1, 2])) == [True] * 3
    assert backend.clear()
    assert backend.batch_exists(list("abc")) == 0
    assert backend.stored_object_count() == 0
    assert segments(tmp_path) == []


def test_a_closed_backend_refuses_work(make) -> None:
    kv = kv_pool()
    backend = make(False, kv=kv)
    backend.close()
    assert backend.batch_set_v1(["a"], indices(kv, [0])) == [False]


@pytest.mark.parametrize(
    ("extra", "direct", "queue"),
    [
        ({"use_direct_io": True}, True, "aio"),
        ({"plugin": {"posix": {"active": True, "use_uring": "true"}}}, True, "uring"),
        ({"use_uring": "true"}, True, "uring"),
        ({"queue": "uring", "use_direct_io": "false"}, False, "uring"),
        ({}, True, "aio"),
    ],
)
def test_upstream_extra_config_keys_keep_their_meaning(
    extra, direct, queue, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.delenv(DIRECT_IO_ENV, raising=False)
    settings = BackendConfig.from_extra(extra, tmp_path)
    assert (settings.direct_io, settings.queue, settings.storage_dir) == (direct, queue, tmp_path)


@pytest.mark.parametrize(
    ("extra", "env", "direct", "source"),
    [
        ({}, None, True, "default"),
        ({}, "0", False, DIRECT_IO_ENV),
        ({}, "n", False, DIRECT_IO_ENV),
        ({}, "1", True, DIRECT_IO_ENV),
        ({"use_direct_io": "false"}, "1", False, "extra_config"),
        ({"use_direct_io": True}, "0", True, "extra_config"),
    ],
)
def test_o_direct_is_on_unless_asked_off_as_hicache_nixl_reads_it(
    extra, env, direct, source, tmp_path: Path, monkeypatch
) -> None:
    """HiCacheNixl's order (the key, then SGLANG_HICACHE_NIXL_USE_DIRECT_IO, then on), so one
    extra_config selects one I/O mode in either backend; the source is kept for the startup log."""
    if env is None:
        monkeypatch.delenv(DIRECT_IO_ENV, raising=False)
    else:
        monkeypatch.setenv(DIRECT_IO_ENV, env)
    settings = BackendConfig.from_extra(extra, tmp_path)
    assert (settings.direct_io, settings.direct_io_source) == (direct, source)
    assert f"O_DIRECT={'on' if direct else 'off'} (chosen by {source})" in settings.summary("m")


def test_a_nonsense_o_direct_environment_variable_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(DIRECT_IO_ENV, "maybe")
    with pytest.raises(ValueError, match=DIRECT_IO_ENV):
        BackendConfig.from_extra({}, tmp_path)


def test_the_o_direct_probe_passes_on_this_file_system_and_leaves_nothing(tmp_path: Path) -> None:
    assert direct_io_refusal(tmp_path / "store") is None
    assert list((tmp_path / "store").iterdir()) == []


def test_sglangs_dynamic_loader_kwargs_and_env_pick_the_folder(tmp_path: Path, monkeypatch) -> None:
    assert BackendConfig.from_extra({}, {"storage_dir": str(tmp_path)}).storage_dir == tmp_path
    monkeypatch.setenv("SGLANG_HICACHE_NIXL_BACKEND_STORAGE_DIR", str(tmp_path / "env"))
    assert BackendConfig.from_extra({}, {}).storage_dir == tmp_path / "env"


def test_only_the_posix_plugin_is_accepted(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="POSIX"):
        BackendConfig.from_extra({"plugin": {"gds": {"active": True}}}, tmp_path)


@pytest.mark.parametrize("sizes", [(0, 4), (2, 0), (-1, 4)])
def test_block_groups_without_positive_sizes_is_refused_as_the_oracle_refuses_it(make, sizes) -> None:
    backend = make(swa=side_pool())
    group_pages, block_pages = sizes
    t = PoolTransfer(
        PoolName.SWA,
        keys=["a"],
        hit_policy=PoolHitPolicy.BLOCK_GROUPS,
        group_pages=group_pages,
        block_pages=block_pages,
    )
    with pytest.raises(ValueError, match="BLOCK_GROUPS needs positive group_pages and block_pages"):
        backend.batch_exists_v2(["a"], [t])
    with pytest.raises(ValueError, match="BLOCK_GROUPS needs positive group_pages and block_pages"):
        expected_exists_v2(["a"], [t], lambda pool, key: True)


@pytest.mark.parametrize(
    ("spelling", "size"),
    [(1048576, 1 << 20), ("1048576", 1 << 20), ("200G", 200 * 10**9), ("25.6k", 25600), ("1Gi", 1 << 30)],
)
def test_max_size_reads_as_hicache_file_spells_it(spelling, size) -> None:
    from reference_backend.capacity import parse_size

    assert parse_size(spelling) == size


@pytest.mark.parametrize("typo", ["1.5Gi", "200g", "lots", -1])
def test_a_max_size_that_is_not_a_size_is_refused(typo) -> None:
    from reference_backend.capacity import parse_size

    with pytest.raises(ValueError):
        parse_size(typo)


@pytest.mark.parametrize(("policy", "victim"), [("chain", "b"), ("lru", "a"), ("fifo", "a")])
def test_a_prefix_read_keeps_its_head_under_the_chain_policy_alone(tmp_path: Path, policy, victim) -> None:
    """Chains a, b and c, each in a segment of its own; c is then read naming a as its prefix.
    The chain policy counts a as used with c, so b's segment goes first; lru and fifo take a's."""
    from conformance.model.interface import HiCacheStorageExtraInfo

    pool = kv_pool()
    backend = NixlBackend(config(max_size="1Mi", eviction_policy=policy, pin_seconds=0), tmp_path)
    try:
        backend.register_mem_pool_host(pool)
        chains = {name: [f"{name}{i}" for i in range(PAGES)] for name in "abc"}
        for keys in chains.values():
            assert backend.batch_set_v1(keys, indices(pool, range(PAGES))) == [True] * PAGES
            assert backend.log.rotate()
        info = HiCacheStorageExtraInfo(prefix_keys=chains["a"])
        assert backend.batch_get_v1(chains["c"], indices(pool, range(PAGES)), info) == [True] * PAGES
        assert backend.capacity is not None
        chosen = backend.capacity._victim(set(), rotate=False)
        assert chosen is not None
        held = set(backend.log.families_in(chosen))
        assert held == {backend.digest(str(PoolName.KV), k)[:8] for k in chains[victim]}
    finally:
        backend.close()


@pytest.mark.parametrize("direct", [False, True], ids=["buffered", "o_direct"])
def test_overwrites_leave_the_store_near_its_live_bytes_without_a_budget(tmp_path: Path, direct) -> None:
    """Half the entries overwritten twice: finished segments less than half live are copied
    forward a batch's worth per write and deleted, so the files stay near the live bytes (they
    reached 1.5-1.8 times before), and every entry reads back its newest version."""
    pool = kv_pool()
    backend = NixlBackend(config(direct, segment_mib=1), tmp_path)
    try:
        backend.register_mem_pool_host(pool)
        page = torch.arange(PAGES * pool.page_size)
        every = [f"e{i}" for i in range(512)]
        versions = {}
        for round_, keys in enumerate([every, every[::2], every[::2], every[::2]]):
            for lo in range(0, len(keys), PAGES):
                batch = keys[lo : lo + PAGES]
                for slot in range(PAGES):
                    stamp = bytes([round_ + 1, slot]) * (pool.page_nbytes() // 2)
                    pool.write_page(slot * pool.page_size, stamp)
                assert backend.batch_set_v1(batch, page[: len(batch) * pool.page_size]) == [True] * len(batch)
                versions.update({k: (round_ + 1, slot) for slot, k in enumerate(batch)})
        live = sum(backend.log.held(s) for s in backend.log.segments())
        files = sum(p.stat().st_size for p in (tmp_path / "segments").glob("*.seg"))
        assert files <= 1.3 * live, f"{files / live:.2f} bytes on disk per live byte"
        for lo in range(0, len(every), PAGES):
            batch = every[lo : lo + PAGES]
            assert backend.batch_get_v1(batch, page[: len(batch) * pool.page_size]) == [True] * len(batch)
            for slot, key in enumerate(batch):
                assert pool.read_page(slot * pool.page_size)[:2] == bytes(versions[key])
    finally:
        backend.close()
