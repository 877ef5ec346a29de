"""Defect: ``-``, ``/`` and ``.`` in a key become ``_`` before it names an entry (one file-name-safe
separator), so ``a-b``, ``a/b``, ``a.b`` and ``a_b`` are one entry."""

import re

from tests.broken.normalised_names import normalising

SPEC = normalising("unified-separator-names", lambda key: re.sub(r"[-/.]", "_", key))
