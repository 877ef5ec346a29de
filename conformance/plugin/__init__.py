"""The pytest plugin: ``pytest --backend=NAME`` certifies a HiCache v2 storage backend.

Registered through the ``pytest11`` entry point, so it is loaded in every pytest run of the
environment it is installed in. Without ``--backend`` it stays inert: it imports nothing heavy,
loads no hypothesis profile, adds no warning filter, and offers only the ``hicache_target``
fixture and the ``hicache_requires`` marker. With ``--backend`` and no test paths, the run
collects the installed suite (``conformance/suite``); with paths, it runs those, so a project can
mix the suite into its own tests, but only a run of every suite property, and nothing else, can
certify.

One hypothesis seed serves the whole run: chosen here (or given with ``--hypothesis-seed``) and
handed to every xdist worker, with hypothesis's example database off, so that the rerun command
the report prints reproduces the same failures.

This module is the one pytest registers; the hooks live by job and are gathered here:
:mod:`.options` (the options and the run they configure), :mod:`.collection` (claims, skips, known
defects), :mod:`.execution` (the target fixture, time limits, each report's record) and
:mod:`.certificate` (the outcomes gathered into the certificate), over :mod:`.run` (what the run
chose, shared by all four).
"""

from conformance.plugin.collection import pytest_collection_finish, pytest_collection_modifyitems
from conformance.plugin.execution import (
    hicache_target,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
)
from conformance.plugin.options import (
    pytest_addoption,
    pytest_configure,
    pytest_configure_node,
    pytest_sessionfinish,
    pytest_sessionstart,
    pytest_unconfigure,
)

__all__ = [
    "hicache_target",
    "pytest_addoption",
    "pytest_collection_finish",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_configure_node",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_runtest_protocol",
    "pytest_sessionfinish",
    "pytest_sessionstart",
    "pytest_unconfigure",
]
