"""Warp-level intrinsics as the simulator runs them: shuffles, votes, ballots, syncwarp.

The lanes of a warp are contiguous in a group's vectors (32 per warp, the last warp of a block
possibly partial), so a shuffle is a gather within each warp. Every *_sync call checks its mask:
the calling lane must be in it, and every live lane it names must be taking part. Also the bit
intrinsics (popc, brev, clz, ffs). Block barriers live in `gpukit.sim.intrinsics`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import BarrierError
from .context import Group, current
from .runtime import _vec

WARP = 32
FULL_MASK = 0xFFFFFFFF


# -- warps -----------------------------------------------------------------------------------
def _warp_check(g: Group, m: Any, site: int, mask: Any, what: str) -> np.ndarray:
    """Check a *_sync call's mask; return the bool vector of active lanes."""
    active = np.ones(g.size, bool) if m is True else np.asarray(m, bool)
    if not g.launch.checks["barriers"]:
        return active
    lane = g.ltid % WARP
    named = ((np.asarray(mask, np.int64) >> lane) & 1).astype(bool)
    own_missing = active & ~named
    if own_missing.any():
        k = int(np.argmax(own_missing))
        raise g.error(BarrierError, f"{what}: thread {g.thread_of(k)} (lane {int(lane[k])}) "
                      f"calls it with mask {int(np.broadcast_to(mask, (g.size,))[k]):#010x}, "
                      "which does not include its own lane", k, site)
    warp = g.lane_block * ((g.launch.tpb + WARP - 1) // WARP) + g.ltid // WARP
    warps_here = np.zeros(int(warp[-1]) + 1, bool)
    warps_here[warp[active]] = True
    live = g.live()
    live = np.ones(g.size, bool) if live is True else live
    absent = warps_here[warp] & named & live & ~active
    if absent.any():
        k = int(np.argmax(absent))
        first = int(np.argmax(active & (warp == warp[k])))
        raise g.error(BarrierError, f"{what} at line {g.launch.site(site).lineno}: the mask "
                      f"names lane {int(lane[k])} (thread {g.thread_of(k)}), which did not reach "
                      "this call (it took another branch); name only the lanes that take part, "
                      "e.g. with cuda.activemask(), or call it outside the branch", first, site)
    return active


def _shuffle(m: Any, site: int, mask: Any, value: Any, src: Any, what: str,
             clamp_low: bool = False) -> Any:
    """value from lane `src` (per lane) of the same warp; out-of-range sources keep their own."""
    g = current()
    active = _warp_check(g, m, site, mask, f"cuda.{what}")
    if not _vec(value):
        return value
    lane = g.ltid % WARP
    src = np.broadcast_to(np.asarray(src, np.int64), (g.size,))
    in_warp = (src >= 0) & (src < WARP)
    idx = np.arange(g.size) - lane + np.where(in_warp, src, lane)
    exists = (g.ltid - lane + np.where(in_warp, src, lane)) < g.launch.tpb
    idx = np.where(exists, idx, np.arange(g.size))
    if g.launch.checks["barriers"]:
        bad = active & in_warp & (~exists | ~active[np.clip(idx, 0, g.size - 1)])
        if bad.any():
            k = int(np.argmax(bad))
            raise g.error(BarrierError, f"cuda.{what} at line {g.launch.site(site).lineno}: "
                          f"lane {int(lane[k])} reads lane {int(src[k])}, which is not active "
                          "here (exited, in another branch, or past the end of the block), so "
                          "the value is undefined on a GPU", k, site)
    return value[idx]


def _shfl_sync(m: Any, site: int, mask: Any, value: Any, src_lane: Any) -> Any:
    return _shuffle(m, site, mask, value, np.asarray(src_lane) % WARP, "shfl_sync")


def _shfl_up_sync(m: Any, site: int, mask: Any, value: Any, delta: Any) -> Any:
    lane = current().ltid % WARP
    return _shuffle(m, site, mask, value, lane - delta, "shfl_up_sync")


def _shfl_down_sync(m: Any, site: int, mask: Any, value: Any, delta: Any) -> Any:
    lane = current().ltid % WARP
    return _shuffle(m, site, mask, value, lane + delta, "shfl_down_sync")


def _shfl_xor_sync(m: Any, site: int, mask: Any, value: Any, lane_mask: Any) -> Any:
    lane = current().ltid % WARP
    return _shuffle(m, site, mask, value, lane ^ lane_mask, "shfl_xor_sync")


def _warp_ids(g: Group) -> np.ndarray:
    return g.lane_block * ((g.launch.tpb + WARP - 1) // WARP) + g.ltid // WARP


def _ballot_bits(g: Group, active: np.ndarray, pred: Any) -> np.ndarray:
    pred = np.broadcast_to(np.asarray(pred).astype(bool), (g.size,)) & active
    warp = _warp_ids(g)
    bits = np.bincount(warp[pred], weights=(1 << (g.ltid % WARP))[pred].astype(np.float64),
                       minlength=int(warp[-1]) + 1)
    return bits.astype(np.uint32)[warp]


def _ballot_sync(m: Any, site: int, mask: Any, predicate: Any) -> Any:
    g = current()
    return _ballot_bits(g, _warp_check(g, m, site, mask, "cuda.ballot_sync"), predicate)


def _vote(m: Any, site: int, mask: Any, predicate: Any, name: str) -> Any:
    g = current()
    active = _warp_check(g, m, site, mask, f"cuda.{name}")
    yes = _ballot_bits(g, active, predicate)
    present = _ballot_bits(g, active, True)
    if name == "all_sync":
        return (yes == present).astype(np.int32)
    return (yes != 0).astype(np.int32)


def _eq_sync(m: Any, site: int, mask: Any, value: Any) -> Any:
    g = current()
    active = _warp_check(g, m, site, mask, "cuda.eq_sync")
    if not _vec(value):
        return np.ones(g.size, np.int32)
    warp = _warp_ids(g)
    nw = int(warp[-1]) + 1
    lo = np.full(nw, np.inf)
    hi = np.full(nw, -np.inf)
    np.minimum.at(lo, warp[active], value[active].astype(np.float64))
    np.maximum.at(hi, warp[active], value[active].astype(np.float64))
    return (lo == hi)[warp].astype(np.int32)


def _activemask(m: Any, site: int) -> Any:
    g = current()
    active = np.ones(g.size, bool) if m is True else np.asarray(m, bool)
    return _ballot_bits(g, active, True)


def _lanemask_lt(m: Any, site: int) -> Any:
    g = current()
    return ((np.uint64(1) << (g.ltid % WARP).astype(np.uint64)) - np.uint64(1)).astype(np.uint32)


def _syncwarp(m: Any, site: int, mask: Any = FULL_MASK) -> None:
    g = current()
    _warp_check(g, m, site, mask, "cuda.syncwarp")
    # syncwarp orders the named lanes' memory accesses: for a block of one warp it is exactly a
    # block barrier; in larger blocks the race check stays conservative (block barriers only).
    if g.launch.tpb <= WARP:
        g.advance_phase()


# -- bit tricks ------------------------------------------------------------------------------
def _popc(m: Any, site: int, x: Any) -> Any:
    x = np.asarray(x).astype(np.uint64)
    count = np.zeros(x.shape, np.int32)
    for _ in range(64):
        count += (x & np.uint64(1)).astype(np.int32)
        x = x >> np.uint64(1)
    return count if count.ndim else int(count)


def _brev(m: Any, site: int, x: Any) -> Any:
    x = np.asarray(x)
    bits = x.dtype.itemsize * 8
    u = x.astype(np.uint64)
    out = np.zeros(u.shape, np.uint64)
    for _ in range(bits):
        out = (out << np.uint64(1)) | (u & np.uint64(1))
        u = u >> np.uint64(1)
    return out.astype(x.dtype)


def _clz(m: Any, site: int, x: Any) -> Any:
    x = np.asarray(x)
    bits = x.dtype.itemsize * 8
    u = x.astype(np.uint64) & np.uint64((1 << bits) - 1)
    n = np.full(u.shape, bits, np.int32)
    for b in range(bits):
        n = np.where((u >> np.uint64(b)) & np.uint64(1), bits - 1 - b, n)
    return n if n.ndim else int(n)


def _ffs(m: Any, site: int, x: Any) -> Any:
    x = np.asarray(x)
    bits = x.dtype.itemsize * 8
    u = x.astype(np.uint64)
    n = np.zeros(u.shape, np.int32)
    for b in reversed(range(bits)):
        n = np.where((u >> np.uint64(b)) & np.uint64(1), b + 1, n)
    return n if n.ndim else int(n)
