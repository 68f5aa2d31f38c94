"""What computing the timing model costs per launch, against the launch's simulation time.

The model (`gpukit.timing.model_launch`) runs at every simulated launch (the modeled timeline
needs it). On an untraced launch it reads the launch's counters and the occupancy calculator;
this table measures it on the workloads of `benchmarks.kernels`, next to the simulation's own
wall time. Traced launches add the trace analysis (coalescing, bank conflicts), measured apart:
tracing itself already makes a launch many times slower. Run: python -m benchmarks.model_cost
"""

from __future__ import annotations

import time
from typing import Any

from .kernels import WORKLOADS

HEADERS = ["workload", "size", "simulation ms", "launch call ms", "model ms",
           "model / simulation", "model / launch call"]
CASES = (("vector_add", 1 << 12), ("vector_add", 1 << 20), ("histogram", 1 << 20),
         ("matmul_naive", 128), ("matmul_tiled", 128), ("reduce_sum", 1 << 20))


def _model_ms(model_launch: Any, profile: Any, record: Any, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        record.extra.pop("model_facts", None)
        start = time.perf_counter()
        model_launch(profile, record)
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best


def rows(repeats: int = 5) -> list[list[str]]:
    from gpukit.backends.cpu import CPUBackend
    from gpukit.timing import model_launch

    be = CPUBackend()
    out = []
    for name, size in CASES:
        workload = WORKLOADS[name]
        case = workload.build(size, 0)
        args = [be.to_device(a) if hasattr(a, "shape") and a.shape else a for a in case.args]
        be.launch_kernel(workload.kernel, case.grid, case.block, *args)  # compile
        walls, calls = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            record = be.launch_kernel(workload.kernel, case.grid, case.block, *args)
            calls.append((time.perf_counter() - start) * 1e3)
            walls.append(record.wall_ms)
        sim, call = min(walls), min(calls)
        model = _model_ms(model_launch, be.profile, record, repeats)
        out.append([workload.title, workload.label(size), f"{sim:.3f}", f"{call:.3f}",
                    f"{model:.3f}", f"{model / sim:.1%}", f"{model / call:.1%}"])
    return out


def main() -> None:
    table = [HEADERS, *rows()]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADERS))]
    for r in table:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
