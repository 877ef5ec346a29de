"""Adapters that put SGLang's own storage backends under the suite, as shipped in ``sglang==0.5.23``.

One module per backend (``adapters``: HiCacheFile and HiCacheNixl over the shared
``UpstreamAdapter``; ``sim``, ``hf3fs``, ``seaweedfs``, ``aibrix``, ``mooncake``), each with what it
fails as data beside it (``<backend>_defects.py``; reasons two backends share in
``shared_defects.py``), and the servers some need (``hf3fs_metadata``, ``mooncake_cluster``) and
SGLang's own host pools (``host_pools``). Install them with ``tox -e upstream`` (or ``pip install
--no-deps -r requirements/upstream.txt``); ``docs/upstream-findings.md`` reproduces each defect.
"""
