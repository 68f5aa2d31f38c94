"""Measured against modeled: the timing model's teaching pairs on a real GPU, side by side.

Times each kernel with CUDA events on the GPU (CUDABackend, `gpukit.timing.time_kernel`, median
of 20 launches after a warm-up) and models the same launch on the simulator emulating the same
GPU (its matching `DeviceProfile`, the launch traced so coalescing, bank conflicts and atomic
contention are observed). Prints both, their ratio and the term the model says binds.

Needs an NVIDIA GPU with numba-cuda; without one it says why and exits with status 2.
Run: python -m benchmarks.model_vs_gpu [--device-profile NAME]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import cuda

TRACE_EVENTS = (1 << 22) + (1 << 16)  # every case below fits (about 56 bytes of host memory each)


@cuda.jit
def copy_strided(a, out, stride):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i * stride]


@cuda.jit
def transpose_tile(a, out):
    tile = cuda.shared.array((32, 32), np.float32)
    x = cuda.blockIdx.x * 32 + cuda.threadIdx.x
    y = cuda.blockIdx.y * 32 + cuda.threadIdx.y
    tile[cuda.threadIdx.y, cuda.threadIdx.x] = a[y, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * 32 + cuda.threadIdx.x
    y = cuda.blockIdx.x * 32 + cuda.threadIdx.y
    out[y, x] = tile[cuda.threadIdx.x, cuda.threadIdx.y]


@cuda.jit
def transpose_padded(a, out):
    tile = cuda.shared.array((32, 33), np.float32)
    x = cuda.blockIdx.x * 32 + cuda.threadIdx.x
    y = cuda.blockIdx.y * 32 + cuda.threadIdx.y
    tile[cuda.threadIdx.y, cuda.threadIdx.x] = a[y, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * 32 + cuda.threadIdx.x
    y = cuda.blockIdx.x * 32 + cuda.threadIdx.y
    out[y, x] = tile[cuda.threadIdx.x, cuda.threadIdx.y]


@cuda.jit
def count_into(bins, nbins):
    i = cuda.grid(1)
    cuda.atomic.add(bins, i % nbins, 1)


def _copy(stride: int, block: int = 256, shared: int = 0) -> Callable[[Any], tuple]:
    def build(be: Any) -> tuple:
        n = 1 << 20
        a, out = be.to_device(np.ones(n * stride, np.float32)), be.allocate(n, np.float32)
        return (n // block,), (block,), (a, out, stride), shared
    return build


def _transpose(be: Any) -> tuple:
    m = 1024
    a, out = be.to_device(np.ones((m, m), np.float32)), be.allocate((m, m), np.float32)
    return (m // 32, m // 32), (32, 32), (a, out), 0


def _atomics(nbins: int) -> Callable[[Any], tuple]:
    def build(be: Any) -> tuple:
        n = 1 << 20
        return (n // 256,), (256,), (be.to_device(np.zeros(1024, np.int32)), nbins), 0
    return build


def _matmul(be: Any) -> tuple:
    from .kernels import TILE
    m = 96
    a = be.to_device(np.random.default_rng(0).random((m, m), dtype=np.float32))
    return (m // TILE, m // TILE), (TILE, TILE), (a, a, be.allocate((m, m), np.float32)), 0


def cases() -> list[tuple[str, Any, Callable[[Any], tuple], float | None]]:
    from .kernels import matmul_naive, matmul_tiled
    return [
        ("copy, coalesced (1M floats)", copy_strided, _copy(1), None),
        ("copy, stride 32", copy_strided, _copy(32), None),
        ("copy, 25% occupancy (48 KiB smem)", copy_strided, _copy(1, shared=48 * 1024), None),
        ("copy, 32-thread blocks", copy_strided, _copy(1, block=32), None),
        ("transpose 1024^2, 32x32 tile", transpose_tile, _transpose, None),
        ("transpose 1024^2, padded 32x33", transpose_padded, _transpose, None),
        ("atomics, one address (1M)", count_into, _atomics(1), None),
        ("atomics, 1024 addresses (1M)", count_into, _atomics(1024), None),
        ("matmul 96^2, naive", cuda.jit(matmul_naive), _matmul, 2 * 96**3),
        ("matmul 96^2, tiled 16x16", cuda.jit(matmul_tiled), _matmul, 2 * 96**3),
    ]


def main(argv: list[str] | None = None) -> int:
    import gpukit
    from gpukit.backends.cpu import CPUBackend
    from gpukit.errors import BackendUnavailableError
    from gpukit.timing import time_kernel
    from gpukit.trace import Recorder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device-profile", help="the profile to model (default: the GPU's)")
    opts = parser.parse_args(argv)
    try:
        gpu = gpukit.get_backend("cuda")
    except BackendUnavailableError as exc:
        print(f"model_vs_gpu needs an NVIDIA GPU to measure on, and there is none usable here: "
              f"{exc}", file=sys.stderr)
        return 2
    profile = gpukit.devices.get_profile(opts.device_profile or gpu.profile)
    sim = CPUBackend(device=profile)
    print(f"GPU: {gpu.device_name}; model: the {profile.describe()}")
    rows = [["kernel", "measured ms", "modeled ms", "measured / modeled", "binding term"]]
    for name, kernel, build, flops in cases():
        grid, block, args, shared = build(gpu)
        measured = time_kernel(kernel, grid, block, *args, backend=gpu, repeat=20,
                               dynamic_shared_bytes=shared).median_ms
        grid, block, args, shared = build(sim)
        options = {"dynamic_shared_bytes": shared} if shared else {}
        record = sim.launch_kernel(kernel, grid, block, *args, trace=Recorder(TRACE_EVENTS),
                                   flops=flops, **options)
        model = record.modeled
        rows.append([name, f"{measured:.4f}", f"{model.ms:.4f}", f"{measured / model.ms:.2f}",
                     model.bound])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
