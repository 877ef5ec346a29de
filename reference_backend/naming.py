"""What names an entry: a 16-byte digest of (model, shard, pool, key).

Keys never become file names (records live in segment files, see :mod:`reference_backend.log`),
so no key can climb out of the storage root or meet a temp name. The digest is two BLAKE2b
hashes of the key, keyed by a hash of its scope (the model for the family, the model, shard and
pool for the rest), each scope spelled length-prefixed: two distinct (model, shard, pool, key)
tuples never meet, ``org/m`` and ``org-m``, or a key spelling another pool's suffix, stay apart.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any

from reference_backend.interface import HiCacheStorageConfig, PoolName, shard
from reference_backend.native import chosen

try:
    from reference_backend import _naming_native
except ImportError as missing:  # built at install only where a compiler was found
    _NATIVE_MISSING = str(missing)
else:
    _NATIVE_MISSING = ""


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
    """The shard SGLang's sharing rule gives ``pool`` (:func:`~reference_backend.interface.shard`):
    MLA state is shared across TP ranks, Mamba state never; stages, CP and DCP ranks stay apart."""
    return Scope(config.model_name or "", ".".join(shard(config, pool)))


def tenant_name(tenant: str) -> str:
    """16 hex digits that name a deployment's segment files, so tenants sharing a folder never
    read, evict or clear each other's."""
    return hashlib.blake2b(spell("tenant", tenant), digest_size=8).hexdigest()


def _key(*fields: str) -> bytes:
    """The 32-byte BLAKE2b key of a scope (a model, or a model's shard and pool)."""
    return hashlib.blake2b(spell(*fields), digest_size=32).digest()


@functools.lru_cache(maxsize=256)
def _hasher(*fields: str) -> Any:
    """A BLAKE2b state keyed by ``fields``: keyed once, copied per key, which costs a fifth of
    keying it again. Bounded by the pools a store serves."""
    return hashlib.blake2b(key=_key(*fields), digest_size=8)


def _keyed(state: Any, key: str) -> bytes:
    copy = state.copy()
    copy.update(key.encode("utf-8", "surrogatepass"))
    digest: bytes = copy.digest()
    return digest


def family_digest(model: str, key: str) -> bytes:
    """8 bytes shared by every pool's and every rank's record of one key: what eviction removes whole."""
    return _keyed(_hasher("family", model), key)


def entry_digest(scope: Scope, pool: PoolName | str, key: str) -> bytes:
    """16 bytes that name one entry in the log and its index: its family's 8, then 8 of the whole
    (model, shard, pool, key). No cache: two keyed hashes cost about a microsecond, the same for
    the millionth key as for the first."""
    return family_digest(scope.model, key) + _keyed(
        _hasher("entry", scope.model, scope.shard, str(pool)), key
    )


class Digester:
    """``entry_digest`` of one scope and pool, its two keyed states looked up once: what a batch
    planner holds per registered pool, so a key costs two copies and two updates, not the lookups.
    ``many`` names a batch's keys in C++ where the kernel is chosen (0.26 us a key against 0.7)."""

    __slots__ = ("entry", "family", "keys", "native")

    def __init__(self, scope: Scope, pool: PoolName | str, native: bool | None = None) -> None:
        fields = (("family", scope.model), ("entry", scope.model, scope.shard, str(pool)))
        self.family, self.entry = (_hasher(*f) for f in fields)
        self.keys = (_key(*fields[0]), _key(*fields[1]))
        """The two hashes' keys, which the kernel is given."""
        self.native = chosen(native, _NATIVE_MISSING, "the native naming kernel")

    def __call__(self, key: str) -> bytes:
        raw = key.encode("utf-8", "surrogatepass")
        family, entry = self.family.copy(), self.entry.copy()
        family.update(raw)
        entry.update(raw)
        digest: bytes = family.digest() + entry.digest()
        return digest

    def many(self, keys: list[str]) -> list[bytes]:
        """Each key's digest, as ``__call__`` makes it."""
        if self.native:
            return _naming_native.digests(self.keys[0], self.keys[1], keys)
        return [self(k) for k in keys]
