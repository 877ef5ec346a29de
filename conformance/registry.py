"""Resolve ``--backend=NAME`` to a :class:`BackendSpec`.

Three spellings, tried in order:

1. a name registered in the ``hicache_conformance.backends`` entry-point group (``memory`` and
   ``nixl`` ship that way);
2. ``package.module:attr``, where ``attr`` is a ``BackendSpec``, or a factory that carries its
   claims as a ``conformance_capabilities`` attribute.

A factory without declared capabilities is refused: certifying a backend for claims it never made
would be silent skipping by another name.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from conformance.capabilities import BackendSpec, Capabilities

ENTRY_POINT_GROUP = "hicache_conformance.backends"


class BackendResolutionError(LookupError):
    pass


def registered_names() -> list[str]:
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def _as_spec(obj: Any, name: str) -> BackendSpec:
    if isinstance(obj, BackendSpec):
        return obj
    capabilities = getattr(obj, "conformance_capabilities", None)
    if callable(obj) and isinstance(capabilities, Capabilities):
        version = str(getattr(obj, "conformance_version", "unknown"))
        return BackendSpec(name, obj, capabilities, version)
    raise BackendResolutionError(
        f"{name!r} is neither a BackendSpec nor a factory with a `conformance_capabilities` "
        "attribute; declare what the backend claims (see conformance.capabilities)"
    )


def resolve_backend(name: str) -> BackendSpec:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return _as_spec(ep.load(), name)
    if ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise BackendResolutionError(f"cannot import {module_name!r}: {exc}") from exc
        obj: Any = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise BackendResolutionError(f"{module_name!r} has no attribute {attr!r}")
            obj = getattr(obj, part)
        return _as_spec(obj, name)
    raise BackendResolutionError(
        f"unknown backend {name!r}: registered names are {registered_names()}, or give package.module:factory"
    )
