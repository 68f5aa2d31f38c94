"""Scaled dot-product attention, softmax(q k^T * scale) v, fused into one kernel.

One thread per query row walks over the keys once, keeping a running maximum, a running sum of
exponentials and a running weighted sum of values (the "online softmax" of FlashAttention), so
the seq_q x seq_kv score matrix is never stored. A block of queries shares tiles of K and V in
shared memory. Causal masking is top-left aligned: query i sees keys j <= i, as PyTorch's
`scaled_dot_product_attention(is_causal=True)`. No dropout, arbitrary masks or backward pass.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import cuda

from ._common import (
    OpInputError,
    blocks,
    check_flag,
    check_nonempty,
    check_rank,
    check_scalar,
    common_dtype,
    launch,
    operand,
    resolve_backend,
    staging,
)

QUERIES = 32  # query rows per block, one per thread
KEYS = 16  # keys per shared-memory tile of K and V
MAX_HEAD_DIM = 128  # per-thread registers (local arrays) and tiles hold up to this many features


@functools.cache
def attention_kernel(dtype: type) -> Any:
    """The fused attention kernel for `dtype`. Grid (query blocks, heads, batch)."""

    def attention_online(q, k, v, out, scale, causal):
        k_tile = cuda.shared.array((KEYS, MAX_HEAD_DIM), dtype)
        v_tile = cuda.shared.array((KEYS, MAX_HEAD_DIM), dtype)
        q_row = cuda.local.array(MAX_HEAD_DIM, dtype)
        acc = cuda.local.array(MAX_HEAD_DIM, dtype)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * QUERIES + t  # this thread's query row
        h = cuda.blockIdx.y
        b = cuda.blockIdx.z
        seq_q = q.shape[2]
        seq_kv = k.shape[2]
        d = q.shape[3]
        dv = v.shape[3]
        # Keys this block needs: all of them, or (causal) up to its last query row.
        n_keys = seq_kv
        if causal:
            n_keys = min(seq_kv, min(seq_q, (cuda.blockIdx.x + 1) * QUERIES))
        if i < seq_q:
            for e in range(d):
                q_row[e] = q[b, h, i, e]
            for e in range(dv):
                acc[e] = 0
        m = dtype(-math.inf)  # the largest score so far
        total = dtype(0)  # sum of exp(score - m) so far
        for start in range(0, n_keys, KEYS):
            # The whole block copies KEYS rows of K and V to shared memory, each thread a few
            # elements; rows past the end are left unset and never read.
            for idx in range(t, KEYS * d, QUERIES):
                if start + idx // d < seq_kv:
                    k_tile[idx // d, idx % d] = k[b, h, start + idx // d, idx % d]
            for idx in range(t, KEYS * dv, QUERIES):
                if start + idx // dv < seq_kv:
                    v_tile[idx // dv, idx % dv] = v[b, h, start + idx // dv, idx % dv]
            cuda.syncthreads()  # the tiles are complete before anyone reads them
            if i < seq_q:
                for r in range(KEYS):
                    j = start + r
                    if j < n_keys and (not causal or j <= i):
                        score = dtype(0)
                        for e in range(d):
                            score += q_row[e] * k_tile[r, e]
                        score *= scale
                        # Online softmax: when a larger score arrives, everything summed so far
                        # was relative to a smaller maximum; multiplying by exp(m - m_new) <= 1
                        # rescales it. Exponents stay <= 0, so exp never overflows.
                        m_new = max(m, score)
                        correction = math.exp(m - m_new)
                        weight = math.exp(score - m_new)
                        total = total * correction + weight
                        for e in range(dv):
                            acc[e] = acc[e] * correction + weight * v_tile[r, e]
                        m = m_new
            cuda.syncthreads()  # everyone is done with the tiles before they are overwritten
        if i < seq_q:
            for e in range(dv):
                out[b, h, i, e] = acc[e] / total  # normalise once, at the end

    return attention_online


def attention(q: Any, k: Any, v: Any, scale: float | None = None, causal: bool = False, *,
              backend: Any = None) -> Any:
    """softmax(q @ k^T * scale [+ causal mask]) @ v per batch and head, on the device.

    q: (batch, heads, seq_q, head_dim); k: (batch, heads, seq_kv, head_dim); v: (batch, heads,
    seq_kv, head_dim_v). seq_q may differ from seq_kv; head dims up to 128. scale defaults to
    1/sqrt(head_dim). causal: query i attends to keys 0..i (top-left aligned). Returns a new
    (batch, heads, seq_q, head_dim_v) device array.
    """
    op = "attention"
    backend = resolve_backend(backend, op)
    causal = check_flag(op, "causal", causal)
    if scale is not None:
        scale = check_scalar(op, "scale", scale)
    ops = [operand(backend, op, name, value) for name, value in (("q", q), ("k", k), ("v", v))]
    for x in ops:
        check_rank(op, x, 4, "(batch, heads, seq, head_dim)")
    check_nonempty(op, *ops)
    dtype = common_dtype(op, *ops)
    qo, ko, vo = ops
    if qo.shape[:2] != ko.shape[:2] or qo.shape[:2] != vo.shape[:2]:
        raise OpInputError(f"{op}: batch and heads differ: q {qo.shape}, k {ko.shape}, v "
                           f"{vo.shape}; axes 0 and 1 must match")
    if qo.shape[3] != ko.shape[3]:
        raise OpInputError(f"{op}: q has head_dim {qo.shape[3]} but k has {ko.shape[3]}; the "
                           "scores q @ k^T need equal head dims")
    if ko.shape[2] != vo.shape[2]:
        raise OpInputError(f"{op}: k has {ko.shape[2]} keys but v has {vo.shape[2]} values; "
                           "axis 2 of k and v must match")
    for x in (qo, vo):
        if x.shape[3] > MAX_HEAD_DIM:
            raise OpInputError(f"{op}: {x.name} has head_dim {x.shape[3]}; this kernel keeps a "
                               f"row in registers and supports head_dim <= {MAX_HEAD_DIM}")
    if scale is None:
        scale = 1.0 / math.sqrt(qo.shape[3])
    batch, heads, seq_q, d = qo.shape
    seq_kv, dv = ko.shape[2], vo.shape[3]
    # Scores and weighted values: 2 flops per multiply-add, over the (query, key) pairs computed.
    pairs = _causal_pairs(seq_q, seq_kv) if causal else seq_q * seq_kv
    flops = 2 * batch * heads * pairs * (d + dv)
    with staging(backend, op) as stage:
        q_dev, k_dev, v_dev = stage.inputs(ops)
        out = stage.allocate((batch, heads, seq_q, dv), dtype, result=True)
        launch(backend, attention_kernel(dtype.type), (blocks(seq_q, QUERIES), heads, batch),
               QUERIES, q_dev, k_dev, v_dev, out, dtype.type(scale), causal, op=op,
               flops=flops)
        return out


def _causal_pairs(seq_q: int, seq_kv: int) -> int:
    """The (query, key) pairs a causal mask keeps: query i sees keys 0..min(i, seq_kv - 1)."""
    full = min(seq_q, seq_kv)  # queries 0..full-1 see i + 1 keys; the rest see all seq_kv
    return full * (full + 1) // 2 + (seq_q - full) * seq_kv


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float | None = None,
              causal: bool = False) -> np.ndarray:
    """The numpy result attention computes (the score matrix and a plain softmax), for checking."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) * scale
    if causal:
        visible = np.tril(np.ones(scores.shape[-2:], bool))
        scores = np.where(visible, scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ v.astype(np.float64)).astype(q.dtype)
