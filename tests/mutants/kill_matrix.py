"""Run the whole suite on every mutant and print the kill matrix (mutant x property family).

``python -m tests.mutants.kill_matrix [--mode direct] [--markdown FILE] [NAME ...]``; exits 1 if
any mutant survives. O_DIRECT is the default mode: it is where staging paths run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.mutants.catalogue import MUTANTS

CRASHED = "(suite crashed)"


def killed_by(name: str, mode: str) -> dict[str, int]:
    """Failures per property family when the suite runs on one mutant."""
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                f"--backend=tests.mutants.catalogue:{name}",
                f"--backend-mode={mode}",
                "-q",
                "-p",
                "no:cacheprovider",
                "-n",
                "2",
                "--hypothesis-seed=0",
                f"--junitxml={junit}",
            ],
            capture_output=True,
            check=False,
        )
        if not junit.exists():
            tail = done.stdout.decode(errors="replace")[-1500:] + done.stderr.decode(errors="replace")[-1500:]
            print(f"{name}: the suite run crashed (exit {done.returncode}):\n{tail}", file=sys.stderr)
            return {CRASHED: 1}
        families: dict[str, int] = {}
        for case in ET.parse(junit).getroot().iter("testcase"):
            family = case.get("classname", "").rsplit(".", 1)[-1].removeprefix("test_")
            families.setdefault(family, 0)
            if case.find("failure") is not None or case.find("error") is not None:
                families[family] += 1
        return families


def is_killed(row: dict[str, int]) -> bool:
    """Killed means a property failed; a crashed suite run proves nothing."""
    return any(count for family, count in row.items() if family != CRASHED)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("names", nargs="*", default=MUTANTS)
    parser.add_argument("--mode", default="direct")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    matrix = {}
    for name in args.names:
        matrix[name] = killed_by(name, args.mode)
        print(f"{name}: {sum(matrix[name].values())} failing properties", file=sys.stderr, flush=True)
    families = sorted({f for row in matrix.values() for f in row})
    lines = [
        "| mutant | " + " | ".join(families) + " | killed |",
        "|---|" + "---|" * (len(families) + 1),
    ]
    for name, row in matrix.items():
        cells = ["X" if row.get(f) else "." for f in families]
        lines.append(f"| {name.lower()} | " + " | ".join(cells) + f" | {'yes' if is_killed(row) else 'NO'} |")
    killed = sum(1 for row in matrix.values() if is_killed(row))
    lines.append(f"\nKilled {killed} of {len(matrix)} mutants ({100 * killed // max(1, len(matrix))}%).")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0 if killed == len(matrix) else 1


if __name__ == "__main__":
    raise SystemExit(main())
