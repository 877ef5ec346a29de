"""Doubles: stand-ins with SGLang's behaviour where the suite needs one without SGLang.

Host pools with SGLang's memory layouts (``hostpools``: the surface a backend sees; ``kv_pools``
and ``side_pools``: each kind), and the in-memory model backend (``memory_backend``). They import
only the model.
"""
