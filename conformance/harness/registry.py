"""Resolve ``--backend=NAME`` to a :class:`BackendSpec`.

Three spellings, tried in order:

1. a name registered in the ``hicache_conformance.backends`` entry-point group (``memory`` and
   ``nixl`` ship that way);
2. ``package.module:attr``, where ``attr`` is a ``BackendSpec``, or a factory that carries its
   claims as a ``conformance_capabilities`` attribute.

A factory without declared capabilities is refused: certifying a backend for claims it never made
would be silent skipping by another name. Whatever goes wrong while loading (a module that fails
to import, a missing optional dependency, claims of the wrong type) is one
:class:`BackendResolutionError` that says what to do, never a traceback.
"""

from __future__ import annotations

import importlib
import re
from importlib.metadata import Distribution, EntryPoint, entry_points
from typing import Any

from conformance.model.capabilities import BackendSpec, Capabilities

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
        "attribute; declare what the backend claims (see conformance.model.capabilities)"
    )


def _extra_providing(dist: Distribution | None, module: str) -> str | None:
    """The optional extra of ``dist`` whose requirement installs top-level module ``module``."""
    wanted = re.sub(r"[-_.]+", "-", module).lower()
    for requirement in (dist.requires or []) if dist else []:
        found = re.match(r"\s*([A-Za-z0-9._-]+)[^;]*;.*extra\s*==\s*['\"]([^'\"]+)['\"]", requirement)
        package = re.sub(r"[-_.]+", "-", found.group(1)).lower() if found else ""
        if found and (wanted == package or wanted.startswith(package + "-")):  # nixl_cu12 is nixl's
            return found.group(2)
    return None


def _entry_point(name: str) -> EntryPoint | None:
    return next((ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name), None)


def load_failure(what: str, exc: BaseException, backend: str = "") -> BackendResolutionError:
    """One sentence for a backend that cannot be loaded or built, naming the extra to install
    where one would help (``backend`` is the ``--backend`` value, to find its distribution)."""
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    ep = _entry_point(backend)
    dist = ep.dist if ep is not None else None
    extra = _extra_providing(dist, missing.split(".")[0]) if missing and dist else None
    if extra and dist:
        return BackendResolutionError(
            f"backend {what} needs the {extra!r} extra: pip install '{dist.name}[{extra}]' ({exc})"
        )
    return BackendResolutionError(f"cannot load backend {what}: {type(exc).__name__}: {exc}")


def resolve_backend(name: str) -> BackendSpec:
    ep = _entry_point(name)
    if ep is not None:
        try:
            loaded = ep.load()
        except Exception as exc:
            raise load_failure(f"{name!r} ({ep.value})", exc, name) from exc
        return _as_spec(loaded, name)
    if ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            failure = load_failure(repr(name), exc, name)
            if isinstance(exc, ModuleNotFoundError) and exc.name == module_name.split(".")[0]:
                failure = BackendResolutionError(
                    f"{failure}; install the package that holds it (pip install -e .), or run "
                    "`python -m pytest` from the folder that holds it (which puts that folder on sys.path)"
                )
            raise failure from exc
        obj: Any = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise BackendResolutionError(f"{module_name!r} has no attribute {attr!r}")
            obj = getattr(obj, part)
        return _as_spec(obj, name)
    raise BackendResolutionError(
        f"unknown backend {name!r}: registered names are {registered_names()}, or give package.module:factory"
    )
