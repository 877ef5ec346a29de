"""conformance/'s architecture, as a rule its imports keep: each role folder imports only the folders
below it, no module imports its way back to itself, and the public paths re-export, nothing more.

The layers, bottom to top (``docs/architecture.md`` draws them):

- ``model``: the interface, the claims, the oracle, the sharing rule, SGLang's loader;
- ``doubles`` and ``servers``: host pools and the memory backend; services and meters;
- ``harness``: what drives a backend;
- ``suite``: the properties;
- ``certificate``, ``upstream`` and ``targets``: the report; SGLang's adapters; the reference
  backend's targets;
- ``plugin``: the pytest plugin.

A folder may import its own modules and any folder of a lower layer, never one beside it or above;
any module may read the root package's ``__version__`` (the root imports nothing). Every import
counts, a function's deferred ``import`` too: it is a dependency all the same.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "conformance"

LAYERS: dict[str, int] = {
    "model": 0,
    "doubles": 1,
    "servers": 1,
    "harness": 2,
    "suite": 3,
    "certificate": 4,
    "upstream": 4,
    "targets": 4,
    "plugin": 5,
}
PUBLIC = {
    "conformance.capabilities": "conformance.model.capabilities",
    "conformance.interface": "conformance.model.interface",
    "conformance.stateful": "conformance.harness.stateful",
    "conformance.memory_backend": "conformance.doubles.memory_backend",
    "conformance.matrix": "conformance.certificate.matrix",
}
"""The top level's re-exports, each of the one module that defines what it names."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(module: str, top_level_only: bool = False) -> set[str]:
    """The conformance modules ``module`` imports (``from package import submodule`` resolved)."""
    tree = ast.parse(MODULES[module].read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES}
    return {m for m in found if m in MODULES and m not in (module, "conformance")}


def role(module: str) -> str:
    """The role folder (or top-level module) a module belongs to: ``conformance.harness.rig`` -> harness."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_root_package_imports_nothing() -> None:
    """``conformance/__init__.py`` holds the version, so importing it costs nothing and ties no layer."""
    tree = ast.parse(MODULES["conformance"].read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_every_module_belongs_to_a_layer_or_is_a_public_path() -> None:
    """A new folder or top-level module says where it stands before it lands."""
    stray = [m for m in MODULES if m != "conformance" and role(m) not in LAYERS and m not in PUBLIC]
    assert not stray, f"in no layer (add it to LAYERS, or to PUBLIC if it only re-exports): {stray}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if role(m) in LAYERS))
def test_a_module_imports_only_its_own_folder_and_the_layers_below(module: str) -> None:
    """model never imports the harness, doubles and servers only the model, the harness never the
    plugin, the certificate or the adapters; the plugin sits on top."""
    mine = role(module)
    upward = sorted(
        m
        for m in imports(module)
        if role(m) != mine and (role(m) not in LAYERS or LAYERS[role(m)] >= LAYERS[mine])
    )
    assert not upward, f"{module} ({mine}, layer {LAYERS[mine]}) imports {upward}"


def test_no_module_imports_its_way_back_to_itself() -> None:
    """The module-level import graph has no cycle (a cycle makes import order matter)."""
    graph = {m: imports(m, top_level_only=True) for m in MODULES}
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            raise AssertionError(f"import cycle: {' -> '.join([*path[path.index(module) :], module])}")
        if module in done:
            return
        for other in sorted(graph[module]):
            visit(other, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_nothing_inside_the_package_leans_on_a_public_re_export() -> None:
    """The public paths are for backend authors: the package imports the definitions themselves."""
    leaning = sorted((m, p) for m in MODULES for p in imports(m) & PUBLIC.keys() if m not in PUBLIC)
    assert not leaning, f"import the defining module instead: {leaning}"


@pytest.mark.parametrize("public", sorted(PUBLIC))
def test_a_public_path_re_exports_its_definitions_and_nothing_else(public: str) -> None:
    """Each public module imports one defining module and names exactly what it re-exports."""
    assert imports(public) == {PUBLIC[public]}
    module, home = importlib.import_module(public), importlib.import_module(PUBLIC[public])
    assert module.__all__, f"{public} names nothing"
    for name in module.__all__:
        assert getattr(module, name) is getattr(home, name), f"{public}.{name} is not {PUBLIC[public]}'s"
