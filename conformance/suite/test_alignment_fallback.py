"""Every stride and base alignment round-trips, with O_DIRECT and without.

O_DIRECT needs 512-byte-aligned addresses, offsets and lengths. Pages of 704 or 1536 bytes, or
pools whose base pointer sits off a boundary, must be staged instead of failing; aligned pools
should move in place.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from conformance.doubles.hostpools import MISALIGNMENT, HostPoolDouble
from conformance.doubles.kv_pools import MHAHostPool
from conformance.doubles.side_pools import MultiRegionHostPool
from conformance.harness.geometry import ModelGeometry, load_geometry
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import payload_seeds, render_page
from conformance.model.interface import PoolName

PAGES = 6
STRIDES = {
    "4096-multiple": [(torch.float32, (1024,)), (torch.bfloat16, (2048,))],
    "512-multiple": [(torch.float8_e4m3fn, (1024,)), (torch.float32, (128,))],
    "unaligned": [(torch.float32, (64,)), (torch.bfloat16, (224,))],
}
KV_STRIDES = {"4096-multiple": 256, "512-multiple": 32, "unaligned": 11}  # head_dim; 8 bf16 tokens a page


def _swa(target: Target, geometry: ModelGeometry) -> list[PoolName]:
    """SWA, where the backend takes the adversarial geometry's generic multi-region one."""
    return [p.name for p in target.usable_pools(geometry) if p.name is PoolName.SWA]


def _pools(stride: str, misalign: int) -> dict[PoolName, HostPoolDouble]:
    kv = MHAHostPool(
        layer_num=1,
        head_num=1,
        head_dim=KV_STRIDES[stride],
        page_size=8,
        page_num=PAGES,
        dtype=torch.bfloat16,
        layout="page_first",
        misalign=misalign,
    )
    side = MultiRegionHostPool(
        regions=STRIDES[stride], page_size=1, page_num=PAGES, dtype=torch.uint8, misalign=misalign
    )
    return {PoolName.KV: kv, PoolName.SWA: side}


def _modes(hicache_target: Target) -> list[str]:
    return list(hicache_target.caps.io_modes)


@pytest.mark.parametrize("stride", list(STRIDES))
@pytest.mark.parametrize("misalign", [0, MISALIGNMENT], ids=["aligned-base", "misaligned-base"])
@given(seed=payload_seeds, data=st.data())
def test_every_stride_and_base_alignment_round_trips_in_every_io_mode(
    hicache_target: Target, stride: str, misalign: int, seed: int, data: st.DataObject
) -> None:
    """Pages of every stride class, on aligned and misaligned bases, round-trip in each I/O mode."""
    mode = data.draw(st.sampled_from(_modes(hicache_target)), label="io mode")
    geometry = load_geometry("adversarial")
    moded = hicache_target.with_mode(mode)
    pools = _pools(stride, misalign)
    names = [PoolName.KV, *_swa(hicache_target, geometry)]
    with moded.storage() as storage, Rig(moded, geometry, storage, pools={n: pools[n] for n in names}) as rig:
        for name in names:
            pool = rig.pool(name)
            written = [render_page(pool, seed, 3, salt=i) for i in range(3)]
            for i, payload in enumerate(written):
                rig.put(name, i, payload)
            assert rig.set(name, ["a", "b", "c"], [0, 1, 2]) == [True] * 3, (
                f"{mode}: {name} set failed ({pool.describe()})"
            )
            pool.fill(0)
            assert rig.get(name, ["a", "b", "c"], [3, 4, 5]) == [True] * 3, f"{mode}: {name} get failed"
            for page, payload in zip((3, 4, 5), written):
                rig.expect(name, page, payload, mode)


@pytest.mark.hicache_requires("reports_transfer_mode")
@pytest.mark.parametrize("stride", list(STRIDES))
@pytest.mark.parametrize("misalign", [0, MISALIGNMENT], ids=["aligned-base", "misaligned-base"])
def test_aligned_pools_move_in_place_and_misaligned_pools_are_staged_under_o_direct(
    hicache_target: Target, stride: str, misalign: int
) -> None:
    """Aligned pools take zero-copy in every mode; misaligned ones never do with O_DIRECT."""
    geometry = load_geometry("adversarial")
    for mode in _modes(hicache_target):
        moded = hicache_target.with_mode(mode)
        pools = _pools(stride, misalign)
        names = [PoolName.KV, *_swa(hicache_target, geometry)]
        with (
            moded.storage() as storage,
            Rig(moded, geometry, storage, pools={n: pools[n] for n in names}) as rig,
        ):
            for name in names:
                moved = rig.backend.transfer_mode(name)
                if pools[name].is_stride_page_aligned(4096):
                    assert moved == "zero_copy", f"{mode}: aligned {name} was {moved}"
                elif mode in hicache_target.caps.direct_io_modes:
                    assert moved == "staged", f"{mode}: misaligned {name} went {moved} under O_DIRECT"
