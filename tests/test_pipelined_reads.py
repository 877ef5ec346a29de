"""Verified reads of many pages go as several transfers, each checked while the rest move
(``NixlBackend.read_pipelined``: posted at once under O_DIRECT, checked on a helper thread while
the next one copies when buffered): results stay exact per key, corruption anywhere in the batch
is caught for that key alone, and staged pools still travel beside them. A buffered write of many
pages checksums them on the same helper while it copies."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from conformance.doubles.kv_pools import MHAHostPool
from conformance.doubles.side_pools import MultiRegionHostPool
from conformance.model.interface import HiCacheStorageConfig, PoolName, PoolTransfer
from reference_backend.backend import BUFFERED_SHARES, DIRECT_SHARES, NixlBackend
from reference_backend.transfer import cut

PAGES = 4 * len(DIRECT_SHARES)  # twice the pipelining threshold: several pages a transfer


def pools() -> tuple[MHAHostPool, MultiRegionHostPool]:
    kv = MHAHostPool(
        layer_num=1,
        head_num=1,
        head_dim=256,
        page_size=8,
        page_num=PAGES,
        dtype=torch.bfloat16,
        layout="page_first",
    )
    side = MultiRegionHostPool(
        regions=[(torch.float32, (64,)), (torch.bfloat16, (224,))],
        page_size=1,
        page_num=PAGES,
        dtype=torch.uint8,
    )
    gen = torch.Generator().manual_seed(0)
    for pool in (kv, side):
        for buf in pool.backing():
            flat = buf.view(torch.uint8).reshape(-1)
            flat.copy_(torch.randint(0, 256, (flat.numel(),), dtype=torch.uint8, generator=gen))
    return kv, side


def transfers(kv: MHAHostPool, keys: list[str]) -> list[PoolTransfer]:
    return [
        PoolTransfer(name=PoolName.KV, keys=keys, host_indices=torch.arange(len(keys) * kv.page_size)),
        PoolTransfer(name=PoolName.MAMBA, keys=keys, host_indices=torch.arange(len(keys))),
    ]


def store(root: Path, direct: bool) -> tuple[NixlBackend, MHAHostPool, MultiRegionHostPool, list[str]]:
    kv, side = pools()
    cfg = HiCacheStorageConfig(
        0, 1, 0, 1, 0, 1, False, False, True, "m", extra_config={"use_direct_io": direct}
    )
    backend = NixlBackend(cfg, root)
    backend.min_chunk_bytes = 0  # these pages are small: cut them anyway, to watch the chunks
    backend.register_mem_pool_host(kv)
    backend.register_mem_host_pool_v2(side, PoolName.MAMBA)
    assert backend.transfer_mode(PoolName.KV) == "zero_copy"
    assert backend.transfer_mode(PoolName.MAMBA) == ("staged" if direct else "zero_copy")
    keys = [f"k{i}" for i in range(PAGES)]
    assert all(all(v) for v in backend.batch_set_v2(transfers(kv, keys)).values())
    return backend, kv, side, keys


@pytest.fixture(params=[True, False], ids=["o_direct", "buffered"])
def stored(tmp_path: Path, request: pytest.FixtureRequest):
    backend, kv, side, keys = store(tmp_path, direct=request.param)
    yield backend, kv, side, keys, tmp_path
    backend.close()


def test_a_pipelined_read_returns_every_byte(stored) -> None:
    backend, kv, side, keys, _ = stored
    before = kv.snapshot() + side.snapshot()
    kv.fill(0)
    side.fill(0)
    result = backend.batch_get_v2(transfers(kv, keys))
    assert result == {str(PoolName.KV): [True] * PAGES, str(PoolName.MAMBA): [True] * PAGES}
    assert kv.snapshot() + side.snapshot() == before


@pytest.mark.parametrize("victim", [0, PAGES // 2, PAGES - 1], ids=["first", "middle", "last"])
def test_corruption_in_any_transfer_fails_that_key_alone(stored, victim: int) -> None:
    backend, kv, _, keys, _ = stored
    # the record the backend would read: a store retried key by key (a transfer the kernel
    # refused under load) leaves earlier copies of the same bytes in the segment
    (record,) = backend.log.locate([backend.digest(str(PoolName.KV), keys[victim])])
    assert record is not None
    page = kv.read_page(victim * kv.page_size)
    fd = os.open(record.segment.path, os.O_RDWR)
    try:
        assert os.pread(fd, 64, record.offset) == page[:64], "the record holds the page's bytes"
        os.pwrite(fd, bytes([page[0] ^ 0xFF]), record.offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    result = backend.batch_get_v2(transfers(kv, keys))
    assert result[str(PoolName.KV)] == [i != victim for i in range(PAGES)]
    assert result[str(PoolName.MAMBA)] == [True] * PAGES


def test_a_buffered_read_checks_each_chunk_on_a_helper_while_the_next_one_copies(tmp_path: Path) -> None:
    backend, kv, _, keys = store(tmp_path, direct=False)
    lane = backend.lanes["READ"]
    posts: list[int] = []
    checked_on: set[int] = set()
    post, receive = lane.post, backend.receive

    def counting_post(*args):
        posts.append(1)
        return post(*args)

    def noting_receive(item):
        checked_on.add(threading.get_ident())
        return receive(item)

    lane.post = counting_post  # type: ignore[method-assign]
    backend.receive = noting_receive  # type: ignore[method-assign]
    result = backend.batch_get_v2(transfers(kv, keys))
    assert all(all(v) for v in result.values())
    assert len(posts) == len(BUFFERED_SHARES), "one transfer a chunk"
    assert checked_on and threading.get_ident() not in checked_on, "checked on the helper thread"
    backend.close()


@pytest.mark.parametrize("direct", [True, False], ids=["o_direct", "buffered"])
def test_a_batch_too_small_to_gain_from_chunks_moves_in_one_transfer(tmp_path: Path, direct: bool) -> None:
    """Each transfer costs about as much as checking 1.5 MB: 32 pages of 4 KiB are not cut."""
    backend, kv, _, keys = store(tmp_path, direct=direct)
    backend.min_chunk_bytes = NixlBackend.min_chunk_bytes
    lane = backend.lanes["READ"]
    posts: list[int] = []
    post = lane.post

    def counting_post(*args):
        posts.append(1)
        return post(*args)

    lane.post = counting_post  # type: ignore[method-assign]
    result = backend.batch_get_v2(transfers(kv, keys))
    assert all(all(v) for v in result.values())
    assert len(posts) == 1
    backend.close()


def test_a_buffered_write_checksums_on_a_helper_while_it_copies(tmp_path: Path, monkeypatch) -> None:
    import reference_backend.backend as backend_module

    summed_on: set[int] = set()
    checksums = backend_module.checksums

    def noting(items, verify=True):
        summed_on.add(threading.get_ident())
        return checksums(items, verify)

    monkeypatch.setattr(backend_module, "checksums", noting)
    backend, kv, side, keys = store(tmp_path, direct=False)  # stores PAGES pages of two pools
    assert summed_on and threading.get_ident() not in summed_on, "summed on the helper thread"
    before = kv.snapshot() + side.snapshot()
    kv.fill(0)
    side.fill(0)
    assert all(all(v) for v in backend.batch_get_v2(transfers(kv, keys)).values()), "the sums hold"
    assert kv.snapshot() + side.snapshot() == before
    backend.close()


@given(
    sizes=st.lists(st.integers(1, 1 << 24), min_size=1, max_size=200),
    shares=st.sampled_from([DIRECT_SHARES, BUFFERED_SHARES]),
)
def test_a_cut_moves_every_item_once_largest_first_and_no_chunk_past_its_share_by_an_item(
    sizes: list[int], shares: tuple[float, ...]
) -> None:
    items = list(range(len(sizes)))
    chunks = cut(items, shares, sizes.__getitem__)
    assert all(chunks) and len(chunks) <= len(shares)
    assert [i for c in chunks for i in c] == sorted(items, key=lambda i: -sizes[i])
    left = sum(sizes)
    for k, chunk in enumerate(chunks[:-1]):
        held = sum(sizes[i] for i in chunk)
        rest = sum(shares[k:])  # compared as cut compares: held / left against shares[k] / rest
        assert (held - sizes[chunk[-1]]) * rest < left * shares[k] <= held * rest, "closed at its share"
        left -= held
