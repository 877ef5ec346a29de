"""Every reproduction in docs/upstream-findings.md still reproduces (when SGLang is installed).

A snippet exits 0 while its defect is there; when upstream fixes one, this test names it, as the
adapters' strict expected failures do for the properties.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conformance.model.sglang import UpstreamUnavailable, sglang

FINDINGS = Path(__file__).resolve().parent.parent / "docs" / "upstream-findings.md"
BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.MULTILINE | re.DOTALL)


def _snippets() -> tuple[str, list[tuple[str, str]]]:
    """The preamble, and each finding's snippet under the heading it belongs to."""
    text = FINDINGS.read_text()
    blocks = []
    for match in BLOCK.finditer(text):
        heading = re.findall(r"^#+ (.+)$|^- \*\*(.+?)\*\*", text[: match.start()], re.MULTILINE)[-1]
        blocks.append(("".join(heading), textwrap.dedent(match.group(2))))
    (preamble,) = [code for _, code in blocks if code.startswith("# preamble")]
    return preamble, [(title, code) for title, code in blocks if not code.startswith("# preamble")]


PREAMBLE, SNIPPETS = _snippets()


def _isolated(argv: list[str]) -> list[str]:
    """``argv`` in a network namespace of its own with loopback up (root and unshare needed)."""
    if importlib.util.find_spec("mooncake") is None:
        pytest.skip("Mooncake is not installed (requirements/mooncake.txt)")
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("making a network namespace needs root and unshare")
    return [unshare, "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', *argv]


SLOW = "# slow: "
"""A snippet that opens with this comment (and why) runs with the slow proofs (``-m slow``)."""


@pytest.mark.parametrize(
    ("title", "code"),
    [pytest.param(t, c, marks=[pytest.mark.slow] if c.startswith(SLOW) else []) for t, c in SNIPPETS],
    ids=[t.split(" (")[0] for t, _ in SNIPPETS],
)
def test_the_reproduction_still_shows_the_defect(title: str, code: str, tmp_path: Path) -> None:
    try:
        sglang()
    except UpstreamUnavailable as exc:
        pytest.skip(str(exc))
    script = tmp_path / "repro.py"
    script.write_text(PREAMBLE + "\n" + code)
    env = {**os.environ, "NIXL_LOG_LEVEL": "ERROR", "PYTHONPATH": str(FINDINGS.parent.parent)}
    argv = [sys.executable, str(script)]
    if "mooncake_cluster" in code:  # Mooncake listens on 0.0.0.0: a namespace with only loopback
        argv = _isolated(argv)
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, f"{title}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
