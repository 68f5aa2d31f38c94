"""Scaling curves: gpukit's simulator in every check mode, numpy and Numba's simulator, size by size.

    python -m benchmarks.scaling [--quick] [--only NAME[,NAME]] [--no-numba] [--budget-min M]
                                 [--cap-s S] [--numba-cap-s S] [--host-budget-gib G]
                                 [--output PATH] [--json PATH]

For each curve (vector add, naive and tiled matmul, reduction, histogram, stencil, and a loop of
small launches) the sizes double from 2^10 elements (32x32 matrices; 16 launches for the loop)
and, at each size, back to back: gpukit's CPUBackend in each check mode of MODES, numpy's own
equivalent, and Numba's simulator (one worker process per curve, NUMBA_ENABLE_CUDASIM=1). Every
result is checked against numpy. A curve stops growing when gpukit no longer fits the host memory
budget, when the next launch is predicted (from the last size and the work's growth) to take over
the point cap, or when the curve's share of the run budget is spent; Numba's simulator stops
earlier, at the first size predicted to take over its own cap. Each stop is written down.
The result is benchmarks/SCALING.md, with the machine, the load average and the run's wall time.
Timings are never asserted by tests: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import report
from .kernels import LOOP_THREADS, WORKLOADS, Case, build_small_launch
from .simulator import device_args

OUTPUT = Path(__file__).resolve().parent / "SCALING.md"


@dataclass(frozen=True)
class Mode:
    key: str
    title: str
    checks: Any  # CPUBackend(checks=...)
    threads: int | None = None  # CPUBackend(num_threads=...): None, one per usable core


def _modes() -> tuple[Mode, ...]:
    from gpukit.sim import CHECKS

    return (
        Mode("all", "all checks (the default)", True),
        Mode("no_races", "all but races", [c for c in CHECKS if c != "races"]),
        Mode("bounds", "launch limits and bounds only", ["launch_limits", "bounds"]),
        Mode("off", "none (checks=False)", False),
        Mode("one_thread", "all checks, the blocks on one host thread", True, 1),
    )


@dataclass(frozen=True)
class Curve:
    """kind "1d": size = elements; "square": size = n for n x n matrices; "loop": size = number
    of launches of the 32-thread kernel (cells in microseconds per launch)."""

    name: str
    title: str
    kind: str

    def sizes(self, quick: bool) -> list[int]:
        if self.kind == "square":
            return [2 ** e for e in range(5, 7 if quick else 13)]
        if self.kind == "loop":
            return [2 ** e for e in (range(2, 4) if quick else range(4, 11))]
        return [2 ** e for e in range(10, 12 if quick else 29)]

    @property
    def growth(self) -> float:
        """How the work grows from one size to the next."""
        return 8.0 if self.kind == "square" else 2.0

    def label(self, size: int) -> str:
        if self.kind == "square":
            return f"{size}x{size}"
        if self.kind == "loop":
            return f"{size:,} launches"
        return f"2^{size.bit_length() - 1}"

    def build(self, size: int) -> Case:
        return build_small_launch(0) if self.kind == "loop" else WORKLOADS[self.name].build(size, 0)


CURVES = (
    Curve("vector_add", "vector add (float32)", "1d"),
    Curve("matmul_naive", "naive matmul", "square"),
    Curve("matmul_tiled", "tiled 16x16 shared-memory matmul", "square"),
    Curve("reduce_sum", "shared-memory tree reduction", "1d"),
    Curve("histogram", "histogram, 256 bins, atomics", "1d"),
    Curve("stencil", "3-point stencil, shared tile with halo", "1d"),
    Curve("small_launches", f"loop of small launches ({LOOP_THREADS}-thread vector add)", "loop"),
)


@dataclass(frozen=True)
class Settings:
    quick: bool
    cap_s: float  # a point whose launch is predicted to take longer is skipped
    numba_cap_s: float
    budget_s: float  # the whole run
    host_budget_bytes: int
    numba: bool


# -- gpukit ---------------------------------------------------------------------------------------
class GpukitMode:
    """One CPUBackend in one check mode for one curve, kept across its sizes."""

    def __init__(self, mode: Mode, curve: Curve, settings: Settings):
        from gpukit.backends.cpu import CPUBackend

        self.mode, self.curve, self.settings = mode, curve, settings
        self.backend = CPUBackend(checks=mode.checks, watchdog_s=None, num_threads=mode.threads,
                                  host_memory_budget_bytes=settings.host_budget_bytes)
        kernel = WORKLOADS["vector_add" if curve.kind == "loop" else curve.name].kernel
        start = time.perf_counter()
        self.kernel = self.backend.compile_kernel(kernel)
        self.compile_s = time.perf_counter() - start
        self.first_launch_s: float | None = None
        self.last_s: float | None = None  # the last size's best time
        self.stopped = ""

    def predicted_s(self) -> float:
        return 0.0 if self.last_s is None else self.last_s * self.curve.growth

    def _once(self, case: Case, size: int) -> float:
        """One timed launch (or loop of launches) on device arrays made before, then checked."""
        be = self.backend
        args = device_args(be, case)
        try:
            start = time.perf_counter()
            for _ in range(size if self.curve.kind == "loop" else 1):
                be.launch_kernel(self.kernel, case.grid, case.block, *args)
            be.synchronize()
            elapsed_s = time.perf_counter() - start
            case.verify([be.to_host(args[i]) for i in case.outputs])
        finally:
            for value in args:
                if hasattr(value, "allocation"):
                    be.free(value)
        return elapsed_s

    def point(self, case: Case, size: int) -> dict:
        predicted = self.predicted_s()
        if self.first_launch_s is None:  # the first launch compiles (or loads from the cache)
            self.first_launch_s = self._once(case, size)
            warm_up, repeats = False, 3
        else:
            warm_up = predicted < 2.0
            repeats = 5 if predicted < 0.05 else 3 if predicted < 2.0 else 2
        if warm_up:
            self._once(case, size)
        best = min(self._once(case, size) for _ in range(repeats))
        self.last_s = best
        return {"s": best, "launches": repeats}

    def close(self) -> None:
        del self.backend, self.kernel
        gc.collect()


# -- Numba's simulator, one worker per curve ------------------------------------------------------
class NumbaWorker:
    """`python -m benchmarks.numba_sim NAME --serve` in a subprocess, asked one size at a time."""

    def __init__(self, name: str, cap_s: float):
        env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(report.ROOT),
                                                          env.get("PYTHONPATH")]))
        self.cap_s = cap_s
        self.growth = 1.0
        self.last_s: float | None = None
        self.stopped = ""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.numba_sim", name, "--serve"], cwd=report.ROOT,
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def point(self, size: int, label: str) -> dict | None:
        """{"s": best seconds} or {"error": ...}; None once stopped (self.stopped says why)."""
        if self.stopped:
            return None
        if self.last_s is not None and self.last_s * self.growth > self.cap_s:
            self.stopped = (f"stopped before {label}: predicted {self.last_s * self.growth:.0f} s "
                            f"> the {self.cap_s:.0f} s cap")
            self.close()
            return None
        repeats = 3 if self.last_s is None or self.last_s * self.growth < 1.0 else 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{size} {repeats}\n")
        self.proc.stdin.flush()
        # a generous wait (the import of Numba on the first call, a loaded machine)
        timeout_s = 60.0 + 2 * repeats * self.cap_s
        try:
            answer = json.loads(self.lines.get(timeout=timeout_s))
        except queue.Empty:
            self.stopped = f"stopped at {label}: no answer within {timeout_s:.0f} s"
            self.close()
            return None
        if not answer.get("ok"):
            self.stopped = f"failed at {label}: {answer.get('error', 'unknown error')}"
            self.close()
            return {"error": answer.get("error", "unknown error")}
        self.last_s = min(answer["times_s"])
        return {"s": self.last_s, "launches": repeats}

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# -- numpy ----------------------------------------------------------------------------------------
def numpy_s(curve: Curve, case: Case, size: int, budget_s: float = 0.5) -> float:
    """Best time of numpy's own equivalent over at least 10 runs and about `budget_s` (the loop:
    `size` calls of np.add on 32 floats)."""
    if curve.kind == "loop":
        a, b = case.args[0], case.args[1]

        def op() -> None:
            for _ in range(size):
                np.add(a, b)
    else:
        workload = WORKLOADS[curve.name]

        def op() -> None:
            workload.numpy_op(*case.args)
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 10 or (spent < budget_s and runs < 500):
        start = time.perf_counter()
        op()
        elapsed_s = time.perf_counter() - start
        best, spent, runs = min(best, elapsed_s), spent + elapsed_s, runs + 1
    return best


# -- one curve ------------------------------------------------------------------------------------
def run_curve(curve: Curve, modes: Sequence[Mode], settings: Settings, share_s: float,
              log: Callable[[str], None]) -> dict:
    started = time.perf_counter()
    gpukit = {m.key: GpukitMode(m, curve, settings) for m in modes}
    numba = NumbaWorker(curve.name, settings.numba_cap_s) if settings.numba else None
    if numba is not None:
        numba.growth = curve.growth
    points: list[dict] = []
    stop = ""
    try:
        for size in curve.sizes(settings.quick):
            label = curve.label(size)
            live = [g for g in gpukit.values() if not g.stopped]
            for g in live:
                if g.predicted_s() > settings.cap_s:
                    g.stopped = (f"stopped before {label}: predicted {g.predicted_s():.0f} s "
                                 f"> the {settings.cap_s:.0f} s cap")
            live = [g for g in live if not g.stopped]
            if not live:
                stop = "stopped: every check mode reached the point cap or the host budget"
                break
            spent = time.perf_counter() - started
            estimate = sum(g.predicted_s() * 4 for g in live)
            if numba is not None and not numba.stopped and numba.last_s is not None:
                estimate += min(numba.last_s * curve.growth, settings.numba_cap_s)
            if spent + estimate > share_s:
                stop = (f"stopped before {label}: about {estimate:.0f} s more would pass this "
                        f"curve's share of the run budget ({share_s:.0f} s, {spent:.0f} s spent)")
                break
            log(f"{curve.name} {label}")
            case = curve.build(size)
            point: dict = {"size": size, "label": label, "load": report.load_average(),
                           "gpukit": {}}
            numpy_before = numpy_s(curve, case, size)
            for g in live:
                try:
                    point["gpukit"][g.mode.key] = g.point(case, size)
                except Exception as exc:  # noqa: BLE001 - written down; the curve goes on
                    if type(exc).__name__ == "HostMemoryBudgetError":
                        g.stopped = f"stopped at {label}: does not fit the host budget"
                        point["gpukit"][g.mode.key] = {"skipped": "over the host budget"}
                    else:
                        g.stopped = (f"failed at {label}: {type(exc).__name__}: "
                                     f"{str(exc).splitlines()[0]}")
                        point["gpukit"][g.mode.key] = {"error": g.stopped}
            point["numpy_s"] = min(numpy_before, numpy_s(curve, case, size))
            point["numba"] = numba.point(size, label) if numba is not None else None
            del case
            points.append(point)
    finally:
        if numba is not None:
            numba.close()
        compile_info = {g.mode.key: {"compile_s": g.compile_s,
                                     "first_launch_s": g.first_launch_s} for g in gpukit.values()}
        stops = {g.mode.key: g.stopped for g in gpukit.values()}
        for g in gpukit.values():
            g.close()
    return {"name": curve.name, "title": curve.title, "kind": curve.kind, "points": points,
            "compile": compile_info, "mode_stops": stops, "stop": stop,
            "numba_stop": (numba.stopped if numba is not None else "not run"),
            "wall_s": time.perf_counter() - started}


def run(curves: Sequence[Curve], settings: Settings, log: Callable[[str], None] = print) -> dict:
    modes = _modes()
    started_at = dt.datetime.now(dt.timezone.utc)
    load_before, machine = report.load_average(), report.machine()  # the code as it starts
    start = time.perf_counter()
    results = []
    for index, curve in enumerate(curves):
        remaining = settings.budget_s - (time.perf_counter() - start)
        share = max(remaining, 0.0) / (len(curves) - index)
        results.append(run_curve(curve, modes, settings, share, log))
    return {"started": started_at.isoformat(timespec="minutes"), "wall_s": time.perf_counter() - start,
            "load_before": load_before, "load_after": report.load_average(),
            "machine": machine, "quick": settings.quick,
            "settings": {"cap_s": settings.cap_s, "numba_cap_s": settings.numba_cap_s,
                         "budget_s": settings.budget_s,
                         "host_budget_bytes": settings.host_budget_bytes,
                         "numba": settings.numba},
            "modes": [{"key": m.key, "title": m.title, "checks": m.checks,
                       "threads": m.threads} for m in modes],
            "curves": results}


# -- the report -----------------------------------------------------------------------------------
def _cell_time(curve: dict, point: dict, seconds: float) -> str:
    if curve["kind"] == "loop":
        return f"{seconds / point['size'] * 1e6:,.1f} us"
    return report.seconds(seconds)


def _times(curve: dict, point: dict, seconds: float | None, floor: float) -> str:
    if seconds is None:
        return "-"
    return f"{_cell_time(curve, point, seconds)} ({report.ratio(seconds / floor)})"


def curve_table(curve: dict, modes: Sequence[dict]) -> tuple[list[str], list[list[str]]]:
    unit = "per launch" if curve["kind"] == "loop" else "s"
    headers = (["size"] + [f"{m['key']} {unit} (x numpy)" for m in modes]
               + [f"numpy {unit}", f"Numba sim {unit}", "Numba sim / all", "load 1 min"])
    rows = []
    for p in curve["points"]:
        cells = [p["label"]]
        for m in modes:
            g = p["gpukit"].get(m["key"])
            if g is None:
                cells.append("skipped")
            elif "error" in g or "skipped" in g:
                cells.append(g.get("error") or g["skipped"])
            else:
                cells.append(_times(curve, p, g["s"], p["numpy_s"]))
        nb, all_ = p.get("numba"), p["gpukit"].get("all", {})
        cells.append(_cell_time(curve, p, p["numpy_s"]))
        if nb is None:
            cells += ["-", "-"]
        elif "error" in nb:
            cells += [nb["error"], "-"]
        else:
            cells.append(_cell_time(curve, p, nb["s"]))
            cells.append(report.ratio(nb["s"] / all_["s"]) if "s" in all_ else "-")
        cells.append(p["load"].split(" / ")[0])
        rows.append(cells)
    return headers, rows


def findings(data: dict) -> list[str]:
    """One line per curve, numbers only from this run."""
    lines = []
    for c in data["curves"]:
        pts = [p for p in c["points"] if "s" in p["gpukit"].get("all", {})]
        if not pts:
            lines.append(f"- {c['title']}: no measurement with all checks.")
            continue
        worst = max(pts, key=lambda p: p["gpukit"]["all"]["s"] / p["numpy_s"])
        last = pts[-1]
        text = (f"- {c['title']}: with all checks, {report.ratio(last['gpukit']['all']['s'] / last['numpy_s'])}"
                f" numpy's time at the largest size run ({last['label']}); the most, "
                f"{report.ratio(worst['gpukit']['all']['s'] / worst['numpy_s'])}, at {worst['label']}")
        one = [p for p in pts if "s" in p["gpukit"].get("one_thread", {})]
        if one:
            text += (f"; on one host thread at {one[-1]['label']}: "
                     f"{report.ratio(one[-1]['gpukit']['one_thread']['s'] / one[-1]['gpukit']['all']['s'])}"
                     " all checks' time")
        off = [p for p in pts if "s" in p["gpukit"].get("off", {})]
        if off:
            lo = off[-1]
            text += (f"; checks off at {lo['label']}: "
                     f"{report.ratio(lo['gpukit']['off']['s'] / lo['numpy_s'])} numpy")
        nb = [p for p in pts if p.get("numba") and "s" in p["numba"]]
        if nb:
            low = min(nb, key=lambda p: p["numba"]["s"] / p["gpukit"]["all"]["s"])
            high = max(nb, key=lambda p: p["numba"]["s"] / p["gpukit"]["all"]["s"])
            text += (f"; Numba's simulator {report.ratio(low['numba']['s'] / low['gpukit']['all']['s'])}"
                     f" slower than all checks at {low['label']} (the least) to "
                     f"{report.ratio(high['numba']['s'] / high['gpukit']['all']['s'])} at "
                     f"{high['label']}, largest size it ran {nb[-1]['label']}")
        if c["kind"] == "loop":
            per = ", ".join(f"{m} {p_['s'] / last['size'] * 1e6:,.1f} us"
                            for m, p_ in last["gpukit"].items() if "s" in p_)
            text += f"; per launch at {last['label']}: {per}"
            if last.get("numba") and "s" in last["numba"]:
                text += f", Numba sim {last['numba']['s'] / last['size'] * 1e6:,.0f} us"
        lines.append(text + ".")
    return lines


METHOD = [
    ("- Same kernel source everywhere (`benchmarks/kernels.py`). At each size, back to back: "
     "gpukit in each check mode, numpy's own equivalent, then Numba's simulator (one worker "
     "process per curve, `python -m benchmarks.numba_sim NAME --serve`, "
     "`NUMBA_ENABLE_CUDASIM=1`). Every gpukit and Numba result is checked against numpy."),
    ("- gpukit: one `CPUBackend(checks=..., watchdog_s=None, host_memory_budget_bytes=...)` per "
     "mode and curve, the kernel compiled once. The first size's first launch is timed apart "
     "(\"first launch\", below: it compiles, or loads the compiled kernel from the cache); then "
     "the best of 3 launches. At later sizes: one warm-up launch and the best of 5 (a launch "
     "predicted under 0.05 s) or 3; a launch predicted over 2 s gets no warm-up and the best of "
     "2. A launch is `launch_kernel` + `synchronize` on device arrays made before it "
     "(not timed); the loop of small launches times its N launches and one synchronize, "
     "shown per launch."),
    ("- numpy: `a + b`, `A @ B`, `a.sum()`, `np.bincount`, the stencil as three shifted slices, "
     "and for the loop N calls of `np.add` on 32 floats; the best of at least 10 runs (about "
     "0.5 s of them) taken just before and again just after gpukit's modes at that size, so a "
     "burst of load on this shared machine does not inflate the floor. It is the floor: each "
     "gpukit cell shows (x numpy) = gpukit / numpy."),
    ("- Numba's simulator: best of 3 launches while a launch is predicted under 1 s, else one. "
     "It stops at the first size predicted (its last time times the work's growth: 2x per "
     "step, 8x for the n x n matmuls) to pass its cap. Numba sim / all = its time over gpukit's "
     "with all checks."),
    ("- The sizes double from 2^10 elements, matrices from 32x32 (2^10 elements) by 2x per side, "
     "the loop from 16 to 1,024 launches (fewer in a quick run). A gpukit mode stops when its next launch "
     "is predicted to pass the point cap or its arrays do not fit the host budget; a curve "
     "stops when its share of the run budget (what is left, split over the curves left) "
     "would be passed. The stops are written under each table."),
    ("- The machine is shared and was loaded: the 1-minute load average is shown per size. "
     "Compare ratios within this run, not absolute times across runs."),
]


def markdown(data: dict, command: str) -> str:
    from gpukit.sim import parallel

    modes = data["modes"]
    s = data["settings"]
    lines = [
        "# Scaling: gpukit's simulator in every check mode, numpy and Numba's simulator", "",
        (f"Written by `{command}` on {data['started'][:16].replace('T', ' ')} UTC in "
         f"{data['wall_s'] / 60:.1f} minutes; do not edit by hand, rerun it."), "",
        "## Machine", "",
        *[f"- {key}: {value}" for key, value in data["machine"].items()],
        (f"- load average (1/5/15 min) before: {data['load_before']}; after: "
         f"{data['load_after']}"),
        (f"- limits: point cap {s['cap_s']:g} s per gpukit launch, Numba's simulator cap "
         f"{s['numba_cap_s']:g} s, run budget {s['budget_s'] / 60:g} min, host budget "
         f"{s['host_budget_bytes'] / 2**30:g} GiB" + ("" if s["numba"] else
                                                      "; Numba's simulator not run")),
        "- kernel cache: " + data.get("cache", "as found"), "",
        "## Check modes", "",
        *[f"- `{m['key']}`: {m['title']} (`checks={m['checks']!r}`"
          + (f", `num_threads={m['threads']}`)" if m.get("threads") else ")") for m in modes],
        ("- every mode but `one_thread` splits a launch of "
         f"2^{parallel.MIN_THREADS.bit_length() - 1} threads or more over one host "
         "thread per usable core (`num_threads=None`, `gpukit.sim.parallel`) where its blocks "
         "write no global memory another block may touch; cores here: "
         f"{data['machine']['cores']}"), "",
        "## Findings", "",
        *findings(data), "",
        "## How these numbers are made", "", *METHOD, ""]
    for c in data["curves"]:
        headers, rows = curve_table(c, modes)
        lines += [f"## {c['title']} (`{c['name']}`)", "", report.markdown_table(headers, rows), ""]
        notes = [f"- `{k}`: {v}" for k, v in c["mode_stops"].items() if v]
        if c["stop"]:
            notes.append(f"- the curve {c['stop']}")
        if c["numba_stop"]:
            notes.append(f"- Numba's simulator {c['numba_stop']}")
        first = ", ".join(f"{k} {v['compile_s'] * 1e3:.0f} ms + {report.seconds(v['first_launch_s'])} s"
                          for k, v in c["compile"].items() if v["first_launch_s"] is not None)
        notes.append(f"- compile_kernel + first launch at the first size: {first}")
        notes.append(f"- this curve took {c['wall_s']:.0f} s")
        lines += notes + [""]
    return "\n".join(lines)


# -- the command ----------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaling",
                                     description=__doc__.splitlines()[0])
    names = [c.name for c in CURVES]
    parser.add_argument("--quick", action="store_true", help="two sizes per curve (seconds)")
    parser.add_argument("--only", metavar="NAME[,NAME]", help=f"these curves: {', '.join(names)}")
    parser.add_argument("--no-numba", action="store_true", help="skip Numba's simulator")
    parser.add_argument("--budget-min", type=float, default=None,
                        help="the whole run's budget in minutes (default 25; quick 2)")
    parser.add_argument("--cap-s", type=float, default=20.0,
                        help="skip a gpukit launch predicted to take longer (default 20)")
    parser.add_argument("--numba-cap-s", type=float, default=None,
                        help="stop Numba's simulator at a launch predicted longer (default 30; "
                        "quick 5)")
    parser.add_argument("--host-budget-gib", type=float, default=4.0,
                        help="gpukit's host memory budget (CPUBackend(host_memory_budget_bytes))")
    parser.add_argument("--cache-dir", default="fresh",
                        help='GPUKIT_CACHE_DIR for the run: "fresh" (a new temporary directory, '
                        'so first launches compile; the default), "as-is", or a path')
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write SCALING.md")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw results")
    opts = parser.parse_args(argv)
    if opts.only:
        opts.only = report.only_names(parser, opts.only, names, "curve")
    return opts


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    opts = parse_args(argv)
    settings = Settings(
        quick=opts.quick, cap_s=opts.cap_s,
        numba_cap_s=opts.numba_cap_s if opts.numba_cap_s is not None else (5.0 if opts.quick
                                                                            else 30.0),
        budget_s=60 * (opts.budget_min if opts.budget_min is not None else (2 if opts.quick
                                                                           else 25)),
        host_budget_bytes=int(opts.host_budget_gib * 2**30), numba=not opts.no_numba)
    curves = [c for c in CURVES if not opts.only or c.name in opts.only]
    saved = os.environ.get("GPUKIT_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="gpukit-scaling-cache-") as fresh:
        if opts.cache_dir == "fresh":
            os.environ["GPUKIT_CACHE_DIR"], cache = fresh, "a fresh empty GPUKIT_CACHE_DIR"
        elif opts.cache_dir != "as-is":
            os.environ["GPUKIT_CACHE_DIR"], cache = opts.cache_dir, f"GPUKIT_CACHE_DIR={opts.cache_dir}"
        else:
            cache = f"as found (GPUKIT_CACHE_DIR={saved or 'unset'})"
        try:
            data = run(curves, settings, log=lambda msg: print(msg, flush=True))
        finally:
            if saved is None:
                os.environ.pop("GPUKIT_CACHE_DIR", None)
            else:
                os.environ["GPUKIT_CACHE_DIR"] = saved
    data["cache"] = (cache + ", so each curve's first launch compiles its kernel"
                     if opts.cache_dir == "fresh" else cache)
    command = " ".join(["python -m benchmarks.scaling", *argv])
    text = markdown(data, command)
    opts.output.write_text(text)
    if opts.output == OUTPUT:
        from .report import refresh_scaling_section
        refresh_scaling_section()
    if opts.json is not None:
        opts.json.write_text(json.dumps(data, indent=1, default=str))
    print(text)
    print(f"\nwrote {opts.output}")
    failed = any("error" in g for c in data["curves"] for p in c["points"]
                 for g in p["gpukit"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
