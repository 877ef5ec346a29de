"""``sglang-hf3fs``'s plumbing: one metadata server per storage location, kill signals kept.

The backend itself is certified by ``--backend=sglang-hf3fs``; these check the adapter's own parts
without SGLang: locations never share an index, a location's index goes when its folder goes,
and the handlers HiCacheHF3FS installs are undone.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

from conformance.upstream.hf3fs_metadata import PerLocation, location_prefix


def _call(app: PerLocation, path: str) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    asyncio.run(app({"type": "http", "path": path}, receive, send))
    return sent


class _Echo:
    """Stands for SGLang's server: answers with the path it was given."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.body", "body": scope["path"].encode()})


def test_each_location_gets_its_own_server_and_loses_it_with_its_folder(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    app = PerLocation(_Echo)
    assert _call(app, f"/{location_prefix(one)}/0/exists")[-1]["body"] == b"/0/exists"
    _call(app, f"/{location_prefix(two)}/0/exists")
    assert len(app.apps) == 2 and app.apps[location_prefix(one)] is not app.apps[location_prefix(two)]
    one.rmdir()
    three = tmp_path / "three"
    three.mkdir()
    _call(app, f"/{location_prefix(three)}/0/exists")
    assert set(app.apps) == {location_prefix(two), location_prefix(three)}


def test_a_path_without_a_location_is_not_found() -> None:
    assert _call(PerLocation(_Echo), "/0/exists")[0]["status"] == 404


def test_handlers_installed_while_building_are_undone() -> None:
    from conformance.upstream.hf3fs import KILL_SIGNALS, _signal_handlers_kept

    before = {s: signal.getsignal(s) for s in KILL_SIGNALS}
    with _signal_handlers_kept():
        for s in KILL_SIGNALS:
            signal.signal(s, lambda *_: None)
    assert {s: signal.getsignal(s) for s in KILL_SIGNALS} == before
