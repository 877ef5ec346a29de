"""Defect: a persistent store that names entries by (model, shard, pool, key) alone.

Restarted with another KV dtype or page size for the same model, it serves the old pages in the
new format whenever their byte counts agree (bf16 read as fp16, two tokens of 64 as four of 32).
"""

from __future__ import annotations

from dataclasses import replace

from conformance.doubles.memory_backend import CAPABILITIES, MemoryBackend
from conformance.model.capabilities import BackendSpec

SPEC = BackendSpec("broken-format-blind", MemoryBackend, replace(CAPABILITIES, persistence=True))
