"""The `numba.cuda` namespace as kernels see it inside the simulator.

Kernels keep writing `cuda.threadIdx.x`, `cuda.shared.array`, `cuda.syncthreads()`,
`cuda.atomic.add` and `cuda.shfl_down_sync`; their `cuda` name is bound to `SIM_CUDA` here, whose
members work on lane vectors of the running group. Barriers and warp-level calls check that the
threads that must meet there do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import BarrierError, LaunchConfigError, UnsupportedKernelError
from .arrays import LocalArray, SharedArray, SimArray, _first, constant_view
from .atomics import ATOMIC_OPS
from .calls import Intrinsic
from .context import Group, current
from .races import RaceShadow
from .runtime import _vec
from .warps import (
    WARP,
    _activemask,
    _ballot_sync,
    _brev,
    _clz,
    _eq_sync,
    _ffs,
    _lanemask_lt,
    _popc,
    _shfl_down_sync,
    _shfl_sync,
    _shfl_up_sync,
    _shfl_xor_sync,
    _syncwarp,
    _vote,
)

STATIC_SHARED_LIMIT = 48 * 1024


def _dtype(dtype: Any) -> np.dtype:
    module = type(dtype).__module__ or ""
    if module.startswith("numba"):
        from numba.np.numpy_support import as_dtype
        return as_dtype(dtype)
    return np.dtype(dtype)


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= n
    return tuple(strides)


def _poison(buf: np.ndarray) -> None:
    """Fill never-written memory with values that make misuse visible when checks are off."""
    kind = buf.dtype.kind
    if kind in "fc":
        buf.fill(np.nan)
    elif kind in "iu":
        buf.fill(np.iinfo(buf.dtype).max)
    elif kind == "b":
        buf.fill(True)


def _label(g: Group, site: int, fallback: str) -> str:
    s = g.launch.site(site)
    return getattr(s, "label", None) or fallback


# -- thread geometry -------------------------------------------------------------------------
def _grid(m: Any, site: int, ndim: int) -> Any:
    g = current()
    t, b, d = g.threadIdx, g.blockIdx, g.blockDim
    coords = (t.x + b.x * d.x, t.y + b.y * d.y, t.z + b.z * d.z)
    return coords[0] if ndim == 1 else coords[:ndim]


def _gridsize(m: Any, site: int, ndim: int) -> Any:
    g = current()
    d, n = g.blockDim, g.gridDim
    sizes = (d.x * n.x, d.y * n.y, d.z * n.z)
    return sizes[0] if ndim == 1 else sizes[:ndim]


# -- memory spaces ---------------------------------------------------------------------------
def _shared_array(m: Any, site: int, shape: Any, dtype: Any) -> SharedArray:
    g = current()
    arr = g.shared.get(site)
    if arr is not None:
        return arr
    dt, shp = _dtype(dtype), _shape(shape)
    if shp in ((0,), ()):
        arr = _dynamic_shared(g, site, dt)
    else:
        size = int(np.prod(shp, dtype=np.int64))
        g.static_shared_bytes += size * dt.itemsize
        g.launch.stats.static_shared_bytes = g.static_shared_bytes
        _check_shared_limits(g, site)
        buf = np.empty(g.nb * size, dt)
        _poison(buf)
        arr = _new_shared(g, site, buf, shp, g.lane_block * size)
    g.shared[site] = arr
    return arr


def _new_shared(g: Group, site: int, buf: np.ndarray, shape: tuple[int, ...],
                lane_base: np.ndarray) -> SharedArray:
    checks = g.launch.checks
    return SharedArray(buf, shape, _c_strides(shape), 0, _label(g, site, "shared"),
                       np.zeros(len(buf), bool) if checks["uninitialized"] else None,
                       RaceShadow(len(buf), g.launch.tid_dtype) if checks["races"] else None,
                       lane_base=lane_base)


def _dynamic_shared(g: Group, site: int, dt: np.dtype) -> SharedArray:
    """A view of the block's dynamic shared memory: every `shared.array(0, dtype)` of a kernel
    starts at the same address, as on a GPU, whatever its dtype."""
    views = g.shared.setdefault("dynamic", {})
    if dt.str in views:
        return views[dt.str]
    nbytes = g.launch.dynamic_shared_bytes
    stride = -(-nbytes // 16) * 16  # bytes per block, padded so every dtype view lines up
    raw = g.shared.get("dynamic_bytes")
    if raw is None:
        raw = g.shared["dynamic_bytes"] = np.empty(g.nb * stride, np.uint8)
        raw.fill(0xFF)  # poison: NaN for floats, -1 for ints
    buf = raw.view(dt)
    arr = _new_shared(g, site, buf, (nbytes // dt.itemsize,),
                      g.lane_block * (stride // dt.itemsize))
    views[dt.str] = arr
    if len(views) > 1:  # bytes written through one dtype are read through another: the
        for view in views.values():  # per-element written-masks cannot follow, so stop checking
            view.init = None
    return arr


def _check_shared_limits(g: Group, site: int) -> None:
    launch = g.launch
    if not launch.checks["launch_limits"]:
        return
    static, dynamic = g.static_shared_bytes, launch.dynamic_shared_bytes
    cc = launch.profile.cc
    where = f"line {launch.site(site).lineno}"
    if static > STATIC_SHARED_LIMIT:
        raise LaunchConfigError(
            f"kernel '{launch.name}' declares {static:,} bytes of static shared memory ({where}); "
            f"static shared memory is limited to {STATIC_SHARED_LIMIT:,} bytes (48 KiB) per block "
            "on every GPU; only dynamic shared memory (cuda.shared.array(0, ...) sized at "
            "launch) can go above it")
    if static + dynamic > cc.shared_mem_per_block_optin:
        raise LaunchConfigError(
            f"kernel '{launch.name}' needs {static:,} bytes of static plus {dynamic:,} bytes of "
            f"dynamic shared memory per block, over the {launch.profile.name}'s limit of "
            f"{cc.shared_mem_per_block_optin:,} bytes (CC {cc.name}); use smaller tiles")


def _local_array(m: Any, site: int, shape: Any, dtype: Any) -> LocalArray:
    g = current()
    key = ("local", site)
    arr = g.shared.get(key)
    if arr is not None:
        return arr
    dt, shp = _dtype(dtype), _shape(shape)
    size = int(np.prod(shp, dtype=np.int64))
    buf = np.empty(g.size * size, dt)
    _poison(buf)
    arr = LocalArray(buf, shp, _c_strides(shp), 0, _label(g, site, "local"),
                     np.zeros(len(buf), bool) if g.launch.checks["uninitialized"] else None,
                     None, lane_base=np.arange(g.size, dtype=np.int64) * size)
    g.shared[key] = arr
    return arr


def _const_array_like(m: Any, site: int, ary: Any) -> SimArray:
    if not isinstance(ary, np.ndarray):
        raise UnsupportedKernelError(
            f"cuda.const.array_like needs a host numpy array (a global of the kernel's module), "
            f"not {type(ary).__name__}")
    g = current()
    return constant_view(g, ary, _label(g, site, "const"))


# -- barriers --------------------------------------------------------------------------------
def _barrier(m: Any, site: int, what: str) -> tuple[Group, np.ndarray | None]:
    """Check that every live thread of each block meets here; advance their barrier phase.

    Returns the group and the bool vector of lanes at the barrier (None: all lanes).
    """
    g = current()
    if m is True and g.exited is False:
        g.launch.stats.barriers += g.nb
        g.advance_phase()
        return g, None
    at = np.ones(g.size, bool) if m is True else np.asarray(m, bool)
    n_at = np.bincount(g.lane_block[at], minlength=g.nb)
    if g.launch.checks["barriers"]:
        live = g.live()
        live = np.ones(g.size, bool) if live is True else live
        n_live = np.bincount(g.lane_block[live], minlength=g.nb)
        bad = (n_at > 0) & (n_at < n_live)
        if bad.any():
            block = int(np.argmax(bad))
            missing = live & ~at & (g.lane_block == block)
            lane_missing = int(np.argmax(missing))
            lane_at = int(np.argmax(at & (g.lane_block == block)))
            raise g.error(
                BarrierError,
                f"divergent barrier: {int(n_at[block])} of the {int(n_live[block])} live threads "
                f"of block {g.block_of(lane_at)} reached {what} at line "
                f"{g.launch.site(site).lineno}, but thread {g.thread_of(lane_missing)} did not "
                "(it took another branch or left a loop earlier). Every live thread of a block "
                "must reach the same barrier the same number of times, or the block hangs on a "
                "GPU; move the barrier out of the condition", lane_at, site)
    g.launch.stats.barriers += int(np.count_nonzero(n_at))
    g.advance_phase(n_at > 0)
    return g, at


def _syncthreads(m: Any, site: int) -> None:
    _barrier(m, site, "cuda.syncthreads()")


def _block_vote(m: Any, site: int, predicate: Any, name: str) -> Any:
    if isinstance(predicate, (bool, np.bool_)) or getattr(predicate, "dtype", None) == np.bool_:
        g = current()  # numba-cuda types these as (int32) -> int32: a bool does not compile
        raise g.error(UnsupportedKernelError, f"cuda.{name} takes an integer predicate, not a "
                      f"bool (numba-cuda would not compile it); write cuda.{name}(1 if ... else "
                      "0)", _first(m), site)
    g, at = _barrier(m, site, f"cuda.{name}()")
    pred = np.broadcast_to(np.asarray(predicate).astype(bool), (g.size,))
    sel = pred if at is None else pred & at
    counts = np.bincount(g.lane_block[sel], minlength=g.nb)
    if name == "syncthreads_count":
        return counts[g.lane_block].astype(np.int32)
    totals = np.bincount(g.lane_block[at], minlength=g.nb) if at is not None \
        else np.full(g.nb, g.launch.tpb)
    if name == "syncthreads_and":
        return (counts == totals)[g.lane_block].astype(np.int32)
    return (counts > 0)[g.lane_block].astype(np.int32)


def _fence(m: Any, site: int) -> None:
    """Memory fences order a thread's own accesses; lock-step execution already does."""


# -- atomics and bit tricks ------------------------------------------------------------------
def _atomic(op: str) -> Intrinsic:
    def run(m: Any, site: int, ary: Any, idx: Any, *vals: Any) -> Any:
        if m is False:
            return 0
        if not isinstance(ary, SimArray):
            g = current()
            raise g.error(UnsupportedKernelError, f"cuda.atomic.{op} needs a device or shared "
                          f"array, not {type(ary).__name__}", _first(m), site)
        return ary.atomic(current(), op, idx, m, site, *vals)
    return Intrinsic(run, f"atomic.{op}")


class _Namespace:
    def __init__(self, name: str, **members: Any):
        self._name = name
        self.__dict__.update(members)

    def __getattr__(self, attr: str) -> Any:
        raise UnsupportedKernelError(f"{self._name}.{attr} is not simulated by gpukit")


class SimCuda:
    """Stands in for the `numba.cuda` module inside simulated kernels."""

    warpsize = WARP

    def __init__(self) -> None:
        f = Intrinsic
        self.grid = f(_grid, "grid")
        self.gridsize = f(_gridsize, "gridsize")
        self.shared = _Namespace("cuda.shared", array=f(_shared_array, "shared.array"))
        self.local = _Namespace("cuda.local", array=f(_local_array, "local.array"))
        self.const = _Namespace("cuda.const", array_like=f(_const_array_like, "const.array_like"))
        self.syncthreads = f(_syncthreads, "syncthreads")
        for name in ("syncthreads_count", "syncthreads_and", "syncthreads_or"):
            setattr(self, name, f(lambda m, s, p, _n=name: _block_vote(m, s, p, _n), name))
        self.syncwarp = f(_syncwarp, "syncwarp")
        for name in ("threadfence", "threadfence_block", "threadfence_system"):
            setattr(self, name, f(_fence, name))
        atomics = {op: _atomic(op) for op in ATOMIC_OPS}
        atomics["compare_and_swap"] = Intrinsic(
            lambda m, s, ary, old, val: atomics["cas"].fn(m, s, ary, 0, old, val),
            "atomic.compare_and_swap")
        self.atomic = _Namespace("cuda.atomic", **atomics)
        self.shfl_sync = f(_shfl_sync, "shfl_sync")
        self.shfl_up_sync = f(_shfl_up_sync, "shfl_up_sync")
        self.shfl_down_sync = f(_shfl_down_sync, "shfl_down_sync")
        self.shfl_xor_sync = f(_shfl_xor_sync, "shfl_xor_sync")
        self.all_sync = f(lambda m, s, mask, p: _vote(m, s, mask, p, "all_sync"), "all_sync")
        self.any_sync = f(lambda m, s, mask, p: _vote(m, s, mask, p, "any_sync"), "any_sync")
        self.eq_sync = f(_eq_sync, "eq_sync")
        self.ballot_sync = f(_ballot_sync, "ballot_sync")
        self.activemask = f(_activemask, "activemask")
        self.lanemask_lt = f(_lanemask_lt, "lanemask_lt")
        self.popc = f(_popc, "popc")
        self.brev = f(_brev, "brev")
        self.clz = f(_clz, "clz")
        self.ffs = f(_ffs, "ffs")
        self.fma = f(lambda m, s, a, b, c: a * b + c, "fma")
        self.cbrt = f(lambda m, s, x: np.cbrt(x), "cbrt")
        self.selp = f(lambda m, s, c, a, b: np.where(c, a, b) if _vec(c) else (a if c else b),
                      "selp")

    threadIdx = property(lambda self: current().threadIdx)
    blockIdx = property(lambda self: current().blockIdx)
    blockDim = property(lambda self: current().blockDim)
    gridDim = property(lambda self: current().gridDim)
    laneid = property(lambda self: current().laneid)

    def __getattr__(self, attr: str) -> Any:
        raise UnsupportedKernelError(
            f"cuda.{attr} is not available inside kernels on gpukit's simulator; see the "
            "README's list of what the simulator models")


SIM_CUDA = SimCuda()
