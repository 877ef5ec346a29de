"""hicache-conformance: certify SGLang HiCache v2 storage backends.

The package is layered; each folder imports only the folders below it (``tests/test_layout.py``
holds the rule):

- ``model/``: the interface, the claims, the oracle, the sharing rule;
- ``doubles/`` and ``servers/``: host pools and the memory backend; services a run needs;
- ``harness/``: what drives a backend (geometries, the rig, the controller's calls, workers);
- ``suite/``: the properties;
- ``certificate/``, ``upstream/`` and ``targets``: the report; SGLang's backends' adapters and
  their known defects; the reference backend's targets;
- ``plugin/``: the pytest plugin, on top.

The modules at the top (``capabilities``, ``interface``, ``stateful``, ``memory_backend``) are the
public paths a backend's authors import, re-exporting the model and the harness
(``docs/architecture.md``).
"""

__version__ = "0.1.0"
