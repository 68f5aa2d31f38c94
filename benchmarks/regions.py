"""Barrier kernels run region by region against the same kernels run as resumable threads.

    python -m benchmarks.regions [--repeat N] [--quick]

gpukit runs a kernel whose only sync points are block barriers, under uniform control flow, as
regions (gpukit.sim.regions); every other kernel with sync points runs each thread as a resumable
generator. This runs the barrier workloads of `benchmarks.kernels` both ways in one process (two
CPUBackends with every check on, one forcing resumable threads with
`SimKernel.without_regions()`), one after the other at each size (best of N launches after a
warm-up, each on fresh device arrays), checks every result against numpy, and prints the ratio.
Nothing is written: quote the printed table with its machine and load.
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

    print(f"load average before: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| kernel | size | regions s | resumable threads s | speed-up |")
    print("| --- | --- | --- | --- | --- |")
    for name, build, sizes in CASES:
        # two backends, so that each compiles its own copy of the kernel
        fast_be, slow_be = CPUBackend(watchdog_s=None), CPUBackend(watchdog_s=None)
        fast = fast_be.compile_kernel(getattr(K, name))
        slow = slow_be.compile_kernel(getattr(K, name))
        slow.sim.without_regions()
        for size in sizes[:1] if options.quick else sizes:
            case = build(size)
            timed_launch(fast_be, fast, case), timed_launch(slow_be, slow, case)  # warm-up
            fast_s = min(timed_launch(fast_be, fast, case)[0] for _ in range(options.repeat))
            slow_s = min(timed_launch(slow_be, slow, case)[0] for _ in range(options.repeat))
            assert fast.sim.regions and not slow.sim.regions, name
            label = f"{size}x{size}" if name.startswith("matmul") else f"2^{size.bit_length() - 1}"
            print(f"| {name} | {label} | {fast_s:.4f} | {slow_s:.4f} | {slow_s / fast_s:.1f}x |")
    print(f"load average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
