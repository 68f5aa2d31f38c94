"""gpukit's simulator side by side with Numba's CUDA simulator (issue 4's speed targets).

    python -m benchmarks.simulator [--quick] [--only NAME[,NAME]] [--no-write] [--no-numba]
                                   [--profile N] [--strict] [--output PATH]

Each workload of `benchmarks.kernels` runs on gpukit's CPUBackend with every check on (best of a
few launches after a warm-up) and, in a subprocess with NUMBA_ENABLE_CUDASIM=1, on Numba's own
simulator with the same kernel source; both results are checked against numpy. Where Numba's
simulator would take minutes it is measured at a smaller size and scaled by the work (threads,
times loop trips or barriers per thread), which the table says. The table is printed and written
to benchmarks/BENCHMARKS.md with the date and the machine. Targets are reported, never asserted
by tests: these machines are noisy, so compare ratios from one run.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import json
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import checks_cost, report
from . import ops as ops_bench
from .kernels import WORKLOADS, Case, Workload

OUTPUT = Path(__file__).resolve().parent / "BENCHMARKS.md"


@dataclass(frozen=True)
class Target:
    """kind "ratio": at least `value` times faster than Numba's simulator; "seconds": gpukit in
    under `value` s; "numpy": gpukit within `value` times numpy's own time."""

    kind: str
    value: float

    def text(self) -> str:
        return {"ratio": f">= {self.value:g}x", "seconds": f"< {self.value:g} s",
                "numpy": f"<= {self.value:g}x numpy"}[self.kind]


@dataclass(frozen=True)
class Row:
    """A planned measurement: gpukit at `size`, Numba's simulator at `numba_size` (scaled)."""

    workload: str
    size: int
    numba_size: int | None
    targets: tuple[Target, ...] = ()


FULL_PLAN = (
    Row("vector_add", 100_000, 100_000, (Target("ratio", 300),)),
    Row("vector_add", 1_000_000, 100_000, (Target("seconds", 0.5),)),
    Row("matmul_naive", 128, 128, (Target("ratio", 100),)),
    Row("matmul_tiled", 128, 128, (Target("ratio", 100),)),
    Row("matmul_tiled", 256, 128, (Target("seconds", 2.0),)),
    Row("reduce_sum", 65_536, 65_536, (Target("ratio", 100),)),
    Row("histogram", 1_000_000, 100_000),
    Row("stencil", 1_000_000, 100_000),
    Row("hypot_scale", 1_000_000, 100_000, (Target("numpy", 20),)),
)
QUICK_PLAN = (
    Row("vector_add", 10_000, 10_000),
    Row("matmul_naive", 32, 32),
    Row("matmul_tiled", 32, 32),
    Row("reduce_sum", 2_048, 2_048),
    Row("histogram", 10_000, 10_000),
    Row("stencil", 10_000, 10_000),
    Row("hypot_scale", 10_000, 10_000),
)
GPUKIT_REPEATS = {"full": 5, "quick": 2}
NUMBA_TIMEOUT_S = {"full": 1800.0, "quick": 120.0}


@dataclass
class GpukitRun:
    best_s: float
    first_s: float  # the warm-up launch (the kernel already compiled)
    compile_s: float
    wall_ms: float  # LaunchRecord.wall_ms of the best launch
    repeats: int
    threads: int
    stats: Any
    max_error: float
    profile: str = ""


@dataclass
class NumbaRun:
    size: int
    measured_s: float | None
    ok: bool
    error: str = ""


@dataclass
class Result:
    row: Row
    workload: Workload
    gpukit: GpukitRun | None
    numba: NumbaRun | None
    numpy_s: float
    error: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def scale(self) -> float:
        if self.numba is None:
            return 1.0
        return self.workload.work(self.row.size) / self.workload.work(self.numba.size)

    @property
    def numba_s(self) -> float | None:
        if self.numba is None or self.numba.measured_s is None:
            return None
        return self.numba.measured_s * self.scale

    @property
    def ratio(self) -> float | None:
        if self.numba_s is None or self.gpukit is None:
            return None
        return self.numba_s / self.gpukit.best_s

    def met(self, target: Target) -> bool | None:
        if self.gpukit is None:
            return None
        if target.kind == "ratio":
            return None if self.ratio is None else self.ratio >= target.value
        if target.kind == "seconds":
            return self.gpukit.best_s < target.value
        return self.gpukit.best_s <= target.value * self.numpy_s


# -- gpukit ---------------------------------------------------------------------------------------
def device_args(backend: Any, case: Case) -> list[Any]:
    args = []
    for index, value in enumerate(case.args):
        if index in case.fresh:
            args.append(backend.allocate(value.shape, value.dtype))
        elif isinstance(value, np.ndarray):
            args.append(backend.to_device(value))
        else:
            args.append(value)
    return args


def timed_launch(backend: Any, kernel: Any, case: Case,
            profiler: cProfile.Profile | None = None) -> tuple[float, Any, float]:
    """One timed launch on fresh device arrays: (seconds, LaunchRecord, max error)."""
    args = device_args(backend, case)
    if profiler is not None:
        profiler.enable()
    start = time.perf_counter()
    record = backend.launch_kernel(kernel, case.grid, case.block, *args)
    backend.synchronize()
    elapsed_s = time.perf_counter() - start
    if profiler is not None:
        profiler.disable()
    max_error = case.verify([backend.to_host(args[i]) for i in case.outputs])
    for value in args:
        if hasattr(value, "allocation"):
            backend.free(value)
    if not all(record.checks.values()):
        raise RuntimeError(f"a check was off in the benchmark launch: {record.checks}")
    return elapsed_s, record, max_error


def run_gpukit(workload: Workload, size: int, repeats: int, seed: int = 0,
               profile_top: int = 0) -> GpukitRun:
    """Best of `repeats` launches after one warm-up, on a CPUBackend with every check on."""
    from gpukit.backends.cpu import CPUBackend

    backend = CPUBackend()
    case = workload.build(size, seed)
    start = time.perf_counter()
    kernel = backend.compile_kernel(workload.kernel)
    compile_s = time.perf_counter() - start
    first_s, record, max_error = timed_launch(backend, kernel, case)
    best = None
    for _ in range(repeats):
        elapsed_s, record, error = timed_launch(backend, kernel, case)
        max_error = max(max_error, error)
        if best is None or elapsed_s < best[0]:
            best = (elapsed_s, record)
    best_s, best_record = best if best is not None else (first_s, record)
    run = GpukitRun(best_s, first_s, compile_s, best_record.wall_ms, repeats,
                    best_record.threads, best_record.stats, max_error)
    if profile_top:
        profiler = cProfile.Profile()
        timed_launch(backend, kernel, case, profiler)
        run.profile = top_functions(profiler, profile_top)
    return run


def top_functions(profiler: cProfile.Profile, count: int) -> str:
    """The functions with the most own time, one line each (own s, cumulative s, calls)."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in stats.values()) or 1.0
    rows = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[:count]
    lines = [f"{'own s':>8} {'own %':>6} {'cum s':>8} {'calls':>9}  function"]
    for (filename, lineno, func), (_, calls, own_s, cum_s, _) in rows:
        where = _short_path(filename)
        lines.append(f"{own_s:8.4f} {100 * own_s / total:5.1f}% {cum_s:8.4f} {calls:9d}  "
                     f"{func} ({where}:{lineno})")
    return "\n".join(lines)


def _short_path(filename: str) -> str:
    for marker in ("site-packages/", "/gpukit/", "/benchmarks/"):
        if marker in filename:
            head = marker.strip("/") + "/" if marker != "site-packages/" else ""
            return head + filename.split(marker, 1)[1]
    return filename


# -- numpy and Numba's simulator ------------------------------------------------------------------
def time_numpy(workload: Workload, case: Case, budget_s: float = 0.2) -> float:
    """Best time of numpy's own equivalent, repeated for about `budget_s`."""
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 3 or (spent < budget_s and runs < 200):
        start = time.perf_counter()
        workload.numpy_op(*case.args)
        elapsed_s = time.perf_counter() - start
        best, spent, runs = min(best, elapsed_s), spent + elapsed_s, runs + 1
    return best


def run_numba(name: str, size: int, timeout_s: float, seed: int = 0) -> NumbaRun:
    """Numba's CUDA simulator in a subprocess (NUMBA_ENABLE_CUDASIM=1), one launch."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(report.ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "benchmarks.numba_sim", name, str(size), "--seed", str(seed)]
    try:
        proc = subprocess.run(command, cwd=report.ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return NumbaRun(size, None, False, f"timed out after {timeout_s:.0f} s")
    lines = proc.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return NumbaRun(size, None, False, f"exit code {proc.returncode}: {' / '.join(tail)}")
    if not answer.get("ok"):
        return NumbaRun(size, None, False, answer.get("error", "unknown error"))
    return NumbaRun(size, min(answer["times_s"]), True)


# -- the run --------------------------------------------------------------------------------------
def run_plan(plan: Sequence[Row], mode: str, numba: bool = True, profile_top: int = 0,
             repeats: int | None = None, log: Any = print) -> list[Result]:
    results: list[Result] = []
    numba_runs: dict[tuple[str, int], NumbaRun] = {}
    for row in plan:
        workload = WORKLOADS[row.workload]
        label = f"{row.workload} {workload.label(row.size)}"
        log(f"gpukit      {label} ...")
        case = workload.build(row.size, 0)
        result = Result(row, workload, None, None, time_numpy(workload, case))
        try:
            result.gpukit = run_gpukit(workload, row.size, repeats or GPUKIT_REPEATS[mode],
                                       profile_top=profile_top)
        except Exception as exc:  # noqa: BLE001 - reported in the table; the run goes on
            result.error = f"gpukit: {type(exc).__name__}: {str(exc).splitlines()[0]}"
        if numba and row.numba_size is not None:
            key = (row.workload, row.numba_size)
            if key not in numba_runs:
                log(f"Numba sim   {row.workload} {workload.label(row.numba_size)} "
                    "(subprocess, slow) ...")
                numba_runs[key] = run_numba(row.workload, row.numba_size, NUMBA_TIMEOUT_S[mode])
            result.numba = numba_runs[key]
            if not result.numba.ok:
                result.error = "; ".join(filter(None, [result.error,
                                                       f"Numba sim: {result.numba.error}"]))
        _annotate(result)
        results.append(result)
    return results


def _annotate(result: Result) -> None:
    nb, workload = result.numba, result.workload
    if nb is not None and nb.ok and nb.size != result.row.size:
        how = "n^3: threads x loop trips or barriers" if workload.square else "linear in threads"
        result.notes.append(f"Numba sim measured at {workload.label(nb.size)}: "
                            f"{report.seconds(nb.measured_s)} s, scaled x{result.scale:g} ({how})")
    if any(t.kind == "numpy" for t in result.row.targets) and result.gpukit is not None:
        result.notes.append(f"gpukit = {result.gpukit.best_s / result.numpy_s:,.0f}x numpy's "
                            "time")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.simulator",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and fewer repeats (under 2 minutes)")
    parser.add_argument("--only", metavar="NAME[,NAME]",
                        help=f"run these workloads only: {', '.join(WORKLOADS)}")
    parser.add_argument("--no-write", action="store_true", help="do not write BENCHMARKS.md")
    parser.add_argument("--no-numba", action="store_true",
                        help="skip Numba's simulator (gpukit and numpy only)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="cProfile one more gpukit launch per row; show the top N functions")
    parser.add_argument("--repeats", type=int, default=None, help="gpukit launches per row")
    parser.add_argument("--strict", action="store_true",
                        help="exit with status 1 when a target is missed")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write the table")
    opts = parser.parse_args(argv)
    if opts.only:
        opts.only = report.only_names(parser, opts.only, list(WORKLOADS), "workload")
    return opts


def select(plan: Sequence[Row], only: Sequence[str] | None) -> list[Row]:
    return [row for row in plan if not only or row.workload in only]


def full_run_sections() -> list[tuple[str, str, str]]:
    """The tables only a full run writes: the cost of the checks, and gpukit.ops."""
    def log(message: str) -> None:
        print(message, flush=True)

    return [
        ("The cost of the checks: a fast path for elementwise kernels",
         ("The stretch goal: within 20x of numpy for an elementwise kernel, saying which checks "
         "the fast path keeps. It is the same engine with fewer checks "
         "(`CPUBackend(checks=...)`), on the 1,000,000-element `hypot_scale` kernel."),
         report.markdown_table(checks_cost.HEADERS, checks_cost.rows(log=log))),
        ("The operations of gpukit.ops at teaching sizes",
         ("float32 on the simulated T4 with every check on: the simulation's wall time (best of "
         "3, after a warm-up) and the modeled GPU time of the same launches (launch overhead "
         "plus the larger of counted global bytes over bandwidth and declared flops over peak "
         "FP32; a model, not a measurement). The simulator's cost follows the statements each "
         "thread executes and the barriers it waits at, not GPU work; the model follows the "
         "global traffic, which tiling cuts."),
         report.markdown_table(ops_bench.HEADERS, ops_bench.rows(log=log))),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    opts = parse_args(argv)
    mode = "quick" if opts.quick else "full"
    plan = select(QUICK_PLAN if opts.quick else FULL_PLAN, opts.only)
    started, load_before = dt.datetime.now(dt.timezone.utc), report.load_average()
    results = run_plan(plan, mode, numba=not opts.no_numba, profile_top=opts.profile,
                       repeats=opts.repeats, log=lambda msg: print(msg, flush=True))
    print()
    print(report.text_table(report.MAIN_HEADERS, report.main_rows(results)))
    print()
    print(report.text_table(report.DETAIL_HEADERS, report.detail_rows(results)))
    print()
    print(report.summary(results))
    for r in results:
        if r.gpukit is not None and r.gpukit.profile:
            print(f"\ncProfile, {r.workload.name} {r.workload.label(r.row.size)}:")
            print(r.gpukit.profile)
    if not opts.no_write:
        command = " ".join(["python -m benchmarks.simulator", *argv])
        sections = [] if opts.quick or opts.only else full_run_sections()
        text = report.markdown(results, command, started, (load_before, report.load_average()),
                               quick=opts.quick, sections=sections)
        opts.output.write_text(text)
        print(f"\nwrote {opts.output}")
    failed = any(r.error for r in results)
    missed = any(r.met(t) is not True for r in results for t in r.row.targets)
    return 1 if failed or (opts.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
