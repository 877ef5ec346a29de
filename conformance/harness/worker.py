"""A backend in a child process, for the properties that need real processes.

``python -m conformance.harness.worker '<json>'`` builds the named backend on a storage folder with one
geometry's pools and stores deterministic pages, round after round. It prints ``writing N`` just
before each ``batch_set_v2`` and ``round N`` after it, with the seconds the round's sets took. The
parent kills it, limits it, or runs two at once, then checks what a fresh instance sees. Payloads
are a pure function of (seed, round, pool, key), so the parent knows every version a key may
legally hold.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from conformance.doubles.hostpools import HostPoolDouble
from conformance.harness.geometry import ModelGeometry, load_geometry
from conformance.harness.registry import resolve_backend
from conformance.harness.rig import Rig, Target
from conformance.harness.strategies import render_page
from conformance.model.interface import PoolName

NOBODY = 65534
BARRIER_SECONDS = 120.0


@dataclass(frozen=True)
class Job:
    backend: str
    mode: str
    storage: str
    family: str
    keys: list[str]
    seed: int
    rounds: int = 1
    fresh_keys: bool = False
    tp_rank: int = 0
    tp_size: int = 1
    file_size_limit: int | None = None
    as_nobody: bool = False
    extra: dict[str, Any] | None = None
    """Settings added to the mode's ``extra_config`` (a byte budget, for the capacity properties)."""
    barrier: str | None = None
    """A folder where ``parties`` workers meet after building their backends and before writing."""
    parties: int = 1
    clear: bool = False
    """Call ``clear()`` instead of writing: another process emptying the store."""

    def keys_of(self, round_: int) -> list[str]:
        """The keys round ``round_`` stores: the same every round, or new ones (``fresh_keys``)."""
        return [f"{k}@{round_}" for k in self.keys] if self.fresh_keys else list(self.keys)

    def meet(self) -> None:
        """Wait until every party has built its backend, so that "at once" means at once.

        A backend that reads the folder at start would otherwise see a fast sibling's finished
        files and pass by the start-up order, not by what it does while others write."""
        if self.barrier is None:
            return
        folder = Path(self.barrier)
        (folder / f"ready-{os.getpid()}").touch()
        deadline = time.monotonic() + BARRIER_SECONDS
        while sum(1 for _ in folder.glob("ready-*")) < self.parties:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only some of {self.parties} workers reached {folder}")
            time.sleep(0.005)

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "conformance.harness.worker", json.dumps(asdict(self))]


def reports(stream: Iterable[str]) -> Iterator[dict[str, Any]]:
    """A worker's JSON lines, as they come."""
    for line in stream:
        if line.startswith("{"):
            yield json.loads(line)


def run_to_end(job: Job, timeout: float = 120) -> list[dict[str, Any]]:
    """Run ``job`` in a process of its own until it exits, which must be cleanly; its round reports."""
    done = subprocess.run(job.argv(), capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"worker failed ({done.returncode}): {done.stderr[-2000:]}"
    return [r for r in reports(done.stdout.splitlines()) if "round" in r]


def payload(pool: HostPoolDouble, seed: int, round_: int, name: PoolName, key: str) -> bytes:
    """The bytes round ``round_`` stores for ``key`` in pool ``name``."""
    salt = int.from_bytes(f"{round_}\0{name}\0{key}".encode(), "little") % (2**63)
    return render_page(pool, seed, 3, salt=salt)


def open_rig(target: Target, geometry: ModelGeometry, storage: Path, job: Job) -> Rig:
    return Rig(target, geometry, storage, page_num=len(job.keys), tp_rank=job.tp_rank, tp_size=job.tp_size)


def store_round(rig: Rig, keys: list[str], pages: list[int]) -> dict[str, list[bool]]:
    """Every pool in one ``batch_set_v2`` where KV may travel by v2; else KV by v1 beside it."""
    names = list(rig.pools)
    if not rig.target.caps.kv_through_v2:
        names.remove(PoolName.KV)
    results = {
        str(k): list(v)
        for k, v in rig.backend.batch_set_v2([rig.transfer(n, keys, pages) for n in names]).items()
    }
    if PoolName.KV not in names:
        results[str(PoolName.KV)] = rig.set(PoolName.KV, keys, pages)
    return results


def main(raw: str) -> int:
    job = Job(**json.loads(raw))
    if job.file_size_limit is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, as a full disk gives ENOSPC
        resource.setrlimit(resource.RLIMIT_FSIZE, (job.file_size_limit, job.file_size_limit))
    if job.as_nobody and os.geteuid() == 0:
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    spec = resolve_backend(job.backend)
    extra = {**spec.capabilities.io_modes[job.mode], **(job.extra or {})}
    target = Target(spec, job.mode, Path(job.storage).parent, extra, job.backend)
    geometry = load_geometry(job.family)
    with open_rig(target, geometry, Path(job.storage), job) as rig:
        if job.clear:
            rig.backend.clear()
            print(json.dumps({"cleared": True}), flush=True)
            return 0
        job.meet()
        pages = list(range(len(job.keys)))
        for round_ in range(job.rounds):
            keys = job.keys_of(round_)
            for name in rig.pools:
                for page, key in enumerate(keys):
                    rig.put(name, page, payload(rig.pool(name), job.seed, round_, name, key))
            print(json.dumps({"writing": round_}), flush=True)
            began = time.perf_counter()
            results = store_round(rig, keys, pages)
            seconds = time.perf_counter() - began
            print(json.dumps({"round": round_, "results": results, "seconds": seconds}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
