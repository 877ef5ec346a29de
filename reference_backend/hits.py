"""How side pools shrink the KV hit of ``batch_exists_v2``: SGLang's three hit policies as arithmetic.

The backend says which pages are stored; this module says what that restores. Per pool:

- ``ALL_PAGES``: a prefix of p pages is restorable when the pool holds all of its first p pages.
- ``TRAILING_PAGES``: when the pool holds the last ``window`` pages of the prefix (the window is the
  number of keys the pool was asked about, at least one), or all of a shorter prefix.
- ``BLOCK_GROUPS``: the pool's own keys in groups of ``group_pages``; the leading complete groups
  cover ``block_pages`` pages each. That figure is reported and never gates the KV hit.

The usable KV hit is the longest prefix every gating pool can restore (not the minimum of the
pools' own figures), and the restorable set lists every such prefix length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from reference_backend.interface import PoolHitPolicy, PoolName, PoolTransfer, PoolTransferResult

_KV = str(PoolName.KV)


def leading_run(present: Sequence[bool]) -> int:
    """Pages stored before the first gap."""
    return present.index(False) if False in present else len(present)


def restorable(policy: PoolHitPolicy, window: int, present: Sequence[bool]) -> list[bool]:
    """Per prefix length 0..len(present), whether a gating pool under ``policy`` restores it."""
    kv = len(present)
    if policy is PoolHitPolicy.ALL_PAGES:
        run = leading_run(present)
        return [0 < p <= run for p in range(kv + 1)]
    window = max(1, window)
    filled = [0]
    for flag in present:
        filled.append(filled[-1] + flag)
    return [p > 0 and filled[p] - filled[max(0, p - window)] == min(window, p) for p in range(kv + 1)]


def block_group_pages(group_pages: int, block_pages: int, present: Sequence[bool]) -> int:
    """Pages the leading complete groups of a ``BLOCK_GROUPS`` pool cover."""
    if group_pages <= 0 or block_pages <= 0:
        raise ValueError(
            f"BLOCK_GROUPS needs positive group_pages and block_pages, not {group_pages} and {block_pages}"
        )
    groups = 0
    for start in range(0, len(present) - group_pages + 1, group_pages):
        if not all(present[start : start + group_pages]):
            break
        groups += 1
    return groups * block_pages


def longest(restorable_prefixes: Sequence[bool]) -> int:
    """The longest restorable prefix, 0 when none is."""
    return max((p for p, ok in enumerate(restorable_prefixes) if ok and p), default=0)


def exists_result(
    kv: int, figures: dict[str, int], gates: Sequence[Sequence[bool]], kv_name: str
) -> PoolTransferResult:
    """The answer: the longest prefix every gate restores, each nonzero figure, the restorable set."""
    final = list(range(1, kv + 1))
    for gate in gates:
        final = [p for p in final if gate[p]]
    hits = {kv_name: kv} if kv else {}
    hits.update({name: figure for name, figure in figures.items() if figure})
    return PoolTransferResult(final[-1] if final else 0, hits, final)


def answer(
    kv: int,
    keys: list[str],
    transfers: Sequence[PoolTransfer],
    present: Callable[[str, list[Any]], list[bool]],
    restorable: Callable[[PoolTransfer, list[bool]], list[bool]],
) -> PoolTransferResult:
    """``batch_exists_v2``'s answer from the KV run ``kv``: each side pool's stored pages
    (``present``), restorable prefixes (``restorable``, the policy above) and figure."""
    figures: dict[str, int] = {}
    gates: list[list[bool]] = []
    for t in transfers:
        name = str(t.name)
        if PoolHitPolicy(t.hit_policy) is PoolHitPolicy.BLOCK_GROUPS:
            figure = block_group_pages(t.group_pages, t.block_pages, present(name, list(t.keys or [])))
        else:
            stored = present(name, keys[:kv])
            if False in stored:
                gates.append(restorable(t, stored))
                figure = longest(gates[-1])
            else:  # a pool holding every page restores every prefix under any policy
                figure = kv
        if figure:
            figures[name] = figure
    return exists_result(kv, figures, gates, _KV)
