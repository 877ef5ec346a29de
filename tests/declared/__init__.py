"""Backend specs that declare known defects, for the tests of that mechanism."""

from __future__ import annotations

from dataclasses import replace

from conformance.doubles.memory_backend import SPEC as MEMORY
from tests.broken.per_pool_minimum import SPEC as PER_POOL_MINIMUM

HIT_POLICY = "test_batch_exists_v2_follows_every_pools_hit_policy[adversarial]"

STILL_BROKEN = replace(
    PER_POOL_MINIMUM, known_defects={HIT_POLICY: "takes the minimum of the pools' figures"}
)
"""Declares the defect it has."""

FIXED = replace(MEMORY, known_defects={HIT_POLICY: "declared, but the backend is right"})
"""Declares a defect it no longer has."""

BROKEN_IN_ANOTHER_MODE = replace(
    PER_POOL_MINIMUM, known_defects={f"{HIT_POLICY}@direct": "only said of a mode not under test"}
)
"""Declares the defect for a mode other than the one run."""

GLOB = replace(PER_POOL_MINIMUM, known_defects={"test_batch_exists_v2_*[*]": "never matches"})
"""Uses a wildcard other than a trailing ``[*]``."""

INTERMITTENT_AND_PASSING = replace(MEMORY, intermittent_defects={HIT_POLICY: "shows only under a race"})
"""Declares an intermittent defect that this run did not meet."""
