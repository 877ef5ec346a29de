"""What SGLang 0.5.23's AibrixKVCacheStorage fails, property by property (its adapter: ``aibrix.py``).

Data only: test id -> the defect, in the form :mod:`conformance.upstream.shared_defects` describes.
"""

from __future__ import annotations

SGLANG_AIBRIX_DEFECTS: dict[str, str] = {
    "test_generic_get_answers_none_for_missing_keys_and_fills_the_rest": (
        "batch_get asserts that AIBrix fetched every key: with a key missing after a stored one it "
        "raises AssertionError (AIBrix fetches the leading run), where the controller takes None as "
        "the end of the hit"
    ),
}
