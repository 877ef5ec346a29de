"""Adapters that put SGLang's own storage backends under the suite.

``--backend=sglang-file`` certifies ``HiCacheFile`` and ``--backend=sglang-nixl`` certifies
``HiCacheNixl``, both as shipped in ``sglang==0.5.23``. Install them with ``tox -e upstream`` (or
``pip install --no-deps -r requirements/upstream.txt``). What they fail is recorded in
:mod:`conformance.upstream.known_defects` and ``docs/upstream-findings.md``.
"""
