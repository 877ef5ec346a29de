"""The index's optional C++ kernel, built at install (pyproject.toml holds everything else).

``optional=True``: where no compiler (or no pybind11) is found the install still succeeds and the
index runs its pure-Python path; ``HICACHE_NATIVE=1`` makes that an error at run time instead.
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
            "reference_backend._index_native",
            ["reference_backend/_index_native.cpp"],
            include_dirs=[pybind11.get_include()],
            language="c++",
            extra_compile_args=["-std=c++17", "-fvisibility=hidden"],
            optional=True,
        )
    ]

setup(ext_modules=extensions)
