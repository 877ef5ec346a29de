"""The certification report: ``--cert-report=DIR`` writes ``report.json`` and ``report.md``.

A third party shows it to say "certified"; a CI gate archives it. It names the backend, the suite
and the environment, says how the run was made (command line, date, hypothesis profile, the
selection and the seed every process used), repeats the declared capabilities and the deployment
space the suite covered, lists every property in a stable order with its outcome, hypothesis's
example count, its guarantee and, for a failure, the message and the minimal example, and ends in
a verdict. Only the suite's own properties count, only a run of all of them can certify, and only at
a profile that draws at least ``CERTIFYING_EXAMPLES`` examples a property: a quicker run is a
check, not a certificate.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import conformance

_EXAMPLES = re.compile(r"(\d+) passing(?: examples)?, (\d+) failing")
SUITE_DIR = Path(conformance.__file__).parent / "suite"
CERTIFYING_EXAMPLES = 12
"""The default profile's examples a property: the least depth a certificate vouches for."""


def examples_run(statistics: str) -> int:
    """Examples hypothesis ran, summed over phases, from its statistics text."""
    return sum(int(a) + int(b) for a, b in _EXAMPLES.findall(statistics))


def suite_digest() -> str:
    """A short hash of the suite's sources: two reports with one digest ran the same properties."""
    digest = hashlib.sha256()
    for path in sorted(SUITE_DIR.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass
class PropertyResult:
    """One suite property: ``property`` is its id within the suite, ``module.py::name[params]``."""

    property: str
    family: str
    outcome: str = "not run"
    guarantee: str = ""
    requires: list[str] = field(default_factory=list)
    reason: str = ""
    message: str = ""
    example: str = ""
    examples: int = 0
    seconds: float = 0.0


@dataclass
class CertReport:
    backend: str
    backend_version: str
    mode: str
    capabilities: dict[str, Any]
    seed: int
    server: str = ""
    """The service the backend's store ran on (``BackendSpec.server``), empty for none."""
    command: str = ""
    rerun: str = ""
    date: str = ""
    hypothesis_profile: str = ""
    max_examples: int = 0
    """The profile's examples a property (the suite scales some properties from it)."""
    property_timeout: float = 0.0
    """Seconds a property could run before its process was ended (0: no limit)."""
    selection: dict[str, Any] = field(default_factory=dict)
    seeds: dict[str, int] = field(default_factory=dict)
    suite_version: str = conformance.__version__
    suite_digest: str = field(default_factory=suite_digest)
    environment: dict[str, str] = field(default_factory=dict)
    coverage: dict[str, list[str]] = field(default_factory=dict)
    suite: list[str] = field(default_factory=list)
    other_tests: int = 0
    properties: list[PropertyResult] = field(default_factory=list)
    unmatched_known_defects: list[str] = field(default_factory=list)
    """Known-defect keys the backend declares that cover no suite property (stale claims)."""

    def ordered(self) -> list[PropertyResult]:
        """Every property of the suite, ran or not, in id order (stable from run to run)."""
        known = {p.property: p for p in self.properties}
        for pid in self.suite:
            known.setdefault(pid, PropertyResult(pid, family_of(pid)))
        return [known[k] for k in sorted(known)]

    def verdict(self) -> dict[str, Any]:
        rows = self.ordered()
        failed = [p.property for p in rows if p.outcome == "failed"]
        known = [p.property for p in rows if p.outcome == "known defect"]
        not_run = [p.property for p in rows if p.outcome == "not run"]
        if failed or known:
            return {"verdict": "not certified", "failing": failed, "known_defects": known, "not_run": not_run}
        if not_run or self.other_tests or not rows:
            ran = [p.property for p in rows if p.outcome != "not run"]
            why = f"{len(ran)} of {len(rows)} suite properties ran"
            if self.other_tests:
                why += f"; the run also held {self.other_tests} tests that are not suite properties"
            return {"verdict": "partial run", "why": why, "ran": ran, "not_run": not_run}
        if self.max_examples < CERTIFYING_EXAMPLES:
            why = (
                f"hypothesis profile {self.hypothesis_profile} draws {self.max_examples} examples a "
                f"property; a certificate needs {CERTIFYING_EXAMPLES}"
            )
            return {"verdict": "quick check", "why": why}
        skipped = [p.property for p in rows if p.outcome == "skipped"]
        if skipped:
            passed = [p.property for p in rows if p.outcome == "passed"]
            return {"verdict": "certified for a subset", "certified": passed, "not_claimed": skipped}
        return {"verdict": "certified"}

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["properties"] = [asdict(p) for p in self.ordered()]
        return {**data, **self.verdict()}

    def markdown(self) -> str:
        verdict = self.verdict()
        rows = self.ordered()
        lines = [
            f"# HiCache v2 certification: {self.backend} ({self.mode})",
            "",
            f"**Verdict: {verdict['verdict']}**" + (f" ({verdict['why']})" if "why" in verdict else ""),
            "",
            f"- backend version: {self.backend_version}",
            *([f"- server: {self.server}"] if self.server else []),
            f"- suite: hicache-conformance {self.suite_version} (sources {self.suite_digest})",
            f"- date (UTC): {self.date}",
            f"- command: `{self.command}`",
            f"- hypothesis profile: {self.hypothesis_profile} ({self.max_examples} examples a property); "
            + f"seed {self.seed} in every process "
            + f"({', '.join(f'{k}: {v}' for k, v in sorted(self.seeds.items()))})",
            f"- time limit a property: {f'{self.property_timeout:g} s' if self.property_timeout else 'none'}",
            f"- rerun: `{self.rerun}`",
            f"- selection: {json.dumps(self.selection)}",
            *(f"- {k}: {v}" for k, v in self.environment.items()),
            "",
            "## Declared capabilities",
            "",
            *(f"- {k}: {v}" for k, v in self.capabilities.items()),
            "",
            "## Deployment space covered",
            "",
            *(f"- {k}: {', '.join(v)}" for k, v in self.coverage.items()),
            "",
            "## Properties",
            "",
            "| property | family | outcome | examples | requires | reason |",
            "|---|---|---|---:|---|---|",
            *(
                f"| `{p.property}` | {p.family} | {p.outcome} | {p.examples} | {', '.join(p.requires)} "
                f"| {_cell(p.reason)} |"
                for p in rows
            ),
        ]
        failing = [p for p in rows if p.outcome == "failed"]
        if failing:
            lines += ["", "## Failing properties"]
            for p in failing:
                lines += ["", f"### `{p.property}`", "", f"Guarantee: {p.guarantee}", "", "Message:", ""]
                lines += ["```", p.message.strip() or "(none)", "```"]
                if p.example:
                    lines += ["", "Minimal example:", "", "```", p.example.strip(), "```"]
        if self.unmatched_known_defects:
            lines += ["", "## Warning: known-defect keys that match no suite property", ""]
            lines += [f"- `{k}`" for k in self.unmatched_known_defects]
        if verdict.get("known_defects"):
            lines += ["", "## Known defects (expected failures)", ""]
            lines += [f"- `{n}`" for n in verdict["known_defects"]]
        if verdict.get("not_run"):
            lines += ["", f"## Not run ({len(verdict['not_run'])})", ""]
            lines += [f"- `{n}`" for n in verdict["not_run"]]
        return "\n".join(lines) + "\n"

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.json").write_text(json.dumps(self.as_dict(), indent=2))
        (folder / "report.md").write_text(self.markdown())


def family_of(property_id: str) -> str:
    """``test_bad_input.py::x`` -> ``bad_input``."""
    return property_id.split("::", 1)[0].removesuffix(".py").removeprefix("test_")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def environment() -> dict[str, str]:
    env = {"python": platform.python_version(), "os": platform.platform()}
    for package in ("torch", "nixl", "hypothesis", "pytest", "pytest-xdist"):
        try:
            env[package] = version(package)
        except PackageNotFoundError:
            env[package] = "not installed"
    return env
