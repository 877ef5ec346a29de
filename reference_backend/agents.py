"""A process-wide pool of NIXL agents, and the choice of NIXL build.

Tearing an agent down costs about 35 ms here (its backend threads are joined), which dominates
short-lived backends: a restart, a second TP rank, a test. Agents are returned clean (every
registration released by their user) and handed to the next backend with the same plugin and
params.

The ``nixl`` meta package loads ``nixl_cu13`` on a machine without CUDA, whose OBJ (S3) plugin
cannot load there (it needs ``libcuobjclient``), and the two builds cannot share a process. So,
when the process has not imported NIXL yet and has no CUDA, we load ``nixl_cu12`` (its POSIX
plugin is the same, and its OBJ plugin works) and alias it as ``nixl``, as the meta package
itself aliases the build it picks, so that SGLang's ``import nixl`` gets the same one.
``HICACHE_NIXL_BUILD`` (``nixl_cu12``, ``nixl_cu13``, or ``nixl`` for the meta package's choice)
overrides this.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import types
import uuid
from typing import Any

os.environ.setdefault("NIXL_LOG_LEVEL", "WARN")

_free: dict[tuple[str, tuple[tuple[str, str], ...]], list[Any]] = {}
_lock = threading.Lock()


def _wanted_build() -> str:
    chosen = os.environ.get("HICACHE_NIXL_BUILD")
    if chosen:
        return chosen
    import torch

    if torch.cuda.is_available() or importlib.util.find_spec("nixl_cu12") is None:
        return "nixl"
    return "nixl_cu12"


def nixl_api() -> types.ModuleType:
    """NIXL's ``_api`` module, loading the build this process will use (see the module doc)."""
    if "nixl._api" in sys.modules:
        return sys.modules["nixl._api"]
    build = _wanted_build()
    if build == "nixl":
        return importlib.import_module("nixl._api")
    pkg = importlib.import_module(build)
    alias = types.ModuleType("nixl")
    alias.__path__ = []  # a package, so "import nixl._api" resolves through sys.modules
    for sub in ("_bindings", "_utils", "logging", "_api"):
        module = importlib.import_module(f"{pkg.__name__}.{sub}")
        sys.modules[f"nixl.{sub}"] = module
        setattr(alias, sub, module)
        for attr in dir(module):
            if not attr.startswith("_"):
                setattr(alias, attr, getattr(module, attr))
    sys.modules["nixl"] = alias
    return sys.modules["nixl._api"]


def build_name() -> str:
    """The NIXL build this process uses, e.g. ``nixl_cu12``."""
    return str(nixl_api().__name__).split(".")[0]


def _key(plugin: str, params: dict[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    return plugin, tuple(sorted(params.items()))


def acquire(params: dict[str, str], plugin: str = "POSIX") -> Any:
    """An agent whose ``plugin`` backend was created with ``params``."""
    with _lock:
        spare = _free.get(_key(plugin, params))
        if spare:
            return spare.pop()
    api = nixl_api()
    agent = api.nixl_agent(f"hicache-{uuid.uuid4().hex[:12]}", api.nixl_agent_config(backends=[]))
    try:
        agent.create_backend(plugin, dict(params))
    except Exception as exc:
        raise RuntimeError(
            f"NIXL ({build_name()}) could not create its {plugin} backend: {exc!r}. On a machine "
            "without CUDA only nixl_cu12 loads OBJ, and this process loaded its NIXL build before "
            "reference_backend could choose it: import reference_backend.agents (or set "
            "HICACHE_NIXL_BUILD=nixl_cu12) before anything imports nixl."
        ) from exc
    agent.hicache_key = _key(plugin, params)
    return agent


def release(agent: Any) -> None:
    """Give back an agent that holds no registrations."""
    with _lock:
        _free.setdefault(agent.hicache_key, []).append(agent)
