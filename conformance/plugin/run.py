"""What ``--backend`` chose for the run, where it is kept, and how a suite property is named.

Shared by the plugin's jobs (:mod:`.options`, :mod:`.collection`, :mod:`.execution`,
:mod:`.certificate`): the run's :class:`Run` lives in the config's stash under :data:`RUN_KEY`, and
a property's id is ``module.py::name[params]`` (:func:`suite_id`), the form certificates, docs and
known-defect keys use.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conformance.harness.watchdog import Watchdog
    from conformance.model.capabilities import BackendSpec

SUITE_DIR = (Path(__file__).parent.parent / "suite").resolve()
COLLECTOR = "hicache-conformance-collector"
DEFAULT_PROFILE = "hicache-default"
QUICK_PROFILE = "hicache-quick"


@dataclass
class Run:
    """What ``--backend`` chose, and what this process learnt about the suite's properties."""

    name: str
    spec: BackendSpec
    mode: str
    seed: int
    overruns: Path
    """Where a process that ends an overrun property leaves its account (one folder per run)."""
    narrowed_to: list[tuple[Path, str]] | None = None
    suite: list[str] = field(default_factory=list)
    selected: list[str] = field(default_factory=list)
    other_tests: int = 0
    seeds: dict[str, int] = field(default_factory=dict)


RUN_KEY = pytest.StashKey[Run]()
EXAMPLES_KEY = pytest.StashKey[int]()
KNOWN_DEFECT_KEY = pytest.StashKey[bool]()
HOME_KEY = pytest.StashKey[str]()
WATCHDOG_KEY: pytest.StashKey[Watchdog] = pytest.StashKey()


def process_name(config: pytest.Config) -> str:
    return str(getattr(config, "workerinput", {}).get("workerid", "main"))


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def suite_id(item: pytest.Item) -> str | None:
    """``module.py::name[params]`` for a suite property, None for any other test."""
    path = Path(str(item.path)).resolve()
    if path.parent != SUITE_DIR:
        return None
    return f"{path.name}::{item.nodeid.split('::', 1)[1]}"


def suite_id_of(rootpath: Path, nodeid: str) -> str | None:
    """:func:`suite_id` from a test's node id alone (all an xdist controller gets of its workers'
    collections). Its path is relative to the rootdir, or, for a suite installed outside it, to the
    suite folder (pytest names a test under a folder it was given relative to that folder)."""
    where, _, rest = nodeid.partition("::")
    path = rootpath / where
    if not path.exists():
        path = SUITE_DIR / where
    path = path.resolve()
    return f"{path.name}::{rest}" if rest and path.parent == SUITE_DIR and path.is_file() else None


def rerun_command(config: pytest.Config, seed: int) -> str:
    """The run's own command line, with its seed: the same failures, in any process layout."""
    args = list(config.invocation_params.args)
    kept = []
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg == "--hypothesis-seed":
            skip_next = True
        elif not arg.startswith("--hypothesis-seed="):
            kept.append(arg)
    return shlex.join([*program(config), *kept, f"--hypothesis-seed={seed}"])


def program(config: pytest.Config) -> list[str]:
    """How pytest was started: ``python -m pytest`` also puts the current folder on sys.path."""
    argv0 = str(getattr(config, "workerinput", {}).get("mainargv", sys.argv)[0])
    return ["python", "-m", "pytest"] if argv0.endswith("__main__.py") else ["pytest"]
