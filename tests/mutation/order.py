"""pytest plugin for mutation runs (``-p tests.mutation.order``): the suite, likeliest killer first.

A mutant is killed by the first property that fails (``-x``), so the properties that ran the
mutated line in the unmutated calibration run go first, then the rest, each group by its time
there. Where only properties' bodies ran that line (no fixture, import or other process did),
only they run: with one seed, a property that never executes a line behaves the same whatever the
line says.
The hypothesis profile is the certifying one less the shrink phase: shrinking only starts after
a failure, so which properties pass is unchanged, and the minimal example nobody reads here was
most of a kill's time. The plan is a JSON file named by ``HICACHE_MUTATION_PLAN``: ``{"first":
[node ids], "only": bool, "seconds": {junit name: s}}``."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, settings

from conformance.certificate.report import CERTIFYING_EXAMPLES

PROFILE = "hicache-mutation"
PLAN = "HICACHE_MUTATION_PLAN"
CALIBRATING = "HICACHE_MUTATION_CALIBRATION"
SUBPROCESS_CONFIG = "COVERAGE_PROCESS_CONFIG"
"""coverage's configuration for the processes a run starts (``patch = subprocess``), serialized."""

settings.register_profile(
    PROFILE,
    max_examples=CERTIFYING_EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


def junit_name(nodeid: str) -> str:
    """``classname::name`` as pytest's junit XML writes a test: the calibration run's timings use it."""
    parts = nodeid.split("::")
    return ".".join([parts[0].removesuffix(".py").replace("/", "."), *parts[1:-1]]) + "::" + parts[-1]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """In the calibration run, a process a property starts (a worker, a crash victim) records its
    lines under that property's node id, not under no test at all."""
    outer = os.environ.get(SUBPROCESS_CONFIG)
    if CALIBRATING not in os.environ or outer is None:
        yield
        return
    config = json.loads(base64.b64decode(outer))
    config["context"] = item.nodeid
    os.environ[SUBPROCESS_CONFIG] = base64.b64encode(json.dumps(config).encode()).decode()
    try:
        yield
    finally:
        os.environ[SUBPROCESS_CONFIG] = outer


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = os.environ.get(PLAN)
    if not path:
        return
    with open(path) as f:
        plan = json.load(f)
    first = set(plan["first"])
    seconds: dict[str, float] = plan["seconds"]
    if plan["only"]:
        dropped = [i for i in items if i.nodeid not in first]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if i.nodeid in first]
    items.sort(key=lambda i: (i.nodeid not in first, seconds.get(junit_name(i.nodeid), 0.0)))
