"""Atomic read-modify-write on a buffer for a vector of lanes, as if applied one at a time.

Lanes that hit distinct elements are applied at once; lanes that share an element are applied in
order (lane order, or a seeded shuffle under the "shuffle" schedule), and each gets the old value
it would have seen. Adds and subtracts use a segmented prefix sum; other operations go round by
round, one lane per element per round.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_OPS: dict[str, Callable[..., Any]] = {
    "add": lambda old, v: old + v,
    "sub": lambda old, v: old - v,
    "max": np.maximum,
    "min": np.minimum,
    "nanmax": np.fmax,
    "nanmin": np.fmin,
    "exch": lambda old, v: v,
    "cas": lambda old, cmp, v: np.where(old == cmp, v, old),
    "and_": lambda old, v: old & v,
    "or_": lambda old, v: old | v,
    "xor": lambda old, v: old ^ v,
    "inc": lambda old, v: np.where(old >= v, 0, old + 1),
    "dec": lambda old, v: np.where((old == 0) | (old > v), v, old - 1),
}

ATOMIC_OPS = tuple(_OPS)


def apply_atomic(buf: np.ndarray, op: str, flat: np.ndarray, operands: list, rng: Any
                 ) -> np.ndarray:
    """Apply `op` for every lane; return the old values in lane order."""
    fn = _OPS[op]
    n = len(flat)
    with np.errstate(all="ignore"):
        ops = [np.broadcast_to(np.asarray(o).astype(buf.dtype, copy=False), (n,)) for o in operands]
        seq = rng.permutation(n) if rng is not None and n > 1 else np.arange(n)
        order = seq[np.argsort(flat[seq], kind="stable")]  # by element, then by application order
        fs = flat[order]
        starts = np.flatnonzero(np.r_[True, fs[1:] != fs[:-1]])
        old = np.empty(n, buf.dtype)
        if len(starts) == n:  # no two lanes share an element
            before = buf[flat]
            buf[flat] = fn(before, *ops).astype(buf.dtype, copy=False)
            return before
        counts = np.diff(np.r_[starts, n])
        if op in ("add", "sub"):
            vals = ops[0][order]
            if op == "sub":
                vals = -vals if buf.dtype.kind != "u" else (0 - vals).astype(buf.dtype)
            csum = np.cumsum(vals, dtype=buf.dtype)
            seg_start = np.repeat(starts, counts)
            offset = np.where(seg_start > 0, csum[seg_start - 1], 0).astype(buf.dtype)
            excl = (csum - vals - offset).astype(buf.dtype)
            base = np.repeat(buf[fs[starts]], counts)
            old[order] = base + excl
            totals = np.add.reduceat(vals, starts, dtype=buf.dtype)
            buf[fs[starts]] = (buf[fs[starts]] + totals).astype(buf.dtype)
            return old
        rank = np.arange(n) - np.repeat(starts, counts)
        for r in range(int(counts.max())):
            sel = order[rank == r]
            f = flat[sel]
            before = buf[f]
            old[sel] = before
            buf[f] = fn(before, *(o[sel] for o in ops)).astype(buf.dtype, copy=False)
        return old
