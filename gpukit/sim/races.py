"""Race detection bookkeeping: per-element records of who wrote and who read, since when.

For every element of a buffer, during one launch, `RaceShadow` keeps the last writer (thread,
barrier phase, atomic or not, source site) and a summary of the readers (one reader, its block
or "several blocks", the phase of the latest read, whether several threads of that block read in
that phase, and one other reader to name in messages). Two accesses conflict when they come from
different threads, at least one writes, not both are atomic, and no barrier orders them: threads
of different blocks are never ordered within a launch, threads of one block are ordered by the
block's barrier phase.

The record updates run lane by lane in compiled loops (numba.njit, cached on disk), in lane order,
so lanes of one access that share an element see each other as they would in some serial order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

NO_CONFLICT = -1


class RaceShadow:
    """Per-element access records of one buffer during one launch (zero means none)."""

    def __init__(self, n: int, tid_dtype: Any):
        self.w_tid = np.zeros(n, tid_dtype)  # writer thread + 1
        self.w_phase = np.zeros(n, np.int32)
        self.w_atomic = np.zeros(n, np.bool_)
        self.w_site = np.zeros(n, np.int32)
        self.r_tid = np.zeros(n, tid_dtype)  # a reader + 1
        self.r_blk = np.zeros(n, np.int64)  # its block + 1, or -1 when readers span blocks
        self.r_phase = np.zeros(n, np.int32)
        self.r_multi = np.zeros(n, np.bool_)  # several threads of that block read in that phase
        self.r_other = np.zeros(n, tid_dtype)  # when several: another reader + 1
        self.r_site = np.zeros(n, np.int32)

    @staticmethod
    def bytes_per_element(tid_dtype: Any) -> int:
        return 3 * np.dtype(tid_dtype).itemsize + 4 * 3 + 8 + 2

    def read(self, flat: np.ndarray, tid: np.ndarray, blk: np.ndarray, ph: np.ndarray,
             site: int, tpb: int) -> tuple[int, int, int]:
        """Record reads; (lane, other thread, other site) of the first conflict, or lane -1."""
        return _read(flat, tid, blk, ph, site, tpb, self.w_tid, self.w_phase, self.w_atomic,
                     self.w_site, self.r_tid, self.r_blk, self.r_phase, self.r_multi,
                     self.r_other, self.r_site)

    def write(self, flat: np.ndarray, tid: np.ndarray, blk: np.ndarray, ph: np.ndarray,
              site: int, tpb: int, atomic: bool) -> tuple[int, int, int, bool]:
        """Record writes; (lane, other thread, other site, other wrote) of the first conflict."""
        return _write(flat, tid, blk, ph, site, tpb, atomic, self.w_tid, self.w_phase,
                      self.w_atomic, self.w_site, self.r_tid, self.r_blk, self.r_phase,
                      self.r_multi, self.r_other, self.r_site)


@njit(cache=True, nogil=True)
def _read(flat, tid, blk, ph, site, tpb, w_tid, w_phase, w_atomic, w_site, r_tid, r_blk,
          r_phase, r_multi, r_other, r_site):  # pragma: no cover - compiled
    for k in range(flat.shape[0]):
        f = flat[k]
        t = np.int64(tid[k])
        b = np.int64(blk[k])
        p = ph[k]
        w = np.int64(w_tid[f]) - 1
        if w >= 0 and w != t and (w // tpb != b or w_phase[f] == p):
            return k, w, w_site[f]
        rt = np.int64(r_tid[f]) - 1
        rb = r_blk[f]
        if rt < 0 or (rb == b + 1 and p > r_phase[f]):
            r_tid[f] = t + 1
            r_blk[f] = b + 1
            r_phase[f] = p
            r_multi[f] = False
            r_site[f] = site
        elif rb == b + 1:
            if rt != t:
                r_multi[f] = True
                r_other[f] = t + 1
        else:  # readers from several blocks
            r_blk[f] = -1
            r_other[f] = t + 1
    return NO_CONFLICT, 0, 0


@njit(cache=True, nogil=True)
def _write(flat, tid, blk, ph, site, tpb, atomic, w_tid, w_phase, w_atomic, w_site, r_tid,
           r_blk, r_phase, r_multi, r_other, r_site):  # pragma: no cover - compiled
    for k in range(flat.shape[0]):
        f = flat[k]
        t = np.int64(tid[k])
        b = np.int64(blk[k])
        p = ph[k]
        w = np.int64(w_tid[f]) - 1
        if w >= 0 and w != t and (w // tpb != b or w_phase[f] == p) \
                and not (atomic and w_atomic[f]):
            return k, w, w_site[f], True
        rt = np.int64(r_tid[f]) - 1
        if rt >= 0:
            rb = r_blk[f]
            if rb == -1 or rb != b + 1 or (r_phase[f] == p and (r_multi[f] or rt != t)):
                other = rt if rt != t else np.int64(r_other[f]) - 1
                return k, other, r_site[f], False
        if atomic and w == t and not w_atomic[f]:
            continue  # keep this thread's plain write on record: other threads' atomics race it
        w_tid[f] = t + 1
        w_phase[f] = p
        w_atomic[f] = atomic
        w_site[f] = site
    return NO_CONFLICT, 0, 0, False
