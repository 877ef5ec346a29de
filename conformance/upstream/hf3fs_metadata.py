"""SGLang's HF3FS metadata server, one per storage location, on loopback for a test session.

HF3FS keeps its page index (which key lives at which page of which file) in a metadata service,
keyed by rank and pool only: two storage locations on one server would share their index. The
suite makes many locations, so ``python -m conformance.upstream.hf3fs_metadata PORT`` serves
SGLang's own ``Hf3fsMetadataServer`` application once per location, under a path prefix that
names the location's folder (``http://127.0.0.1:PORT/<hex of the folder>/``). A location's
server lives as long as its folder: one whose folder is gone is dropped when a new one starts, so
the process does not grow with every location the suite ever made.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

from conformance.servers.services import LOOPBACK, environment, free_port, running

URL_ENV = "HICACHE_HF3FS_METADATA_URL"
"""Where the session's server listens; the suite's child processes read it from here."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def location_prefix(storage: Path) -> str:
    """The URL path segment that names a storage folder (its absolute path, hex-encoded)."""
    return os.fsencode(storage.resolve()).hex()


class PerLocation:
    """An ASGI application: SGLang's metadata server for each location, by path prefix."""

    def __init__(self, make_app: Callable[[], Any]) -> None:
        self.make_app = make_app
        self.apps: dict[str, Any] = {}

    def _app(self, prefix: str) -> Any:
        if prefix not in self.apps:
            for gone in [p for p in self.apps if not Path(os.fsdecode(bytes.fromhex(p))).is_dir()]:
                del self.apps[gone]
            self.apps[prefix] = self.make_app()
        return self.apps[prefix]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        prefix, _, rest = str(scope["path"]).lstrip("/").partition("/")
        try:
            bytes.fromhex(prefix)
        except ValueError:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no storage location in the path"})
            return
        inner = {**scope, "path": "/" + rest, "raw_path": ("/" + rest).encode()}
        await self._app(prefix)(inner, receive, send)


def _sglang_app() -> Any:
    from conformance.model.sglang import sglang

    sglang()  # the stand-ins the import chain needs on a CPU
    server = importlib.import_module("sglang.srt.mem_cache.storage.hf3fs.mini_3fs_metadata_server")
    return server.Hf3fsMetadataServer().app


@contextlib.contextmanager
def metadata_server() -> Iterator[None]:
    """This session's server, unless the environment already names one (a child process)."""
    if os.environ.get(URL_ENV):
        yield
        return
    port = free_port()
    argv = [sys.executable, "-m", "conformance.upstream.hf3fs_metadata", str(port)]
    with (
        running(argv, port, what="the HF3FS metadata server", timeout=300),
        environment({URL_ENV: f"http://{LOOPBACK}:{port}"}),
    ):
        yield


def main(port: int) -> None:
    import uvicorn

    _sglang_app()  # SGLang's import takes seconds: done before listening, so the session waits for it
    uvicorn.run(PerLocation(_sglang_app), host=LOOPBACK, port=port, lifespan="off", log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))
