"""Measure the suite's mutation score on the reference backend with cosmic-ray's mutants.

``python -m tests.mutation [--sample N] [--seed S] [--timeout T] [--jobs J] [--mode direct]``

Every mutant cosmic-ray's operators make of ``reference_backend/*.py`` is the population, less
those inside annotations and ``if TYPE_CHECKING:`` blocks (never evaluated: equivalent by
construction). The first N of a seeded shuffle of it run, each mutant in a copy of the repository,
against the certification suite at the default profile (``--backend=nixl``, one seed; the object
store's module against ``--backend=nixl-obj``), under a time limit; the first failing property
kills it. A calibration run of the unmutated suite under coverage comes first (cached in
``--workdir``): it must pass, it records which properties ran each line, and its time sets the
default limit. A mutant on a line it never ran survives without a run; one on a line only some
properties ran is judged by those (a property that never executes a line cannot see it change);
any other by the whole suite, likeliest killers first (``tests/mutation/order.py``). Prints the
score, killed / (sampled - equivalent), and every survivor; ``tests/mutation/equivalent.py``
holds the triage. Needs the ``mutation`` extra. Exits 1 below ``--target``.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import cosmic_ray.plugins
from cosmic_ray.ast import ast_nodes, get_ast
from cosmic_ray.mutating import mutate_code
from coverage import CoverageData
from coverage.parser import PythonParser

from tests.mutation.equivalent import EQUIVALENT
from tests.mutation.order import CALIBRATING, PLAN, PROFILE

ROOT = Path(__file__).resolve().parents[2]
TARGET = "reference_backend"
COPIED = ("conformance", "reference_backend", "tests", "fixtures", "pyproject.toml")
OTHER_TARGETS = {"reference_backend/obj.py": ("nixl-obj", "default")}
"""Modules ``--backend=nixl`` never loads, judged by the certification of the target that does
(the object-store target starts its own S3 server on loopback). The calibration does not cover
them: each of their kills is confirmed by the killing property passing on the unmutated source."""
PURE_PYTHON = {"HICACHE_NATIVE": "0"}
"""Every run (calibration and mutants) takes the index's pure-Python probing. cosmic-ray mutates
Python; where the C++ kernel is selected, the Python it replaces never runs, and its mutants would
count as never run though CI certifies that path whole (``HICACHE_NATIVE=0 pytest --backend=nixl``).
The kernel's calls then never run instead: a few lines that hand one implementation's work to the
other, which leaves the arrays byte for byte the same (``tests/test_index_checkpoint.py``)."""
OUTSIDE = "main"
"""The calibration's context for lines the pytest processes run outside any property's body; a
process a property starts records under that property's node id (``tests/mutation/order.py``)."""
HANG_FLOOR, HANG_FACTOR = 120.0, 20
"""A property may take ``HANG_FACTOR`` times the slowest property's calibrated run, at least
``HANG_FLOOR`` seconds, on a mutant (``--property-timeout``): past that the suite's own watchdog
fails it, as it fails a backend that hangs in a certification. Such a kill counts only where the
property then passes on the unmutated source within the same limit."""
OVERRUN = re.compile(r"^hicache-conformance: (\S+): it ran past its time limit", re.M)
SAMPLE = 40
"""Default sample. Measured: 16 mutants took 43 minutes with one job at ``nice 19`` on 2 cores
that four other sessions kept busy (docs/mutation.md). Two jobs on 2 idle cores should fit 40 in
an hour; that has not been measured."""


@dataclass(frozen=True)
class Mutant:
    path: str
    operator: str
    occurrence: int
    line: int
    col: int
    end_line: int

    @property
    def ident(self) -> str:
        """Stable while the module's source is: what equivalent.py keys its triage by."""
        return f"{self.path}:{self.line}:{self.operator.removeprefix('core/')}:{self.occurrence}"


@dataclass
class Outcome:
    ident: str
    verdict: str  # killed, timeout, survived, not-executed
    seconds: float
    killer: str
    diff: str


def _never_evaluated(tree: ast.Module) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Spans of annotations and ``if TYPE_CHECKING:`` bodies: with postponed annotations, never run."""
    spans: list[ast.expr | ast.stmt] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            spans += [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs) if x.annotation]
            spans += [x.annotation for x in (a.vararg, a.kwarg) if x is not None and x.annotation]
            spans += [node.returns] if node.returns else []
        elif isinstance(node, ast.AnnAssign):
            spans.append(node.annotation)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            spans += node.body
    return [((s.lineno, s.col_offset), (s.end_lineno or s.lineno, s.end_col_offset or 0)) for s in spans]


def population(root: Path = ROOT) -> tuple[list[Mutant], int]:
    """Every mutant of the reference backend, in a fixed order, and how many were left out as never run."""
    operators = [
        (name, cosmic_ray.plugins.get_operator(name)())
        for name in sorted(cosmic_ray.plugins.operator_names())
        if not cosmic_ray.plugins.get_operator(name).arguments()
    ]
    mutants, dropped = [], 0
    for file in sorted((root / TARGET).glob("*.py")):
        source = file.read_text()
        skip = _never_evaluated(ast.parse(source))
        if skip and "from __future__ import annotations" not in source:
            raise SystemExit(f"{file}: its annotations are evaluated; leaving them out would be wrong")
        nodes = list(ast_nodes(get_ast(source)))
        for name, operator in operators:
            positions = [p for node in nodes for p in operator.mutation_positions(node)]
            for occurrence, (start, end) in enumerate(positions):
                if any(lo <= start < hi for lo, hi in skip):
                    dropped += 1
                    continue
                rel = file.relative_to(root).as_posix()
                mutants.append(Mutant(rel, name, occurrence, start[0], start[1], end[0]))
    return mutants, dropped


def _sources_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for folder in ("conformance", TARGET, "fixtures"):
        for file in sorted((root / folder).rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                digest.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def suite_command(backend: str, mode: str, extra: list[str], workers: int = 0) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        f"--backend={backend}",
        f"--backend-mode={mode}",
        "--hypothesis-seed=0",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-n",
        str(workers),
        "-q",
        *extra,
    ]


@dataclass
class Calibration:
    seconds: float
    durations: dict[str, float]
    executed: dict[str, set[int]]  # path -> lines run, in any process
    contexts: dict[str, dict[int, list[str]]]  # path -> line -> contexts that ran it


def calibrate(work: Path, mode: str, workers: int) -> Calibration:
    """Run the unmutated suite once under coverage (or reuse the last run on the same sources)."""
    key = f"{_sources_hash(ROOT)}-{mode}-native{PURE_PYTHON['HICACHE_NATIVE']}"
    data_file = work / "coverage" / ".coverage"
    junit, meta = work / "calibration.xml", work / "calibration.json"
    fresh = meta.exists() and json.loads(meta.read_text()).get("key") == key
    if not fresh:
        shutil.rmtree(work / "coverage", ignore_errors=True)
        (work / "coverage").mkdir(parents=True)
        rc = work / "coveragerc"
        rc.write_text(
            f"[run]\npatch = subprocess\nparallel = true\ndata_file = {data_file}\ncontext = {OUTSIDE}\n"
        )
        print("calibration: the unmutated suite under coverage (a few times a mutant's run) ...", flush=True)
        start = time.monotonic()
        cov = [f"--cov={ROOT / TARGET}", "--cov-context=test", "--cov-report=", f"--cov-config={rc}"]
        done = subprocess.run(
            suite_command("nixl", mode, [f"--junitxml={junit}", "-p", "tests.mutation.order", *cov], workers),
            cwd=ROOT,
            env={**os.environ, **PURE_PYTHON, CALIBRATING: "1"},
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"the unmutated suite fails (exit {done.returncode}): no score can be measured")
        # pytest-cov combines its workers; this adds the suite's own subprocesses, if any are left
        subprocess.run([sys.executable, "-m", "coverage", "combine", "--append", f"--rcfile={rc}"], cwd=ROOT)
        meta.write_text(json.dumps({"key": key, "seconds": time.monotonic() - start, "workers": workers}))
    durations = {
        f"{c.get('classname')}::{c.get('name')}": float(c.get("time", 0))
        for c in ET.parse(junit).getroot().iter("testcase")
    }
    data = CoverageData(basename=str(data_file))
    data.read()
    executed: dict[str, set[int]] = {}
    contexts: dict[str, dict[int, list[str]]] = {}
    for measured in data.measured_files():
        rel = Path(measured).resolve().relative_to(ROOT).as_posix()
        executed[rel] = set(data.lines(measured) or ())
        contexts[rel] = data.contexts_by_lineno(measured)
    return Calibration(json.loads(meta.read_text())["seconds"], durations, executed, contexts)


def _statement_lines(source: str, first: int, last: int) -> set[int]:
    """The lines coverage records for source lines ``first..last``: each one's statement's first line."""
    parser = PythonParser(text=source)
    parser.parse_source()
    return {parser.first_line(n) for n in range(first, last + 1)}


def _in_function_body(source: str, line: int, col: int) -> bool:
    """Whether ``(line, col)`` is in a function's body: run when called, not when defined."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first, last = node.body[0], node.body[-1]
            if (first.lineno, first.col_offset) <= (line, col) <= (last.end_lineno or last.lineno, 10**6):
                return True
    return False


class Workspace:
    """Copies of the repository, one a job, each mutated in place for one mutant at a time."""

    def __init__(self, work: Path, jobs: int) -> None:
        self.free: list[Path] = []
        self.lock = threading.Lock()
        for j in range(jobs):
            copy = work / f"copy{j}"
            shutil.rmtree(copy, ignore_errors=True)
            for name in COPIED:
                src = ROOT / name
                if src.is_dir():
                    shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    copy.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, copy / name)
            self.free.append(copy)

    def take(self) -> Path:
        with self.lock:
            return self.free.pop()

    def give(self, copy: Path) -> None:
        with self.lock:
            self.free.append(copy)


def _killer(output: str) -> str:
    """The property that failed: pytest's summary line, or the watchdog's where it ended the run."""
    found = re.search(r"^(?:FAILED|ERROR) (\S+)", output, re.M)
    if found:
        return found.group(1)
    overrun = OVERRUN.search(output)
    if overrun:
        return f"conformance/suite/{overrun.group(1)} (past its time limit)"
    return output.strip().splitlines()[-1][:200] if output.strip() else ""


def hang_limit(cal: Calibration) -> float:
    return max(HANG_FLOOR, HANG_FACTOR * max(cal.durations.values(), default=0.0))


def run_mutant(mutant: Mutant, cal: Calibration, space: Workspace, mode: str, timeout: float) -> Outcome:
    """Apply one mutant in a free copy, run the ordered suite on it, put the source back."""
    source = (ROOT / mutant.path).read_text()
    mutated = mutate_code(source, cosmic_ray.plugins.get_operator(mutant.operator)(), mutant.occurrence)
    if mutated is None:
        raise SystemExit(f"{mutant.ident}: cosmic-ray made no mutation here; the population is stale")
    diff = "\n".join(
        line
        for line in difflib.unified_diff(source.splitlines(), mutated.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    )
    backend, mode = OTHER_TARGETS.get(mutant.path, ("nixl", mode))
    ran: set[str] = set()
    if mutant.path not in OTHER_TARGETS:
        lines = _statement_lines(source, mutant.line, mutant.end_line)
        if not lines & cal.executed.get(mutant.path, set()):
            return Outcome(mutant.ident, "not-executed", 0.0, "", diff)
        ran = {c for n in lines for c in cal.contexts.get(mutant.path, {}).get(n, [])}
    copy = space.take()
    target = copy / mutant.path
    try:
        plan = copy / "mutation-plan.json"
        # a line only properties ran (their bodies, or processes they started) is judged by those
        # properties; one run anywhere else (import, a fixture) by the whole suite. A function body
        # that properties ran and that also ran outside them ran there in the plugin's factory check
        # (every run repeats it: a mutant that breaks it fails every run) or in collection
        if ran - {OUTSIDE} and _in_function_body(source, mutant.line, mutant.col):
            ran.discard(OUTSIDE)
        only = bool(ran) and not any(c == OUTSIDE or c.endswith(("|setup", "|teardown")) for c in ran)
        first = sorted({c.removeprefix(f"{OUTSIDE}|").removesuffix("|run") for c in ran if c != OUTSIDE})
        plan.write_text(json.dumps({"first": first, "only": only, "seconds": cal.durations}))
        target.write_text(mutated)
        limit = f"--property-timeout={hang_limit(cal):.0f}"
        start = time.monotonic()
        rc, text = _run(copy, backend, mode, ["-x", limit], plan, timeout)
        seconds = time.monotonic() - start
        if rc is None:
            return Outcome(mutant.ident, "timeout", seconds, f"over {timeout:.0f} s", diff)
        if rc == 0:
            return Outcome(mutant.ident, "survived", seconds, "", diff)
        killer = _killer(text)
        # no calibration ran another target, and a hang may be the machine's: the killer must pass unmutated
        if mutant.path in OTHER_TARGETS or OVERRUN.search(text):
            target.write_text(source)
            again, _ = _run(copy, backend, mode, [killer.split(" ")[0], limit], plan, timeout)
            if again != 0:
                return Outcome(mutant.ident, "unconfirmed", seconds, f"fails unmutated too: {killer}", diff)
        return Outcome(mutant.ident, "killed", seconds, f"exit {rc}: {killer}", diff)
    finally:
        target.write_text(source)
        space.give(copy)


def _run(
    copy: Path, backend: str, mode: str, extra: list[str], plan: Path, timeout: float
) -> tuple[int | None, str]:
    """The suite in ``copy`` under the mutation profile: exit status (None past ``timeout``), output."""
    env = {**os.environ, **PURE_PYTHON, PLAN: str(plan), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = suite_command(
        backend, mode, [*extra, "-p", "tests.mutation.order", f"--hypothesis-profile={PROFILE}"]
    )
    with subprocess.Popen(
        cmd, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    ) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return None, ""
    return proc.returncode, out.decode(errors="replace")


def score(sample: list[Mutant], outcomes: dict[str, Outcome]) -> tuple[str, float]:
    """The report: counts, the score over the non-equivalent mutants, and every mutant not killed.

    A mutant over the time limit is not killed: on a busy machine a passing run can overrun it,
    and a backend that hangs fails the suite only where the suite's own per-property limit says so.
    """
    done = [outcomes[m.ident] for m in sample if m.ident in outcomes]
    verdicts = ("killed", "timeout", "survived", "not-executed", "unconfirmed")
    count = {v: sum(1 for o in done if o.verdict == v) for v in verdicts}
    alive = [o for o in done if o.verdict in ("survived", "not-executed", "timeout")]
    equivalent = [o for o in alive if o.ident in EQUIVALENT]
    live = len(done) - len(equivalent) - count["unconfirmed"]
    value = count["killed"] / live if live else 1.0
    lines = [
        f"ran {len(done)} of {len(sample)} sampled mutants: killed {count['killed']}, survived "
        f"{count['survived']}, on lines the suite never runs {count['not-executed']}, over the time "
        f"limit {count['timeout']} (not killed); equivalent {len(equivalent)}; undecided "
        f"{count['unconfirmed']} (the killing property fails unmutated too: left out)",
        f"score: {count['killed']} / {live} non-equivalent = {100 * value:.1f}%",
    ]
    for o in [*alive, *(o for o in done if o.verdict == "unconfirmed")]:
        why = EQUIVALENT.get(o.ident)
        tag = f"equivalent: {why}" if why else o.verdict.upper()
        lines.append(f"  {o.ident}  [{tag}]\n    " + o.diff.replace("\n", "\n    "))
    return "\n".join(lines), value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sample", type=int, default=SAMPLE, help=f"mutants drawn (default {SAMPLE})")
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed (default 0)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds a mutant's run may take (default: 3x calibration)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument(
        "--mode", default="direct", help="the backend's I/O mode (default direct: staging runs)"
    )
    parser.add_argument(
        "--workdir", type=Path, default=ROOT / ".mutation", help="copies, calibration, results"
    )
    parser.add_argument("--target", type=float, default=0.9, help="exit 1 below this score (default 0.9)")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    everything, dropped = population()
    # the first N of one seeded shuffle: a smaller sample is a prefix of a larger one, so a run cut
    # short (resumed from its results file) is itself a sample of the size it reached
    order = list(everything)
    random.Random(args.seed).shuffle(order)
    sample = order[: args.sample]
    print(
        f"population: {len(everything)} mutants of {TARGET}/ ({dropped} more in annotations and "
        f"TYPE_CHECKING blocks, left out); sample {len(sample)}, seed {args.seed}",
        flush=True,
    )
    results = args.workdir / f"results-{args.mode}-seed{args.seed}.jsonl"
    outcomes: dict[str, Outcome] = {}
    if results.exists():  # a run cut short goes on where it stopped
        for line in results.read_text().splitlines():
            outcome = Outcome(**json.loads(line))
            outcomes[outcome.ident] = outcome
    todo = [m for m in sample if m.ident not in outcomes]
    if not todo:  # a prefix of what finished: its score, nothing run (no calibration either)
        text, value = score(sample, outcomes)
        print(text)
        return 0 if value >= args.target else 1
    cal = calibrate(args.workdir, args.mode, args.jobs)
    timeout = args.timeout or 3 * cal.seconds
    print(f"timeout {timeout:.0f} s a mutant; {len(todo)} to run, {args.jobs} at a time", flush=True)
    space = Workspace(args.workdir, args.jobs)
    lock = threading.Lock()

    def one(mutant: Mutant) -> None:
        outcome = run_mutant(mutant, cal, space, args.mode, timeout)
        with lock:
            outcomes[mutant.ident] = outcome
            with results.open("a") as f:
                f.write(json.dumps(asdict(outcome)) + "\n")
            print(
                f"[{len(outcomes)}/{len(sample)}] {outcome.verdict:12} {outcome.seconds:6.0f} s  "
                f"{mutant.ident}  {outcome.killer}",
                flush=True,
            )

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(one, todo))
    text, value = score(sample, outcomes)
    print(text)
    return 0 if value >= args.target else 1


if __name__ == "__main__":
    raise SystemExit(main())
