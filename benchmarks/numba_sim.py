"""Run one workload on Numba's own CUDA simulator and print the timing as one JSON line.

`benchmarks.simulator` starts this in a subprocess with `NUMBA_ENABLE_CUDASIM=1`:
    python -m benchmarks.numba_sim NAME SIZE [--repeats N] [--seed S]
    python -m benchmarks.numba_sim NAME --serve
With --serve it reads "SIZE REPEATS" lines on stdin and answers each with one JSON line, so
`benchmarks.scaling` keeps one process per workload and interleaves its sizes with gpukit's.
NAME "small_launches" is the loop of SIZE launches of a 32-thread kernel (`kernels.LOOP_THREADS`),
timed as a whole.
It wraps the kernel source from `benchmarks.kernels` in Numba's `cuda.jit`, launches it on
device copies of the same seeded inputs, checks the outputs against numpy, and reports the
launch times (copies excluded). It does not use gpukit at all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import warnings

import numpy as np


def measure(name: str, size: int, repeats: int, seed: int) -> dict:
    from numba import cuda

    from .kernels import WORKLOADS

    workload = WORKLOADS[name]
    case = workload.build(size, seed)
    kernel = cuda.jit(workload.kernel)
    times_s: list[float] = []
    max_error = 0.0
    for _ in range(repeats):
        args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in case.args]
        start = time.perf_counter()
        kernel[case.grid, case.block](*args)
        cuda.synchronize()
        times_s.append(time.perf_counter() - start)
        results = [args[i].copy_to_host() for i in case.outputs]
        max_error = max(max_error, case.verify(results))
    return {"name": name, "size": size, "times_s": times_s, "max_error": max_error, "ok": True}


def measure_loop(launches: int, repeats: int, seed: int) -> dict:
    """`launches` launches of the 32-thread kernel back to back, then one synchronize."""
    from numba import cuda

    from .kernels import build_small_launch, vector_add

    case = build_small_launch(seed)
    kernel = cuda.jit(vector_add)
    args = [cuda.to_device(a) for a in case.args]
    times_s: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(launches):
            kernel[case.grid, case.block](*args)
        cuda.synchronize()
        times_s.append(time.perf_counter() - start)
    max_error = case.verify([args[i].copy_to_host() for i in case.outputs])
    return {"name": "small_launches", "size": launches, "times_s": times_s,
            "max_error": max_error, "ok": True}


def answer(name: str, size: int, repeats: int, seed: int) -> dict:
    """measure() or measure_loop(), with failures as {"ok": False, "error": ...}."""
    try:
        if name == "small_launches":
            return measure_loop(size, repeats, seed)
        return measure(name, size, repeats, seed)
    except AssertionError as exc:
        return {"ok": False, "error": f"result differs from numpy: {exc}"}
    except Exception as exc:  # noqa: BLE001 - reported: the harness prints it in the table
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()}


def serve(name: str, seed: int) -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        size, repeats = (int(v) for v in line.split())
        print(json.dumps(answer(name, size, repeats, seed)), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("size", type=int, nargs="?", default=0)
    parser.add_argument("--serve", action="store_true",
                        help='answer "SIZE REPEATS" lines from stdin, one JSON line each')
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args(argv)
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        print(json.dumps({"ok": False, "error": "run me with NUMBA_ENABLE_CUDASIM=1"}))
        return 2
    warnings.simplefilter("ignore")  # Numba's performance warnings about small grids
    if opts.serve:
        return serve(opts.name, opts.seed)
    result = answer(opts.name, opts.size, opts.repeats, opts.seed)
    print(json.dumps(result))
    sys.stdout.flush()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
