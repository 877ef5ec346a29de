"""The conformance matrix: backends as rows, property families as columns, from certification reports.

``python -m conformance.matrix cert/*/report.json --markdown docs/matrix.md [--update README.md]``
reads the ``report.json`` of each certification (``--cert-report``) and prints one table, a row
for each backend, mode and server (the service its store ran on, such as the S3 server: moto or
Ceph's gateway; ``-`` for none); a document's marked summary (``--update``) gets each row's
verdict and counts without the families. A cell sums the family's properties for that row:
*passed* (all that ran passed), *known defect* (some fail as a declared known defect; the count is
of those), *failed*, or *not claimed* (every property of the family was skipped for a claim the
backend does not make). The reports must come from one suite (one source digest) and one seed, so
the rows compare: otherwise it stops and says which report differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BEGIN, END = "<!-- conformance-matrix:begin -->", "<!-- conformance-matrix:end -->"
SUMMARY_BEGIN, SUMMARY_END = "<!-- conformance-summary:begin -->", "<!-- conformance-summary:end -->"
SUMMARY_COLUMNS = 8
"""backend, mode, server, version, verdict, passed, known defects, not claimed: the table without
families."""


class MixedRun(ValueError):
    """Reports that were not made by one run of one suite, at one seed."""


def load(paths: Sequence[Path]) -> list[dict[str, Any]]:
    reports = [json.loads(p.read_text()) for p in paths]
    if not reports:
        raise MixedRun("no reports given")
    for key in ("suite_digest", "seed", "hypothesis_profile"):
        values = {str(r.get(key)) for r in reports}
        if len(values) > 1:
            found = ", ".join(f"{p}: {r.get(key)}" for p, r in zip(paths, reports))
            raise MixedRun(f"the reports differ in {key} ({found}): make them in one run")
    return reports


def cell(outcomes: Counter[str]) -> str:
    """One family of one backend, in words, with counts."""
    ran = sum(n for o, n in outcomes.items() if o != "skipped")
    total = sum(outcomes.values())
    if outcomes["failed"]:
        return f"**failed** {outcomes['failed']}/{total}"
    if not ran:
        return "not claimed" if outcomes["skipped"] else "-"
    if outcomes["known defect"]:
        text = f"known defect {outcomes['known defect']}/{total}"
    elif outcomes["not run"]:
        text = f"not run {outcomes['not run']}/{total}"
    else:
        text = f"passed {outcomes['passed']}/{total}"
    return text + (f", {outcomes['skipped']} not claimed" if outcomes["skipped"] else "")


def table(reports: list[dict[str, Any]]) -> str:
    """The markdown table and the lines that say what run it came from."""
    families = sorted({p["family"] for r in reports for p in r["properties"]})
    header = ["backend", "mode", "server", "version", "verdict", "passed", "known defects", "not claimed"]
    header += families
    lines = [f"| {' | '.join(header)} |", "|" + "---|" * len(header)]
    for r in sorted(reports, key=lambda r: (r["backend"], r["mode"], r.get("server", ""))):
        by_family: dict[str, Counter[str]] = {f: Counter() for f in families}
        for p in r["properties"]:
            by_family[p["family"]][p["outcome"]] += 1
        totals = Counter(p["outcome"] for p in r["properties"])
        row = [
            f"`{r['backend']}`",
            r["mode"],
            r.get("server") or "-",
            r["backend_version"],
            r["verdict"],
            str(totals["passed"]),
            str(totals["known defect"]),
            str(totals["skipped"]),
            *(cell(by_family[f]) for f in families),
        ]
        lines.append(f"| {' | '.join(row)} |")
    first = reports[0]
    env = first.get("environment", {})
    made = (
        f"hicache-conformance {first['suite_version']} (sources {first['suite_digest']}), "
        f"hypothesis profile {first['hypothesis_profile']}, seed {first['seed']}; "
        + ", ".join(f"{k} {v}" for k, v in env.items() if k != "os")
        + f"; {min(r['date'] for r in reports)} to {max(r['date'] for r in reports)}"
    )
    return "\n".join([*lines, "", made])


def summary(text: str) -> str:
    """The table's first columns (:data:`SUMMARY_COLUMNS`) and the line that says what run it came from."""
    rows, _, made = text.partition("\n\n")
    cut = ["|" + "|".join(line.split("|")[1 : SUMMARY_COLUMNS + 1]) + "|" for line in rows.splitlines()]
    return "\n".join([*cut, "", made])


def update(document: Path, text: str) -> bool:
    """Put ``text`` between the matrix markers of ``document``, and its summary between the summary
    markers, wherever they are; True if it changed."""
    old = new = document.read_text()
    marked = [
        (b, e, t) for b, e, t in ((BEGIN, END, text), (SUMMARY_BEGIN, SUMMARY_END, summary(text))) if b in old
    ]
    if not marked:
        raise ValueError(f"{document} has neither {BEGIN} nor {SUMMARY_BEGIN}")
    for begin, end_mark, body in marked:
        start, end = new.index(begin), new.index(end_mark) + len(end_mark)
        new = new[:start] + f"{begin}\n{body}\n{end_mark}" + new[end:]
    document.write_text(new)
    return new != old


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.matrix", description=__doc__)
    parser.add_argument("reports", nargs="+", type=Path, help="report.json files of one run")
    parser.add_argument("--markdown", type=Path, help="write the table to this file")
    parser.add_argument("--update", type=Path, action="append", default=[], help="replace the marked table")
    args = parser.parse_args(argv)
    try:
        text = table(load(args.reports))
    except MixedRun as exc:
        print(f"conformance.matrix: {exc}", file=sys.stderr)
        return 2
    if args.markdown:
        args.markdown.write_text(f"# Conformance matrix\n\n{text}\n")
    for document in args.update:
        print(f"{document}: {'updated' if update(document, text) else 'unchanged'}")
    if not args.markdown and not args.update:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
