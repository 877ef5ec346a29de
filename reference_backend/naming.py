"""Where an entry lives: a safe, injective file path for any (config, pool, key).

Every name component is percent-encoded over a tiny alphabet, so no key can climb out of the
storage root, start a hidden temp name, or collide with another key. Encodings longer than a file
name allows are replaced by ``~`` plus a SHA-256 digest; ``~`` never appears in an encoding, so a
digest name cannot meet an encoded one.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from conformance.interface import HiCacheStorageConfig, PoolName

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
MAX_NAME = 200
TEMP_PREFIX = ".tmp-"


def encode_component(text: str) -> str:
    """Injective, filesystem-safe spelling of ``text`` (never empty, never starts with '.')."""
    raw = text.encode("utf-8", "surrogatepass")
    encoded = "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in raw)
    if len(encoded) > MAX_NAME:
        return "~" + hashlib.sha256(raw).hexdigest()
    return "k" + encoded


@dataclass(frozen=True)
class Scope:
    """The part of an entry's identity that comes from the serving config."""

    model: str
    shard: str

    @property
    def label(self) -> str:
        return f"{self.model}\x00{self.shard}"


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
    return Scope(encode_component(config.model_name or ""), ".".join(parts))


def entry_path(root: str, scope: Scope, pool: PoolName | str, key: str) -> str:
    """``root/model/shard/pool/bucket/key``; the bucket spreads a pool over 256 folders."""
    name = encode_component(key)
    bucket = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=1).hexdigest()
    return os.path.join(root, scope.model, scope.shard, encode_component(str(pool)), bucket, name)


def entry_digest(scope: Scope, pool: PoolName | str, key: str) -> bytes:
    """16 bytes that tie a stored record to its one entry, so a misplaced file never reads back."""
    text = f"{scope.label}\x00{pool}\x00{key}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=16).digest()
