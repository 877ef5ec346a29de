"""A pure-Python statement of ``batch_exists_v2``'s documented semantics.

The suite compares every backend against this oracle. It is written from the interface's
docstrings, not from any backend:

- KV: the leading run of keys whose KV entry is present.
- ALL_PAGES: every page in ``[0, kv_hit)`` must exist in the pool; prefix lengths up to the first
  gap are restorable.
- TRAILING_PAGES: a prefix of length ``p`` is restorable when the pool holds the last
  ``w = max(1, len(transfer.keys))`` pages ending at ``p``.
- BLOCK_GROUPS: the pool's own keys, in groups of ``group_pages``; the leading complete groups
  cover ``block_pages`` FULL pages each. That figure is reported and never gates the KV hit.

The usable prefix is the longest length every gating pool can restore: the intersection of their
restorable sets, as ``restorable_prefix_pages`` documents (a per-pool minimum would accept a length
that a TRAILING_PAGES pool cannot restore).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from conformance.model.interface import PoolHitPolicy, PoolName, PoolTransfer, PoolTransferResult

Presence = Callable[[str, str], bool]
"""``present(pool_name, key)``: is that pool's entry for that key stored and whole?"""


def leading_run(flags: Sequence[bool]) -> int:
    """How many flags are True before the first False."""
    for i, flag in enumerate(flags):
        if not flag:
            return i
    return len(flags)


def _restorable(transfer: PoolTransfer, keys: Sequence[str], kv_pages: int, present: Presence) -> set[int]:
    name = str(transfer.name)
    if PoolHitPolicy(transfer.hit_policy) is PoolHitPolicy.ALL_PAGES:
        boundary = leading_run([present(name, keys[i]) for i in range(kv_pages)])
        return set(range(1, boundary + 1))
    window = max(1, len(transfer.keys or []))
    return {
        p for p in range(1, kv_pages + 1) if all(present(name, keys[i]) for i in range(max(0, p - window), p))
    }


def block_group_pages(transfer: PoolTransfer, present: Presence) -> int:
    """FULL pages covered by the pool's leading complete key groups."""
    if transfer.group_pages <= 0 or transfer.block_pages <= 0:
        raise ValueError(
            "BLOCK_GROUPS needs positive group_pages and block_pages, "
            f"not {transfer.group_pages} and {transfer.block_pages}"
        )
    own = list(transfer.keys or [])
    name = str(transfer.name)
    groups = 0
    for start in range(0, len(own) - transfer.group_pages + 1, transfer.group_pages):
        if not all(present(name, k) for k in own[start : start + transfer.group_pages]):
            break
        groups += 1
    return groups * transfer.block_pages


@dataclass(frozen=True)
class ExpectedExists:
    kv_hit_pages: int
    extra_pool_hit_pages: dict[str, int]
    restorable_prefix_pages: list[int]


def expected_exists_v2(
    keys: Sequence[str], transfers: Sequence[PoolTransfer], present: Presence
) -> ExpectedExists:
    kv_pages = leading_run([present(str(PoolName.KV), k) for k in keys])
    hits: dict[str, int] = {str(PoolName.KV): kv_pages} if kv_pages else {}
    restorable = set(range(1, kv_pages + 1))
    for transfer in transfers:
        if PoolHitPolicy(transfer.hit_policy) is PoolHitPolicy.BLOCK_GROUPS:
            figure = block_group_pages(transfer, present)
        else:
            pool_restorable = _restorable(transfer, keys, kv_pages, present)
            figure = max(pool_restorable, default=0)
            restorable &= pool_restorable
        if figure:
            hits[str(transfer.name)] = figure
    return ExpectedExists(max(restorable, default=0), hits, sorted(restorable))


def check_exists_result(actual: PoolTransferResult, expected: ExpectedExists) -> list[str]:
    """Every way ``actual`` departs from the oracle, in words (empty when it conforms).

    Pools after the usable prefix fell to zero may be left out, as upstream's loops stop early;
    any figure that is reported must be right.
    """
    problems = []
    if actual.kv_hit_pages != expected.kv_hit_pages:
        problems.append(f"kv_hit_pages {actual.kv_hit_pages} != {expected.kv_hit_pages}")
    reported = {str(k): v for k, v in actual.extra_pool_hit_pages.items()}
    for name, figure in expected.extra_pool_hit_pages.items():
        got = reported.get(name)
        if got is None and expected.kv_hit_pages == 0:
            continue
        if got != figure:
            problems.append(f"pool {name!r} hit pages {got} != {figure}")
    for name, got in reported.items():
        if name not in expected.extra_pool_hit_pages and got != 0:
            problems.append(f"pool {name!r} reports {got} pages where none are present")
    if (
        actual.restorable_prefix_pages is not None
        and list(actual.restorable_prefix_pages) != expected.restorable_prefix_pages
    ):
        problems.append(
            f"restorable_prefix_pages {actual.restorable_prefix_pages} != {expected.restorable_prefix_pages}"
        )
    return problems


def reduce_across_ranks(results: Sequence[PoolTransferResult], span_pages: int) -> int:
    """The hit every rank agrees on, reduced as SGLang 0.5.23's hybrid controller does it.

    With a TRAILING_PAGES pool queried, each rank contributes one flag per prefix length (its
    ``restorable_prefix_pages``, or ``1..kv_hit_pages`` when it leaves them out) and the flags
    are reduced with MIN; the hit is the longest length every rank flagged
    (``HybridCacheController._sync_prefetch_hit_query``).
    """
    flags = [1] * (span_pages + 1)
    for result in results:
        hit = result.kv_hit_pages
        pages = result.restorable_prefix_pages
        own = set(range(1, hit + 1) if pages is None else (p for p in pages if 0 < p <= hit))
        flags = [f if p == 0 or p in own else 0 for p, f in enumerate(flags)]
    return max(p for p, f in enumerate(flags) if f)


def reduced_expected_hit(expected: Sequence[ExpectedExists]) -> int:
    """The longest prefix every rank can restore: the intersection of their restorable sets."""
    common = set.intersection(*(set(e.restorable_prefix_pages) for e in expected)) if expected else set()
    return max(common, default=0)
