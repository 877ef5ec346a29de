"""Public: what a backend declares (``Capabilities``) and how the suite builds it (``BackendSpec``).

The path a backend's certification glue imports (README, ``docs/certify.md``); the definitions
live in :mod:`conformance.model.capabilities`.
"""

from conformance.model.capabilities import SIDE_POOLS, BackendSpec, Capabilities, Server

__all__ = ["SIDE_POOLS", "BackendSpec", "Capabilities", "Server"]
