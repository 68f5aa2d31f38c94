"""Reductions along one axis (SUM, MAX, MIN, MEAN, PROD) as a shared-memory tree plus a warp
shuffle, the classic two-level GPU reduction.

The array is seen as (outer, n, inner) with n the reduced axis. A block reduces (a part of) one
row of n values: each thread folds a strided slice into one value, the block halves the values
in shared memory until one warp's worth is left, and that warp finishes with `shfl_down_sync`,
register to register, without barriers. Long rows are split over several blocks whose partial
results a second launch of the same kernel reduces. On a backend without warp shuffles (Numba's
CUDA simulator) the tree goes on in shared memory down to one value. No atomics, no multi-axis
reductions.
"""

from __future__ import annotations

import enum
import functools
import math
from typing import Any

import numpy as np
from numba import cuda

from ..devices import WARP_SIZE
from ..utils import ceil_div
from ._common import (
    OpInputError,
    check_nonempty,
    launch,
    operand,
    parse_enum,
    resolve_backend,
    staging,
    view,
)


class ReduceOp(enum.IntEnum):
    """What `reduce` computes; the value is what the kernel receives."""

    SUM = 0
    MAX = 1
    MIN = 2
    MEAN = 3
    PROD = 4


WARP = WARP_SIZE
FULL_MASK = 0xFFFFFFFF
MAX_THREADS = 256  # threads per block (a power of two from 32 to 256)
ITEMS_PER_THREAD = 8  # values a thread folds before the tree, when a row spans several blocks
MAX_PARTS = 64  # blocks per row in the first launch


@cuda.jit(device=True)
def identity(op):
    """The value that changes nothing: x + 0, max(x, -inf), min(x, inf), x * 1."""
    if op == 1:  # MAX
        return -math.inf
    if op == 2:  # MIN
        return math.inf
    if op == 4:  # PROD
        return 1.0
    return 0.0  # SUM and MEAN (a mean is a sum, scaled at the end)


@cuda.jit(device=True)
def combine(op, x, y):
    """x (op) y. MAX and MIN return NaN if either side is NaN, as numpy does."""
    if op == 1:
        return x if (x > y or math.isnan(x)) else y
    if op == 2:
        return x if (x < y or math.isnan(x)) else y
    if op == 4:
        return x * y
    return x + y


@functools.cache
def reduce_kernel(dtype: type, warp_shuffle: bool = True) -> Any:
    """The reduction kernel for `dtype`. Grid (rows, parts); block (threads,).

    Without `warp_shuffle` (for Numba's CUDA simulator, which has no shuffles) the shared-memory
    tree goes on down to a single value instead of handing the last 32 to a warp.
    """
    lowest_stride = WARP if warp_shuffle else 1

    def reduce_rows(x, partial, op, n, scale):
        values = cuda.shared.array(MAX_THREADS, dtype)
        t = cuda.threadIdx.x
        threads = cuda.blockDim.x
        row = cuda.blockIdx.x
        part = cuda.blockIdx.y
        parts = cuda.gridDim.y
        inner = x.shape[2]
        outer_index = row // inner
        inner_index = row % inner
        # 1. Fold: thread t of part p takes items p*threads + t, then every parts*threads-th, so
        #    neighbouring threads read neighbouring items (coalesced when inner == 1).
        acc = dtype(identity(op))
        for i in range(part * threads + t, n, parts * threads):
            acc = combine(op, acc, x[outer_index, i, inner_index])
        values[t] = acc
        cuda.syncthreads()
        # 2. Tree in shared memory: each round the lower half combines the upper half into
        #    itself; the barrier makes a round's writes visible before the next round reads.
        stride = threads // 2
        while stride >= lowest_stride:
            if t < stride:
                values[t] = combine(op, values[t], values[t + stride])
            cuda.syncthreads()
            stride //= 2
        # 3. The last 32 values: warp 0 passes them register to register. After the shuffle
        #    with offset d, lane i holds the combination of lanes i .. i + 2d - 1, so lane 0 ends
        #    with all 32. A warp runs in lock-step: no barrier needed.
        if t < WARP:
            v = values[t]
            if warp_shuffle:
                offset = WARP // 2
                while offset > 0:
                    v = combine(op, v, cuda.shfl_down_sync(FULL_MASK, v, offset))
                    offset //= 2
            if t == 0:
                if op == 3:  # MEAN: the sum divided by the row length (scale = 1 / n)
                    v = v * scale
                partial[outer_index, part, inner_index] = v

    return reduce_rows


def _threads_for(n: int) -> int:
    """The smallest power of two >= n, clamped to [32, MAX_THREADS]: no idle warps on short rows."""
    threads = WARP
    while threads < n and threads < MAX_THREADS:
        threads *= 2
    return threads


def reduce(op: ReduceOp | str, x: Any, axis: int | None = None, *, backend: Any = None) -> Any:
    """Reduce `x` along `axis` (None: all axes) with SUM, MAX, MIN, MEAN or PROD.

    The result has x's shape without that axis (a 0-d device array for a full reduction), x's
    dtype, and lives on `backend` (default: the current backend). `op` may be a ReduceOp or its
    name ("sum"). One launch per pass: a second pass when a row is split over several blocks.
    """
    backend = resolve_backend(backend, "reduce")
    rop = parse_enum("reduce", ReduceOp, op)
    xo = operand(backend, "reduce", "x", x)
    if not xo.shape:
        raise OpInputError("reduce: x is 0-d (a single value); reduce needs at least 1 axis")
    check_nonempty("reduce", xo)
    ndim = len(xo.shape)
    if axis is None:
        outer, n, inner, out_shape = 1, math.prod(xo.shape), 1, ()
    else:
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise OpInputError(f"reduce: axis must be an int or None, got {axis!r}")
        if not -ndim <= axis < ndim:
            raise OpInputError(f"reduce: axis {axis} is out of range for x of shape {xo.shape} "
                               f"(valid: {-ndim} to {ndim - 1}, or None for all)")
        axis = int(axis) % ndim
        outer, n = math.prod(xo.shape[:axis]), xo.shape[axis]
        inner = math.prod(xo.shape[axis + 1:])
        out_shape = xo.shape[:axis] + xo.shape[axis + 1:]
    dtype = xo.dtype
    rows = outer * inner
    threads = _threads_for(n)
    # Split a row over several blocks only when there are few rows to keep the GPU busy.
    parts = 1 if rows >= 32 else max(1, min(MAX_PARTS, ceil_div(n, threads * ITEMS_PER_THREAD)))
    kernel = reduce_kernel(dtype.type, backend.supports_feature("warp_shuffle"))
    scale = dtype.type(1.0 / n)
    with staging(backend, "reduce") as stage:
        (x_dev,) = stage.inputs([xo])
        result = stage.allocate(out_shape, dtype, result=True)
        final = view(result, (outer, 1, inner))
        source = view(x_dev, (outer, n, inner))
        if parts > 1:
            partial = stage.allocate((outer, parts, inner), dtype, result=False)
            launch(backend, kernel, (rows, parts), threads, source, partial, int(rop), n,
                   dtype.type(1), op="reduce", flops=rows * n)
            source, n = partial, parts
            threads = _threads_for(parts)
        launch(backend, kernel, (rows, 1), threads, source, final, int(rop), n, scale,
               op="reduce", flops=rows * n + (rows if rop is ReduceOp.MEAN else 0))
        return result


_NUMPY = {ReduceOp.SUM: np.sum, ReduceOp.MAX: np.max, ReduceOp.MIN: np.min,
          ReduceOp.MEAN: np.mean, ReduceOp.PROD: np.prod}


def reference(op: ReduceOp | str, x: np.ndarray, axis: int | None = None) -> np.ndarray:
    """The numpy result `reduce` computes, for checking."""
    rop = parse_enum("reduce", ReduceOp, op)
    return np.asarray(_NUMPY[rop](x, axis=axis), dtype=x.dtype)
