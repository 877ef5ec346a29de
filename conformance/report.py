"""The certification report: ``--cert-report=DIR`` writes ``report.json`` and ``report.md``.

A third party shows it to say "certified"; a CI gate archives it. It names the backend, the suite
and the environment, repeats the declared capabilities, lists every property with its outcome,
hypothesis's example count and the seed that reproduces the run, and ends in a verdict.
"""

from __future__ import annotations

import json
import platform
import re
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import conformance

_EXAMPLES = re.compile(r"(\d+) passing(?: examples)?, (\d+) failing")


def examples_run(statistics: str) -> int:
    """Examples hypothesis ran, summed over phases, from its statistics text."""
    return sum(int(a) + int(b) for a, b in _EXAMPLES.findall(statistics))


@dataclass
class PropertyResult:
    nodeid: str
    family: str
    outcome: str
    reason: str = ""
    examples: int = 0
    seconds: float = 0.0


@dataclass
class CertReport:
    backend: str
    backend_version: str
    mode: str
    capabilities: dict[str, Any]
    seed: int | None
    suite_version: str = conformance.__version__
    environment: dict[str, str] = field(default_factory=dict)
    properties: list[PropertyResult] = field(default_factory=list)

    def verdict(self) -> dict[str, Any]:
        failed = [p.nodeid for p in self.properties if p.outcome == "failed"]
        skipped = [p.nodeid for p in self.properties if p.outcome == "skipped"]
        known = [p.nodeid for p in self.properties if p.outcome == "known defect"]
        if failed or known or not self.properties:
            return {"verdict": "not certified", "failing": failed, "known_defects": known}
        if skipped:
            passed = [p.nodeid for p in self.properties if p.outcome == "passed"]
            return {"verdict": "certified for a subset", "certified": passed, "not_claimed": skipped}
        return {"verdict": "certified"}

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), **self.verdict()}

    def markdown(self) -> str:
        verdict = self.verdict()
        lines = [
            f"# HiCache v2 certification: {self.backend} ({self.mode})",
            "",
            f"**Verdict: {verdict['verdict']}**",
            "",
            f"- backend version: {self.backend_version}",
            f"- suite: hicache-conformance {self.suite_version}",
            f"- hypothesis seed: {self.seed} (rerun with `--hypothesis-seed={self.seed}`)",
            *(f"- {k}: {v}" for k, v in self.environment.items()),
            "",
            "## Declared capabilities",
            "",
            *(f"- {k}: {v}" for k, v in self.capabilities.items()),
            "",
            "## Properties",
            "",
            "| property | family | outcome | examples | reason |",
            "|---|---|---|---:|---|",
            *(
                f"| `{p.nodeid.split('::', 1)[-1]}` | {p.family} | {p.outcome} | {p.examples} | {p.reason} |"
                for p in self.properties
            ),
        ]
        if verdict.get("failing"):
            lines += ["", "## Failing properties", "", *(f"- `{n}`" for n in verdict["failing"])]
        if verdict.get("known_defects"):
            lines += [
                "",
                "## Known defects (expected failures)",
                "",
                *(f"- `{n}`" for n in verdict["known_defects"]),
            ]
        return "\n".join(lines) + "\n"

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.json").write_text(json.dumps(self.as_dict(), indent=2))
        (folder / "report.md").write_text(self.markdown())


def environment() -> dict[str, str]:
    env = {"python": platform.python_version(), "os": platform.platform()}
    for package in ("torch", "nixl", "hypothesis", "pytest"):
        try:
            env[package] = version(package)
        except PackageNotFoundError:
            env[package] = "not installed"
    return env
