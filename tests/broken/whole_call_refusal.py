"""Defect: a v2 call with one pool's malformed request raises once the call is done, though the
other pools' pages were moved: the controller hears of a failure and never learns what is stored
(a per-key False built wrong, as a `[False] * n` mistyped, does the same)."""

from __future__ import annotations

from typing import Any

from conformance.model.capabilities import BackendSpec
from conformance.model.interface import PoolTransfer
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.backend import NixlBackend


class WholeCallRefusal(NixlBackend):
    def _refuse_malformed(self, transfers: list[PoolTransfer]) -> None:
        for transfer in transfers:
            if self.plan(str(transfer.name), transfer.keys, transfer.host_indices) is None:
                raise ValueError(f"malformed request for pool {transfer.name}")

    def batch_set_v2(self, transfers: list[PoolTransfer], extra_info: Any = None) -> dict[str, list[bool]]:
        result = super().batch_set_v2(transfers, extra_info)
        self._refuse_malformed(transfers)
        return result

    def batch_get_v2(self, transfers: list[PoolTransfer], extra_info: Any = None) -> dict[str, list[bool]]:
        result = super().batch_get_v2(transfers, extra_info)
        self._refuse_malformed(transfers)
        return result


SPEC = BackendSpec("broken-whole-call-refusal", WholeCallRefusal, NIXL_CAPABILITIES)
