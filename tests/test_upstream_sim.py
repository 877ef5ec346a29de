"""``sglang-sim``: a keys-only backend is certified for keys and hits, and only for those.

``stores_bytes=False`` must turn every byte check into a skip that names the claim, and nothing
else: a backend that stores bytes still has them checked. The Sim adapter must hand Sim pools
with ``size_per_token`` and answer with Sim's own flags. Sim's part is skipped without SGLang.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conformance.doubles.hostpools import HostPoolDouble
from conformance.doubles.memory_backend import SPEC as MEMORY
from conformance.harness.geometry import load_geometry
from conformance.harness.rig import Rig, Target
from conformance.model.interface import PoolName
from conformance.model.sglang import UpstreamUnavailable, sglang


def _target(tmp_path: Path, **claims: Any) -> Target:
    spec = replace(MEMORY, capabilities=replace(MEMORY.capabilities, **claims))
    return Target(spec, "default", tmp_path)


def test_a_keys_only_backend_has_its_byte_checks_skipped_with_the_claim(tmp_path: Path) -> None:
    target = _target(tmp_path, stores_bytes=False)
    with (
        Rig(target, load_geometry("llama3_mha"), tmp_path) as rig,
        pytest.raises(pytest.skip.Exception, match="does not declare stores_bytes"),
    ):
        rig.expect(PoolName.KV, 0, b"")


def test_a_backend_that_stores_bytes_still_has_them_checked(tmp_path: Path) -> None:
    with Rig(_target(tmp_path), load_geometry("llama3_mha"), tmp_path) as rig:
        page = b"\x5a" * rig.pool(PoolName.KV).page_nbytes()
        rig.put(PoolName.KV, 1, page)
        assert rig.set(PoolName.KV, ["k"], [1]) == [True]
        rig.put(PoolName.KV, 1, b"\x00" * len(page))
        assert rig.get(PoolName.KV, ["k"], [1]) == [True]
        rig.expect(PoolName.KV, 1, page)
        with pytest.raises(AssertionError, match="bytes differ"):
            rig.expect(PoolName.KV, 1, b"\x01" * len(page))


@pytest.fixture(scope="module")
def sim_spec() -> Any:
    try:
        sglang()
    except UpstreamUnavailable as exc:
        pytest.skip(str(exc))
    from conformance.upstream.sim import SGLANG_SIM

    return SGLANG_SIM


@pytest.mark.parametrize("family", ["llama3_mha", "adversarial"])
def test_sim_records_keys_in_every_pool_and_answers_hits(sim_spec: Any, tmp_path: Path, family: str) -> None:
    geometry = load_geometry(family)
    target = Target(sim_spec, "default", tmp_path, dict(sim_spec.capabilities.io_modes["default"]))
    with Rig(target, geometry, tmp_path, page_num=4) as rig:
        for name in rig.pools:
            assert rig.set(name, ["a", "b"], [0, 1]) == [True, True]
        assert rig.backend.batch_exists(["a", "b", "c"]) == 2
        for name in rig.pools:
            assert rig.get(name, ["a", "c"], [2, 3]) == [True, False]


def test_sim_gets_size_per_token_from_a_double(sim_spec: Any) -> None:
    from conformance.upstream.sim import TokenSized

    spec = next(p for p in load_geometry("adversarial").side_pools)
    double: HostPoolDouble = spec.build(layout="page_first", page_num=2)
    sized = TokenSized(double)
    assert sized.size_per_token * double.page_size == double.page_nbytes()
    assert sized.page_size == double.page_size
