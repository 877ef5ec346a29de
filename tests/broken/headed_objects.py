"""Defect: exists asks only whether an object of the entry's name is in the bucket (a HEAD), so an
object cut short, by a failed upload or another writer, answers present though no get can read it.
The reference's object target did so until its exists fetched each object's tail."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from conformance.model.interface import HiCacheStorageConfig
from conformance.targets import NIXL_OBJ, on_the_server
from reference_backend.obj import NixlObjBackend
from reference_backend.pools import Pool


class HeadedObjects(NixlObjBackend):
    def stored(self, pool: Pool, digests: list[bytes]) -> list[bool]:
        if not digests:
            return []
        lane = self.lanes["READ"]
        with lane.lock:
            try:
                found = lane.agent.query_memory(
                    [(0, 0, 0, self.object_name(d, pool)) for d in digests], "OBJ", "OBJ"
                )
            except Exception:
                return [False for _ in digests]
        return [f is not None for f in found]


def factory(config: HiCacheStorageConfig, storage_dir: Path) -> HeadedObjects:
    return HeadedObjects(replace(config, extra_config=on_the_server(config.extra_config)), storage_dir)


SPEC = replace(NIXL_OBJ, name="broken-headed-objects", factory=factory)
