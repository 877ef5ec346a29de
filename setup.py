"""The reference backend's optional C++ kernels (the index's probing loops, the naming of a batch's
keys), built at install (pyproject.toml holds everything else).

``optional=True``: where no compiler (or no pybind11) is found the install still succeeds and the
backend runs its pure-Python paths; ``HICACHE_NATIVE=1`` makes that an error at run time instead.
"""

from __future__ import annotations

from setuptools import Extension, setup

try:
    import pybind11
except ImportError:  # a build without pyproject.toml's build requirements: no kernel
    extensions = []
else:
    extensions = [
        Extension(
            f"reference_backend.{name}",
            [f"reference_backend/{name}.cpp"],
            include_dirs=[pybind11.get_include()],
            language="c++",
            extra_compile_args=["-std=c++17", "-fvisibility=hidden"],
            optional=True,
        )
        for name in ("_index_native", "_naming_native")
    ]

setup(ext_modules=extensions)
