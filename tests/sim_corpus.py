"""A corpus of correct Numba CUDA kernels, each with seeded inputs and a numpy reference.

Every kernel is an ordinary numba-cuda kernel (`from numba import cuda`, plain function; device
functions with `@cuda.jit(device=True)`). `CASES` maps a name to a `Case` whose `build(rng)`
returns a `Spec`: the host arrays, the launches (kernel, grid, block, arguments by array name,
dynamic shared bytes), and the expected contents of the output arrays. Sizes are tiny on purpose:
the same corpus runs under Numba's CUDA simulator (about 150 us per thread), see
`tests/test_sim_corpus.py`. Run as a script (with NUMBA_ENABLE_CUDASIM=1) it launches the corpus
with Numba's own `cuda.jit(f)[grid, block, 0, dyn](...)` on numpy arrays and saves the results.
It checks results, not speed.
"""

from __future__ import annotations

import math
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import cuda, float32, int32, int64

f32, f64, i32, i64, u8 = np.float32, np.float64, np.int32, np.int64, np.uint8
NO_WARP_INTRINSICS = "Numba's CUDA simulator has no warp intrinsics (shfl_*_sync, ballot_sync)"


@dataclass
class Run:
    """One launch: array arguments are given by their name in `Spec.arrays`."""

    kernel: Callable
    grid: Any
    block: Any
    args: tuple
    dynamic_shared_bytes: int = 0


@dataclass
class Spec:
    """Inputs, launches and expected outputs of one corpus case."""

    arrays: dict[str, np.ndarray]
    runs: list[Run]
    expected: dict[str, np.ndarray]
    uninitialized: tuple[str, ...] = ()  # allocate()d on the device: contents undefined
    rtol: float = 0.0  # 0: results must be exact
    canonical: Callable[[np.ndarray], np.ndarray] | None = None  # for order-free outputs


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[np.random.Generator], Spec]
    cudasim_skip: str | None = None  # why Numba's CUDA simulator cannot run this kernel
    tags: tuple[str, ...] = field(default=())


CASES: dict[str, Case] = {}


def case(*tags: str, cudasim_skip: str | None = None) -> Callable:
    def register(build: Callable[[np.random.Generator], Spec]) -> Callable:
        name = build.__name__.removeprefix("spec_")
        CASES[name] = Case(name, build, cudasim_skip, tags)
        return build
    return register


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def blocks(n: int, per_block: int) -> int:
    return (n + per_block - 1) // per_block


# -- elementwise ----------------------------------------------------------------------------------
def scale_shift(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] * 2.5 + 1.0


@case("map", "guard", "multi-block")
def spec_map(rng):
    a = rng.standard_normal(200).astype(f32)
    return Spec({"a": a, "out": np.zeros(200, f32)}, [Run(scale_shift, 4, 64, ("a", "out"))],
                {"out": (a * 2.5 + 1.0).astype(f32)}, rtol=1e-6)


def zip_add(a, b, out):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        out[i] = a[i] + b[i]


@case("zip", "multi-block", "allocate")
def spec_zip(rng):
    a, b = rng.standard_normal(300).astype(f32), rng.standard_normal(300).astype(f32)
    return Spec({"a": a, "b": b, "out": np.zeros(300, f32)},
                [Run(zip_add, 10, 32, ("a", "b", "out"))], {"out": a + b}, uninitialized=("out",))


def map_2d(a, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col] * 3 - row + col


@case("2d map", "and guard")
def spec_map_2d(rng):
    a = rng.integers(-100, 100, (20, 13)).astype(i32)
    r, c = np.indices(a.shape)
    return Spec({"a": a, "out": np.zeros_like(a)}, [Run(map_2d, (2, 3), (8, 8), ("a", "out"))],
                {"out": a * 3 - r + c})


def broadcast_add(a, row, column, out):
    x, y = cuda.grid(2)
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = a[y, x] + row[x] * column[y]


@case("broadcast")
def spec_broadcast(rng):
    a = rng.standard_normal((9, 17)).astype(f32)
    row, column = rng.standard_normal(17).astype(f32), rng.standard_normal(9).astype(f32)
    return Spec({"a": a, "row": row, "col": column, "out": np.zeros_like(a)},
                [Run(broadcast_add, (3, 2), (8, 8), ("a", "row", "col", "out"))],
                {"out": a + row[None, :] * column[:, None]}, rtol=1e-6)


def grid_stride_square(a, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, a.shape[0], stride):
        out[i] = a[i] * a[i]


@case("grid-stride loop")
def spec_grid_stride(rng):
    a = rng.integers(-1000, 1000, 1000).astype(i64)
    return Spec({"a": a, "out": np.zeros_like(a)},
                [Run(grid_stride_square, 2, 32, ("a", "out"))], {"out": a * a})


def map_3d(a, out):
    x, y, z = cuda.grid(3)
    if z < a.shape[0] and y < a.shape[1] and x < a.shape[2]:
        out[z, y, x] = a[z, y, x] + x + 10 * y + 100 * z


@case("3d grid")
def spec_map_3d(rng):
    a = rng.integers(0, 50, (5, 6, 7)).astype(i32)
    z, y, x = np.indices(a.shape)
    return Spec({"a": a, "out": np.zeros_like(a)},
                [Run(map_3d, (2, 2, 3), (4, 4, 2), ("a", "out"))],
                {"out": a + x + 10 * y + 100 * z})


# -- shared memory --------------------------------------------------------------------------------
def shared_reverse(a, out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * cuda.blockDim.x
    s[t] = a[base + t]
    cuda.syncthreads()
    out[base + t] = s[cuda.blockDim.x - 1 - t]


@case("shared-memory reverse")
def spec_shared_reverse(rng):
    a = rng.standard_normal(192).astype(f32)
    return Spec({"a": a, "out": np.zeros_like(a)}, [Run(shared_reverse, 3, 64, ("a", "out"))],
                {"out": a.reshape(3, 64)[:, ::-1].reshape(-1)})


def dynamic_reverse(a, out):
    s = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * cuda.blockDim.x
    s[t] = a[base + t]
    cuda.syncthreads()
    out[base + t] = s[cuda.blockDim.x - 1 - t]


@case("dynamic shared memory")
def spec_dynamic_shared(rng):
    a = rng.standard_normal(96).astype(f32)
    return Spec({"a": a, "out": np.zeros_like(a)},
                [Run(dynamic_reverse, 3, 32, ("a", "out"), dynamic_shared_bytes=32 * 4)],
                {"out": a.reshape(3, 32)[:, ::-1].reshape(-1)})


def max_pool_2x2(x, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        m = x[2 * row, 2 * col]
        m = max(m, x[2 * row, 2 * col + 1])
        m = max(m, x[2 * row + 1, 2 * col])
        out[row, col] = max(m, x[2 * row + 1, 2 * col + 1])


@case("pooling")
def spec_pooling(rng):
    x = rng.standard_normal((10, 14)).astype(f32)
    return Spec({"x": x, "out": np.zeros((5, 7), f32)},
                [Run(max_pool_2x2, (1, 1), (8, 8), ("x", "out"))],
                {"out": x.reshape(5, 2, 7, 2).max(axis=(1, 3))})


def dot_shared_atomic(a, b, out):
    s = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    acc = float32(0.0)
    for k in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        acc += a[k] * b[k]
    s[t] = acc
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


@case("dot product", "shared", "atomic add", "while loop")
def spec_dot(rng):
    a, b = rng.standard_normal(1000).astype(f32), rng.standard_normal(1000).astype(f32)
    return Spec({"a": a, "b": b, "out": np.zeros(1, f32)},
                [Run(dot_shared_atomic, 3, 128, ("a", "b", "out"))],
                {"out": np.array([np.dot(a.astype(f64), b)], f32)}, rtol=1e-4)


RADIUS = 2
CONV_BLOCK = 32
CONV_SHARED = CONV_BLOCK + 2 * RADIUS  # numba needs a constant, not an expression, as the shape


def conv1d_halo(x, w, out):
    s = cuda.shared.array(CONV_SHARED, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.shape[0]
    s[t + RADIUS] = x[i] if i < n else 0
    if t < RADIUS:
        left = i - RADIUS
        s[t] = x[left] if left >= 0 else 0
        right = i + CONV_BLOCK
        s[t + CONV_BLOCK + RADIUS] = x[right] if right < n else 0
    cuda.syncthreads()
    if i < n:
        acc = float32(0.0)
        for k in range(2 * RADIUS + 1):
            acc += w[k] * s[t + k]
        out[i] = acc


@case("1d convolution with halo", "ternary guarding an index")
def spec_conv1d(rng):
    x, w = rng.standard_normal(100).astype(f32), rng.standard_normal(5).astype(f32)
    padded = np.pad(x, RADIUS)
    ref = sum(w[k] * padded[k:k + 100] for k in range(5))
    return Spec({"x": x, "w": w, "out": np.zeros_like(x)},
                [Run(conv1d_halo, 4, CONV_BLOCK, ("x", "w", "out"))], {"out": ref}, rtol=1e-5)


def hillis_steele_scan(a, out):
    buf = cuda.shared.array((2, 64), int32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[0, t] = a[i]
    cuda.syncthreads()
    src = 0
    offset = 1
    while offset < cuda.blockDim.x:
        dst = 1 - src
        if t >= offset:
            buf[dst, t] = buf[src, t] + buf[src, t - offset]
        else:
            buf[dst, t] = buf[src, t]
        cuda.syncthreads()
        src = dst
        offset *= 2
    out[i] = buf[src, t]


@case("prefix scan (Hillis-Steele, double buffered)")
def spec_hillis_steele(rng):
    a = rng.integers(-50, 50, 128).astype(i32)
    return Spec({"a": a, "out": np.zeros_like(a)}, [Run(hillis_steele_scan, 2, 64, ("a", "out"))],
                {"out": np.cumsum(a.reshape(2, 64), axis=1).reshape(-1).astype(i32)})


def blelloch_scan(a, out):
    temp = cuda.shared.array(128, int64)
    t = cuda.threadIdx.x
    n = 2 * cuda.blockDim.x
    base = cuda.blockIdx.x * n
    temp[2 * t] = a[base + 2 * t]
    temp[2 * t + 1] = a[base + 2 * t + 1]
    offset = 1
    d = n >> 1
    while d > 0:
        cuda.syncthreads()
        if t < d:
            temp[offset * (2 * t + 2) - 1] += temp[offset * (2 * t + 1) - 1]
        offset *= 2
        d >>= 1
    if t == 0:
        temp[n - 1] = 0
    d = 1
    while d < n:
        offset >>= 1
        cuda.syncthreads()
        if t < d:
            ai = offset * (2 * t + 1) - 1
            bi = offset * (2 * t + 2) - 1
            held = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += held
        d *= 2
    cuda.syncthreads()
    out[base + 2 * t] = temp[2 * t]
    out[base + 2 * t + 1] = temp[2 * t + 1]


@case("prefix scan (Blelloch, exclusive)")
def spec_blelloch(rng):
    a = rng.integers(0, 1000, 256).astype(i64)
    rows = a.reshape(2, 128)
    return Spec({"a": a, "out": np.zeros_like(a)}, [Run(blelloch_scan, 2, 64, ("a", "out"))],
                {"out": (np.cumsum(rows, axis=1) - rows).reshape(-1)})


def column_sums(a, out):
    j = cuda.grid(1)
    if j < a.shape[1]:
        acc = 0.0
        for i in range(a.shape[0]):
            acc += a[i, j]
        out[j] = acc


@case("axis sum (axis 0)", "float64")
def spec_column_sums(rng):
    a = rng.standard_normal((30, 50))
    return Spec({"a": a, "out": np.zeros(50)}, [Run(column_sums, 2, 32, ("a", "out"))],
                {"out": a.sum(axis=0)}, rtol=1e-12)


def row_sums_shared(a, out):
    s = cuda.shared.array(64, float32)
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    acc = float32(0.0)
    for j in range(t, a.shape[1], cuda.blockDim.x):
        acc += a[row, j]
    s[t] = acc
    cuda.syncthreads()
    step = 32
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[row] = s[0]


@case("axis sum (axis 1, shared tree reduction)")
def spec_row_sums(rng):
    a = rng.standard_normal((5, 100)).astype(f32)
    return Spec({"a": a, "out": np.zeros(5, f32)}, [Run(row_sums_shared, 5, 64, ("a", "out"))],
                {"out": a.sum(axis=1)}, rtol=1e-5)


# -- matrices -------------------------------------------------------------------------------------
def matmul_naive(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


@case("naive matmul", "float64")
def spec_matmul_naive(rng):
    A, B = rng.standard_normal((11, 7)), rng.standard_normal((7, 13))
    return Spec({"A": A, "B": B, "C": np.zeros((11, 13))},
                [Run(matmul_naive, (2, 2), (8, 8), ("A", "B", "C"))], {"C": A @ B}, rtol=1e-12)


TILE = 8


def matmul_tiled(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for tile in range((A.shape[1] + TILE - 1) // TILE):
        k = tile * TILE + tx
        if row < A.shape[0] and k < A.shape[1]:
            sA[ty, tx] = A[row, k]
        else:
            sA[ty, tx] = 0
        k = tile * TILE + ty
        if k < B.shape[0] and col < B.shape[1]:
            sB[ty, tx] = B[k, col]
        else:
            sB[ty, tx] = 0
        cuda.syncthreads()
        for kk in range(TILE):
            acc += sA[ty, kk] * sB[kk, tx]
        cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = acc


@case("tiled matmul")
def spec_matmul_tiled(rng):
    A = rng.standard_normal((13, 21)).astype(f32)
    B = rng.standard_normal((21, 11)).astype(f32)
    return Spec({"A": A, "B": B, "C": np.zeros((13, 11), f32)},
                [Run(matmul_tiled, (2, 2), (TILE, TILE), ("A", "B", "C"))],
                {"C": (A.astype(f64) @ B).astype(f32)}, rtol=1e-5)


def transpose_padded(a, out):
    tile = cuda.shared.array((32, 33), float32)  # 33: no shared-memory bank conflicts
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * 32 + tx
    y = cuda.blockIdx.y * 32 + ty
    for j in range(0, 32, 8):
        if x < a.shape[1] and y + j < a.shape[0]:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * 32 + tx
    y = cuda.blockIdx.x * 32 + ty
    for j in range(0, 32, 8):
        if x < out.shape[1] and y + j < out.shape[0]:
            out[y + j, x] = tile[tx, ty + j]


@case("transpose with padding (32x33 tile)")
def spec_transpose(rng):
    a = rng.standard_normal((40, 50)).astype(f32)
    return Spec({"a": a, "out": np.zeros((50, 40), f32)},
                [Run(transpose_padded, (2, 2), (32, 8), ("a", "out"))], {"out": a.T.copy()})


def scale_fortran(a, out):
    r, c = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] * 2 + c


@case("Fortran-order inputs")
def spec_fortran(rng):
    a = np.asfortranarray(rng.integers(0, 100, (12, 10)).astype(i32))
    out = np.zeros((12, 10), i32, order="F")
    return Spec({"a": a, "out": out}, [Run(scale_fortran, (2, 2), (8, 8), ("a", "out"))],
                {"out": a * 2 + np.arange(10)[None, :]})


# -- atomics --------------------------------------------------------------------------------------
def histogram_global(data, hist):
    for i in range(cuda.grid(1), data.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(hist, data[i] // 16, 1)


@case("histogram with atomics", "uint8")
def spec_histogram(rng):
    data = rng.integers(0, 256, 700).astype(u8)
    return Spec({"data": data, "hist": np.zeros(16, i32)},
                [Run(histogram_global, 3, 64, ("data", "hist"))],
                {"hist": np.bincount(data // 16, minlength=16).astype(i32)})


def histogram_shared(data, hist):
    s = cuda.shared.array(32, int32)
    t = cuda.threadIdx.x
    if t < 32:
        s[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < data.shape[0]:
        cuda.atomic.add(s, data[i] % 32, 1)
    cuda.syncthreads()
    if t < 32:
        cuda.atomic.add(hist, t, s[t])


@case("histogram with shared-memory atomics")
def spec_histogram_shared(rng):
    data = rng.integers(0, 1000, 300).astype(i32)
    return Spec({"data": data, "hist": np.zeros(32, i32)},
                [Run(histogram_shared, 5, 64, ("data", "hist"))],
                {"hist": np.bincount(data % 32, minlength=32).astype(i32)})


def distinct_keys(keys, seen, count):
    i = cuda.grid(1)
    # the first writer of a key wins; `and` keeps threads past the end from calling the atomic
    if i < keys.shape[0] and cuda.atomic.cas(seen, keys[i], 0, 1) == 0:
        cuda.atomic.add(count, 0, 1)


@case("compare-and-swap (first writer wins)")
def spec_cas_distinct(rng):
    keys = rng.integers(0, 40, 150).astype(i64)
    seen = np.zeros(40, i32)
    expected_seen = np.zeros(40, i32)
    expected_seen[np.unique(keys)] = 1
    return Spec({"keys": keys, "seen": seen, "count": np.zeros(1, i32)},
                [Run(distinct_keys, 3, 64, ("keys", "seen", "count"))],
                {"seen": expected_seen, "count": np.array([len(np.unique(keys))], i32)})


def cas_max(values, result):
    i = cuda.grid(1)
    if i < values.shape[0]:
        v = values[i]
        old = cuda.atomic.add(result, 0, 0)  # an atomic read
        while old < v:
            seen = cuda.atomic.compare_and_swap(result, old, v)
            if seen == old:
                break
            old = seen


@case("lock-free max with compare_and_swap", "while with break")
def spec_cas_max(rng):
    values = rng.integers(-10**6, 10**6, 100).astype(i32)
    return Spec({"values": values, "result": np.array([-10**7], i32)},
                [Run(cas_max, 2, 64, ("values", "result"))],
                {"result": np.array([values.max()], i32)})


def atomic_extremes(x, ix, fmax, fmin, imax, imin):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.max(fmax, 0, x[i])
        cuda.atomic.min(fmin, 0, x[i])
        cuda.atomic.max(imax, 0, ix[i])
        cuda.atomic.min(imin, 0, ix[i])


@case("atomic max/min (float32, int64)")
def spec_atomic_extremes(rng):
    x = rng.standard_normal(200).astype(f32)
    ix = rng.integers(-10**12, 10**12, 200).astype(i64)
    arrays = {"x": x, "ix": ix, "fmax": np.array([-np.inf], f32), "fmin": np.array([np.inf], f32),
              "imax": np.array([-2**62], i64), "imin": np.array([2**62], i64)}
    return Spec(arrays, [Run(atomic_extremes, 4, 64, tuple(arrays))],
                {"fmax": x.max(keepdims=True), "fmin": x.min(keepdims=True),
                 "imax": ix.max(keepdims=True), "imin": ix.min(keepdims=True)})


def tickets(slots, taken, counter, wrapped):
    i = cuda.grid(1)
    if i < slots.shape[0]:
        ticket = cuda.atomic.inc(counter, 0, 1000)
        taken[ticket] = 1  # every thread gets its own ticket
        slots[i] = cuda.atomic.exch(slots, i, i * 3)  # no contention: the old value comes back
        cuda.atomic.inc(wrapped, 0, 9)  # wraps to 0 after 9


@case("atomic inc/exch")
def spec_tickets(rng):
    n = 93
    slots = rng.integers(0, 100, n).astype(np.uint32)
    arrays = {"slots": slots, "taken": np.zeros(n, i32), "counter": np.zeros(1, np.uint32),
              "wrapped": np.zeros(1, np.uint32)}
    return Spec(arrays, [Run(tickets, 2, 64, tuple(arrays))],
                {"slots": slots, "taken": np.ones(n, i32),
                 "counter": np.array([n], np.uint32), "wrapped": np.array([n % 10], np.uint32)})


def compact_positive(x, out, count):
    i = cuda.grid(1)
    if i < x.shape[0] and x[i] > 0:
        out[cuda.atomic.add(count, 0, 1)] = x[i]


@case("stream compaction (order-free output)")
def spec_compaction(rng):
    x = rng.standard_normal(150).astype(f32)
    kept = x[x > 0]
    out = np.zeros(150, f32)
    expected = np.zeros(150, f32)
    expected[:len(kept)] = kept
    return Spec({"x": x, "out": out, "count": np.zeros(1, i32)},
                [Run(compact_positive, 3, 64, ("x", "out", "count"))],
                {"out": expected, "count": np.array([len(kept)], i32)}, canonical=np.sort)


# -- warps and block votes ------------------------------------------------------------------------
def warp_sums(a, out):
    i = cuda.grid(1)
    v = a[i] if i < a.shape[0] else 0
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if cuda.laneid == 0:
        out[i // 32] = v


@case("warp reduction with shfl_down_sync", cudasim_skip=NO_WARP_INTRINSICS)
def spec_warp_sums(rng):
    a = rng.integers(-100, 100, 120).astype(i32)
    padded = np.pad(a, (0, 8))
    return Spec({"a": a, "out": np.zeros(4, i32)}, [Run(warp_sums, 2, 64, ("a", "out"))],
                {"out": padded.reshape(4, 32).sum(axis=1).astype(i32)})


def ballot_counts(a, out):
    i = cuda.grid(1)
    positive = i < a.shape[0] and a[i] > 0
    bits = cuda.ballot_sync(0xFFFFFFFF, positive)
    if cuda.laneid == 0:
        out[i // 32] = cuda.popc(bits)


@case("ballot_sync and popc", cudasim_skip=NO_WARP_INTRINSICS)
def spec_ballot(rng):
    a = rng.standard_normal(100).astype(f32)
    padded = np.pad(a, (0, 28))
    return Spec({"a": a, "out": np.zeros(4, i32)}, [Run(ballot_counts, 1, 128, ("a", "out"))],
                {"out": (padded.reshape(4, 32) > 0).sum(axis=1).astype(i32)})


def block_votes(x, counts, alls, anys):
    i = cuda.grid(1)
    positive = i < x.shape[0] and x[i] > 0
    n = cuda.syncthreads_count(1 if positive else 0)  # numba wants an int predicate, not a bool
    every = cuda.syncthreads_and(1 if i < x.shape[0] else 0)
    some = cuda.syncthreads_or(1 if i < x.shape[0] and x[i] > 3 else 0)
    if cuda.threadIdx.x == 0:
        counts[cuda.blockIdx.x] = n
        alls[cuda.blockIdx.x] = every
        anys[cuda.blockIdx.x] = some


@case("syncthreads_count/and/or")
def spec_block_votes(rng):
    x = rng.standard_normal(100).astype(f32)
    x[70] = 5.0
    per_block = np.pad(x, (0, 28)).reshape(4, 32)
    exists = np.arange(128).reshape(4, 32) < 100
    return Spec({"x": x, "counts": np.zeros(4, i32), "alls": np.zeros(4, i32),
                 "anys": np.zeros(4, i32)},
                [Run(block_votes, 4, 32, ("x", "counts", "alls", "anys"))],
                {"counts": ((per_block > 0) & exists).sum(axis=1).astype(i32),
                 "alls": exists.all(axis=1).astype(i32),
                 "anys": ((per_block > 3) & exists).any(axis=1).astype(i32)})


# -- per-thread code: local arrays, device functions, control flow --------------------------------
def median5(x, out):
    i = cuda.grid(1)
    n = x.shape[0]
    if i < n:
        w = cuda.local.array(5, float32)
        for k in range(5):
            w[k] = x[min(max(i + k - 2, 0), n - 1)]
        for k in range(1, 5):  # insertion sort
            v = w[k]
            m = k - 1
            while m >= 0 and w[m] > v:  # the `and` keeps w[-1] from being read
                w[m + 1] = w[m]
                m -= 1
            w[m + 1] = v
        out[i] = w[2]


@case("local arrays", "while with and-guarded index")
def spec_median5(rng):
    x = rng.standard_normal(70).astype(f32)
    idx = np.clip(np.arange(70)[:, None] + np.arange(-2, 3)[None, :], 0, 69)
    return Spec({"x": x, "out": np.zeros_like(x)}, [Run(median5, 3, 32, ("x", "out"))],
                {"out": np.median(x[idx], axis=1).astype(f32)})


@cuda.jit(device=True)
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@cuda.jit(device=True)
def smoothstep(edge0, edge1, x):
    t = clamp((x - edge0) / (edge1 - edge0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


@cuda.jit(device=True)
def store_pair(out, i, a, b):
    out[i, 0] = a
    out[i, 1] = b


def device_functions(x, out, pair):
    i = cuda.grid(1)
    if i < x.shape[0]:
        y = smoothstep(-1.0, 1.0, x[i])
        out[i] = y
        store_pair(pair, i, y, clamp(x[i], -0.5, 0.5))


@case("device functions (nested, early returns, writing arrays)")
def spec_device_functions(rng):
    x = (rng.standard_normal(80) * 1.5).astype(f32)
    t = np.clip((x.astype(f64) + 1.0) / 2.0, 0.0, 1.0)
    y = (t * t * (3.0 - 2.0 * t)).astype(f32)
    pair = np.stack([y, np.clip(x, -0.5, 0.5)], axis=1)
    return Spec({"x": x, "out": np.zeros_like(x), "pair": np.zeros((80, 2), f32)},
                [Run(device_functions, 3, 32, ("x", "out", "pair"))],
                {"out": y, "pair": pair}, rtol=1e-6)


def saxpy_sqrt(alpha, x, y, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = alpha * x[i] + math.sqrt(abs(y[i]))


@case("float64", "scalar argument", "math.sqrt")
def spec_saxpy_f64(rng):
    x, y = rng.standard_normal(100), rng.standard_normal(100)
    return Spec({"x": x, "y": y, "out": np.zeros(100)},
                [Run(saxpy_sqrt, 2, 64, (0.75, "x", "y", "out"))],
                {"out": 0.75 * x + np.sqrt(np.abs(y))})


def gaussian_math(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = math.exp(-x[i] * x[i]) * math.sqrt(1.0 + x[i] * x[i]) + math.sin(x[i])


@case("math functions (exp, sqrt, sin) in float32")
def spec_math(rng):
    x = rng.standard_normal(100).astype(f32)
    xd = x.astype(f64)
    ref = np.exp(-xd * xd) * np.sqrt(1 + xd * xd) + np.sin(xd)
    return Spec({"x": x, "out": np.zeros_like(x)}, [Run(gaussian_math, 2, 64, ("x", "out"))],
                {"out": ref.astype(f32)}, rtol=1e-5)


def int32_arith(a, b, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = (a[i] * 7 + b[i]) // 3 - a[i] % 5 + (a[i] ^ b[i]) - (a[i] >> 2)


@case("int32 (floor division and modulo of negatives, bit operations)")
def spec_int32(rng):
    a, b = rng.integers(-1000, 1000, 100).astype(i32), rng.integers(-1000, 1000, 100).astype(i32)
    return Spec({"a": a, "b": b, "out": np.zeros(100, i32)},
                [Run(int32_arith, 2, 64, ("a", "b", "out"))],
                {"out": ((a * 7 + b) // 3 - a % 5 + (a ^ b) - (a >> 2)).astype(i32)})


def int64_big(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] * 3_000_000_000 + (a[i] << 33) - i


@case("int64 beyond 32 bits")
def spec_int64(rng):
    a = rng.integers(-10**5, 10**5, 100).astype(i64)
    return Spec({"a": a, "out": np.zeros(100, i64)}, [Run(int64_big, 2, 64, ("a", "out"))],
                {"out": a * 3_000_000_000 + (a << 33) - np.arange(100)})


def integer_promotion(a, b, mean, wrapped, x, product):
    i = cuda.grid(1)
    if i < a.shape[0]:
        mean[i] = (a[i] + b[i]) // 2  # numba computes in 64 bits: no 8-bit overflow
        wrapped[i] = a[i] + b[i]  # the store truncates to 8 bits
        product[i] = x[i] * x[i]  # int32 * int32 is int64 in numba: no 32-bit overflow


@case("uint8", "int32", "integer promotion to 64 bits", "truncating stores",
      cudasim_skip="Numba's CUDA simulator computes uint8 + uint8 and int32 * int32 in 8 and 32 "
                   "bits (numpy scalars); numba-cuda computes in 64 bits, so they overflow there")
def spec_integer_promotion(rng):
    a, b = rng.integers(0, 256, 100).astype(u8), rng.integers(0, 256, 100).astype(u8)
    x = rng.integers(-200_000, 200_000, 100).astype(i32)
    wide = a.astype(i64) + b
    arrays = {"a": a, "b": b, "mean": np.zeros(100, u8), "wrapped": np.zeros(100, u8), "x": x,
              "product": np.zeros(100, i64)}
    return Spec(arrays, [Run(integer_promotion, 2, 64, tuple(arrays))],
                {"mean": (wide // 2).astype(u8), "wrapped": (wide % 256).astype(u8),
                 "product": x.astype(i64) ** 2})


def collatz_steps(start, steps):
    i = cuda.grid(1)
    if i >= start.shape[0]:
        return
    n = start[i]
    count = 0
    while True:
        if n == 1:
            break
        count += 1
        if n % 2 == 0:
            n //= 2
            continue
        n = 3 * n + 1
    steps[i] = count


def _collatz(n: int) -> int:
    count = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        count += 1
    return count


@case("while loops with break and continue", "early return")
def spec_collatz(rng):
    start = rng.integers(1, 200, 50).astype(i64)
    return Spec({"start": start, "steps": np.zeros(50, i64)},
                [Run(collatz_steps, 1, 64, ("start", "steps"))],
                {"steps": np.array([_collatz(int(s)) for s in start], i64)})


def early_return(x, out):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    if x[i] < 0:
        out[i] = -1
        return
    out[i] = x[i] * 2
    if x[i] > 40:
        return
    out[i] += 1


@case("early return")
def spec_early_return(rng):
    x = rng.integers(-50, 50, 90).astype(i32)
    ref = np.where(x < 0, -1, np.where(x > 40, x * 2, x * 2 + 1)).astype(i32)
    return Spec({"x": x, "out": np.full(90, 7, i32)}, [Run(early_return, 2, 64, ("x", "out"))],
                {"out": ref})


def ternaries(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[i] = v if v > 0 else -2 * v
        out[i] += 100 if v > 10 else (10 if v > -10 else 1)


@case("ternary expressions")
def spec_ternary(rng):
    x = rng.integers(-30, 30, 100).astype(i32)
    ref = np.where(x > 0, x, -2 * x) + np.where(x > 10, 100, np.where(x > -10, 10, 1))
    return Spec({"x": x, "out": np.zeros_like(x)}, [Run(ternaries, 2, 64, ("x", "out"))],
                {"out": ref.astype(i32)})


def local_peaks(x, out):
    i = cuda.grid(1)
    n = x.shape[0]
    if i >= n or x[i] <= 0:  # `or` keeps x[i] from being read past the end
        return
    left_ok = i == 0 or x[i - 1] < x[i]  # never reads x[-1]
    right_ok = i == n - 1 or x[i + 1] < x[i]  # never reads x[n]
    out[i] = 1 if left_ok and right_ok else 0


@case("and/or short circuits guarding indices")
def spec_short_circuit(rng):
    x = rng.standard_normal(100).astype(f32)
    x[0], x[99] = 3.0, 3.0
    left = np.r_[True, x[:-1] < x[1:]]
    right = np.r_[x[1:] < x[:-1], True]
    ref = np.where(x > 0, (left & right).astype(i32), -1).astype(i32)
    return Spec({"x": x, "out": np.full(100, -1, i32)}, [Run(local_peaks, 2, 64, ("x", "out"))],
                {"out": ref})


WEIGHTS = np.array([0.5, 1.5, -2.0, 4.0, 0.25, 3.0, -1.0, 8.0], dtype=np.float32)


def const_lookup(codes, out):
    table = cuda.const.array_like(WEIGHTS)
    i = cuda.grid(1)
    if i < codes.shape[0]:
        out[i] = table[codes[i] % 8] * 2


@case("constant memory")
def spec_const(rng):
    codes = rng.integers(0, 100, 100).astype(i32)
    return Spec({"codes": codes, "out": np.zeros(100, f32)},
                [Run(const_lookup, 2, 64, ("codes", "out"))], {"out": WEIGHTS[codes % 8] * 2})


# -- several launches, factories ------------------------------------------------------------------
def squares(x, tmp):
    i = cuda.grid(1)
    if i < x.shape[0]:
        tmp[i] = x[i] * x[i]


def mirror_sum(tmp, out):
    i = cuda.grid(1)
    n = tmp.shape[0]
    if i < n:
        out[i] = tmp[i] + tmp[n - 1 - i]


@case("two launches sharing device arrays", "allocate")
def spec_two_launches(rng):
    x = rng.integers(-100, 100, 70).astype(i64)
    sq = x * x
    return Spec({"x": x, "tmp": np.zeros(70, i64), "out": np.zeros(70, i64)},
                [Run(squares, 3, 32, ("x", "tmp")), Run(mirror_sum, 3, 32, ("tmp", "out"))],
                {"tmp": sq, "out": sq + sq[::-1]}, uninitialized=("tmp", "out"))


def make_saxpy(cuda):
    """The GPU-Puzzles style: a factory that takes the `cuda` namespace."""
    def saxpy(a, x, y, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = a * x[i] + y[i]
    return saxpy


saxpy_from_factory = make_saxpy(cuda)


@case("factory-style kernel",
      cudasim_skip="Numba's CUDA simulator swaps only module globals named `cuda`, not closure "
                   "cells, so the closure calls numba.cuda.grid outside a kernel")
def spec_factory(rng):
    x, y = rng.standard_normal(50).astype(f32), rng.standard_normal(50).astype(f32)
    return Spec({"x": x, "y": y, "out": np.zeros(50, f32)},
                [Run(saxpy_from_factory, 1, 64, (f32(2.0), "x", "y", "out"))],
                {"out": f32(2.0) * x + y})


# -- running the corpus under Numba's CUDA simulator ----------------------------------------------
def run_with_numba(spec: Spec) -> dict[str, np.ndarray]:
    """Launch with Numba's own cuda.jit on numpy arrays; the arrays after the launches."""
    arrays = {name: a.copy(order="K") for name, a in spec.arrays.items()}
    for name in spec.uninitialized:  # garbage, as allocate() would give
        arrays[name][...] = np.iinfo(arrays[name].dtype).max if arrays[name].dtype.kind in "iu" \
            else np.nan
    for run in spec.runs:
        args = [arrays[a] if isinstance(a, str) else a for a in run.args]
        cuda.jit(run.kernel)[run.grid, run.block, 0, run.dynamic_shared_bytes](*args)
    return {name: arrays[name] for name in spec.expected}


def main(out_path: str) -> None:
    """Run every case with Numba's cuda.jit; save arrays as "case/array" and failures as text.

    Cases marked `cudasim_skip` run too, so the test can check that the stated reason holds
    (they must fail or differ there); their failures are recorded, not raised.
    """
    from numba import config

    results: dict[str, np.ndarray] = {"simulator_enabled": np.array(config.ENABLE_CUDASIM)}
    for name, c in CASES.items():
        try:
            outputs = run_with_numba(c.build(rng_for(name)))
        except Exception as exc:  # recorded for the test to judge
            if not c.cudasim_skip:
                raise
            results[f"{name}/error"] = np.array(f"{type(exc).__name__}: {exc}"[:300])
            continue
        for array, value in outputs.items():
            results[f"{name}/{array}"] = value
    np.savez(out_path, **results)


if __name__ == "__main__":
    main(sys.argv[1])
