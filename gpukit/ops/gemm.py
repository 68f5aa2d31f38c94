"""General matrix multiply, C = alpha * op(A) @ op(B) + beta * C, as teaching kernels.

Two kernels on one thread-per-output-element layout: "naive" reads A and B straight from global
memory; "tiled" stages 16x16 tiles of them in shared memory so each value loaded is used 16 times.
Transposes are index arithmetic inside the kernels (no host copies). Both kernels work on a
leading batch axis (grid z = batch), so `gemm` is `batched_gemm` with one batch. On the CUDA
backend with CuPy, variant "library" calls cuBLAS for comparison. This is not a fast GEMM: no
register blocking, vector loads or tensor cores.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import cuda

from ..backends.base import Backend
from ._common import (
    Operand,
    OpInputError,
    blocks,
    check_flag,
    check_nonempty,
    check_rank,
    check_scalar,
    check_variant,
    common_dtype,
    launch,
    operand,
    resolve_backend,
    shares_memory,
    staging,
    view,
)

TILE = 16  # tile edge: a 16x16 block of threads computes a 16x16 tile of C
VARIANTS = ("naive", "tiled", "library")


@cuda.jit(device=True)
def element(x, batch, row, col, transposed):
    """op(X)[batch, row, col]: a transposed operand is read with its indices swapped."""
    if transposed:
        return x[batch, col, row]
    return x[batch, row, col]


@functools.cache
def naive_kernel(dtype: type) -> Any:
    """The naive kernel for `dtype` (np.float32 or np.float64): one thread per element of C."""

    def gemm_naive(a, b, c, m, n, k, alpha, beta, trans_a, trans_b):
        col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        batch = cuda.blockIdx.z
        if row < m and col < n:  # the grid overhangs C when m or n is not a multiple of 16
            acc = dtype(0)
            for p in range(k):  # every product reads A and B from global memory
                acc += element(a, batch, row, p, trans_a) * element(b, batch, p, col, trans_b)
            result = alpha * acc
            if beta != 0:  # BLAS: with beta == 0, C is output only and never read
                result += beta * c[batch, row, col]
            c[batch, row, col] = result

    return gemm_naive


@functools.cache
def tiled_kernel(dtype: type) -> Any:
    """The shared-memory tiled kernel for `dtype`: a TILE x TILE block per tile of C."""

    def gemm_tiled(a, b, c, m, n, k, alpha, beta, trans_a, trans_b):
        a_tile = cuda.shared.array((TILE, TILE), dtype)
        b_tile = cuda.shared.array((TILE, TILE), dtype)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        col = cuda.blockIdx.x * TILE + tx
        row = cuda.blockIdx.y * TILE + ty
        batch = cuda.blockIdx.z
        acc = dtype(0)
        for t in range((k + TILE - 1) // TILE):
            # Each thread copies one element of the A tile and one of the B tile. Zeros pad the
            # tiles past the edges of A and B, so the inner loop needs no bounds checks. Every
            # thread takes part (even those outside C): they all must reach the barriers.
            p = t * TILE + tx
            if row < m and p < k:
                a_tile[ty, tx] = element(a, batch, row, p, trans_a)
            else:
                a_tile[ty, tx] = 0
            p = t * TILE + ty
            if p < k and col < n:
                b_tile[ty, tx] = element(b, batch, p, col, trans_b)
            else:
                b_tile[ty, tx] = 0
            cuda.syncthreads()  # the tiles are complete before anyone reads them
            for q in range(TILE):  # 16 multiply-adds from shared memory per global load
                acc += a_tile[ty, q] * b_tile[q, tx]
            cuda.syncthreads()  # everyone is done reading before the next tiles overwrite them
        if row < m and col < n:
            result = alpha * acc
            if beta != 0:
                result += beta * c[batch, row, col]
            c[batch, row, col] = result

    return gemm_tiled


def gemm(a: Any, b: Any, c: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
         trans_a: bool = False, trans_b: bool = False, variant: str = "tiled",
         backend: Any = None) -> Any:
    """C = alpha * op(A) @ op(B) + beta * C on the device (BLAS semantics).

    a: (m, k), or (k, m) with trans_a; b: (k, n), or (n, k) with trans_b; c: (m, n), updated in
    place and returned when given (read only if beta != 0), else allocated. variant: "tiled"
    (shared memory, the default), "naive", or "library" (cuBLAS via CuPy, CUDA backend only).
    Operands are device arrays of `backend` (default: the current backend); numpy arrays are
    copied to the device with an ImplicitTransferWarning, so a host `c` is read, not updated.
    Returns a device array of shape (m, n).
    """
    return _gemm("gemm", 2, a, b, c, alpha, beta, trans_a, trans_b, variant, backend)


def batched_gemm(a: Any, b: Any, c: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
                 trans_a: bool = False, trans_b: bool = False, variant: str = "tiled",
                 backend: Any = None) -> Any:
    """`gemm` for each index of a leading batch axis: a (batch, m, k), b (batch, k, n),
    c (batch, m, n); transposes apply to the last two axes. One launch with grid z = batch."""
    return _gemm("batched_gemm", 3, a, b, c, alpha, beta, trans_a, trans_b, variant, backend)


def _gemm(op: str, ndim: int, a: Any, b: Any, c: Any, alpha: float, beta: float,
          trans_a: bool, trans_b: bool, variant: str, backend: Any) -> Any:
    backend = resolve_backend(backend, op)
    check_variant(op, variant, VARIANTS)
    alpha, beta = check_scalar(op, "alpha", alpha), check_scalar(op, "beta", beta)
    trans_a, trans_b = check_flag(op, "trans_a", trans_a), check_flag(op, "trans_b", trans_b)
    axes = "(rows, cols)" if ndim == 2 else "(batch, rows, cols)"
    ops: list[Operand] = [operand(backend, op, "a", a), operand(backend, op, "b", b)]
    if c is not None:
        ops.append(operand(backend, op, "c", c))
    for x in ops:
        check_rank(op, x, ndim, axes)
    check_nonempty(op, *ops)
    dtype = common_dtype(op, *ops)
    shape_a, shape_b = ops[0].shape, ops[1].shape
    m, k = shape_a[-1:-3:-1] if trans_a else shape_a[-2:]
    k_b, n = shape_b[-1:-3:-1] if trans_b else shape_b[-2:]
    if k != k_b:
        raise OpInputError(
            f"{op}: inner dimensions differ: op(a) is {m}x{k} (a {shape_a}"
            f"{', transposed' if trans_a else ''}) but op(b) is {k_b}x{n} (b {shape_b}"
            f"{', transposed' if trans_b else ''}); op(a) needs as many columns as op(b) rows")
    batch = shape_a[0] if ndim == 3 else 1
    if ndim == 3 and shape_b[0] != batch:
        raise OpInputError(f"{op}: batch sizes differ: a has {batch}, b has {shape_b[0]}")
    out_shape = (batch, m, n)[3 - ndim:]
    if c is not None and ops[2].shape != out_shape:
        raise OpInputError(f"{op}: c has shape {ops[2].shape}; op(a) @ op(b) has shape "
                           f"{out_shape}")
    library = variant == "library"
    if library:
        _check_library(op, backend)
    if c is None and beta != 0:
        raise OpInputError(f"{op}: beta is {beta} but no c was given; pass c, or beta=0")
    if c is not None and not ops[2].host:  # a host c is copied, so it overlaps nothing
        for x in ops[:2]:
            if not x.host and shares_memory(c, x.value):
                raise OpInputError(
                    f"{op}: c shares memory with {x.name}; the kernel would overwrite {x.name} "
                    "while other threads still read it, giving wrong numbers: pass a separate c")
    with staging(backend, op) as stage:
        a_dev, b_dev, *rest = stage.inputs(ops, results=("c",))
        c_dev = rest[0] if rest else stage.allocate(out_shape, dtype, result=True)
        if library:
            _library_gemm(a_dev, b_dev, c_dev, alpha, beta, trans_a, trans_b)
            return c_dev
        batched = [x if ndim == 3 else view(x, (1, *x.shape)) for x in (a_dev, b_dev, c_dev)]
        kernel = (tiled_kernel if variant == "tiled" else naive_kernel)(dtype.type)
        grid = (blocks(n, TILE), blocks(m, TILE), batch)
        launch(backend, kernel, grid, (TILE, TILE), *batched, m, n, k, dtype.type(alpha),
               dtype.type(beta), trans_a, trans_b, op=op, flops=2 * batch * m * n * k)
        return c_dev


def _check_library(op: str, backend: Backend) -> None:
    if backend.name != "cuda":
        raise OpInputError(
            f"{op}: variant 'library' calls cuBLAS through CuPy and exists on the CUDA backend "
            f"only; on {backend.name} backend use 'naive' or 'tiled'")
    if not backend.supports_feature("cublas"):
        raise OpInputError(
            f"{op}: variant 'library' needs CuPy on a real GPU, with cuBLAS, which is not usable "
            "here; install gpukit[cuda] (CuPy and the cuBLAS wheel) or use 'naive' or 'tiled'")


def _library_gemm(a: Any, b: Any, c: Any, alpha: float, beta: float, trans_a: bool,
                  trans_b: bool) -> None:
    """cuBLAS through CuPy's matmul (strided-batched for 3-D operands), for comparison."""
    import cupy

    a, b, c = (cupy.asarray(x) for x in (a, b, c))  # views of gpukit's arrays, no copies
    op_a = a.swapaxes(-1, -2) if trans_a else a
    op_b = b.swapaxes(-1, -2) if trans_b else b
    product = cupy.matmul(op_a, op_b)
    if beta != 0:
        c[...] = alpha * product + beta * c
    else:
        c[...] = alpha * product


def reference(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, alpha: float = 1.0,
              beta: float = 0.0, trans_a: bool = False, trans_b: bool = False) -> np.ndarray:
    """The numpy result gemm and batched_gemm compute, for checking."""
    op_a = np.swapaxes(a, -1, -2) if trans_a else a
    op_b = np.swapaxes(b, -1, -2) if trans_b else b
    result = alpha * (op_a @ op_b)
    if beta != 0:
        result = result + beta * c
    return result.astype(a.dtype)
