"""Entry digests of a batch of keys in C++ (``_naming_native.cpp``), as
``reference_backend.naming.Digester`` makes them one key at a time."""

def digests(family_key: bytes, entry_key: bytes, keys: list[str]) -> list[bytes]: ...
