"""Survivors of ``python -m tests.mutation`` that no backend behaviour can tell apart from the
original, each with the one line that says why (docs/mutation.md triages every survivor).

Keyed by ``Mutant.ident`` (path:line:operator:occurrence), which holds while the module's source does.
"""

from __future__ import annotations

EQUIVALENT: dict[str, str] = {}
