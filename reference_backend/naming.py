"""What names an entry: a 16-byte digest of (model, shard, pool, key).

Keys never become file names (records live in segment files, see :mod:`reference_backend.log`),
so no key can climb out of the storage root or meet a temp name. The digest reads its fields
length-prefixed, so two distinct (model, shard, pool, key) tuples never feed it the same bytes:
``org/m`` and ``org-m``, or a key spelling another pool's suffix, stay apart.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from conformance.interface import HiCacheStorageConfig, PoolName


def spell(*fields: str) -> bytes:
    """Length-prefixed UTF-8 of each field: an injective spelling of the tuple."""
    out = bytearray()
    for text in fields:
        raw = text.encode("utf-8", "surrogatepass")
        out += len(raw).to_bytes(8, "little") + raw
    return bytes(out)


@dataclass(frozen=True)
class Scope:
    """The part of an entry's identity that comes from the serving config."""

    model: str
    shard: str


def scope_for(config: HiCacheStorageConfig, pool: PoolName | str) -> Scope:
    """MLA state is replicated across TP ranks and shared; Mamba state is always TP-sharded."""
    parts = [f"pp{config.pp_rank}-{config.pp_size}"]
    if config.attn_cp_size > 1:
        parts.append(f"cp{config.attn_cp_rank}-{config.attn_cp_size}")
    if config.dcp_size > 1:
        parts.append(f"dcp{config.dcp_rank}-{config.dcp_size}-page{config.logical_page_size}")
    if config.is_mla_model and str(pool) != str(PoolName.MAMBA):
        parts.append("mla")
    else:
        parts.append(f"tp{config.tp_rank}-{config.tp_size}")
    return Scope(config.model_name or "", ".".join(parts))


@functools.lru_cache(maxsize=1 << 16)
def entry_digest(scope: Scope, pool: PoolName | str, key: str) -> bytes:
    """16 bytes that name one entry in the log and its index (cached: a page is named again and
    again, by exists, set and get)."""
    return hashlib.blake2b(spell(scope.model, scope.shard, str(pool), key), digest_size=16).digest()
