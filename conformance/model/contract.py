"""The backend contract as documentation: each capability, what it promises and the properties it
unlocks; each property, its guarantee and the claims it needs.

Generated from :class:`conformance.model.capabilities.Capabilities` (each field's ``metadata["doc"]``)
and from the suite's sources (each property's docstring, which properties name a claim in
``hicache_requires`` or ``require(...)``, and which adapt to it by reading ``caps.<claim>``), so
the documentation cannot drift from the code: the docs site's build (``docs/hooks.py``) puts
:func:`capability_table` and :func:`property_reference` into its pages; ``python -m
conformance.model.contract`` prints the table, ``python -m conformance.model.contract --properties`` the
reference.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

from conformance.model.capabilities import capability_docs

SUITE_DIR = Path(__file__).parent.parent / "suite"
# helpers on Target that skip unless a claim holds
_HELPERS = {
    "require_side_pools": "side_pools",
    "require_layout": "layouts",
    "queryable_pools": "hit_policies",
}


def _string_args(call: ast.Call) -> list[str]:
    return [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]


def _reached(node: ast.FunctionDef, helpers: dict[str, ast.FunctionDef]) -> list[ast.AST]:
    """Every node of ``node`` and of the module's helper functions it calls, at any depth: a
    property's claims are those of the code it runs, wherever its body was factored out to."""
    seen, todo, nodes = {node.name}, [node], []
    while todo:
        for inner in ast.walk(todo.pop()):
            nodes.append(inner)
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name):
                helper = helpers.get(inner.func.id)
                if helper is not None and helper.name not in seen:
                    seen.add(helper.name)
                    todo.append(helper)
    return nodes


def claims_by_property() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``(needs, reads)``: claim -> properties that need it, and that adapt to it."""
    needs: dict[str, set[str]] = defaultdict(set)
    reads: dict[str, set[str]] = defaultdict(set)
    for path in sorted(SUITE_DIR.glob("test_*.py")):
        family = path.stem.removeprefix("test_")
        module = ast.parse(path.read_text())
        functions = [n for n in module.body if isinstance(n, ast.FunctionDef)]
        helpers = {f.name: f for f in functions if not f.name.startswith("test_")}
        for node in functions:
            if not node.name.startswith("test_"):
                continue
            name = f"{family}::{node.name}"
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "hicache_requires":
                    for claim in _string_args(deco):
                        needs[claim].add(name)
                    if any(k.arg == "layout" for k in deco.keywords):
                        needs["layouts"].add(name)
            for inner in _reached(node, helpers):
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
                    if inner.func.attr == "require":
                        for claim in _string_args(inner)[:1]:
                            needs[claim].add(name)
                    elif inner.func.attr in _HELPERS:
                        needs[_HELPERS[inner.func.attr]].add(name)
                if (
                    isinstance(inner, ast.Attribute)
                    and isinstance(inner.value, ast.Attribute)
                    and inner.value.attr == "caps"
                ):
                    reads[inner.attr].add(name)
    return needs, reads


def capability_table() -> str:
    """The capabilities page's table, one row per capability field."""
    needs, reads = claims_by_property()
    lines = [
        "| capability | default | what it promises, and what the suite may then do | properties it unlocks |",
        "|---|---|---|---|",
    ]
    for name, default, doc in capability_docs():
        unlocked = sorted(needs.get(name, set()))
        adapted = sorted(reads.get(name, set()) - set(unlocked))
        cell = ", ".join(f"`{p}`" for p in unlocked) or "-"
        if adapted:
            cell += "; adapts: " + ", ".join(f"`{p}`" for p in adapted)
        lines.append(
            f'| <span id="{name}"></span>`{name}` | `{default}` | {doc.replace("|", "/")} | {cell} |'
        )
    return "\n".join(lines)


def _claims(claims: list[str]) -> str:
    return ", ".join(f"[`{c}`](capabilities.md#{c})" for c in claims)


def property_reference() -> str:
    """Every suite property by family, in the suite's order: its guarantee (the docstring's first
    line), the rest of its docstring, the claims it needs (it is skipped without them) and those it
    adapts to. Read from the sources, not imported, so the docs build needs no backend."""
    needs, reads = claims_by_property()
    needed: dict[str, list[str]] = defaultdict(list)
    adapted: dict[str, list[str]] = defaultdict(list)
    for claim, props in sorted(needs.items()):
        for prop in props:
            needed[prop].append(claim)
    for claim, props in sorted(reads.items()):
        for prop in props - needs.get(claim, set()):
            adapted[prop].append(claim)
    out: list[str] = []
    for path in sorted(SUITE_DIR.glob("test_*.py")):
        family = path.stem.removeprefix("test_")
        module = ast.parse(path.read_text())
        properties = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
        out += [f"## {family}", "", f"`conformance/suite/{path.name}`: {len(properties)} properties.", ""]
        out += [ast.get_docstring(module) or "", ""]
        for node in properties:
            name = f"{family}::{node.name}"
            guarantee, _, rest = (ast.get_docstring(node) or "").partition("\n")
            out += [f"### `{node.name}`", "", f"**{guarantee.strip()}**", ""]
            if rest.strip():
                out += [rest.strip(), ""]
            out.append(f"- needs: {_claims(needed[name]) or 'nothing: it runs against every backend'}")
            if adapted[name]:
                out.append(f"- adapts to: {_claims(adapted[name])}")
            out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(property_reference() if sys.argv[1:2] == ["--properties"] else capability_table())
