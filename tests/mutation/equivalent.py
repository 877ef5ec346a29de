"""Survivors of ``python -m tests.mutation`` that no backend behaviour can tell apart from the
original, each with the one line that says why (docs/mutation.md triages every survivor).

Keyed by ``Mutant.ident`` (path:line:operator:occurrence), which holds while the module's source does.
"""

from __future__ import annotations

EQUIVALENT: dict[str, str] = {
    "reference_backend/log.py:1156:ReplaceAndWithOr:29": (
        "no checkpoint is ever written: a restart scans the log instead, which serves the same "
        "entries (the checkpoint saves restart time only, as a cache would)"
    ),
    "reference_backend/config.py:152:ReplaceBinaryOperator_Mul_Add:0": (
        "the wording of the one-line settings summary an operator reads at startup; no caller parses it"
    ),
    "reference_backend/log.py:555:ReplaceBinaryOperator_Mul_LShift:6": (
        "bounds only how many index rows of deleted segments one commit purges (later commits take "
        "the rest; such a row is a miss either way): the same answers, another commit's latency"
    ),
    "reference_backend/config.py:170:ReplaceBinaryOperator_Mul_BitXor:0": (
        "the wording of the one-line settings summary an operator reads at startup; no caller parses it"
    ),
    "reference_backend/pools.py:93:ReplaceBinaryOperator_Add_BitOr:3": (
        "learn_strides only decides whether regions are computed from strides or asked of the pool "
        "each batch: the index it checks is the same where the region count is a power of two, and "
        "elsewhere the check fails and the pool is asked, which gives the same regions"
    ),
    "reference_backend/capacity.py:199:NumberReplacer:84": (
        "a pin's home slot is whatever hash every process of the tenant shares: a shift of 33 "
        "still spreads families over 2**31 homes, more than the 2**16 slots a table has at most"
    ),
    "reference_backend/capacity.py:208:NumberReplacer:96": (
        "slots are never emptied and a pin is placed at or before the first empty slot of its run, "
        "so a probe that goes on past one finds nothing more; only the all-zero family (stored as "
        "1, one in 2**64) would stop a probe early"
    ),
    "reference_backend/descriptors.py:46:NumberReplacer:22": (
        "numpy infers a dimension given as any negative number, not only -1: reshape(-2, 3) is "
        "reshape(-1, 3), the same rows"
    ),
    "reference_backend/config.py:170:ReplaceBinaryOperator_Mul_BitAnd:0": (
        "the wording of the one-line settings summary an operator reads at startup; no caller parses it"
    ),
    "reference_backend/log.py:109:RemoveDecorator:0": (
        "the cache only saves reading /proc/self/mountinfo again; a mounted device's answer does not change"
    ),
    "reference_backend/index.py:344:AddNot:28": (
        "chooses between removing records one at a time and one rebuild of the table: both leave the "
        "same records (in another order of ids, which nothing outside the index keeps across a drop)"
    ),
    "reference_backend/log.py:97:ExceptionReplacer:0": (
        "clock_gettime(CLOCK_REALTIME_COARSE) raises only on a kernel without that clock (before "
        "Linux 2.6.32), where nothing else of the backend runs either"
    ),
    "reference_backend/checkpoint.py:141:ReplaceComparisonOperator_NotEq_LtE:3": (
        "every checkpoint is refused as if torn, so a restart rebuilds the index from the log and "
        "serves the same entries (as with log.py:1156's, no checkpoint is written): restart time only"
    ),
    "reference_backend/capacity.py:415:ReplaceBinaryOperator_Mul_Sub:10": (
        "a write past the low watermark tombstones the victim's every family at once instead of a "
        "slice proportional to its size: the same families, in the same order, sparing the same "
        "pinned and arriving ones, only sooner, inside the band where eviction may run at any time"
    ),
    "reference_backend/log.py:565:ReplaceBinaryOperator_Add_LShift:15": (
        "the purge of evicted records after a commit takes them all instead of a batch's worth: the "
        "same records leave the index, in one call instead of over several"
    ),
    "reference_backend/capacity.py:415:ReplaceUnaryOperator_USub_UAdd:7": (
        "the slice a write past the low watermark evicts is 64 families at a time instead of a "
        "share of its size: the same families in the same order, sparing the same ones"
    ),
    "reference_backend/transfer.py:192:ReplaceBinaryOperator_Mul_Pow:0": (
        "another split of a pipelined read into chunks: every page is still in exactly one chunk, "
        "read and checked the same way"
    ),
    "reference_backend/log.py:368:NumberReplacer:84": (
        "the listing's initial (inode, mtime) is (0, 1) instead of (0, 0): no folder has either, so "
        "the first refresh lists the folder in both"
    ),
    "reference_backend/index.py:174:NumberReplacer:47": (
        "the record array grows by doubling instead of by half again: the same records, more spare "
        "room (memory only)"
    ),
    "reference_backend/backend.py:221:ReplaceBinaryOperator_Mul_BitOr:1": (
        "a read of few zero-copy pages goes through the pipelined path instead of one transfer: the "
        "same pages, checked the same way"
    ),
    "reference_backend/checkpoint.py:30:NumberReplacer:5": (
        "a running checkpoint every 32,768 records instead of 65,536: restart time and disk only, the "
        "log stays the truth"
    ),
    "reference_backend/capacity.py:298:NumberReplacer:117": (
        "PinTable rounds its slot count up to a power of two of at least 64, so a floor of 63 slots "
        "makes the same table"
    ),
    "reference_backend/agents.py:50:ReplaceComparisonOperator_Eq_Is:0": (
        '_wanted_build returns the literal "nixl" (so `is` holds) unless HICACHE_NIXL_BUILD=nixl is '
        "given, and then the alias path loads the same build (nixl_cu13._api, a working agent: checked "
        "with the mutant applied), only swapping the meta package's module object for an alias"
    ),
    "reference_backend/log.py:750:ReplaceAndWithOr:15": (
        "trusting a listing taken in the tick of the folder's last change is unobservable on kernels "
        "with multigrain timestamps (Linux 6.13+, this machine 6.18): the listing's own stat makes the "
        "next change take a fine-grained stamp, so it never shares one (200 writer changes with a stat "
        "between: 0 shared; 185 lookups beside a writer: 185 relists). It matters on older kernels"
    ),
}
