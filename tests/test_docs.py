"""The README stays short and its links resolve; the docs site's generated pages come from the code.

``mkdocs build --strict`` (in CI) checks every link of the site; these run in the default test run,
without mkdocs.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from conformance.model.capabilities import capability_docs
from conformance.model.contract import SUITE_DIR
from reference_backend import config

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _slug(heading: str) -> str:
    """Python-Markdown's toc anchor for a heading (mkdocs's default)."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[\s-]+", "-", text).strip("-")


def test_the_readme_is_at_most_200_lines() -> None:
    assert len(README.read_text().splitlines()) <= 200


def test_every_relative_link_in_the_readme_resolves() -> None:
    for target in LINK.findall(README.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        assert (ROOT / path).exists(), f"README links {target}: no such file"
        if anchor:
            headings = [
                line.lstrip("#") for line in (ROOT / path).read_text().splitlines() if line.startswith("#")
            ]
            assert anchor in {_slug(h) for h in headings}, f"README links {target}: no such heading"


def test_the_readme_runs_the_tests_as_ci_does() -> None:
    command = "python -m pytest -n 2 -q"
    assert command in README.read_text()
    # CI runs it as one of its timed steps: `step NAME COMMAND`
    assert re.search(rf"^step \S+ {re.escape(command)}$", (ROOT / ".ci" / "run").read_text(), re.M)


def test_every_page_in_the_sites_nav_exists() -> None:
    nav = re.findall(r"^\s*- (?:[^:\n]+: )?([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert "index.md" in nav and len(nav) >= 10
    missing = [page for page in nav if not (DOCS / page).exists()]
    assert missing == []


def test_every_generated_mark_names_a_generator_and_fills() -> None:
    hooks = _hooks()
    marked = {p.name: p.read_text() for p in DOCS.glob("*.md") if "<!-- generated: " in p.read_text()}
    assert set(marked) == {"capabilities.md", "properties.md"}
    for text in marked.values():
        filled = hooks.on_page_markdown(text)
        assert "<!-- generated: " not in filled and len(filled) > len(text)
    with pytest.raises(ValueError, match="no generator"):
        hooks.on_page_markdown("<!-- generated: nothing-here -->")


def test_the_capabilities_page_names_every_capability() -> None:
    page = _hooks().on_page_markdown((DOCS / "capabilities.md").read_text())
    for name, default, _ in capability_docs():
        assert f'<span id="{name}"></span>`{name}` | `{default}` |' in page


def test_the_properties_page_names_every_property_with_its_guarantee() -> None:
    page = _hooks().on_page_markdown((DOCS / "properties.md").read_text())
    for path in sorted(SUITE_DIR.glob("test_*.py")):
        assert f"## {path.stem.removeprefix('test_')}\n" in page
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                guarantee = (ast.get_docstring(node) or "").split("\n", 1)[0].strip()
                assert f"### `{node.name}`\n\n**{guarantee}**" in page


def _configuration_table() -> dict[str, str]:
    """docs/configuration.md's table of keys: each key -> its default cell."""
    table = (DOCS / "configuration.md").read_text().split("## Every key", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        keys, default = line.split(" | ")[:2]
        for key in re.findall(r"`(\w+)`", keys):
            rows[key] = default
    return rows


def test_the_configuration_page_lists_every_key_the_reference_backend_reads() -> None:
    read = config._OUR_KEYS | config._CAPACITY_KEYS | {"use_uring", "interface_v1"}
    assert read <= set(_configuration_table()), read - set(_configuration_table())


def test_the_configuration_page_gives_the_defaults_the_code_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(config.DIRECT_IO_ENV, raising=False)
    built = config.BackendConfig.from_extra({}, tmp_path)
    applied = {
        "use_direct_io": str(built.direct_io).lower(),
        "queue": built.queue,
        "fsync": str(built.fsync).lower(),
        "verify": str(built.verify).lower(),
        "segment_mib": str(built.segment_bytes >> 20),
        "pin_seconds": f"{built.budget.pin_seconds:g}",
        "eviction_policy": built.budget.policy,
        "l3_cleaner_high_watermark": f"{built.budget.high * 100:g}",
    }
    table = _configuration_table()
    documented = {
        key: re.split(r"[ ,]", table[key].strip("*` "), maxsplit=1)[0].strip("*`") for key in applied
    }
    assert documented == applied
