"""Hit rate at a fixed budget on a prefix-sharing replay: chain-aware LRU (ours) beside FIFO-by-write
(upstream HiCacheNixl's cleaner) and plain LRU, one run, the same trace, the real backend.

``python -m tests.benchmarks.capacity_replay [--requests N] [--budget-mib M]``. A request is a chain
of pages: one of a few shared system prompts, then a conversation that grows turn by turn (each turn
re-reads its whole prefix), with popularity skewed towards a few prompts and conversations. Each
request asks ``batch_exists`` for its chain, reads the hit with ``batch_get_v1`` and writes the rest
with ``prefix_keys`` set, as SGLang's controller does. Prints pages hit / pages asked per policy,
their ratios to FIFO, the worst stored bytes over the budget and the longest reclaim pause.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
from pathlib import Path

from conformance.harness.geometry import load_geometry
from conformance.harness.registry import resolve_backend
from conformance.harness.rig import Rig, Target
from conformance.model.interface import HiCacheStorageExtraInfo, PoolName
from conformance.servers.folder_peak import stored_bytes

POLICIES = ("chain", "lru", "fifo")


def trace(requests: int, seed: int) -> list[list[str]]:
    """Each request's chain of page keys."""
    rng = random.Random(seed)
    prompts = [[f"sys{p}-{i}" for i in range(rng.randint(4, 12))] for p in range(6)]
    conversations: list[list[str]] = []
    out = []
    for n in range(requests):
        if conversations and rng.random() < 0.7:
            c = min(int(rng.paretovariate(1.2)) - 1, len(conversations) - 1)
            chain = conversations[-1 - c]
            chain.extend(f"conv{id(chain)}-{len(chain)}-{i}" for i in range(rng.randint(1, 3)))
        else:
            prompt = prompts[min(int(rng.paretovariate(1.5)) - 1, len(prompts) - 1)]
            chain = prompt + [f"q{n}-{i}" for i in range(rng.randint(1, 4))]
            conversations.append(chain)
        out.append(list(chain))
    return out


def replay(policy: str, chains: list[list[str]], budget: int) -> tuple[float, int, float]:
    """(hit rate, worst bytes over budget, longest index-lock hold in seconds) for one policy."""
    spec = resolve_backend("nixl")
    extra = {"use_direct_io": False, "max_size": budget, "eviction_policy": policy, "pin_seconds": 0}
    target = Target(spec, "buffered", Path(tempfile.mkdtemp()), extra, "nixl")
    geometry = load_geometry("llama3_mha")
    asked = hit = worst = 0
    with target.storage() as storage, Rig(target, geometry, storage, page_num=64) as rig:
        for chain in chains:
            chain = chain[:64]
            run = rig.backend.batch_exists(chain)
            asked += len(chain)
            if run:
                got = rig.backend.batch_get_v1(chain[:run], rig.indices(PoolName.KV, range(run)))
                run = got.index(False) if False in got else run
            hit += run
            rest = chain[run:]
            if rest:
                info = HiCacheStorageExtraInfo(prefix_keys=chain[:run])
                rig.backend.batch_set_v1(rest, rig.indices(PoolName.KV, range(run, len(chain))), info)
            worst = max(worst, stored_bytes(storage) - budget)
        pause = rig.backend.capacity.last_pause if rig.backend.capacity else 0.0
    return hit / asked, worst, pause


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--budget-mib", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("NIXL_LOG_LEVEL", "WARN")
    chains = trace(args.requests, args.seed)
    budget = int(args.budget_mib * (1 << 20))
    rows = {p: replay(p, chains, budget) for p in POLICIES}
    base = rows["fifo"][0]
    print(f"{args.requests} requests, budget {budget} B, seed {args.seed}")
    print("| policy | hit rate | vs FIFO | worst bytes over budget | longest reclaim pause (ms) |")
    print("|---|---|---|---|---|")
    for policy, (rate, worst, pause) in rows.items():
        print(f"| {policy} | {rate:.3f} | {rate / base:.2f}x | {max(worst, 0)} | {pause * 1e3:.2f} |")


if __name__ == "__main__":
    main()
