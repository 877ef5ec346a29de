"""Every SGLang backend's declared defects, key for key, as recorded in ``tests/data/known_defects.json``.

The defects are data beside each adapter (``conformance/upstream/<backend>_defects.py``); this pins
the mapping each spec hands the plugin (the keys, ``[*]``, ``@mode`` and ``@server`` forms, strict
or intermittent), so a move or a refactor of that data cannot drop or change an entry unseen. A new
defect goes into its backend's module and into the snapshot: ``python -m tests.test_known_defects_data``
rewrites it from the specs.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from conformance.model.capabilities import BackendSpec

SNAPSHOT = Path(__file__).parent / "data" / "known_defects.json"


def declared() -> dict[str, dict[str, dict[str, str]]]:
    """Each registered SGLang backend's known and intermittent defects, as its spec declares them."""
    specs: dict[str, BackendSpec] = {
        ep.name: ep.load()
        for ep in entry_points(group="hicache_conformance.backends")
        if ep.name.startswith("sglang-")
    }
    return {
        name: {
            "known_defects": dict(sorted(spec.known_defects.items())),
            "intermittent_defects": dict(sorted(spec.intermittent_defects.items())),
        }
        for name, spec in sorted(specs.items())
    }


@pytest.mark.parametrize("backend", sorted(json.loads(SNAPSHOT.read_text())))
def test_each_backends_declared_defects_are_the_recorded_ones(backend: str) -> None:
    """The spec's mappings equal the snapshot's, key for key and reason for reason."""
    recorded: dict[str, Any] = json.loads(SNAPSHOT.read_text())[backend]
    now = declared()[backend]
    for kind in ("known_defects", "intermittent_defects"):
        gone = recorded[kind].keys() - now[kind].keys()
        new = now[kind].keys() - recorded[kind].keys()
        changed = [k for k in recorded[kind].keys() & now[kind].keys() if recorded[kind][k] != now[kind][k]]
        assert not (gone or new or changed), (
            f"{backend} {kind}: gone {sorted(gone)}, new {sorted(new)}, changed {changed}"
        )


def test_the_snapshot_names_every_sglang_backend() -> None:
    """A backend registered without a recorded mapping would escape the check above."""
    assert sorted(json.loads(SNAPSHOT.read_text())) == sorted(declared())


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(declared(), indent=1, sort_keys=True) + "\n")
    sys.exit(0)
