"""Collection: the whole suite collected even for a narrowed run, each property's claims checked
against the backend's (an unmet claim is a skip that names it), and its declared known defects
turned into xfails (strict, or not for an intermittent one).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conformance.plugin.run import KNOWN_DEFECT_KEY, RUN_KEY, SUITE_DIR, Run, suite_id

if TYPE_CHECKING:
    from conformance.model.capabilities import Capabilities


def _split(arg: str, root: Path) -> tuple[Path, str]:
    path, _, rest = arg.partition("::")
    return (root / path).resolve(), rest


def collect_whole_suite(config: pytest.Config, run: Run) -> None:
    """Paths into the suite collect the whole suite; what they name becomes the selection.

    So the run knows every property it did not run, and says "partial run" instead of certifying.
    """
    root = config.invocation_params.dir
    args, narrowed = [], []
    for arg in config.args:
        path, rest = _split(arg, root)
        if path != SUITE_DIR and path.is_relative_to(SUITE_DIR):
            narrowed.append((path, rest))
        else:
            args.append(arg)
    if any(_covers(a, root) for a in args):
        return  # the whole suite is collected as it is
    # a run of some properties, or of none (only the user's own tests): collect them all anyway,
    # and deselect what was not asked for, so the report can list it
    run.narrowed_to = narrowed
    config.args = [*args, str(SUITE_DIR)]


def _covers(arg: str, root: Path) -> bool:
    path, rest = _split(arg, root)
    return not rest and SUITE_DIR.is_relative_to(path)


def _selected_by(item: pytest.Item, narrowed: list[tuple[Path, str]]) -> bool:
    path = Path(str(item.path)).resolve()
    chain = item.nodeid.split("::", 1)[1]
    for where, rest in narrowed:
        if (path == where or path.is_relative_to(where)) and (
            not rest or chain == rest or chain.startswith((rest + "[", rest + "::"))
        ):
            return True
    return False


def requirements(item: pytest.Item) -> tuple[list[str], str]:
    """What a property's ``hicache_requires`` markers declare, and their reason: capability fields,
    and ``layout X`` for a host-pool layout the backend must list in ``layouts``."""
    claims: list[str] = []
    reasons = []
    for mark in item.iter_markers("hicache_requires"):
        claims += [c for c in mark.args if c not in claims]
        if mark.kwargs.get("layout"):
            claims.append(f"layout {mark.kwargs['layout']}")
        if mark.kwargs.get("reason"):
            reasons.append(str(mark.kwargs["reason"]))
    return claims, "; ".join(reasons)


def unmet(claims: list[str], caps: Capabilities) -> list[str]:
    """The declared requirements ``caps`` does not meet."""
    return [
        c
        for c in claims
        if (c.split(" ", 1)[1] not in caps.layouts if c.startswith("layout ") else not getattr(caps, c))
    ]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Narrow to the paths asked for, skip what the backend does not claim, expect known defects."""
    run = config.stash.get(RUN_KEY, None)
    if run is None:
        return
    from conformance.model.capabilities import Capabilities

    run.suite = sorted(pid for pid in map(suite_id, items) if pid)
    if run.narrowed_to is not None:
        keep = [i for i in items if suite_id(i) is None or _selected_by(i, run.narrowed_to)]
        dropped = [i for i in items if suite_id(i) is not None and not _selected_by(i, run.narrowed_to)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
    fields = set(Capabilities.__dataclass_fields__)
    caps = run.spec.capabilities
    server = run.spec.server().name if run.spec.server else ""
    for item in items:
        pid = suite_id(item)
        if pid is None:
            continue
        claims, why = requirements(item)
        unknown = [c for c in claims if c not in fields and not c.startswith("layout ")]
        if unknown:
            raise pytest.UsageError(f"{pid}: hicache_requires names no capability field: {unknown}")
        missing = unmet(claims, caps)
        if missing:
            reason = f"backend {run.spec.name!r} does not declare {', '.join(missing)}"
            item.add_marker(pytest.mark.skip(reason=reason + (f": {why}" if why else "")))
        defect = run.spec.known_defect(pid.split("::", 1)[1], run.mode, server)
        if defect:
            reason, strict = defect
            item.add_marker(pytest.mark.xfail(strict=strict, reason=f"known defect: {reason}"))
            item.stash[KNOWN_DEFECT_KEY] = True


def pytest_collection_finish(session: pytest.Session) -> None:
    run = session.config.stash.get(RUN_KEY, None)
    if run is None:
        return
    ids = [suite_id(i) for i in session.items]
    run.selected = sorted(pid for pid in ids if pid)
    run.other_tests = sum(1 for pid in ids if pid is None)
