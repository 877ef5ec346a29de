"""Public: the state machine a backend's own tests run or subclass (``docs/properties.md``).

The definition lives in :mod:`conformance.harness.stateful`.
"""

from conformance.harness.stateful import HiCacheStoreMachine

__all__ = ["HiCacheStoreMachine"]
