"""Defect: keys are stripped of surrounding whitespace before they name an entry (``key.strip()``)."""

from tests.broken.normalised_names import normalising

SPEC = normalising("stripped-names", str.strip)
