"""The certificate: every suite property's outcome gathered on the process that reports (the xdist
controller, or the only process), progress lines as families start and end, and at the end the
:class:`~conformance.certificate.report.CertReport` written (``--cert-report``) and summarised.
"""

from __future__ import annotations

import shlex
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.plugin.run import WATCHDOG_KEY, Run, program, rerun_command, suite_id, suite_id_of

if TYPE_CHECKING:
    from conformance.certificate.report import CertReport, PropertyResult
    from conformance.harness.watchdog import Overrun


class CertCollector:
    """Gathers every suite property's outcome on the process that reports (the xdist controller)."""

    def __init__(self, config: pytest.Config, run: Run) -> None:
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
        watchdog = self.config.stash.get(WATCHDOG_KEY, None)
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
        watchdog = config.stash.get(WATCHDOG_KEY, None)
        return CertReport(
            spec.name,
            spec.version,
            self.run.mode,
            caps.as_dict(),
            self.run.seed,
            server=spec.server().description if spec.server else "",
            command=shlex.join([*program(config), *config.invocation_params.args]),
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
