"""The backend as SGLang's cache controller calls it: sliced index tensors, and nothing handed over
may change.

The controller slices each batch's token slots out of the whole operation's index tensor
(``operation.host_indices[i * page_size : ...]``): every batch after the first is a view at a
storage offset, and the KV-derived pools of the batch (the DSA indexer) get that very tensor object
beside KV. It keeps using everything it hands over once the call returns: the slots go back into
the radix tree, the keys become the next batch's ``prefix_keys``. A backend that reads a tensor
from the start of its storage moves the wrong pages; one that converts slots to pages in place, or
appends to ``prefix_keys``, corrupts the controller's own state. Both pass any suite that hands
each call fresh tensors and never looks at them again.

:class:`ControllerCalls` wraps the backend under test (every :class:`~conformance.harness.rig.Rig` holds
one), so every batch call of every property receives its index tensors this way and is checked
when it returns: a change to anything it was handed fails the call, naming what changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from conformance.model.interface import PoolName

PARAMETERS = {
    "batch_set_v1": ("keys", "host_indices", "extra_info"),
    "batch_get_v1": ("keys", "host_indices", "extra_info"),
    "batch_set_v2": ("transfers", "extra_info"),
    "batch_get_v2": ("transfers", "extra_info"),
    "batch_exists": ("keys", "extra_info"),
    "batch_exists_v2": ("keys", "pool_transfers", "extra_info"),
    "batch_set": ("keys", "values"),
    "batch_get": ("keys", "target_locations"),
    "exists": ("key",),
}
"""The batch calls a controller makes, with the interface's names for their arguments; everything
else reaches the backend untouched."""
V1 = {"batch_set_v1", "batch_get_v1"}
"""Calls whose one index tensor addresses the KV pool."""


class PoolSlots(NamedTuple):
    """What a pool's index tensors address: slots per page, and slots in all."""

    span: int
    slots: int


class HandedOver(AssertionError):
    """A backend changed something the controller handed it."""


class ControllerCalls:
    """``backend`` behind the controller's calling convention (see the module docstring)."""

    def __init__(self, backend: Any, pools: dict[str, PoolSlots]) -> None:
        self._backend = backend
        self._pools = pools

    @property
    def wrapped(self) -> Any:
        """The backend itself."""
        return self._backend

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._backend, name)
        if name in PARAMETERS and callable(attr):
            return lambda *args, **kwargs: self._call(name, attr, args, kwargs)
        return attr

    def _call(
        self, name: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        handing = Handover(self._pools, v1=name in V1)
        names = PARAMETERS[name]
        args = tuple(
            handing.hand(names[n] if n < len(names) else f"argument {n}", a) for n, a in enumerate(args)
        )
        kwargs = {k: handing.hand(k, v) for k, v in kwargs.items()}
        try:
            result = method(*args, **kwargs)
        except BaseException as error:
            handing.check(name, error)
            raise
        handing.check(name)
        return result


@dataclasses.dataclass
class Handover:
    """One call's arguments as the controller hands them, and copies to tell whether they changed."""

    pools: dict[str, PoolSlots]
    v1: bool
    """A v1 call: its one index tensor addresses the KV pool."""
    lists: list[tuple[str, list[Any], list[Any]]] = dataclasses.field(default_factory=list)
    """(what, a list of keys handed over, a copy)."""
    tensors: list[tuple[str, torch.Tensor, torch.Tensor]] = dataclasses.field(default_factory=list)
    """(what, the whole tensor a handed view lies in, a copy)."""
    fields: list[tuple[str, Any, dict[str, Any]]] = dataclasses.field(default_factory=list)
    """(what, a transfer handed over, its fields as handed)."""
    views: dict[tuple[Any, torch.dtype, bytes], torch.Tensor] = dataclasses.field(default_factory=dict)
    """Slots already handed over, by pool geometry: one tensor object for every pool they address."""

    def hand(self, what: str, value: Any) -> Any:
        """``value`` as the controller hands it, recorded."""
        if isinstance(value, torch.Tensor) and self.v1:
            return self.sliced(str(PoolName.KV), f"{what} (host_indices)", value)
        if isinstance(value, list):
            if value and all(dataclasses.is_dataclass(t) and hasattr(t, "host_indices") for t in value):
                return [self.transfer(what, t) for t in value]
            if all(isinstance(k, str) for k in value):  # keys; page tensors are the pools' business
                self.lists.append((what, value, list(value)))
            return value
        prefix = getattr(value, "prefix_keys", None)
        if isinstance(prefix, list):
            self.lists.append((f"{what}.prefix_keys", prefix, list(prefix)))
        return value

    def transfer(self, what: str, transfer: Any) -> Any:
        """A pool's transfer, its slots sliced; the controller reuses its transfers (the
        operation's ``pool_transfers``), so no field may be rebound to another value either."""
        label = f"{what}: pool {transfer.name}'s"
        if isinstance(transfer.keys, list):
            self.lists.append((f"{label} keys", transfer.keys, list(transfer.keys)))
        indices = transfer.host_indices
        if isinstance(indices, torch.Tensor):
            indices = self.sliced(str(transfer.name), f"{label} host_indices", indices)
            transfer = dataclasses.replace(transfer, host_indices=indices)
        self.fields.append(
            (label, transfer, {f.name: getattr(transfer, f.name) for f in dataclasses.fields(transfer)})
        )
        return transfer

    def sliced(self, pool: str, what: str, indices: torch.Tensor) -> torch.Tensor:
        """``indices`` as a view into a larger tensor, past other pages' slots, the one view for
        every pool of the call handed the same slots; a view the caller sliced, and any tensor
        that addresses no slots, as it is."""
        if indices.dim() != 1 or indices.numel() == 0 or indices.dtype not in (torch.int64, torch.int32):
            self.tensors.append((what, indices, indices.clone()))
            return indices
        if indices._base is not None and indices.storage_offset() > 0:  # sliced by the caller already
            self.tensors.append((what, indices._base, indices._base.clone()))
            return indices
        geometry = self.pools.get(pool)
        key = (geometry or pool, indices.dtype, indices.numpy().tobytes())
        view = self.views.get(key)
        if view is None:
            n = indices.numel()
            whole = torch.cat([_elsewhere(indices, geometry, 1), indices, _elsewhere(indices, geometry, 2)])
            view = self.views[key] = whole[n : 2 * n]
            self.tensors.append((what, whole, whole.clone()))
        return view

    def check(self, call: str, error: BaseException | None = None) -> None:
        """Fail if the call changed anything it was handed."""
        changes = [f"{what}: {_difference(copy, now)}" for what, now, copy in self.lists if now != copy]
        for what, whole, copy in self.tensors:
            if whole.shape != copy.shape or not torch.equal(whole, copy):
                changes.append(f"{what}: {_difference(copy.tolist(), whole.tolist())}")
        for what, transfer, was in self.fields:
            changes += [
                f"{what} {f} was replaced" for f, v in was.items() if not _same(getattr(transfer, f), v)
            ]
        if changes:
            raise HandedOver(
                f"{call} changed what the controller handed it, which the controller keeps using "
                f"after the call: {'; '.join(changes)}"
            ) from error


def _elsewhere(indices: torch.Tensor, pool: PoolSlots | None, pages: int) -> torch.Tensor:
    """The slots ``pages`` pages on from ``indices``: the neighbouring batches of an operation, so
    a backend that reads outside its view moves other pages' bytes."""
    if pool is None:
        return indices.flip(0)
    return (indices + pages * pool.span) % pool.slots


def _difference(was: list[Any], now: list[Any]) -> str:
    """Where a list handed over first changed, briefly (a batch may hold thousands of slots)."""
    if len(was) != len(now):
        return f"{len(was)} items became {len(now)}, ending {now[-3:]!r}"
    at = next(i for i, (a, b) in enumerate(zip(was, now)) if a != b)
    changed = sum(a != b for a, b in zip(was, now))
    return f"{changed} of {len(was)} items changed, the first at {at}: {was[at]!r} became {now[at]!r}"


def _same(now: Any, was: Any) -> bool:
    """Whether a rebound field still holds what it held (the same object, or an equal value)."""
    if now is was:
        return True
    if isinstance(now, torch.Tensor) or isinstance(was, torch.Tensor):
        both = isinstance(now, torch.Tensor) and isinstance(was, torch.Tensor)
        return both and now.shape == was.shape and bool(torch.equal(now, was))
    return bool(now == was)
