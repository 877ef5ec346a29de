"""The plugin's options, and the run they configure: ``--backend`` resolved to a spec, its I/O mode,
the run's one hypothesis seed and profiles, the backend built once before anything runs, and the
certificate's collector registered on the process that reports; then the run around the session:
its seed handed to each xdist worker, the certification settings and time limit at the session's
start, a worker's account handed back at its end, the run's folders removed.

Without ``--backend`` every hook here returns at once: the plugin stays inert.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from conformance.plugin.certificate import CertCollector
from conformance.plugin.collection import collect_whole_suite
from conformance.plugin.run import (
    COLLECTOR,
    DEFAULT_PROFILE,
    HOME_KEY,
    QUICK_PROFILE,
    RUN_KEY,
    SUITE_DIR,
    WATCHDOG_KEY,
    Run,
    is_worker,
    process_name,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hicache-conformance")
    group.addoption(
        "--backend", default=None, help="backend to certify: a registered name or package.module:SPEC"
    )
    group.addoption("--backend-mode", default=None, help="I/O mode the backend declares (default: its first)")
    group.addoption(
        "--storage-dir", default=None, help="where storage locations are made (default: a temp dir)"
    )
    group.addoption("--cert-report", default=None, help="write report.json and report.md into this folder")
    group.addoption(
        "--property-timeout",
        type=float,
        default=None,
        help="seconds a property may run before its process is ended and the property fails "
        "(default: 150 times the profile's examples a property; 0: no limit)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "hicache_requires(*claims, layout='', reason=''): the property needs these Capabilities fields "
        "(and this host-pool layout); "
        "skipped, with the claim as reason, where the backend under test does not declare one",
    )
    name = config.getoption("backend")
    if not name:
        return
    from conformance.harness.registry import BackendResolutionError, resolve_backend

    try:
        spec = resolve_backend(name)
    except BackendResolutionError as exc:
        raise pytest.UsageError(str(exc)) from exc
    modes = list(spec.capabilities.io_modes)
    mode = config.getoption("backend_mode") or modes[0]
    if mode not in spec.capabilities.io_modes:
        raise pytest.UsageError(f"backend {spec.name!r} declares I/O modes {modes}, not {mode!r}")
    run = Run(name, spec, mode, _seed(config), _overruns(config))
    run.seeds[process_name(config)] = run.seed
    config.stash[RUN_KEY] = run
    config.option.hypothesis_seed = run.seed  # hypothesis's own plugin forces it on every test
    _use_profiles(config)
    # hypothesis's explain phase imports libcst, whose deprecation noise would bury the report
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:libcst.*")
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = [str(SUITE_DIR)]
    else:
        collect_whole_suite(config, run)
    if not is_worker(config):
        _check_factory(run)
        config.pluginmanager.register(CertCollector(config, run), COLLECTOR)


def _overruns(config: pytest.Config) -> Path:
    """The run's overrun folder: the controller's, on an xdist worker; else a new one."""
    if is_worker(config):
        return Path(config.workerinput["hicache_overruns"])  # type: ignore[attr-defined]
    return Path(tempfile.mkdtemp(prefix="hicache-overruns-"))


def _seed(config: pytest.Config) -> int:
    """The run's one seed: the controller's, on an xdist worker; else the one given, or a new one."""
    if is_worker(config) and "hicache_seed" in config.workerinput:  # type: ignore[attr-defined]
        return int(config.workerinput["hicache_seed"])  # type: ignore[attr-defined]
    given = config.getoption("hypothesis_seed", None)
    if given is None:
        return random.randrange(2**32)
    try:
        return int(given)
    except ValueError as exc:
        raise pytest.UsageError(
            f"--hypothesis-seed must be an integer for a certification, not {given!r}"
        ) from exc


def _use_profiles(config: pytest.Config) -> None:
    """Register the suite's profiles and choose the default one, unless the user chose another.

    hypothesis's own plugin loads the chosen profile after this hook; the database is switched
    off once it has (``pytest_sessionstart``).
    """
    from hypothesis import HealthCheck, Phase, configuration, settings

    from conformance.certificate.report import CERTIFYING_EXAMPLES

    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large]
    # the explain phase re-runs a failure dozens of times; "thorough" keeps it
    fast = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink]
    for name, examples in ((DEFAULT_PROFILE, CERTIFYING_EXAMPLES), (QUICK_PROFILE, 3)):
        settings.register_profile(
            name,
            max_examples=examples,
            deadline=None,
            phases=fast,
            suppress_health_check=quiet,
            database=None,
        )
    settings.register_profile(
        "thorough", max_examples=400, deadline=None, suppress_health_check=quiet, database=None
    )
    if config.getoption("hypothesis_profile", None) is None:
        config.option.hypothesis_profile = DEFAULT_PROFILE
    # hypothesis keeps caches (e.g. its unicode tables) under .hypothesis/ in the working folder
    home = tempfile.mkdtemp(prefix="hicache-hypothesis-")
    config.stash[HOME_KEY] = home
    configuration.set_hypothesis_home_dir(home)


def _check_factory(run: Run) -> None:
    """Build the backend once before anything runs: a factory that cannot is one clear error."""
    from conformance.harness.geometry import all_geometries
    from conformance.harness.registry import load_failure
    from conformance.harness.rig import Rig, Target

    caps = run.spec.capabilities
    layout = "page_first" if "page_first" in caps.layouts else sorted(caps.layouts)[0]
    geometry = all_geometries()[0]
    try:
        with (
            run.spec.session() if run.spec.session else contextlib.nullcontext(),
            tempfile.TemporaryDirectory(prefix="hicache-check-") as root,
        ):
            target = Target(run.spec, run.mode, Path(root), dict(caps.io_modes[run.mode]), ref=run.name)
            Rig(target, geometry, Path(root), layout=layout, page_num=2).close()
    except Exception as exc:
        raise pytest.UsageError(
            str(
                load_failure(
                    f"{run.name!r} (mode {run.mode}): its factory cannot build a backend;", exc, run.name
                )
            )
        ) from exc


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: hand the run's seed and overrun folder to the worker (workers re-parse the
    command line)."""
    run = node.config.stash.get(RUN_KEY, None)
    if run is not None:
        node.workerinput["hicache_seed"] = run.seed
        node.workerinput["hicache_overruns"] = str(run.overruns)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Certification runs without hypothesis's example database and deadlines (a replayed example, or
    a slow moment, would make a rerun with the same seed differ), and under a time limit a property
    (``--property-timeout``), which the profile's examples scale."""
    run = session.config.stash.get(RUN_KEY, None)
    if run is None:
        return
    from hypothesis import settings

    from conformance.harness.watchdog import SECONDS_PER_EXAMPLE, Watchdog

    current = settings.get_current_profile_name()
    if current not in (DEFAULT_PROFILE, QUICK_PROFILE, "thorough"):  # the user's own: keep it, less those
        settings.register_profile(f"{current}-certification", database=None, deadline=None)
        settings.load_profile(f"{current}-certification")
    _pin_drawn_constants()
    given = session.config.getoption("property_timeout")
    limit = SECONDS_PER_EXAMPLE * settings().max_examples if given is None else float(given)
    if limit > 0:
        session.config.stash[WATCHDOG_KEY] = Watchdog(limit, run.overruns)


def _pin_drawn_constants() -> None:
    """Draw constants from hypothesis's own pool only, so one seed draws the same examples anywhere.

    hypothesis also draws constants it reads from the local modules loaded when a property first
    draws one; under xdist which modules those are follows the order tests landed on a worker, so
    a rerun with the certificate's seed drew other examples (a CI run met a geometry no run here
    had). Pinned at the session's start, before any property draws. Internal API: where a
    hypothesis version lacks it, nothing to pin.
    """
    from hypothesis.internal.conjecture import providers

    constants = getattr(providers, "_local_constants", None)
    if constants is not None and hasattr(providers, "_get_local_constants"):
        for kind in ("integers", "floats", "bytes", "strings"):
            getattr(constants, kind).clear()
        providers._get_local_constants = lambda: constants


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(HOME_KEY, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)
    run = config.stash.get(RUN_KEY, None)
    if run is not None and not is_worker(config):
        shutil.rmtree(run.overruns, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    run = session.config.stash.get(RUN_KEY, None)
    if run is not None and is_worker(session.config):
        session.config.workeroutput["hicache"] = {  # type: ignore[attr-defined]
            "suite": run.suite,
            "selected": run.selected,
            "other_tests": run.other_tests,
            "seed": run.seed,
        }
