"""Survivors of ``python -m tests.mutation`` that no backend behaviour can tell apart from the
original, each with the one line that says why (docs/mutation.md triages every survivor).

Keyed by ``Mutant.ident`` (path:line:operator:occurrence), which holds while the module's source does.
"""

from __future__ import annotations

EQUIVALENT: dict[str, str] = {
    "reference_backend/config.py:152:ReplaceBinaryOperator_Mul_Add:0": (
        "the wording of the one-line settings summary an operator reads at startup; no caller parses it"
    ),
    "reference_backend/log.py:555:ReplaceBinaryOperator_Mul_LShift:6": (
        "bounds only how many index rows of deleted segments one commit purges (later commits take "
        "the rest; such a row is a miss either way): the same answers, another commit's latency"
    ),
}
