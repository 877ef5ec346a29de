"""Benchmarks run only when asked for by path (``pytest tests/benchmarks``), never in the default
project run, whose ``testpaths`` covers all of ``tests/``: timing is the harness's job
(``python -m tests.benchmarks``), and a smoke pass through every benchmark costs minutes."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent.resolve()


def _asked(config: pytest.Config) -> bool:
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return None if _asked(config) else True
