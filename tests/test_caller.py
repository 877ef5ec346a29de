"""``conformance.harness.caller``: index tensors reach a backend as the controller slices them, and a call
that changes anything it was handed fails, naming it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from conformance.harness.caller import ControllerCalls, HandedOver, PoolSlots
from conformance.model.interface import HiCacheStorageExtraInfo, PoolName, PoolTransfer

POOLS = {"kv": PoolSlots(span=4, slots=64), "indexer": PoolSlots(span=4, slots=64), "mamba": PoolSlots(1, 8)}


class Recorder:
    """Keeps what each call received; ``then`` may do something to it first."""

    def __init__(self, then: Callable[..., None] = lambda *args: None) -> None:
        self.then = then
        self.received: list[tuple[Any, ...]] = []
        self.label = "the backend's own"

    def batch_get_v1(self, keys: Any, host_indices: Any, extra_info: Any = None) -> list[bool]:
        self.received.append((keys, host_indices, extra_info))
        self.then(keys, host_indices, extra_info)
        return [True] * len(keys)

    def batch_set_v2(self, transfers: list[PoolTransfer], extra_info: Any = None) -> dict[str, list[bool]]:
        self.received.append((transfers, extra_info))
        self.then(transfers, extra_info)
        return {str(t.name): [True] * len(t.keys or []) for t in transfers}

    def batch_exists(self, keys: list[str], extra_info: Any = None) -> int:
        self.received.append((keys, extra_info))
        self.then(keys, extra_info)
        return len(keys)


def slots(*pages: int, span: int = 4) -> torch.Tensor:
    return torch.tensor([p * span + t for p in pages for t in range(span)], dtype=torch.int64)


def test_an_index_tensor_arrives_as_a_view_past_other_pages_slots_with_the_same_values() -> None:
    backend = Recorder()
    ControllerCalls(backend, POOLS).batch_get_v1(["a", "b"], slots(2, 5))
    got = backend.received[0][1]
    assert got.storage_offset() > 0 and torch.equal(got, slots(2, 5))
    whole = got._base
    assert whole is not None
    before = set(whole[: got.storage_offset()].tolist())
    assert before and not before & set(slots(2, 5).tolist())


def test_pools_of_one_geometry_handed_the_same_slots_in_a_call_get_one_tensor() -> None:
    backend = Recorder()
    transfers = [
        PoolTransfer(name=PoolName.KV, host_indices=slots(1), keys=["a"]),
        PoolTransfer(name=PoolName.INDEXER, host_indices=slots(1), keys=["a"]),
        PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([1, 2, 3, 4]), keys=["a"]),
    ]
    ControllerCalls(backend, POOLS).batch_set_v2(transfers)
    kv, indexer, mamba = (t.host_indices for t in backend.received[0][0])
    assert kv is indexer and mamba is not kv
    assert all(t.storage_offset() > 0 for t in (kv, mamba))


def test_a_view_the_caller_sliced_and_a_malformed_argument_arrive_as_given() -> None:
    backend = Recorder()
    calls = ControllerCalls(backend, POOLS)
    operation = slots(0, 1, 2)
    sliced = operation[4:8]
    for indices in (
        sliced,
        [0, 1, 2, 3],
        slots(1).reshape(2, 2),
        slots(1).float(),
        torch.tensor([], dtype=torch.int64),
    ):
        calls.batch_get_v1(["a"], indices)
        assert backend.received[-1][1] is indices


def _append_key(keys: Any, *rest: Any) -> None:
    keys.append("extra")


def _halve_slots(keys: Any, indices: Any, extra: Any) -> None:
    indices //= 2


def _write_outside_the_view(keys: Any, indices: Any, extra: Any) -> None:
    torch.empty(0, dtype=indices.dtype).set_(indices.untyped_storage(), 0, (1,), (1,)).fill_(-1)


def _extend_prefix(keys: Any, extra: Any) -> None:
    extra.prefix_keys.extend(keys)


def _rename_a_transfer_key(transfers: Any, extra: Any) -> None:
    transfers[0].keys[0] = "renamed"


def _trim_a_transfers_keys(transfers: Any, extra: Any) -> None:
    transfers[0].keys = transfers[0].keys[1:]


@pytest.mark.parametrize(
    ("call", "change", "named"),
    [
        ("batch_exists", _append_key, "keys"),
        ("batch_get_v1", _halve_slots, "host_indices"),
        ("batch_get_v1", _write_outside_the_view, "host_indices"),
        ("batch_exists", _extend_prefix, "extra_info.prefix_keys"),
        ("batch_set_v2", _rename_a_transfer_key, "pool kv's keys"),
        ("batch_set_v2", _trim_a_transfers_keys, "pool kv's keys was replaced"),
    ],
)
def test_a_change_to_anything_handed_over_fails_the_call_and_names_it(
    call: str, change: Callable[..., None], named: str
) -> None:
    calls = ControllerCalls(Recorder(then=change), POOLS)
    extra = HiCacheStorageExtraInfo(prefix_keys=["p0"])
    make = {
        "batch_exists": lambda: calls.batch_exists(["a", "b"], extra),
        "batch_get_v1": lambda: calls.batch_get_v1(["a", "b"], slots(3, 6), extra),
        "batch_set_v2": lambda: calls.batch_set_v2(
            [PoolTransfer(name=PoolName.KV, host_indices=slots(1, 2), keys=["a", "b"])], extra
        ),
    }
    with pytest.raises(HandedOver, match=f"{call} changed .*{named}"):
        make[call]()


def test_a_call_that_changes_nothing_answers_as_the_backend_did_and_the_rest_is_the_backends() -> None:
    calls = ControllerCalls(Recorder(), POOLS)
    assert calls.batch_exists(["a", "b", "c"], HiCacheStorageExtraInfo(prefix_keys=["p"])) == 3
    assert calls.label == "the backend's own"
