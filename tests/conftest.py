"""Choose this process's NIXL build before SGLang's tests import ``nixl``: the object-store tests
need the build whose OBJ plugin loads here (see ``reference_backend.agents``)."""

import pytest

from reference_backend import agents

agents.nixl_api()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fresh-env",
        action="store_true",
        help="also run the tests that build a fresh virtual environment (minutes; CI runs them)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the fresh-environment tests unless ``--fresh-env`` asks for them."""
    if config.getoption("--fresh-env"):
        return
    slow = [item for item in items if item.get_closest_marker("fresh_env")]
    if slow:
        items[:] = [item for item in items if item not in slow]
        config.hook.pytest_deselected(items=slow)
