"""The harness: what drives a backend under test the way SGLang would.

Geometries to host pools (``geometry``, ``combinations``), hypothesis strategies (``strategies``),
a backend wired to host pools (``rig``), its storage folders deleted off the example's thread
(``reaper``), every call made as the controller makes it (``caller``), the state machine
(``stateful``), a backend in a child process (``worker``), time limits (``watchdog``), lease
clocks (``leases``) and ``--backend`` resolution (``registry``). Imports the model, the doubles
and the servers; never the plugin, the certificate or the adapters.
"""
