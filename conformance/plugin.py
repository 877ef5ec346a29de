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
"""

from __future__ import annotations

import contextlib
import functools
import random
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conformance.certificate.report import CertReport, PropertyResult
    from conformance.harness.rig import Target
    from conformance.harness.watchdog import Overrun, Watchdog
    from conformance.model.capabilities import BackendSpec, Capabilities

SUITE_DIR = (Path(__file__).parent / "suite").resolve()
COLLECTOR = "hicache-conformance-collector"
DEFAULT_PROFILE = "hicache-default"
QUICK_PROFILE = "hicache-quick"


@dataclass
class _Run:
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


_run_key = pytest.StashKey[_Run]()
_examples_key = pytest.StashKey[int]()
_known_defect_key = pytest.StashKey[bool]()
_home_key = pytest.StashKey[str]()
_watchdog_key: pytest.StashKey[Watchdog] = pytest.StashKey()


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
    run = _Run(name, spec, mode, _seed(config), _overruns(config))
    run.seeds[_process(config)] = run.seed
    config.stash[_run_key] = run
    config.option.hypothesis_seed = run.seed  # hypothesis's own plugin forces it on every test
    _use_profiles(config)
    # hypothesis's explain phase imports libcst, whose deprecation noise would bury the report
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:libcst.*")
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = [str(SUITE_DIR)]
    else:
        _collect_whole_suite(config, run)
    if not _is_worker(config):
        _check_factory(run)
        config.pluginmanager.register(CertCollector(config, run), COLLECTOR)


def _overruns(config: pytest.Config) -> Path:
    """The run's overrun folder: the controller's, on an xdist worker; else a new one."""
    if _is_worker(config):
        return Path(config.workerinput["hicache_overruns"])  # type: ignore[attr-defined]
    return Path(tempfile.mkdtemp(prefix="hicache-overruns-"))


def _process(config: pytest.Config) -> str:
    return str(getattr(config, "workerinput", {}).get("workerid", "main"))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _seed(config: pytest.Config) -> int:
    """The run's one seed: the controller's, on an xdist worker; else the one given, or a new one."""
    if _is_worker(config) and "hicache_seed" in config.workerinput:  # type: ignore[attr-defined]
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
    config.stash[_home_key] = home
    configuration.set_hypothesis_home_dir(home)


def _split(arg: str, root: Path) -> tuple[Path, str]:
    path, _, rest = arg.partition("::")
    return (root / path).resolve(), rest


def _collect_whole_suite(config: pytest.Config, run: _Run) -> None:
    """Paths into the suite collect the whole suite; what they name becomes the selection.

    So the run knows every property it did not run, and says "partial run" instead of certifying.
    """
    root = config.invocation_params.dir
    args, narrowed = [], []
    for arg in config.args:
        path, rest = _split(arg, root)
        if path != SUITE_DIR and path.is_relative_to(SUITE_DIR):
            narrowed.append((path, rest))
        else:
            args.append(arg)
    if any(_covers(a, root) for a in args):
        return  # the whole suite is collected as it is
    # a run of some properties, or of none (only the user's own tests): collect them all anyway,
    # and deselect what was not asked for, so the report can list it
    run.narrowed_to = narrowed
    config.args = [*args, str(SUITE_DIR)]


def _covers(arg: str, root: Path) -> bool:
    path, rest = _split(arg, root)
    return not rest and SUITE_DIR.is_relative_to(path)


def _check_factory(run: _Run) -> None:
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


def _selected_by(item: pytest.Item, narrowed: list[tuple[Path, str]]) -> bool:
    path = Path(str(item.path)).resolve()
    chain = item.nodeid.split("::", 1)[1]
    for where, rest in narrowed:
        if (path == where or path.is_relative_to(where)) and (
            not rest or chain == rest or chain.startswith((rest + "[", rest + "::"))
        ):
            return True
    return False


def requirements(item: pytest.Item) -> tuple[list[str], str]:
    """What a property's ``hicache_requires`` markers declare, and their reason: capability fields,
    and ``layout X`` for a host-pool layout the backend must list in ``layouts``."""
    claims: list[str] = []
    reasons = []
    for mark in item.iter_markers("hicache_requires"):
        claims += [c for c in mark.args if c not in claims]
        if mark.kwargs.get("layout"):
            claims.append(f"layout {mark.kwargs['layout']}")
        if mark.kwargs.get("reason"):
            reasons.append(str(mark.kwargs["reason"]))
    return claims, "; ".join(reasons)


def unmet(claims: list[str], caps: Capabilities) -> list[str]:
    """The declared requirements ``caps`` does not meet."""
    return [
        c
        for c in claims
        if (c.split(" ", 1)[1] not in caps.layouts if c.startswith("layout ") else not getattr(caps, c))
    ]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Narrow to the paths asked for, skip what the backend does not claim, expect known defects."""
    run = config.stash.get(_run_key, None)
    if run is None:
        return
    from conformance.model.capabilities import Capabilities

    run.suite = sorted(pid for pid in map(suite_id, items) if pid)
    if run.narrowed_to is not None:
        keep = [i for i in items if suite_id(i) is None or _selected_by(i, run.narrowed_to)]
        dropped = [i for i in items if suite_id(i) is not None and not _selected_by(i, run.narrowed_to)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
    fields = set(Capabilities.__dataclass_fields__)
    caps = run.spec.capabilities
    server = run.spec.server().name if run.spec.server else ""
    for item in items:
        pid = suite_id(item)
        if pid is None:
            continue
        claims, why = requirements(item)
        unknown = [c for c in claims if c not in fields and not c.startswith("layout ")]
        if unknown:
            raise pytest.UsageError(f"{pid}: hicache_requires names no capability field: {unknown}")
        missing = unmet(claims, caps)
        if missing:
            reason = f"backend {run.spec.name!r} does not declare {', '.join(missing)}"
            item.add_marker(pytest.mark.skip(reason=reason + (f": {why}" if why else "")))
        defect = run.spec.known_defect(pid.split("::", 1)[1], run.mode, server)
        if defect:
            reason, strict = defect
            item.add_marker(pytest.mark.xfail(strict=strict, reason=f"known defect: {reason}"))
            item.stash[_known_defect_key] = True


def pytest_collection_finish(session: pytest.Session) -> None:
    run = session.config.stash.get(_run_key, None)
    if run is None:
        return
    ids = [suite_id(i) for i in session.items]
    run.selected = sorted(pid for pid in ids if pid)
    run.other_tests = sum(1 for pid in ids if pid is None)


@pytest.fixture(scope="session")
def hicache_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The backend under test, as chosen with ``--backend``, with a storage root of its own."""
    from conformance.harness.rig import Target

    run = request.config.stash.get(_run_key, None)
    if run is None:
        pytest.skip("no backend chosen: run with --backend=NAME")
    given = request.config.getoption("storage_dir")
    root = Path(given) if given else Path(tempfile.mkdtemp(prefix="hicache-conformance-"))
    root.mkdir(parents=True, exist_ok=True)
    caps = run.spec.capabilities
    try:
        with run.spec.session() if run.spec.session else contextlib.nullcontext():
            yield Target(run.spec, run.mode, root, dict(caps.io_modes[run.mode]), ref=run.name)
    finally:
        if not given:
            shutil.rmtree(root, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A known defect runs without shrinking; a plain test's nested hypothesis runs (the stateful
    model) have their examples counted."""
    if _run_key not in item.config.stash or suite_id(item) is None:
        yield
        return
    with (
        _unshrunk(item) if item.stash.get(_known_defect_key, False) else contextlib.nullcontext(),
        _nested_examples_counted(item),
    ):
        yield


@contextlib.contextmanager
def _unshrunk(item: pytest.Item) -> Iterator[None]:
    """Run ``item`` without hypothesis's shrink phase: a known defect only has to fail, and nothing
    shows its minimal example, yet shrinking it was most of a certification's time on a backend with
    many (the stateful model replays a failing run hundreds of times)."""
    from hypothesis import Phase, settings

    def unshrunk(given: settings) -> settings:
        return settings(given, phases=[p for p in given.phases if p is not Phase.shrink])

    test = getattr(item, "obj", None)
    bound = getattr(test, "_hypothesis_internal_use_settings", None)  # a @given test's own settings
    profile = settings.get_current_profile_name()
    settings.register_profile(f"{profile}-unshrunk", unshrunk(settings()))  # what settings() inherits
    settings.load_profile(f"{profile}-unshrunk")
    if bound is not None:
        test._hypothesis_internal_use_settings = unshrunk(bound)  # type: ignore[union-attr]
    try:
        yield
    finally:
        if bound is not None:
            test._hypothesis_internal_use_settings = bound  # type: ignore[union-attr]
        settings.load_profile(profile)


@contextlib.contextmanager
def _nested_examples_counted(item: pytest.Item) -> Iterator[None]:
    """Count the examples of hypothesis runs nested in a plain test (the stateful model)."""
    from hypothesis import is_hypothesis_test
    from hypothesis.statistics import collector, describe_statistics

    from conformance.certificate.report import examples_run

    if is_hypothesis_test(getattr(item, "obj", None)):
        yield
        return
    item.stash[_examples_key] = 0

    def note(stats: Any) -> None:
        item.stash[_examples_key] += examples_run(describe_statistics(stats))

    with collector.with_value(note):  # type: ignore[arg-type]
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Attach what the report needs to each suite report; they reach the xdist controller intact."""
    outcome: Any = yield
    report: pytest.TestReport = outcome.get_result()
    run = item.config.stash.get(_run_key, None)
    pid = suite_id(item)
    if run is None or pid is None:
        return
    doc = (getattr(getattr(item, "function", None), "__doc__", None) or "").strip().splitlines()
    claims, _ = requirements(item)
    info: dict[str, Any] = {"property": pid, "guarantee": doc[0] if doc else "", "requires": claims}
    if report.failed and call.excinfo is not None:
        info["message"], info["example"] = failure_text(call.excinfo.value)
        report.sections.append(
            (
                "hicache-conformance",
                f"backend: {run.spec.name} (mode {run.mode})\n"
                f"property: {item.nodeid}\n"
                + (f"guarantee: {doc[0]}\n" if doc else "")
                # the whole run's seed: the rerun reproduces this failure
                + f"rerun: {rerun_command(item.config, run.seed)}\n",
            )
        )
    if report.when == "teardown":
        from conformance.certificate.report import examples_run

        statistics = getattr(item, "hypothesis_statistics", None)
        info["examples"] = examples_run(statistics) if statistics else item.stash.get(_examples_key, 0)
    report.user_properties.append(("hicache", info))


def failure_text(exc: BaseException) -> tuple[str, str]:
    """The failure's message, and hypothesis's minimal example (its notes), each as text."""
    messages, examples = [], []
    group = getattr(exc, "exceptions", None)  # an exception group: hypothesis found several bugs
    for one in group if isinstance(group, tuple) else (exc,):
        messages.append(f"{type(one).__name__}: {one}".strip())
        examples += [n for n in getattr(one, "__notes__", []) if "example" in n or "test case" in n]
    examples += [n for n in getattr(exc, "__notes__", []) if n not in examples]
    # object addresses differ from run to run; without them, a rerun's report compares equal
    message = re.sub(r" at 0x[0-9a-f]+", "", "\n".join(messages))
    return message[:4000], "\n".join(examples)[:4000]


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
    return shlex.join([*_program(config), *kept, f"--hypothesis-seed={seed}"])


def _program(config: pytest.Config) -> list[str]:
    """How pytest was started: ``python -m pytest`` also puts the current folder on sys.path."""
    argv0 = str(getattr(config, "workerinput", {}).get("mainargv", sys.argv)[0])
    return ["python", "-m", "pytest"] if argv0.endswith("__main__.py") else ["pytest"]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: hand the run's seed and overrun folder to the worker (workers re-parse the
    command line)."""
    run = node.config.stash.get(_run_key, None)
    if run is not None:
        node.workerinput["hicache_seed"] = run.seed
        node.workerinput["hicache_overruns"] = str(run.overruns)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Certification runs without hypothesis's example database and deadlines (a replayed example, or
    a slow moment, would make a rerun with the same seed differ), and under a time limit a property
    (``--property-timeout``), which the profile's examples scale."""
    run = session.config.stash.get(_run_key, None)
    if run is None:
        return
    from hypothesis import settings

    from conformance.harness.watchdog import SECONDS_PER_EXAMPLE, Watchdog

    current = settings.get_current_profile_name()
    if current not in (DEFAULT_PROFILE, QUICK_PROFILE, "thorough"):  # the user's own: keep it, less those
        settings.register_profile(f"{current}-certification", database=None, deadline=None)
        settings.load_profile(f"{current}-certification")
    given = session.config.getoption("property_timeout")
    limit = SECONDS_PER_EXAMPLE * settings().max_examples if given is None else float(given)
    if limit > 0:
        session.config.stash[_watchdog_key] = Watchdog(limit, run.overruns)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Each property runs under the watchdog's time limit (``--property-timeout``)."""
    watchdog = item.config.stash.get(_watchdog_key, None)
    pid = suite_id(item)
    if watchdog is None or pid is None:
        yield
        return
    with watchdog.watch(item.nodeid, pid, functools.partial(_last_words, item.config)):
        yield


def _last_words(config: pytest.Config, overrun: Overrun) -> None:
    """Before a process ends an overrun property: say so past pytest's capture, and where this process
    reports (no xdist), write the certificate, with the rest of the run "not run"."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture(in_=False)
    sys.stderr.write(f"\nhicache-conformance: {overrun.property}: {overrun.reason}; ending this process\n")
    collector = config.pluginmanager.get_plugin(COLLECTOR)
    if collector is not None:
        collector.overran(overrun)
        collector.write()


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(_home_key, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)
    run = config.stash.get(_run_key, None)
    if run is not None and not _is_worker(config):
        shutil.rmtree(run.overruns, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    run = session.config.stash.get(_run_key, None)
    if run is not None and _is_worker(session.config):
        session.config.workeroutput["hicache"] = {  # type: ignore[attr-defined]
            "suite": run.suite,
            "selected": run.selected,
            "other_tests": run.other_tests,
            "seed": run.seed,
        }


class CertCollector:
    """Gathers every suite property's outcome on the process that reports (the xdist controller)."""

    def __init__(self, config: pytest.Config, run: _Run) -> None:
        from conformance.certificate.progress import Progress

        self.config, self.run = config, run
        self.progress = Progress(run.spec.name, run.mode, self._say)
        self.by_id: dict[str, PropertyResult] = {}
        self.nodes: dict[str, str] = {}
        """Test node id -> property id, for reports that come without the property's record."""
        self.profile = ""
        self.max_examples = 0

    def pytest_sessionstart(self) -> None:
        from hypothesis import settings

        self.profile = str(
            self.config.getoption("hypothesis_profile", None) or settings.get_current_profile_name()
        )
        self.max_examples = settings().max_examples

    def _say(self, line: str) -> None:
        """A progress line, between pytest's own (not under ``-qq``)."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or self.config.get_verbosity() < -1:
            return
        if getattr(reporter._tw, "width_of_current_line", 0):  # after xdist's dots, which leave no mark
            reporter.write("\n")
        reporter.write_line(line)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        pids = [pid for pid in map(suite_id, session.items) if pid]
        if pids:  # an xdist controller collects nothing: its workers' collections come below
            self.progress.expect(pids, self.run.seed)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        pids = [pid for pid in (suite_id_of(self.config.rootpath, i) for i in ids) if pid]
        if pids:
            self.progress.expect(pids, self.run.seed)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        got = getattr(node, "workeroutput", {}).get("hicache")
        if got:
            self.run.suite = sorted(set(self.run.suite) | set(got["suite"]))
            self.run.selected = sorted(set(self.run.selected) | set(got["selected"]))
            self.run.other_tests = max(self.run.other_tests, int(got["other_tests"]))
            self.run.seeds[str(node.workerinput["workerid"])] = int(got["seed"])

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from conformance.certificate.report import PropertyResult, family_of

        info = next((v for k, v in report.user_properties if k == "hicache"), None)
        self._progressed(report, info)
        if not isinstance(info, dict):
            self._unrecorded(report)
            return
        pid = str(info["property"])
        self.nodes[report.nodeid] = pid
        entry = self.by_id.setdefault(pid, PropertyResult(pid, family_of(pid)))  # "not run" until its call
        entry.guarantee, entry.requires = str(info["guarantee"]), list(info["requires"])
        entry.seconds += report.duration
        if "examples" in info:
            entry.examples = int(info["examples"])
        if report.when == "call" or not report.passed:
            if entry.outcome == "failed":
                return  # a teardown error after a failed call keeps the call's account
            entry.outcome = report.outcome
            if hasattr(report, "wasxfail"):
                entry.outcome = "known defect"
                entry.reason = str(report.wasxfail).removeprefix("known defect: ")
                if report.passed:  # an intermittent one that held this time: declared, not seen
                    entry.reason = f"intermittent, not caught this run: {entry.reason}"
            elif report.skipped and isinstance(report.longrepr, tuple):
                # its first line: a skip inside a hypothesis example carries that example after it
                entry.reason = str(report.longrepr[2]).removeprefix("Skipped: ").split("\n", 1)[0]
            elif report.failed:
                entry.reason = f"{report.when} failed" if report.when != "call" else ""
                entry.message = str(info.get("message") or report.longreprtext[-4000:])
                entry.example = str(info.get("example", ""))

    def _progressed(self, report: pytest.TestReport, info: Any) -> None:
        """Count the report toward its family's progress line."""
        pid = str(info["property"]) if isinstance(info, dict) else self.nodes.get(report.nodeid)
        if pid is None:
            return
        if hasattr(report, "wasxfail"):
            outcome = "known defect"
        else:
            outcome = "failed" if report.failed else "skipped" if report.skipped else "passed"
        self.progress.report(pid, report.when or "", outcome)

    def _unrecorded(self, report: pytest.TestReport) -> None:
        """A failure of a property that comes without its record is xdist's account of a worker
        that died running it: the property failed, whatever its setup said, and where the worker
        ended an overrun, it says so."""
        if not report.failed:
            return
        watchdog = self.config.stash.get(_watchdog_key, None)
        overrun = watchdog.overrun(report.nodeid) if watchdog else None
        if overrun is not None:
            self.overran(overrun)
            return
        pid = self.nodes.get(report.nodeid)
        if pid is None:
            return
        entry = self.by_id[pid]
        entry.outcome, entry.reason = "failed", "the process running it died"
        entry.message = report.longreprtext[-4000:]

    def overran(self, overrun: Overrun) -> None:
        """A property whose process ended it at its time limit failed, with every thread's stack."""
        from conformance.certificate.report import PropertyResult, family_of

        pid = overrun.property
        entry = self.by_id.setdefault(pid, PropertyResult(pid, family_of(pid)))
        entry.outcome, entry.reason, entry.message = "failed", overrun.reason, overrun.stacks[-4000:]

    def report(self) -> CertReport:
        from conformance.certificate.coverage import coverage
        from conformance.certificate.report import CertReport, environment

        spec, caps = self.run.spec, self.run.spec.capabilities
        config = self.config
        watchdog = config.stash.get(_watchdog_key, None)
        return CertReport(
            spec.name,
            spec.version,
            self.run.mode,
            caps.as_dict(),
            self.run.seed,
            server=spec.server().description if spec.server else "",
            command=shlex.join([*_program(config), *config.invocation_params.args]),
            rerun=rerun_command(config, self.run.seed),
            date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            hypothesis_profile=self.profile,
            max_examples=self.max_examples,
            property_timeout=watchdog.limit if watchdog else 0.0,
            selection={
                "args": list(config.invocation_params.args),
                "keyword": config.getoption("keyword", "") or "",
                "markexpr": config.getoption("markexpr", "") or "",
                "deselect": list(config.getoption("deselect", None) or []),
                "paths": [str(p) for p, _ in self.run.narrowed_to or []],
            },
            seeds=dict(self.run.seeds),
            environment=environment(),
            coverage=coverage(caps, self.run.mode),
            suite=list(self.run.suite),
            other_tests=self.run.other_tests,
            properties=list(self.by_id.values()),
            unmatched_known_defects=spec.unmatched_defects(pid.split("::", 1)[1] for pid in self.run.suite),
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.write()

    def write(self) -> None:
        folder = self.config.getoption("cert_report")
        if folder:
            self.report().write(Path(folder))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        tr, run = terminalreporter, self.run
        cert = self.report()
        verdict = cert.verdict()
        tr.section(f"hicache-conformance: {run.spec.name} ({run.mode})")
        tr.line(f"declared: {run.spec.capabilities.as_dict()}")
        tr.line(f"hypothesis seed: {run.seed} (every process: {sorted(set(run.seeds.values()))})")
        tr.line(f"rerun: {cert.rerun}")
        skips = [p for p in cert.ordered() if p.outcome == "skipped"]
        if not skips:
            tr.line("skipped properties: none")
        else:
            tr.line(f"skipped properties ({len(skips)}), not certified:")
            for p in skips:
                tr.line(f"  SKIP {p.property}: {p.reason}")
        for key in cert.unmatched_known_defects:
            tr.line(f"warning: known-defect key {key!r} matches no suite property")
        tr.line(f"verdict: {verdict['verdict']}" + (f" ({verdict['why']})" if "why" in verdict else ""))
