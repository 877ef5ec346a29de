"""Defect: keys are NFC-normalized before they name an entry, so ``e`` + U+0301 is ``é``."""

import unicodedata

from tests.broken.normalised_names import normalising

SPEC = normalising("nfc-names", lambda key: unicodedata.normalize("NFC", key))
