"""The benchmark's workloads: real model pages of 64 tokens, and the scaled hybrid the suite uses.

Real geometries are one tensor-parallel rank's share, as a HiCache host pool on that rank holds
it. They live here, not in ``fixtures/models``: the suite draws every shipped family, and pages
of several MiB would make every certification run slow and memory-hungry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from conformance.doubles.hostpools import HostPoolDouble
from conformance.harness.geometry import PoolSpec
from conformance.model.interface import PoolHitPolicy, PoolName, PoolTransfer
from conformance.model.sglang import UpstreamUnavailable

PAGE_TOKENS = 64
TRAIL_SLOTS = 2


@dataclass(frozen=True)
class Workload:
    """A model's pools, and how a batch of ``n`` KV pages touches each of them."""

    name: str
    model: str
    note: str
    pools: tuple[PoolSpec, ...]
    trailing: frozenset[PoolName] = frozenset()
    """Pools whose transfer carries only the batch's last page (Mamba state: one per prefix end)."""

    def build(self, pages: int, upstream: bool) -> dict[PoolName, HostPoolDouble]:
        """Host pools of ``pages`` pages (trailing pools: two slots), filled with random bytes;
        SGLang's own pool classes where ``upstream`` and SGLang imports, so that both backends see
        the pool SGLang would hand them."""
        pools = {
            spec.name: _build(spec, TRAIL_SLOTS if spec.name in self.trailing else pages, upstream)
            for spec in self.pools
        }
        rng = np.random.default_rng(0)
        for pool in pools.values():
            for buf in pool.backing():
                flat = buf.view(torch.uint8).reshape(-1)
                flat.copy_(torch.from_numpy(rng.integers(0, 256, flat.numel(), dtype=np.uint8)))
        return pools

    def transfers(
        self, pools: dict[PoolName, HostPoolDouble], keys: list[str], first_page: int = 0, slot: int = 0
    ) -> list[PoolTransfer]:
        """One batch: pages ``first_page``.. of every pool under ``keys``; a trailing pool moves the
        last key only, from its ``slot``."""
        out = []
        for name, pool in pools.items():
            picked = keys[-1:] if name in self.trailing else keys
            start = slot if name in self.trailing else first_page
            ps = pool.page_size
            out.append(
                PoolTransfer(
                    name=name,
                    keys=picked,
                    host_indices=torch.arange(start * ps, (start + len(picked)) * ps, dtype=torch.int64),
                    hit_policy=PoolHitPolicy.TRAILING_PAGES
                    if name in self.trailing
                    else PoolHitPolicy.ALL_PAGES,
                )
            )
        return out

    def batch_bytes(self, pools: dict[PoolName, HostPoolDouble], batch: int) -> int:
        return sum(
            pool.page_nbytes() * (1 if name in self.trailing else batch) for name, pool in pools.items()
        )


def _build(spec: PoolSpec, pages: int, upstream: bool) -> HostPoolDouble:
    if upstream:
        try:
            from conformance.upstream.host_pools import build_pool

            return build_pool(spec, layout="page_first", page_num=pages)
        except UpstreamUnavailable:
            pass
    return spec.build(layout="page_first", page_num=pages)


def _spec(name: PoolName, kind: str, **params: Any) -> PoolSpec:
    policy = PoolHitPolicy.TRAILING_PAGES if name is PoolName.MAMBA else PoolHitPolicy.ALL_PAGES
    return PoolSpec(name=name, kind=kind, hit_policy=policy, params=params)


SCALED_HYBRID = Workload(
    "scaled-hybrid",
    "Qwen3-Next/DeepSeek-V3.2-like, scaled",
    "KV 4 layers x 2 heads x 128 (256 KiB, zero-copy); Mamba 70,144 B and DSA indexer 33,792 B, "
    "both staged under O_DIRECT; every pool on every page",
    (
        _spec(
            PoolName.KV, "mha", layer_num=4, head_num=2, head_dim=128, page_size=PAGE_TOKENS, dtype="bfloat16"
        ),
        _spec(
            PoolName.MAMBA,
            "mamba",
            num_layers=1,
            temporal_shape=[4, 64, 64],
            conv_shapes=[[768, 3]],
            temporal_dtype="float32",
            conv_dtype="bfloat16",
        ),
        _spec(
            PoolName.INDEXER,
            "dsa_indexer",
            layer_num=4,
            index_head_dim=128,
            page_size=PAGE_TOKENS,
            store_dtype="bfloat16",
        ),
    ),
)

LLAMA3_70B = Workload(
    "llama3-70b-mha",
    "meta-llama/Llama-3.1-70B-Instruct",
    "80 layers, 8 KV heads x 128, bf16, TP4: 2 heads a rank; K and V of one page 2.5 MiB each",
    (
        _spec(
            PoolName.KV,
            "mha",
            layer_num=80,
            head_num=2,
            head_dim=128,
            page_size=PAGE_TOKENS,
            dtype="bfloat16",
        ),
    ),
)

DEEPSEEK_V3 = Workload(
    "deepseek-v3-mla",
    "deepseek-ai/DeepSeek-V3",
    "61 layers, MLA latent 512 + rope 64 = 576, bf16, replicated on every rank: 4.3 MiB a page",
    (_spec(PoolName.KV, "mla", layer_num=61, kv_cache_dim=576, page_size=PAGE_TOKENS, dtype="bfloat16"),),
)

QWEN3_NEXT = Workload(
    "qwen3-next-hybrid",
    "Qwen/Qwen3-Next-80B-A3B-Instruct",
    "12 full-attention layers, 2 KV heads x 256 bf16 (TP4: 1 a rank, 768 KiB a page); 36 "
    "gated-DeltaNet layers' state, 32 v-heads x 128 x 128 fp32 and conv 8192 x 3 bf16 (TP4: 18.4 MiB), "
    "stored for the batch's last page only",
    (
        _spec(
            PoolName.KV,
            "mha",
            layer_num=12,
            head_num=1,
            head_dim=256,
            page_size=PAGE_TOKENS,
            dtype="bfloat16",
        ),
        _spec(
            PoolName.MAMBA,
            "mamba",
            num_layers=36,
            temporal_shape=[8, 128, 128],
            conv_shapes=[[2048, 3]],
            temporal_dtype="float32",
            conv_dtype="bfloat16",
        ),
    ),
    trailing=frozenset({PoolName.MAMBA}),
)

REAL = (LLAMA3_70B, DEEPSEEK_V3, QWEN3_NEXT)
WORKLOADS = {w.name: w for w in (SCALED_HYBRID, *REAL)}
