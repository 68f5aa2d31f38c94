"""What computing the timing model costs per launch, against the launch's simulation time.

The model (`gpukit.timing.model_launch`) runs at every simulated launch (the modeled timeline
needs it). On an untraced launch it reads the launch's counters and the occupancy calculator;
this table measures it on the workloads of `benchmarks.kernels`, next to the simulation's own
wall time. `time_kernel` also records a sample of four blocks of each launch so that the model
observes coalescing and bank conflicts: the last columns are that launch call (sample recorded,
analysed, model computed) against the untraced call. Run: python -m benchmarks.model_cost
"""

from __future__ import annotations

import time
from typing import Any

from .kernels import WORKLOADS

HEADERS = ["workload", "size", "simulation ms", "launch call ms", "model ms",
           "model / simulation", "model / launch call", "sampled call ms", "sampled / untraced"]
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
    from gpukit.timing.timers import SAMPLE_BLOCKS, SAMPLE_EVENTS
    from gpukit.trace import Recorder

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
        sampled = []
        for _ in range(repeats):
            start = time.perf_counter()
            be.launch_kernel(workload.kernel, case.grid, case.block, *args,
                             trace=Recorder(SAMPLE_EVENTS, sample_blocks=SAMPLE_BLOCKS))
            sampled.append((time.perf_counter() - start) * 1e3)
        out.append([workload.title, workload.label(size), f"{sim:.3f}", f"{call:.3f}",
                    f"{model:.3f}", f"{model / sim:.1%}", f"{model / call:.1%}",
                    f"{min(sampled):.3f}", f"{min(sampled) / call:.2f}x"])
    return out


def main() -> None:
    table = [HEADERS, *rows()]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADERS))]
    for r in table:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
