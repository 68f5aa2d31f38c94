"""What the simulator's checks cost on an elementwise kernel, against numpy itself.

The stretch goal of the speed issue: a fast path within 20x of numpy for elementwise kernels,
saying which checks it keeps. gpukit has one engine; the fast path is the same engine with fewer
checks (`CPUBackend(checks=...)`), so this table measures each setting on the 1,000,000-element
`hypot_scale` kernel of `benchmarks.kernels`, next to numpy's own time for the same result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from .kernels import WORKLOADS

HEADERS = ["checks kept", "gpukit s", "numpy s", "gpukit / numpy"]
SETTINGS: tuple[tuple[str, Any], ...] = (
    ("all (the default)", True),
    ("launch_limits, bounds", ["launch_limits", "bounds"]),
    ("none (checks=False)", False),
)


def _best(run: Callable[[], Any], repeats: int) -> float:
    run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def rows(size: int = 1_000_000, repeats: int = 5,
         log: Callable[[str], None] = lambda msg: None) -> list[list[str]]:
    from gpukit.backends.cpu import CPUBackend

    workload = WORKLOADS["hypot_scale"]
    case = workload.build(size, 0)
    numpy_s = _best(lambda: workload.numpy_op(*case.args), repeats * 4)
    table = []
    for label, checks in SETTINGS:
        log(f"checks cost: {label}")
        be = CPUBackend(checks=checks)
        args = [be.to_device(a) if hasattr(a, "shape") and a.ndim else a for a in case.args]
        kernel = be.compile_kernel(workload.kernel)
        gpukit_s = _best(partial(be.launch_kernel, kernel, case.grid, case.block, *args), repeats)
        case.verify([be.to_host(args[i]) for i in case.outputs])
        table.append([label, f"{gpukit_s:.3g}", f"{numpy_s:.3g}", f"{gpukit_s / numpy_s:.0f}x"])
    return table


if __name__ == "__main__":
    from .report import text_table
    print(text_table(HEADERS, rows(log=print)))
