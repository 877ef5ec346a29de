"""A certification's seed draws the same examples whatever local modules a worker loaded first.

hypothesis mixes into its draws constants read from the local modules loaded so far; under xdist
that set follows which tests a worker ran before, so the certificate's rerun command could draw
other examples than the run it certifies. The plugin pins that pool for certification runs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROBE = """
import sys
from hypothesis.internal.conjecture import providers
if sys.argv[1] == "pinned":
    from conformance.plugin.options import _pin_drawn_constants
    _pin_drawn_constants()
import local_constants_probe  # a local module holding one distinctive constant
print(987654321 in providers._get_local_constants().integers)
"""


def _probe(folder: Path, mode: str) -> str:
    (folder / "local_constants_probe.py").write_text("DISTINCT = 987654321\n")
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROBE), mode],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


@pytest.mark.parametrize(("mode", "seen"), [("unpinned", "True"), ("pinned", "False")])
def test_a_certification_draws_no_constants_from_the_modules_a_worker_loaded(
    tmp_path: Path, mode: str, seen: str
) -> None:
    """Unpinned, hypothesis picks the module's constant up (the hazard is real on this version);
    pinned, it never does."""
    assert _probe(tmp_path, mode) == seen
