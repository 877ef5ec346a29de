"""A process-wide pool of NIXL agents with a POSIX backend.

Tearing an agent down costs about 35 ms here (its backend threads are joined), which dominates
short-lived backends: a restart, a second TP rank, a test. Agents are returned clean (every
registration released by their user) and handed to the next backend with the same plugin params.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any

os.environ.setdefault("NIXL_LOG_LEVEL", "WARN")
from nixl._api import nixl_agent, nixl_agent_config

_free: dict[tuple[tuple[str, str], ...], list[Any]] = {}
_lock = threading.Lock()


def _key(params: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(params.items()))


def acquire(params: dict[str, str]) -> Any:
    """An agent whose POSIX backend was created with ``params``."""
    with _lock:
        spare = _free.get(_key(params))
        if spare:
            return spare.pop()
    agent = nixl_agent(f"hicache-{uuid.uuid4().hex[:12]}", nixl_agent_config(backends=[]))
    agent.create_backend("POSIX", dict(params))
    agent.hicache_params = dict(params)
    return agent


def release(agent: Any) -> None:
    """Give back an agent that holds no registrations."""
    with _lock:
        _free.setdefault(_key(agent.hicache_params), []).append(agent)
