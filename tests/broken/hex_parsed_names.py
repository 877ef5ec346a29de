"""Defect: a key that reads as hex is taken for a digest and named by its bytes
(``bytes.fromhex(key).hex()``), so ``ABCD`` is ``abcd``; other keys are named as given."""

import re

from tests.broken.normalised_names import normalising

_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")


def _digest_name(key: str) -> str:
    return bytes.fromhex(key).hex() if _HEX.fullmatch(key) else key


SPEC = normalising("hex-parsed-names", _digest_name)
