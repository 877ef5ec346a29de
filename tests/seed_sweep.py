"""Detection must not depend on the seed: run each bite case and each mutant on several seeds.

``python -m tests.seed_sweep [--seeds 0 1 2 3 4] [--jobs 2] [--only SUBSTRING ...] [--no-mutants]``
runs, at the default hypothesis profile, every case of ``tests/test_suite_bites.py`` (a broken
backend against the property that guards it) and every catalogued mutant (against the families
that kill it, ``-x``, O_DIRECT), once per seed, and prints a table: X where the seed caught the
defect. It exits 1 if any case escaped on any seed. CPU heavy: narrow it with ``--only``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tests.mutants.catalogue import MUTANTS
from tests.test_suite_bites import BROKEN

# The families that killed each mutant in the README's kill matrix; others run the whole suite.
MUTANT_FAMILIES = {
    "STAGING_IN_POOL_DTYPE": "dtype_byte_exactness",
    "SHARED_STAGING": "crash_and_faults",
    "POOL_BLIND_NAMES": "pool_isolation",
    "RANK_BLIND_NAMES": "sidecar_key_uniqueness",
    "SIZE_BLIND_EXISTS": "crash_and_faults",
    "OFF_BY_ONE_RUN": "exists_hit_policies",
    "TRAILING_WINDOW_MISREAD": "exists_hit_policies",
    "STAGED_OFFSETS_SHIFTED": "alignment_fallback",
    "UNALIGNED_ZERO_COPY": "alignment_fallback",
    "STALE_OVERWRITE": "stateful_model",
    "PARTIAL_SUCCESS_ALL_TRUE": "crash_and_faults",
    "GET_WRITES_OUTSIDE": "pool_isolation",
    "NO_READ_VERIFICATION": "crash_and_faults",
    "IN_PLACE_WRITES": "crash_and_faults",
    "PIPELINE_BLIND_NAMES": "sidecar_key_uniqueness",
    "CONTEXT_PARALLEL_BLIND_NAMES": "sidecar_key_uniqueness",
    "DCP_BLIND_NAMES": "sidecar_key_uniqueness",
    "PER_RANK_MLA_NAMES": "sidecar_key_uniqueness",
    "PHYSICAL_PAGE_SPAN": "sidecar_key_uniqueness",
    "ANCHOR_WITHOUT_MARKERS": "pool_kinds",
    "BOUNDED_SIDE_BATCHES": "large_batches",
    "BOUNDED_TRANSFER_QUEUE": "large_batches",
    "CAPPED_EXISTS": "large_batches",
    "TRUTHY_STRINGS": "config_spellings",
    "LENIENT_CONFIG": "config_spellings",
    "UNKNOWN_POLICY_ZERO": "exists_hit_policies",
    "NO_RESTORABLE_SET": "exists_hit_policies",
    "FORMAT_BLIND_TAGS": "lifecycle",
    "STALE_INDEX": "lifecycle",
    "FIRST_POOLS_KEYS": "stateful_model",
    "PARTIAL_FAMILY_EVICTION": "capacity_and_eviction",
    "UNPINNED_READ": "capacity_and_eviction",
    "BUDGET_PER_PROCESS": "capacity_and_eviction",
    "OFFSET_BLIND_INDICES": "controller_handover",
}


@dataclass(frozen=True)
class Case:
    name: str
    backend: str
    keyword: str | None
    mode: str | None = None

    def argv(self, seed: int) -> list[str]:
        args = [
            sys.executable,
            "-m",
            "pytest",
            f"--backend={self.backend}",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
        ]
        args += [f"--hypothesis-seed={seed}"]
        args += ["-k", self.keyword] if self.keyword else []
        return args + ([f"--backend-mode={self.mode}"] if self.mode else [])


def cases(with_mutants: bool) -> list[Case]:
    found = [
        Case(f"{broken}: {prop.removeprefix('test_')}", f"tests.broken.{broken}:SPEC", f"{family} and {prop}")
        for broken, family, prop in BROKEN
    ]
    if with_mutants:
        found += [
            Case(
                f"mutant {name.lower()}",
                f"tests.mutants.catalogue:{name}",
                MUTANT_FAMILIES.get(name),
                "direct",
            )
            for name in MUTANTS
        ]
    return found


def caught(case: Case, seed: int) -> str:
    """X: a property failed; '.': everything passed; '!': the run broke (proves nothing)."""
    done = subprocess.run(case.argv(seed), capture_output=True, check=False, timeout=1800)
    return {1: "X", 0: "."}.get(done.returncode, "!")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument(
        "--only",
        nargs="*",
        default=[],
        help="run cases whose name holds any of these (any case: a catalogue name selects its mutant)",
    )
    parser.add_argument("--no-mutants", action="store_true")
    args = parser.parse_args(argv)
    chosen = [
        c
        for c in cases(not args.no_mutants)
        if not args.only or any(o.lower() in c.name.lower() for o in args.only)
    ]
    runs = [(c, s) for c in chosen for s in args.seeds]
    with ThreadPoolExecutor(args.jobs) as pool:
        marks = dict(zip(runs, pool.map(lambda run: caught(*run), runs)))
    print("| case | " + " | ".join(f"seed {s}" for s in args.seeds) + " | every seed |")
    print("|---|" + "---|" * (len(args.seeds) + 1))
    escaped = 0
    for case in chosen:
        row = [marks[(case, s)] for s in args.seeds]
        every = all(m == "X" for m in row)
        escaped += not every
        print(f"| {case.name} | " + " | ".join(row) + f" | {'yes' if every else 'NO'} |")
    print(f"\n{len(chosen) - escaped} of {len(chosen)} cases caught on every seed.")
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main())
