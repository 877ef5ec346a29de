"""The certification report: ``--cert-report=DIR`` writes ``report.json``, ``report.md`` and
``report.html`` (one page: the verdict, every family's counts, the skips with their reasons, the seed
and the command that reproduces the run).

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
import html
import json
import platform
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import conformance

_EXAMPLES = re.compile(r"(\d+) passing(?: examples)?, (\d+) failing")
SUITE_DIR = Path(conformance.__file__).parent / "suite"
CERTIFYING_EXAMPLES = 12
_VERDICT_COLOURS = {"certified": "#1a7f37", "certified for a subset": "#1a7f37", "not certified": "#cf222e"}
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

    def family_counts(self) -> dict[str, Counter[str]]:
        """Each family's properties by outcome, families in name order."""
        counts: dict[str, Counter[str]] = {}
        for p in self.ordered():
            counts.setdefault(p.family, Counter())[p.outcome] += 1
        return dict(sorted(counts.items()))

    def html(self) -> str:
        """The certificate as one self-contained page, for a person or a CI artifact."""
        verdict, rows = self.verdict(), self.ordered()
        e = html.escape
        why = f" ({e(verdict['why'])})" if "why" in verdict else ""
        facts = [
            ("backend", f"{self.backend} {self.backend_version}, mode {self.mode}"),
            ("suite", f"hicache-conformance {self.suite_version} (sources {self.suite_digest})"),
            ("date", self.date),
            ("hypothesis", f"profile {self.hypothesis_profile}, {self.max_examples} examples a property"),
            ("seed", f"{self.seed} in every process"),
            ("command", self.command),
            ("reproduce", self.rerun),
            ("environment", ", ".join(f"{k} {v}" for k, v in self.environment.items())),
        ]
        outcomes = ["passed", "failed", "known defect", "skipped", "not run"]
        counts = self.family_counts()
        total: Counter[str] = sum(counts.values(), Counter())
        family_rows = [
            f"<tr><td>{e(f)}</td><td>{sum(c.values())}</td>" + "".join(f"<td>{c[o]}</td>" for o in outcomes)
            for f, c in [*counts.items(), ("all", total)]
        ]
        skips = [p for p in rows if p.outcome == "skipped"]
        failing = [p for p in rows if p.outcome == "failed"]
        known = [p for p in rows if p.outcome == "known defect"]
        not_run = [p for p in rows if p.outcome == "not run"]
        colour = _VERDICT_COLOURS.get(verdict["verdict"], "#b35900")  # partial run, quick check: amber
        parts = [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>HiCache v2 certification: {e(self.backend)} ({e(self.mode)})</title>",
            "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
            "code,pre{background:#f6f8fa}pre{padding:.5em;overflow-x:auto;white-space:pre-wrap}</style>",
            "</head><body>",
            f"<h1>HiCache v2 certification: {e(self.backend)} ({e(self.mode)})</h1>",
            f'<p style="font-size:1.4em">Verdict: <strong style="color:{colour}">'
            f"{e(verdict['verdict'])}</strong>{why}</p>",
            "<table>",
            *(f"<tr><th>{k}</th><td><code>{e(str(v))}</code></td></tr>" for k, v in facts),
            "</table>",
            "<h2>Families</h2>",
            "<table><tr><th>family</th><th>properties</th>" + "".join(f"<th>{o}</th>" for o in outcomes),
            *family_rows,
            "</table>",
        ]
        if failing:
            parts.append(f"<h2>Failing properties ({len(failing)})</h2>")
            for p in failing:
                parts += [
                    f"<h3><code>{e(p.property)}</code></h3>",
                    f"<p>Guarantee: {e(p.guarantee)}</p>" + (f"<p>{e(p.reason)}</p>" if p.reason else ""),
                    f"<pre>{e(p.message.strip() or '(no message)')}</pre>",
                    *([f"<p>Minimal example:</p><pre>{e(p.example.strip())}</pre>"] if p.example else []),
                ]
        for title, group in (("Known defects", known), ("Skipped, with the reason", skips)):
            if group:
                parts.append(f"<h2>{title} ({len(group)})</h2><ul>")
                parts += [f"<li><code>{e(p.property)}</code>: {e(p.reason)}</li>" for p in group]
                parts.append("</ul>")
        if not_run:
            parts.append(f"<h2>Not run ({len(not_run)})</h2><ul>")
            parts += [f"<li><code>{e(p.property)}</code></li>" for p in not_run]
            parts.append("</ul>")
        if self.unmatched_known_defects:
            parts.append("<h2>Known-defect keys that match no suite property</h2><ul>")
            parts += [f"<li><code>{e(k)}</code></li>" for k in self.unmatched_known_defects]
            parts.append("</ul>")
        return "\n".join([*parts, "</body></html>", ""])

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.json").write_text(json.dumps(self.as_dict(), indent=2))
        (folder / "report.md").write_text(self.markdown())
        (folder / "report.html").write_text(self.html())


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
