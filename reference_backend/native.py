"""Which path runs: a C++ kernel built at install, or its pure-Python twin.

Both paths are kept and certified by the same suite (``HICACHE_NATIVE=0`` in CI's second
certification of the reference backend). ``HICACHE_NATIVE`` chooses for every kernel at once:
``0`` never native, ``1`` always (a kernel that did not build is then an error, not a silent
fallback), unset: native where it was built.
"""

from __future__ import annotations

import os


def chosen(native: bool | None, missing: str, what: str) -> bool:
    """Whether to run kernel ``what`` natively: ``native`` when given, else as ``HICACHE_NATIVE``
    says; ``missing`` is why its module did not import ("" when it did)."""
    if native is None:
        setting = os.environ.get("HICACHE_NATIVE", "")
        if setting not in ("", "0", "1"):
            raise ValueError(f"HICACHE_NATIVE={setting!r}: 0 (pure Python) or 1 (native, required)")
        if not setting:
            return not missing
        native = setting == "1"
    if native and missing:
        raise ImportError(f"{what} is required but did not import: {missing}")
    return native
