"""Barrier kernels run region by region against the same kernels run as resumable threads.

    python -m benchmarks.regions [--repeat N] [--quick]

gpukit runs a kernel whose only sync points are block barriers, under uniform control flow, as
regions (gpukit.sim.regions); every other kernel with sync points runs each thread as a resumable
generator. This runs the barrier workloads of `benchmarks.kernels` three ways in one process
(three CPUBackends with every check on: regions; regions with `regions.BLOCK_LEVEL_VALUES` off,
so that every thread computes and keeps its own copy of values such as a reduction's stride;
resumable threads, forced with `SimKernel.without_regions()`), one after the other at each size
(best of N launches after a warm-up, each on fresh device arrays), checks every result against
numpy, and prints the ratios. Nothing is written: quote the printed table with its machine and
load.
"""

from __future__ import annotations

import argparse
import os

from . import kernels as K
from .simulator import timed_launch

CASES = [("reduce_sum", K.build_reduce_sum, [1 << 16, 1 << 20, 1 << 22]),
         ("stencil_3pt", K.build_stencil, [1 << 16, 1 << 20, 1 << 22]),
         ("matmul_tiled", lambda n: K.WORKLOADS["matmul_tiled"].build(n, 0), [128, 256, 512])]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed launches per point")
    parser.add_argument("--quick", action="store_true", help="the smallest size of each kernel")
    options = parser.parse_args(argv)
    from gpukit.backends.cpu import CPUBackend
    from gpukit.sim import regions

    print(f"load average before: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| kernel | size | regions s | regions, uniform values per thread s | resumable "
          "threads s | speed-up over resumable | over per-thread values |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, build, sizes in CASES:
        # three backends, so that each compiles its own copy of the kernel
        fast_be, plain_be, slow_be = (CPUBackend(watchdog_s=None) for _ in range(3))
        fast = fast_be.compile_kernel(getattr(K, name))
        regions.BLOCK_LEVEL_VALUES = False  # every thread computes its own stride, tile, ...
        try:
            plain = plain_be.compile_kernel(getattr(K, name))
        finally:
            regions.BLOCK_LEVEL_VALUES = True
        slow = slow_be.compile_kernel(getattr(K, name))
        slow.sim.without_regions()
        runs = ((fast_be, fast), (plain_be, plain), (slow_be, slow))
        for size in sizes[:1] if options.quick else sizes:
            case = build(size)
            for be, kernel in runs:  # warm-up
                timed_launch(be, kernel, case)
            fast_s, plain_s, slow_s = (
                min(timed_launch(be, kernel, case)[0] for _ in range(options.repeat))
                for be, kernel in runs)
            assert fast.sim.regions and plain.sim.regions and not slow.sim.regions, name
            label = f"{size}x{size}" if name.startswith("matmul") else f"2^{size.bit_length() - 1}"
            print(f"| {name} | {label} | {fast_s:.4f} | {plain_s:.4f} | {slow_s:.4f} | "
                  f"{slow_s / fast_s:.1f}x | {plain_s / fast_s:.2f}x |")
    print(f"load average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
