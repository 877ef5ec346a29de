"""Running a property: the ``hicache_target`` fixture, the watchdog's time limit, known defects
run without shrinking, and each report given the record the certificate needs (its id, guarantee,
claims, examples, failure and minimal example), which reaches an xdist controller intact.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.plugin.collection import requirements
from conformance.plugin.run import (
    COLLECTOR,
    EXAMPLES_KEY,
    KNOWN_DEFECT_KEY,
    RUN_KEY,
    WATCHDOG_KEY,
    rerun_command,
    suite_id,
)

if TYPE_CHECKING:
    from hypothesis import settings

    from conformance.harness.rig import Target
    from conformance.harness.watchdog import Overrun


@contextlib.contextmanager
def _frozen_heap() -> Iterator[None]:
    """Keep the garbage collector's full passes off the objects the imports made.

    With torch, SGLang and a backend imported, a process holds 200-600 thousand objects that live
    as long as it does, and a full collection walks them all (0.25-0.9 s measured): hypothesis
    runs one at every property's start and the allocator triggers more. Frozen, they are skipped;
    thawed at the session's end, so that extension modules' leak checks at exit see them freed.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.fixture(scope="session")
def hicache_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The backend under test, as chosen with ``--backend``, with a storage root of its own."""
    from conformance.harness.reaper import REAPER
    from conformance.harness.rig import Target

    run = request.config.stash.get(RUN_KEY, None)
    if run is None:
        pytest.skip("no backend chosen: run with --backend=NAME")
    given = request.config.getoption("storage_dir")
    root = Path(given) if given else Path(tempfile.mkdtemp(prefix="hicache-conformance-"))
    root.mkdir(parents=True, exist_ok=True)
    caps = run.spec.capabilities
    try:
        with _frozen_heap(), run.spec.session() if run.spec.session else contextlib.nullcontext():
            yield Target(run.spec, run.mode, root, dict(caps.io_modes[run.mode]), ref=run.name)
    finally:
        REAPER.drain()
        if not given:
            shutil.rmtree(root, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A known defect runs without shrinking; a plain test's nested hypothesis runs (the stateful
    model) have their examples counted."""
    if RUN_KEY not in item.config.stash or suite_id(item) is None:
        yield
        return
    with (
        _unshrunk(item) if item.stash.get(KNOWN_DEFECT_KEY, False) else contextlib.nullcontext(),
        _nested_examples_counted(item),
    ):
        yield


@contextlib.contextmanager
def _unshrunk(item: pytest.Item) -> Iterator[None]:
    """Run ``item`` without hypothesis's shrink phase: a known defect only has to fail, and nothing
    shows its minimal example, yet shrinking it was most of a certification's time on a backend with
    many (the stateful model replays a failing run hundreds of times)."""
    from hypothesis import Phase, settings

    def unshrunk(given: settings) -> settings:
        return settings(given, phases=[p for p in given.phases if p is not Phase.shrink])

    test = getattr(item, "obj", None)
    bound = getattr(test, "_hypothesis_internal_use_settings", None)  # a @given test's own settings
    profile = settings.get_current_profile_name()
    settings.register_profile(f"{profile}-unshrunk", unshrunk(settings()))  # what settings() inherits
    settings.load_profile(f"{profile}-unshrunk")
    if bound is not None:
        test._hypothesis_internal_use_settings = unshrunk(bound)  # type: ignore[union-attr]
    try:
        yield
    finally:
        if bound is not None:
            test._hypothesis_internal_use_settings = bound  # type: ignore[union-attr]
        settings.load_profile(profile)


@contextlib.contextmanager
def _nested_examples_counted(item: pytest.Item) -> Iterator[None]:
    """Count the examples of hypothesis runs nested in a plain test (the stateful model)."""
    from hypothesis import is_hypothesis_test
    from hypothesis.statistics import collector, describe_statistics

    from conformance.certificate.report import examples_run

    if is_hypothesis_test(getattr(item, "obj", None)):
        yield
        return
    item.stash[EXAMPLES_KEY] = 0

    def note(stats: Any) -> None:
        item.stash[EXAMPLES_KEY] += examples_run(describe_statistics(stats))

    with collector.with_value(note):  # type: ignore[arg-type]
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Attach what the report needs to each suite report; they reach the xdist controller intact."""
    outcome: Any = yield
    report: pytest.TestReport = outcome.get_result()
    run = item.config.stash.get(RUN_KEY, None)
    pid = suite_id(item)
    if run is None or pid is None:
        return
    doc = (getattr(getattr(item, "function", None), "__doc__", None) or "").strip().splitlines()
    claims, _ = requirements(item)
    info: dict[str, Any] = {"property": pid, "guarantee": doc[0] if doc else "", "requires": claims}
    if report.failed and call.excinfo is not None:
        info["message"], info["example"] = failure_text(call.excinfo.value)
        report.sections.append(
            (
                "hicache-conformance",
                f"backend: {run.spec.name} (mode {run.mode})\n"
                f"property: {item.nodeid}\n"
                + (f"guarantee: {doc[0]}\n" if doc else "")
                # the whole run's seed: the rerun reproduces this failure
                + f"rerun: {rerun_command(item.config, run.seed)}\n",
            )
        )
    if report.when == "teardown":
        from conformance.certificate.report import examples_run

        statistics = getattr(item, "hypothesis_statistics", None)
        info["examples"] = examples_run(statistics) if statistics else item.stash.get(EXAMPLES_KEY, 0)
    report.user_properties.append(("hicache", info))


def failure_text(exc: BaseException) -> tuple[str, str]:
    """The failure's message, and hypothesis's minimal example (its notes), each as text."""
    messages, examples = [], []
    group = getattr(exc, "exceptions", None)  # an exception group: hypothesis found several bugs
    for one in group if isinstance(group, tuple) else (exc,):
        messages.append(f"{type(one).__name__}: {one}".strip())
        examples += [n for n in getattr(one, "__notes__", []) if "example" in n or "test case" in n]
    examples += [n for n in getattr(exc, "__notes__", []) if n not in examples]
    # object addresses differ from run to run; without them, a rerun's report compares equal
    message = re.sub(r" at 0x[0-9a-f]+", "", "\n".join(messages))
    return message[:4000], "\n".join(examples)[:4000]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Each property runs under the watchdog's time limit (``--property-timeout``)."""
    watchdog = item.config.stash.get(WATCHDOG_KEY, None)
    pid = suite_id(item)
    if watchdog is None or pid is None:
        yield
        return
    with watchdog.watch(item.nodeid, pid, functools.partial(_last_words, item.config)):
        yield


def _last_words(config: pytest.Config, overrun: Overrun) -> None:
    """Before a process ends an overrun property: say so past pytest's capture, and where this process
    reports (no xdist), write the certificate, with the rest of the run "not run"."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture(in_=False)
    sys.stderr.write(f"\nhicache-conformance: {overrun.property}: {overrun.reason}; ending this process\n")
    collector = config.pluginmanager.get_plugin(COLLECTOR)
    if collector is not None:
        collector.overran(overrun)
        collector.write()
