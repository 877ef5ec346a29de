"""Process-wide imports the suite's own tests need made once, before any test runs.

- NIXL: choose this process's build before SGLang's tests import ``nixl``: the object-store tests
  need the build whose OBJ plugin loads here (see ``reference_backend.agents``).
- SGLang, where installed: every certification report imports it (the pool names no geometry
  builds come from its ``PoolName``). ``pytester``'s in-process runs drop the modules a run
  imported, and the next run's import of triton's native extension, which cannot load twice in a
  process, aborts the worker. Imported here, before the first snapshot, it stays.
"""

import contextlib

from conformance.model.sglang import UpstreamUnavailable, sglang
from reference_backend import agents

agents.nixl_api()
with contextlib.suppress(UpstreamUnavailable):
    sglang()
