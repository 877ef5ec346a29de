"""Hypothesis strategies: page payloads full of dangerous bit patterns, and adversarial keys.

Payloads are drawn as a seed plus a pattern stride rather than as raw bytes: the data stays
kilobytes long yet shrinks to ``seed=0`` and the sparsest stride, and a failing example prints as
two small numbers that reproduce it exactly.
"""

from __future__ import annotations

import struct
import unicodedata

import numpy as np
import torch
from hypothesis import strategies as st

from conformance.doubles.hostpools import HostPoolDouble, Segment
from conformance.model.sharing import Shape

# Little-endian bit patterns that a value conversion would change or that hide in plain sight:
# NaN payloads (signalling and quiet, both signs), -0.0, the smallest subnormal, +-inf, all-ones.
_BITS: dict[torch.dtype, list[int]] = {
    torch.bfloat16: [0x7F81, 0xFFC1, 0x7FBF, 0x8000, 0x0001, 0x807F, 0x7F80, 0xFF80, 0xFFFF],
    torch.float16: [0x7C01, 0xFE01, 0x7DFF, 0x8000, 0x0001, 0x83FF, 0x7C00, 0xFC00, 0xFFFF],
    torch.float32: [
        0x7F800001,
        0xFFC00001,
        0x7FBFFFFF,
        0x80000000,
        0x00000001,
        0x807FFFFF,
        0x7F800000,
        0xFF800000,
        0xFFFFFFFF,
    ],
    torch.float8_e4m3fn: [0x7F, 0xFF, 0x80, 0x01, 0x87, 0x7E],
    torch.float8_e5m2: [0x7D, 0xFE, 0x7F, 0x80, 0x01, 0x7C, 0xFC, 0x83],
    torch.int8: [0x80, 0xFF, 0x7F, 0x00],
    torch.uint8: [0xFF, 0x80, 0x00, 0x01],
}


def special_patterns(dtype: torch.dtype) -> list[bytes]:
    """The dangerous encodings of one element of ``dtype``, as bytes."""
    width = dtype.itemsize
    fmt = {1: "<B", 2: "<H", 4: "<I"}[width]
    return [struct.pack(fmt, v) for v in _BITS.get(dtype, _BITS[torch.uint8])]


def render_segment(segment: Segment, rng: np.random.Generator, stride: int) -> bytes:
    """Random bytes, with every ``stride``-th element replaced by a dangerous pattern.

    The first patterns go in order, so that each appears; the rest are drawn from ``rng``, so that
    pages of different salts differ even at stride 1, where no random byte is left.
    """
    data = np.frombuffer(rng.bytes(segment.nbytes), dtype=np.uint8).copy()
    width = segment.dtype.itemsize
    table = np.frombuffer(b"".join(special_patterns(segment.dtype)), dtype=np.uint8).reshape(-1, width)
    elements = data[: segment.nbytes // width * width].reshape(-1, width)
    positions = np.arange(0, len(elements), stride)
    choice = rng.integers(0, len(table), size=len(positions))
    first = min(len(table), len(positions))
    choice[:first] = np.arange(first)
    elements[positions] = table[choice]
    return data.tobytes()


def render_page(pool: HostPoolDouble, seed: int, stride: int, salt: int = 0) -> bytes:
    """A full page for ``pool``: deterministic in (seed, stride, salt), distinct across salts."""
    rng = np.random.default_rng([seed, salt])
    return b"".join(render_segment(segment, rng, stride) for region in pool.segments() for segment in region)


payload_seeds = st.integers(min_value=0, max_value=2**32 - 1)
pattern_strides = st.sampled_from([1, 2, 3, 7, 64])

_key_alphabet = st.characters(codec="utf-8", exclude_characters="\x00", exclude_categories=["Cs"])
pool_suffixes = st.sampled_from(
    ["_k", "_v", "_mamba_temporal", "_mamba_conv_0", "_kv", "_indexer", ".mamba", "_swa", ".bin"]
)
separators = st.sampled_from(["_", "/", ".", "-", ":", "\\", " ", "..", "%2F"])


@st.composite
def adversarial_keys(draw: st.DrawFn) -> str:
    """Keys built to collide under a careless naming scheme."""
    base = draw(
        st.one_of(
            st.text(alphabet="0123456789abcdef", min_size=1, max_size=16),
            st.text(_key_alphabet, min_size=1, max_size=12),
        )
    )
    parts = [base]
    for _ in range(draw(st.integers(0, 3))):
        parts.append(
            draw(
                st.one_of(
                    pool_suffixes,
                    separators,
                    st.sampled_from(["kv", "mamba", "indexer", "swa", "0", "1", "2"]),
                )
            )
        )
    key = "".join(parts)
    if draw(st.booleans()):
        key = key + "x" * draw(st.integers(200, 260))
    return key


model_names = st.one_of(
    st.sampled_from(["m", "org/model", "org_model", "org-model", "a/b_c", "a_b/c", "Qwen/Qwen3-Next_80B"]),
    st.text(st.characters(codec="ascii", min_codepoint=33, max_codepoint=126), min_size=1, max_size=20),
)

# Parallel sizes deployments run: TP up to 8 (sizes above 2 too), several pipeline stages,
# attention CP, and DCP groups inside TP (SGLang allows DCP for MLA only; see conformance.model.sharing).
TP_SIZES = [1, 2, 4, 8]
PP_SIZES = [1, 2, 4]
CP_SIZES = [1, 2, 4]
DCP_SIZES = [1, 2, 4]
TOKENS_PER_DCP_RANK = [1, 16, 32]


@st.composite
def deployments(draw: st.DrawFn, *, mla: bool = True) -> Shape:
    """The sizes of one deployment, as rank 0 of it (with DCP only where ``mla``)."""
    tp_size = draw(st.sampled_from(TP_SIZES))
    dcp_sizes = [d for d in DCP_SIZES if tp_size % d == 0] if mla else [1]
    dcp_size = draw(st.sampled_from(dcp_sizes))
    return Shape(
        tp_size=tp_size,
        pp_size=draw(st.sampled_from(PP_SIZES)),
        attn_cp_size=draw(st.sampled_from(CP_SIZES)),
        dcp_size=dcp_size,
        logical_page_size=dcp_size * draw(st.sampled_from(TOKENS_PER_DCP_RANK)) if dcp_size > 1 else None,
    )


def ranks_of(deployment: Shape) -> st.SearchStrategy[Shape]:
    """Any rank of ``deployment``: its DCP rank follows from its TP rank, as SGLang requires."""
    d = deployment
    return st.builds(
        lambda tp, pp, cp: Shape(
            tp_rank=tp,
            tp_size=d.tp_size,
            pp_rank=pp,
            pp_size=d.pp_size,
            attn_cp_rank=cp,
            attn_cp_size=d.attn_cp_size,
            dcp_rank=tp % d.dcp_size,
            dcp_size=d.dcp_size,
            logical_page_size=d.logical_page_size,
        ),
        st.integers(0, d.tp_size - 1),
        st.integers(0, d.pp_size - 1),
        st.integers(0, d.attn_cp_size - 1),
    )


def shapes(*, mla: bool = True) -> st.SearchStrategy[Shape]:
    """One rank of a realistic deployment (DCP drawn only where ``mla``)."""
    return deployments(mla=mla).flatmap(ranks_of)


def rank_sets(*, mla: bool = True, max_ranks: int = 4) -> st.SearchStrategy[list[Shape]]:
    """Two to ``max_ranks`` distinct ranks of one deployment: the processes that share a store."""
    return deployments(mla=mla).flatmap(
        lambda d: st.lists(ranks_of(d), min_size=min(2, _rank_count(d)), max_size=max_ranks, unique=True)
    )


def _rank_count(d: Shape) -> int:
    return d.tp_size * d.pp_size * d.attn_cp_size


TEMPTATIONS = ("letter case", "unicode normalization", "surrounding whitespace", "hex case", "separators")
"""What a backend may be tempted to normalize in a key, each a way two distinct keys can be folded
into one name: ``lower()``/``casefold()``, NFC or NFD, ``strip()``, a hex key parsed as bytes,
``-``, ``_``, ``/`` and ``.`` made one safe character."""
_CASED = st.characters(codec="utf-8", categories=["Lu", "Ll", "Nd"], exclude_characters="\x00")
_COMPOSABLE = "éÉñÑåÅöÖçÇḱếỆǗ한글ﬁ"
"""Letters with a decomposition (NFD differs from NFC; ``ﬁ`` only under compatibility forms)."""
_WHITESPACE = st.sampled_from([" ", "\t", "\n", "\r", "\x0b", "\x0c", "\u00a0", "\u2003", "\u3000"])
_SEPARATORS = ["-", "_", "/", "."]


@st.composite
def tempting_key_pairs(draw: st.DrawFn, temptation: str) -> tuple[str, str]:
    """Two distinct keys that differ only in what ``temptation`` names (one of ``TEMPTATIONS``)."""
    if temptation == "letter case":
        key = draw(st.text(_CASED, min_size=1, max_size=16).filter(lambda k: k.swapcase() != k))
        fold = draw(st.sampled_from([str.swapcase, str.upper, str.lower, str.title]))
        other = fold(key) if fold(key) != key else key.swapcase()
    elif temptation == "unicode normalization":
        text = draw(st.text(st.sampled_from(_COMPOSABLE + "abc019"), min_size=1, max_size=12))
        text += draw(st.sampled_from(_COMPOSABLE[:-1]))  # one letter NFC and NFD spell apart
        key, other = unicodedata.normalize("NFC", text), unicodedata.normalize("NFD", text)
        if draw(st.booleans()):
            key, other = other, key
    elif temptation == "surrounding whitespace":
        key = draw(st.text(_CASED, min_size=1, max_size=16))
        pad = draw(st.text(_WHITESPACE, min_size=1, max_size=3))
        other = draw(st.sampled_from([key + pad, pad + key, pad + key + pad]))
    elif temptation == "hex case":
        key = draw(st.binary(min_size=4, max_size=32).map(bytes.hex).filter(lambda k: not k.isdigit()))
        other = draw(st.sampled_from([key.upper(), key[: len(key) // 2] + key[len(key) // 2 :].upper()]))
        other = other if other != key else key.upper()
    elif temptation == "separators":
        parts = draw(st.lists(st.text("abcdef0123", min_size=1, max_size=6), min_size=2, max_size=4))
        first, second = draw(st.permutations(_SEPARATORS))[:2]
        key, other = first.join(parts), second.join(parts)
    else:
        raise ValueError(f"unknown temptation {temptation!r}; known: {TEMPTATIONS}")
    return key, other
