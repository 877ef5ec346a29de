"""The docs site's build hook: pages generated from the code, so they cannot drift from it.

A page holds ``<!-- generated: NAME -->`` where NAME is one of :data:`GENERATORS`; the build puts
the generator's output there. ``mkdocs.yml`` names this file under ``hooks`` (and keeps it out of
the site with ``exclude_docs``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's own packages

from conformance.model.contract import capability_table, property_reference

GENERATORS: dict[str, Callable[[], str]] = {
    "capability-table": capability_table,
    "property-reference": property_reference,
}
_MARK = re.compile(r"<!-- generated: ([a-z-]+) -->")


def on_page_markdown(markdown: str, **_: Any) -> str:
    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"no generator named {name!r} (known: {sorted(GENERATORS)})")
        return GENERATORS[name]()

    return _MARK.sub(fill, markdown)
