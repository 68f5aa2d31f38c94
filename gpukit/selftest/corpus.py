"""The kernels `gpukit selftest` runs: a small curated corpus with seeded inputs and numpy results.

Each `Case` builds, from a seeded generator, its host arrays, its launches (kernel, grid, block,
arguments by array name, dynamic shared bytes) and the expected contents of its outputs. They
cover what lessons use: 1-3D grids and guards, grid-stride loops, static and dynamic shared memory
with barriers, atomics, a tiled matmul, Fortran-ordered arrays. Sizes are tiny, so the corpus
runs in seconds on the simulator and under Numba's CUDA simulator. It checks results, not speed.
(tests/sim_corpus.py holds the full corpus the simulator is tested with.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import cuda, float32

TILE = 8


@dataclass
class Step:
    kernel: Callable
    grid: Any
    block: Any
    args: tuple[str, ...]
    dynamic_shared_bytes: int = 0


@dataclass
class Case:
    """Inputs, launches and expected outputs of one corpus kernel."""

    name: str
    arrays: dict[str, np.ndarray]
    launches: list[Step]
    expected: dict[str, np.ndarray]
    rtol: float = 0.0
    warp_intrinsics: bool = False  # Numba's CUDA simulator has none
    fortran: tuple[str, ...] = field(default=())


def scale_shift(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] * 2.5 + 1.0


def map_2d(a, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col] * 3 - row + col


def map_3d(a, out):
    x, y, z = cuda.grid(3)
    if z < a.shape[0] and y < a.shape[1] and x < a.shape[2]:
        out[z, y, x] = a[z, y, x] + x + 10 * y + 100 * z


def grid_stride_square(a, out):
    for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        out[i] = a[i] * a[i]


def shared_reverse(a, out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * cuda.blockDim.x
    s[t] = a[base + t]
    cuda.syncthreads()
    out[base + t] = s[cuda.blockDim.x - 1 - t]


def dynamic_reverse(a, out):
    s = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * cuda.blockDim.x
    s[t] = a[base + t]
    cuda.syncthreads()
    out[base + t] = s[cuda.blockDim.x - 1 - t]


def dot_shared_atomic(a, b, out):
    s = cuda.shared.array(32, float32)
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


def histogram(data, hist):
    i = cuda.grid(1)
    if i < data.shape[0]:
        cuda.atomic.add(hist, data[i], 1)


def matmul_tiled(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.grid(2)
    acc = float32(0.0)
    for k0 in range(0, a.shape[1], TILE):
        sa[ty, tx] = a[row, k0 + tx] if row < a.shape[0] and k0 + tx < a.shape[1] else 0.0
        sb[ty, tx] = b[k0 + ty, col] if k0 + ty < b.shape[0] and col < b.shape[1] else 0.0
        cuda.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc


def warp_sums(a, out):
    i = cuda.grid(1)
    v = a[i] if i < a.shape[0] else 0
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if cuda.laneid == 0:
        out[i // 32] = v


def build(seed: int = 0) -> list[Case]:
    """The corpus, with inputs from `seed`."""
    rng = np.random.default_rng(seed)
    f32, i32 = np.float32, np.int32
    a = rng.standard_normal(200).astype(f32)
    m = rng.integers(-100, 100, (20, 13)).astype(i32)
    r, c = np.indices(m.shape)
    v = rng.integers(0, 50, (5, 6, 7)).astype(i32)
    z, y, x = np.indices(v.shape)
    s = rng.integers(-1000, 1000, 500).astype(np.int64)
    rev = rng.standard_normal(96).astype(f32)
    da, db = rng.standard_normal(300).astype(f32), rng.standard_normal(300).astype(f32)
    data = rng.integers(0, 16, 400).astype(i32)
    ma, mb = rng.standard_normal((19, 12)).astype(f32), rng.standard_normal((12, 10)).astype(f32)
    w = rng.integers(-9, 9, 96).astype(i32)
    fm = np.asfortranarray(rng.standard_normal((6, 5)).astype(f32))
    return [
        Case("map", {"a": a, "out": np.zeros(200, f32)}, [Step(scale_shift, 4, 64, ("a", "out"))],
             {"out": (a * 2.5 + 1.0).astype(f32)}, rtol=1e-6),
        Case("2d map", {"a": m, "out": np.zeros_like(m)},
             [Step(map_2d, (2, 3), (8, 8), ("a", "out"))], {"out": m * 3 - r + c}),
        Case("3d map", {"a": v, "out": np.zeros_like(v)},
             [Step(map_3d, (2, 2, 3), (4, 4, 2), ("a", "out"))],
             {"out": v + x + 10 * y + 100 * z}),
        Case("grid-stride loop", {"a": s, "out": np.zeros_like(s)},
             [Step(grid_stride_square, 2, 32, ("a", "out"))], {"out": s * s}),
        Case("shared-memory reverse", {"a": rev, "out": np.zeros_like(rev)},
             [Step(shared_reverse, 3, 32, ("a", "out"))],
             {"out": rev.reshape(3, 32)[:, ::-1].reshape(-1)}),
        Case("dynamic shared memory", {"a": rev, "out": np.zeros_like(rev)},
             [Step(dynamic_reverse, 3, 32, ("a", "out"), dynamic_shared_bytes=32 * 4)],
             {"out": rev.reshape(3, 32)[:, ::-1].reshape(-1)}),
        Case("dot product (shared + atomics)", {"a": da, "b": db, "out": np.zeros(1, f32)},
             [Step(dot_shared_atomic, 2, 32, ("a", "b", "out"))],
             {"out": np.array([np.dot(da.astype(np.float64), db)], f32)}, rtol=1e-4),
        Case("histogram (atomics)", {"data": data, "hist": np.zeros(16, i32)},
             [Step(histogram, 4, 128, ("data", "hist"))],
             {"hist": np.bincount(data, minlength=16).astype(i32)}),
        Case("tiled matmul", {"a": ma, "b": mb, "c": np.zeros((19, 10), f32)},
             [Step(matmul_tiled, (2, 3), (TILE, TILE), ("a", "b", "c"))],
             {"c": (ma.astype(np.float64) @ mb).astype(f32)}, rtol=1e-5),
        Case("Fortran order", {"a": fm, "out": np.asfortranarray(np.zeros_like(fm))},
             [Step(map_2d, (1, 1), (8, 8), ("a", "out"))],
             {"out": fm * 3 - np.indices(fm.shape)[0] + np.indices(fm.shape)[1]}, rtol=1e-6),
        Case("warp shuffle sums", {"a": w, "out": np.zeros(3, i32)},
             [Step(warp_sums, 1, 96, ("a", "out"))], {"out": w.reshape(3, 32).sum(axis=1)},
             warp_intrinsics=True),
    ]
