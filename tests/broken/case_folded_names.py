"""Defect: keys are case-folded before they name an entry (``key.casefold()``), so ``Ab`` is ``ab``."""

from tests.broken.normalised_names import normalising

SPEC = normalising("case-folded-names", str.casefold)
