"""The benchmark workloads: ordinary Numba CUDA kernels, seeded inputs and numpy references.

Each kernel is a plain function written against `numba.cuda`. gpukit's CPUBackend runs it as it
is; the Numba worker (`benchmarks.numba_sim`) wraps the same function in Numba's own `cuda.jit`
under `NUMBA_ENABLE_CUDASIM=1`, so both sides run this source. Nothing here times anything or
picks sizes (see `benchmarks.simulator`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numba import cuda, float32

TPB = 256  # threads per block of the 1-D kernels (and the reduction's shared array)
TILE = 16  # the tiled matmul's tile edge: 16 x 16 threads per block
BINS = 256  # histogram bins (the input is bytes)
LOOP_THREADS = 32  # the loop of small launches: one block of one warp, `vector_add` of 32 floats
THIRD = float32(1.0 / 3.0)
HALO_TILE = TPB + 2  # the stencil's shared tile: a block's elements and one neighbour each side


# -- the kernels (the same source runs on gpukit and on Numba's simulator) ------------------------
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] + b[i]


def matmul_naive(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_tiled(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    col, row = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    n_k = A.shape[1]
    acc = float32(0.0)
    for t in range((n_k + TILE - 1) // TILE):
        k0 = t * TILE
        if row < A.shape[0] and k0 + tx < n_k:
            sA[ty, tx] = A[row, k0 + tx]
        else:
            sA[ty, tx] = 0.0
        if col < B.shape[1] and k0 + ty < n_k:
            sB[ty, tx] = B[k0 + ty, col]
        else:
            sB[ty, tx] = 0.0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = acc


def reduce_sum(a, total):
    partial = cuda.shared.array(TPB, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < a.shape[0]:
        partial[tid] = a[i]
    else:
        partial[tid] = 0.0
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if tid < stride:
            partial[tid] += partial[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        cuda.atomic.add(total, 0, partial[0])


def histogram(data, hist):
    i = cuda.grid(1)
    if i < data.shape[0]:
        cuda.atomic.add(hist, data[i], 1)


def stencil_3pt(a, out):
    """out[i] = mean of a[i-1], a[i], a[i+1] through a shared tile with a halo; ends copied."""
    tile = cuda.shared.array(HALO_TILE, float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x + 1
    n = a.shape[0]
    if i < n:
        tile[t] = a[i]
    else:
        tile[t] = 0.0
    if cuda.threadIdx.x == 0:
        if i > 0 and i <= n:
            tile[0] = a[i - 1]
        else:
            tile[0] = 0.0
    if cuda.threadIdx.x == cuda.blockDim.x - 1:
        if i + 1 < n:
            tile[t + 1] = a[i + 1]
        else:
            tile[t + 1] = 0.0
    cuda.syncthreads()
    if i < n:
        if i == 0 or i == n - 1:
            out[i] = tile[t]
        else:
            out[i] = (tile[t - 1] + tile[t] + tile[t + 1]) * THIRD


def hypot_scale(x, y, scale, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = math.sqrt(x[i] * x[i] + y[i] * y[i]) * scale


# -- inputs, references and the registry ---------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One launch of a workload: host arguments in kernel order, geometry, expected outputs.

    fresh: indexes of outputs the kernel overwrites entirely (gpukit allocates them
    uninitialised, so a read before the write would be caught). Other arrays are copied in.
    outputs: indexes of the arrays to copy back and compare with `expected`.
    """

    args: tuple[Any, ...]
    grid: tuple[int, ...]
    block: tuple[int, ...]
    fresh: tuple[int, ...]
    outputs: tuple[int, ...]
    expected: tuple[np.ndarray, ...]
    rtol: float = 1e-5
    atol: float = 0.0

    def verify(self, results: Sequence[np.ndarray]) -> float:
        """The largest absolute error; AssertionError when a result differs from numpy."""
        worst = 0.0
        for index, got, want in zip(self.outputs, results, self.expected):
            np.testing.assert_allclose(got, want, rtol=self.rtol, atol=self.atol,
                                       err_msg=f"output argument {index}")
            if got.size:
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                worst = max(worst, float(diff.max()))
        return worst


@dataclass(frozen=True)
class Workload:
    """A kernel with its input builder (size, seed) -> Case and its numpy equivalent.

    numpy_op(*case.args) is what numpy itself would run for the same result (timed for the
    elementwise stretch goal). work(size) is proportional to the cost of Numba's simulator (its
    threads times the barriers or loop trips each runs), for scaling a smaller measurement.
    """

    name: str
    title: str
    kernel: Callable
    build: Callable[[int, int], Case]
    numpy_op: Callable[..., Any]
    square: bool = False  # size n means n x n matrices

    def label(self, size: int) -> str:
        return f"{size}x{size}" if self.square else f"{size:,}"

    def work(self, size: int) -> float:
        return float(size) ** 3 if self.square else float(size)


def _blocks(n: int, per_block: int) -> int:
    return max(1, math.ceil(n / per_block))


def _uniform(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.random(shape, dtype=np.float32)


def _nan_like(shape: Any) -> np.ndarray:
    """A fresh output filled with NaN: a missing write shows up in the comparison."""
    return np.full(shape, np.nan, dtype=np.float32)


def build_vector_add(n: int, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    a, b = _uniform(rng, n), _uniform(rng, n)
    return Case((a, b, _nan_like(n)), (_blocks(n, TPB),), (TPB,), fresh=(2,), outputs=(2,),
                expected=(a + b,))


def _build_matmul(n: int, seed: int) -> Case:
    rng = np.random.default_rng(seed)
    A, B = _uniform(rng, n, n), _uniform(rng, n, n)
    expected = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    side = _blocks(n, TILE)
    return Case((A, B, _nan_like((n, n))), (side, side), (TILE, TILE), fresh=(2,),
                outputs=(2,), expected=(expected,), rtol=1e-4, atol=1e-4)


def build_reduce_sum(n: int, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    a = _uniform(rng, n)
    expected = np.array([a.astype(np.float64).sum()], dtype=np.float32)
    # float32 block sums added atomically in any order: allow float32 rounding of the total
    return Case((a, np.zeros(1, np.float32)), (_blocks(n, TPB),), (TPB,), fresh=(),
                outputs=(1,), expected=(expected,), rtol=1e-4, atol=1e-3)


def build_histogram(n: int, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    data = rng.integers(0, BINS, n, dtype=np.uint8)
    expected = np.bincount(data, minlength=BINS).astype(np.int32)
    return Case((data, np.zeros(BINS, np.int32)), (_blocks(n, TPB),), (TPB,), fresh=(),
                outputs=(1,), expected=(expected,), rtol=0.0)


def build_hypot_scale(n: int, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    x, y = _uniform(rng, n) * 2 - 1, _uniform(rng, n) * 2 - 1
    scale = np.float32(2.5)
    return Case((x, y, scale, _nan_like(n)), (_blocks(n, TPB),), (TPB,), fresh=(3,),
                outputs=(3,), expected=(_hypot_numpy(x, y, scale, None),), rtol=1e-6)


def _stencil_numpy(a: np.ndarray, out: Any = None) -> np.ndarray:
    result = a.copy()
    if a.size > 2:
        result[1:-1] = (a[:-2] + a[1:-1] + a[2:]) * np.float32(1.0 / 3.0)
    return result


def build_stencil(n: int, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    a = _uniform(rng, n)
    return Case((a, _nan_like(n)), (_blocks(n, TPB),), (TPB,), fresh=(1,), outputs=(1,),
                expected=(_stencil_numpy(a),), rtol=1e-6)


def build_small_launch(seed: int = 0) -> Case:
    """One launch of the loop of small launches: `vector_add` of LOOP_THREADS floats, one block."""
    return replace(build_vector_add(LOOP_THREADS, seed), block=(LOOP_THREADS,))


def _hypot_numpy(x: np.ndarray, y: np.ndarray, scale: Any, out: Any) -> np.ndarray:
    return np.sqrt(x * x + y * y) * scale


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("vector_add", "vector add (float32)", vector_add, build_vector_add,
             lambda a, b, out: np.add(a, b)),
    Workload("matmul_naive", "naive matmul", matmul_naive, _build_matmul,
             lambda A, B, C: A @ B, square=True),
    Workload("matmul_tiled", "tiled 16x16 shared-memory matmul", matmul_tiled, _build_matmul,
             lambda A, B, C: A @ B, square=True),
    Workload("reduce_sum", "shared-memory tree reduction", reduce_sum, build_reduce_sum,
             lambda a, total: a.sum()),
    Workload("histogram", "histogram, 256 bins, atomics", histogram, build_histogram,
             lambda data, hist: np.bincount(data, minlength=BINS)),
    Workload("stencil", "3-point stencil, shared tile with halo", stencil_3pt, build_stencil,
             _stencil_numpy),
    Workload("hypot_scale", "elementwise sqrt(x*x+y*y)*s", hypot_scale, build_hypot_scale,
             _hypot_numpy),
)}
