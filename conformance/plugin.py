"""The pytest plugin: ``pytest --backend=NAME`` certifies a HiCache v2 storage backend.

Registered through the ``pytest11`` entry point. With ``--backend`` and no test paths, the run
collects the installed suite (``conformance/suite``); with paths, it runs those, so a project can
mix the suite into its own tests.
"""

from __future__ import annotations

import contextlib
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

from conformance.registry import BackendResolutionError, resolve_backend
from conformance.report import CertReport, PropertyResult, environment, examples_run
from conformance.rig import Target

SUITE_DIR = Path(__file__).parent / "suite"

settings.register_profile(
    "hicache-default",
    max_examples=12,
    deadline=None,
    # the explain phase re-runs a failure dozens of times; "thorough" keeps it
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "thorough",
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
if not os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile("hicache-default")

_target_key = pytest.StashKey[Target]()
_skips_key = pytest.StashKey[list[tuple[str, str]]]()
_report_key = pytest.StashKey[CertReport]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hicache-conformance")
    group.addoption(
        "--backend", default=None, help="backend to certify: a registered name or package.module:factory"
    )
    group.addoption("--backend-mode", default=None, help="I/O mode the backend declares (default: its first)")
    group.addoption(
        "--storage-dir", default=None, help="where storage locations are made (default: a temp dir)"
    )
    group.addoption("--cert-report", default=None, help="write report.json and report.md into this folder")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # hypothesis's explain phase imports libcst, whose deprecation noise would bury the report
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:libcst.*")
    config.stash[_skips_key] = []
    name = config.getoption("backend")
    if not name:
        return
    try:
        spec = resolve_backend(name)
    except BackendResolutionError as exc:
        raise pytest.UsageError(str(exc)) from exc
    modes = list(spec.capabilities.io_modes)
    mode = config.getoption("backend_mode") or modes[0]
    if mode not in spec.capabilities.io_modes:
        raise pytest.UsageError(f"backend {spec.name!r} declares I/O modes {modes}, not {mode!r}")
    storage = config.getoption("storage_dir")
    root = Path(storage) if storage else Path(tempfile.mkdtemp(prefix="hicache-conformance-"))
    root.mkdir(parents=True, exist_ok=True)
    target = Target(spec, mode, root, dict(spec.capabilities.io_modes[mode]), ref=name)
    config.stash[_target_key] = target
    if config.getoption("cert_report"):
        if config.getoption("hypothesis_seed") is None:  # a report must say how to reproduce it
            config.option.hypothesis_seed = random.randrange(2**32)
        config.stash[_report_key] = cert = CertReport(
            spec.name,
            spec.version,
            mode,
            spec.capabilities.as_dict(),
            int(config.getoption("hypothesis_seed")),
            environment=environment(),
        )
        config.pluginmanager.register(CertCollector(cert), "hicache-conformance-report")
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = [str(SUITE_DIR)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A backend's declared known defects become xfails, strict unless intermittent."""
    target = config.stash.get(_target_key, None)
    if target is None:
        return
    for item in items:
        if "hicache_target" not in getattr(item, "fixturenames", ()):
            continue
        defect = target.spec.known_defect(item.nodeid.split("::", 1)[-1], target.mode)
        if defect:
            reason, strict = defect
            item.add_marker(pytest.mark.xfail(strict=strict, reason=f"known defect: {reason}"))


@pytest.fixture(scope="session")
def hicache_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The backend under test, as chosen with ``--backend``."""
    if _target_key not in request.config.stash:
        pytest.skip("no backend chosen: run with --backend=NAME")
    target = request.config.stash[_target_key]
    with target.spec.session() if target.spec.session else contextlib.nullcontext():
        yield target


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome: Any = yield
    report: pytest.TestReport = outcome.get_result()
    target = item.config.stash.get(_target_key, None)
    if target is None:
        return
    if report.failed and call.when == "call":
        doc = (getattr(getattr(item, "function", None), "__doc__", None) or "").strip().splitlines()
        report.sections.append(
            (
                "hicache-conformance",
                f"backend: {target.spec.name} (mode {target.mode})\n"
                f"property: {item.nodeid}\n" + (f"guarantee: {doc[0]}\n" if doc else ""),
            )
        )
    statistics = getattr(item, "hypothesis_statistics", None)
    if report.when == "teardown" and statistics:
        report.user_properties.append(("hypothesis_examples", examples_run(statistics)))
    if report.skipped and isinstance(report.longrepr, tuple) and not hasattr(report, "wasxfail"):
        item.config.stash[_skips_key].append((item.nodeid, str(report.longrepr[2])))


class CertCollector:
    """Gathers outcomes for the certification report; runs on the xdist controller too."""

    def __init__(self, cert: CertReport) -> None:
        self.cert = cert
        self.by_id: dict[str, PropertyResult] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.by_id.get(report.nodeid)
        if entry is None:
            module = report.nodeid.split("::")[0].rsplit("/", 1)[-1]
            entry = PropertyResult(report.nodeid, module.removesuffix(".py").removeprefix("test_"), "passed")
            self.by_id[report.nodeid] = entry
            self.cert.properties.append(entry)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            entry.outcome = report.outcome
            entry.seconds += report.duration
            if hasattr(report, "wasxfail"):
                entry.outcome, entry.reason = (
                    "known defect",
                    str(report.wasxfail).removeprefix("known defect: "),
                )
            elif report.skipped and isinstance(report.longrepr, tuple):
                entry.reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        if report.when == "teardown" and report.failed:
            entry.outcome = "failed"
        for name, value in report.user_properties:
            if name == "hypothesis_examples" and isinstance(value, int):
                entry.examples = value


def pytest_sessionfinish(session: pytest.Session) -> None:
    cert = session.config.stash.get(_report_key, None)
    if cert is not None and not hasattr(session.config, "workerinput"):
        cert.write(Path(session.config.getoption("cert_report")))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    target = config.stash.get(_target_key, None)
    if target is None:
        return
    skips = config.stash[_skips_key]
    tr = terminalreporter
    tr.section(f"hicache-conformance: {target.spec.name} ({target.mode})")
    tr.line(f"declared: {target.caps.as_dict()}")
    if not skips:
        tr.line("skipped properties: none")
        return
    tr.line(f"skipped properties ({len(skips)}), not certified:")
    for nodeid, reason in skips:
        tr.line(f"  SKIP {nodeid}: {reason.removeprefix('Skipped: ')}")
