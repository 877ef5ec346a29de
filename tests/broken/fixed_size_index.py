"""Defect: the in-memory index is a table of a fixed 1,024 entries, sized for a test's few hundred:
whatever the instance writes or finds on disk after it is full is stored and never found again."""

from __future__ import annotations

from collections.abc import Sequence

from conformance.model.capabilities import BackendSpec
from conformance.targets import NIXL_CAPABILITIES
from reference_backend.index import Record
from tests.broken import Patched

SLOTS = 1024


class FixedSizeIndex(Patched):
    def patch(self) -> None:
        index = self.log._index
        put, append = index.put, index.append

        def full_put(digest: bytes, record: Record, rid: int = -1) -> int:
            return put(digest, record, rid) if rid >= 0 or len(index) < SLOTS else -1

        def full_append(digests: Sequence[bytes], records: Sequence[Record]) -> None:
            room = max(0, SLOTS - len(index))
            append(digests[:room], records[:room])

        index.put = full_put  # type: ignore[method-assign]
        index.append = full_append  # type: ignore[method-assign]


SPEC = BackendSpec("broken-fixed-size-index", FixedSizeIndex, NIXL_CAPABILITIES)
