"""What the docs tell a third party to import, run or name is there.

A backend's author imports ``conformance.capabilities`` and ``conformance.interface`` (README,
``docs/certify.md``, ``examples/dict_backend.py``), may run or subclass ``conformance.stateful``,
runs ``python -m conformance.matrix``, and installs the entry points ``pyproject.toml`` declares.
Those paths are pinned here by name; beyond them, every import, ``python -m`` command, dotted
``conformance.`` reference and ``conformance/`` path the README, the site and the examples show
must resolve, so a module that moves takes its docs along.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "examples").glob("*.py")])
PYPROJECT = (ROOT / "pyproject.toml").read_text()
COMMANDS = [*DOCS, ROOT / "tox.ini", ROOT / ".ci" / "run"]

PUBLIC = {
    "conformance.capabilities": {"BackendSpec", "Capabilities", "SIDE_POOLS", "Server"},
    "conformance.interface": {
        "HiCacheStorageConfig",
        "HiCacheStorageExtraInfo",
        "PoolHitPolicy",
        "PoolName",
        "PoolTransfer",
        "PoolTransferResult",
        "page_span",
        "slot_count",
    },
    "conformance.stateful": {"HiCacheStoreMachine"},
    "conformance.memory_backend": {"SPEC", "MemoryBackend"},
    "conformance.matrix": {"main"},
}


def shown(pattern: str, files: list[Path]) -> list[tuple[str, str]]:
    """``(file, match)`` for every match of ``pattern`` in ``files``."""
    return sorted(
        {(f.relative_to(ROOT).as_posix(), m) for f in files for m in re.findall(pattern, f.read_text())}
    )


def resolve(dotted: str) -> Any:
    """The object a dotted name names: attributes where they are, else the submodule imported."""
    parts = dotted.split(".")
    obj: Any = importlib.import_module(parts[0])
    for end, attr in enumerate(parts[1:], 2):
        obj = getattr(obj, attr) if hasattr(obj, attr) else importlib.import_module(".".join(parts[:end]))
    return obj


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_a_public_path_names_what_it_always_named(module: str) -> None:
    """The public modules export these names, no fewer (and no more, unnoticed)."""
    assert set(importlib.import_module(module).__all__) == PUBLIC[module]


@pytest.mark.parametrize(
    ("where", "line"), shown(r"(from conformance[\w.]* import (?:\([^)]*\)|[^\n#]+))", DOCS)
)
def test_every_import_the_docs_show_works(where: str, line: str) -> None:
    """``from conformance.X import a, b`` as a page or example writes it."""
    module, _, names = line.removeprefix("from ").partition(" import ")
    importlib.import_module(module)
    for name in re.findall(r"\w+", names):
        if name != "as":
            resolve(f"{module}.{name}")


@pytest.mark.parametrize(("where", "module"), shown(r"python -m (conformance[\w.]*)", COMMANDS))
def test_every_command_the_docs_run_names_a_module(where: str, module: str) -> None:
    """``python -m conformance.X`` in a page, tox.ini or CI runs a module that is there."""
    assert importlib.util.find_spec(module) is not None, f"{where}: no module {module}"


@pytest.mark.parametrize(("where", "dotted"), shown(r"`(conformance(?:\.\w+)+)", DOCS))
def test_every_dotted_name_the_docs_give_resolves(where: str, dotted: str) -> None:
    """A reference such as ``conformance.harness.geometry.untested_pool_names`` names a real object."""
    resolve(dotted)


@pytest.mark.parametrize(("where", "path"), shown(r"(conformance/[\w/]*\w(?:\.py)?)", DOCS))
def test_every_path_the_docs_give_exists(where: str, path: str) -> None:
    """``conformance/harness/rig.py`` and the like, as pages write them, are files or folders."""
    assert (ROOT / path).exists(), f"{where}: {path} does not exist"


def entry_points() -> list[tuple[str, str]]:
    """``(group:name, value)`` for each entry point ``pyproject.toml`` declares (read as text: the
    project supports Python 3.10, which has no tomllib)."""
    found = []
    for group, body in re.findall(
        r'^\[project\.entry-points\.("?[\w.]+"?)\]\n(.*?)(?=^\[|\Z)', PYPROJECT, re.M | re.S
    ):
        found += [
            (f"{group.strip(chr(34))}:{n}", v) for n, v in re.findall(r'^([\w-]+) = "([^"]+)"', body, re.M)
        ]
    return sorted(found)


@pytest.mark.parametrize(("name", "value"), entry_points())
def test_every_entry_point_pyproject_declares_resolves(name: str, value: str) -> None:
    """The pytest11 plugin and each backend name load from where the installed metadata says."""
    module, _, attr = value.partition(":")
    if attr:
        resolve(f"{module}.{attr}")
    else:
        assert hasattr(importlib.import_module(module), "pytest_addoption"), f"{name}: {module} is no plugin"


def test_the_install_ships_every_package_of_the_suite() -> None:
    """pyproject.toml lists packages by name: a role folder missing there is missing from the wheel."""
    listed = set(re.findall(r'^\s+"(conformance[\w.]*)",$', PYPROJECT, re.M))
    packages = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "conformance").rglob("__init__.py")
    }
    assert listed == packages


ROLES = r"(?:model|doubles|servers|harness|certificate|upstream|plugin)"


@pytest.mark.parametrize(
    "dotted",
    sorted(set(re.findall(rf"`({ROLES}(?:\.\w+)+)", (ROOT / "docs" / "architecture.md").read_text()))),
)
def test_every_step_the_architecture_page_names_is_real_code(dotted: str) -> None:
    """The path of one call names code by package (``plugin.options.pytest_configure``): each is there."""
    resolve(f"conformance.{dotted}")
