"""numba-cuda's own kernel tests under Numba's CUDA simulator and under gpukit, side by side.

    python -m benchmarks.numba_cuda_suite [--modules test_math test_atomics ...] [--jobs 2]
        [--test-timeout 120] [--module-timeout 1200] [--out benchmarks/NUMBA_CUDA_SUITE.md]

The tests are the installed numba-cuda's `numba.cuda.tests.cudapy` modules (unittest classes on
`CUDATestCase`), unchanged. Each module runs twice, each time in a fresh `pytest` subprocess:

- "numba-cudasim": with `NUMBA_ENABLE_CUDASIM=1` (Numba's own simulator; the tests marked
  `skip_on_cudasim` skip themselves there);
- "gpukit": with `pytest --gpukit-simulate` (README, "Run numba.cuda programs unchanged": the way
  a library's CI moves from NUMBA_ENABLE_CUDASIM=1 to gpukit). numba's `ENABLE_CUDASIM` stays 0
  there, so `skip_on_cudasim` tests run too: that is why the report also compares the two on the
  tests Numba's simulator runs.

Exclusion rule: a module is left out when its subject is the compiler or the toolchain rather
than what kernels compute (compiling to PTX/LTO-IR, inspecting PTX/SASS/LLVM, debug and line
info, NVVM/libdevice output, fastmath and optimisation flags as seen in PTX), linking external
code, the on-disk cache, the driver and process environment (IPC, several GPUs, several
processes), or numba's compiler internals (IR, bytecode, typing and analysis passes).
`EXCLUDED` names each with its reason; every other `test_*.py` module runs.

Each test has a time limit (`--test-timeout`, via benchmarks/suite_plugin.py: no extra package),
each module run another (`--module-timeout`); tests a killed module did not report count as
"timeout". Outcomes are written as JSON lines per module (in `--work`), so the report can be
rewritten from a finished or partial run with `--report-only`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("numba-cudasim", "gpukit")
OUT = ROOT / "benchmarks" / "NUMBA_CUDA_SUITE.md"

EXCLUDED = {
    "test_caching": "the on-disk cache of compiled code (and linking cached objects)",
    "test_cffi": "linking external C code through cffi",
    "test_compiler": "compile_ptx / compile to PTX and LTO-IR: the compiler's API",
    "test_debug": "debug=True output of the compiler (PTX, NVVM IR)",
    "test_debuginfo": "DWARF debug info in the generated LLVM IR / PTX",
    "test_fastmath": "fastmath flags as seen in the generated PTX",
    "test_inspect": "inspect_llvm / inspect_asm / inspect_sass: PTX and SASS text",
    "test_ipc": "CUDA IPC handles between processes (driver)",
    "test_libdevice": "libdevice functions compiled through NVVM to PTX",
    "test_lineinfo": "line info in the generated PTX",
    "test_multigpu": "several GPUs and contexts (driver)",
    "test_multiprocessing": "CUDA in forked and spawned processes (driver)",
    "test_optimization": "optimisation levels as seen in the generated PTX",
    # numba's compiler internals, ported to the CUDA target: IR, bytecode, typing, analysis
    "test_analysis": "compiler internals: branch pruning and dead-code analysis on numba IR",
    "test_byteflow": "compiler internals: bytecode flow analysis",
    "test_copy_propagate": "compiler internals: copy propagation on numba IR",
    "test_flow_control": "compiler internals: control-flow graph analysis",
    "test_ir": "compiler internals: numba IR objects",
    "test_ir_utils": "compiler internals: numba IR utilities",
    "test_typeconv": "compiler internals: type conversion rules",
    "test_typeinfer": "compiler internals: type inference machinery",
    "test_tracing": "compiler internals: numba's event tracing",
    "test_debuginfo_types": "debug info types in the generated LLVM IR",
    "test_cache_hints": "cache-hint load/store instructions as seen in the generated PTX",
}


def test_dir() -> Path:
    from numba.cuda.tests import cudapy
    return Path(cudapy.__file__).parent


def modules() -> list[str]:
    """Every kernel-launching module: the test_*.py files not in EXCLUDED."""
    return sorted(p.stem for p in test_dir().glob("test_*.py") if p.stem not in EXCLUDED)


def run_module(mode: str, module: str, work: Path, test_timeout: int,
               module_timeout: int) -> dict:
    """Run one module in a fresh pytest subprocess; the outcomes go to work/<mode>/<module>."""
    log = work / mode / f"{module}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    env = {**os.environ, "GPUKIT_SUITE_LOG": str(log),
           "GPUKIT_SUITE_TEST_TIMEOUT": str(test_timeout),
           "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS": "0",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("GPUKIT_SIMULATE", None)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "-p", "benchmarks.suite_plugin", "-W", "ignore", "--import-mode=importlib"]
    if mode == "gpukit":
        args.append("--gpukit-simulate")
    else:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    with tempfile.TemporaryDirectory(prefix="gpukit-ncs-") as scratch:
        ini = Path(scratch) / "pytest.ini"
        # not this repository's settings (nbval, ...); `numba` is a namespace package (numba
        # and numba-cuda share it), so the test modules get their true names
        ini.write_text("[pytest]\nconsider_namespace_packages = true\n")
        args += ["-c", str(ini), "--rootdir", scratch,
                 "--pyargs", f"numba.cuda.tests.cudapy.{module}"]
        start = time.perf_counter()
        timed_out, code, tail = False, None, ""
        try:
            done = subprocess.run(args, cwd=scratch, env=env, capture_output=True, text=True,
                                  timeout=module_timeout, check=False)
            code = done.returncode
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        except subprocess.TimeoutExpired:
            timed_out = True
    meta = {"meta": True, "seconds": round(time.perf_counter() - start, 1),
            "timed_out": timed_out, "returncode": code, "tail": tail}
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(meta) + "\n")
    return meta


def read(work: Path, mode: str, module: str) -> tuple[dict[str, tuple[str, str]], dict | None]:
    """{test id: (outcome, reason)} and the run's meta line (None if it did not finish)."""
    log = work / mode / f"{module}.jsonl"
    results: dict[str, tuple[str, str]] = {}
    collected: list[str] = []
    meta = None
    if not log.exists():
        return results, None
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        if "collected" in rec:
            collected = rec["collected"]
        elif rec.get("meta"):
            meta = rec
        else:
            previous = results.get(rec["nodeid"])
            # a teardown error after a pass or failure: the test counts as an error
            if previous is None or rec["outcome"] in ("failed", "error"):
                results[rec["nodeid"]] = (rec["outcome"], rec["reason"])
    if meta is not None:
        for nodeid in collected:
            if nodeid not in results:
                results[nodeid] = ("timeout", "the module's run was stopped at its time limit"
                                   if meta["timed_out"] else "no outcome reported")
        if not collected and not results:
            results[f"{module} (collection)"] = (
                "error", "no test collected: " + (meta["tail"].splitlines() or [""])[-1])
    return results, meta


def short_id(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1] if "::" in nodeid else nodeid


def cause(reason: str) -> str:
    """A failure's cause, for grouping: the exception type and the message's stable start."""
    m = re.match(r"([\w.]+(?:Error|Exception|Timeout|Warning|Exit|Interrupt)):?\s*(.*)", reason)
    if not m:
        return reason[:80]
    exc, msg = m.group(1).rsplit(".", 1)[-1], m.group(2)
    msg = re.sub(r"'[^']*'|\"[^\"]*\"|\d+(\.\d+)?", "…", msg)
    return f"{exc}: {msg[:70]}"


def category(reason: str) -> str:
    """Which kind of failure: the issue ranks wrong answers, false alarms and crashes first."""
    exc = (re.match(r"([\w.]+)", reason) or re.match(r"(.*)", reason)).group(1).rsplit(".", 1)[-1]
    if exc == "AssertionError":
        return "assertion failed (a wrong answer, or an expected error not raised)"
    if exc in ("OutOfBoundsError", "RaceConditionError", "BarrierError",
               "UninitializedMemoryError", "KernelArithmeticError"):
        return "a gpukit check fired (a false alarm unless the test's kernel has that bug)"
    if exc in ("UnsupportedKernelError", "KernelTypingError", "UnsupportedOperationError"):
        return "gpukit says not simulated / not supported"
    if exc in ("TestTimeout", "timeout") or reason.startswith("the module's run"):
        return "time limit"
    return "another exception (an internal crash, or an API difference)"


def report(work: Path, mods: list[str], settings: dict, note: str = "") -> str:
    import numba

    import gpukit
    try:
        from importlib.metadata import version
        ncuda = version("numba-cuda")
    except Exception:  # noqa: BLE001
        ncuda = "?"
    rows, totals = [], {m: Counter() for m in MODES}
    both_ran = Counter()
    regressions: list[tuple[str, str]] = []
    gk_fail_causes: Counter = Counter()
    gk_fail_categories: Counter = Counter()
    cause_examples: dict[str, str] = {}
    unfinished = []
    seconds = defaultdict(float)
    for module in mods:
        res, metas = {}, {}
        for mode in MODES:
            res[mode], metas[mode] = read(work, mode, module)
            if metas[mode] is None:
                unfinished.append(f"{module} ({mode})")
            else:
                seconds[mode] += metas[mode]["seconds"]
        if any(metas[m] is None for m in MODES):
            continue
        counts = {m: Counter(o for o, _ in res[m].values()) for m in MODES}
        for m in MODES:
            totals[m].update(counts[m])
        cells = []
        for m in MODES:
            c = counts[m]
            cells.append(f"{c['passed']} / {c['failed']} / {c['error']} / {c['skipped']}"
                         + (f" / {c['timeout']} t/o" if c["timeout"] else ""))
        rows.append(f"| {module} | {cells[0]} | {cells[1]} |")
        sim, gk = res["numba-cudasim"], res["gpukit"]
        for nodeid, (outcome, reason) in sorted(gk.items()):
            if outcome in ("failed", "error", "timeout"):
                gk_fail_causes[cause(reason)] += 1
                gk_fail_categories[category(reason)] += 1
                cause_examples.setdefault(cause(reason), f"{module}::{short_id(nodeid)}")
            if sim.get(nodeid, ("",))[0] == "passed":
                both_ran["sim_passed"] += 1
                if outcome == "passed":
                    both_ran["gk_passed"] += 1
                else:
                    regressions.append((f"{module}::{short_id(nodeid)}",
                                        f"{outcome}: {reason}"))
            if sim.get(nodeid, ("",))[0] not in ("skipped", ""):
                both_ran["sim_ran"] += 1
                both_ran["gk_passed_of_sim_ran"] += outcome == "passed"
            elif sim.get(nodeid, ("",))[0] == "skipped":
                both_ran["sim_skipped"] += 1
                both_ran["gk_passed_of_sim_skipped"] += outcome == "passed"
                both_ran["gk_failed_of_sim_skipped"] += outcome in ("failed", "error", "timeout")

    def total(m: str) -> int:
        return sum(totals[m].values())

    def ran(m: str) -> int:
        return total(m) - totals[m]["skipped"]

    sim_p, gk_p = totals["numba-cudasim"]["passed"], totals["gpukit"]["passed"]
    lines = [
        "# numba-cuda's kernel tests: gpukit's simulator and Numba's simulator",
        "",
        ("Written by `python -m benchmarks.numba_cuda_suite` (see its docstring for how it runs "
        "and the exclusion rule). Every figure below is from that run; nothing is asserted."),
        "",
        (f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores, "
        f"{platform.platform()}; Python {platform.python_version()}"),
        f"- numba {numba.__version__}, numba-cuda {ncuda}, gpukit {gpukit.__version__}",
        (f"- per-test time limit {settings['test_timeout']} s, per-module-run limit "
        f"{settings['module_timeout']} s, {settings['jobs']} runs at a time; wall time of the "
        f"module runs: Numba's simulator {seconds['numba-cudasim']:,.0f} s, gpukit "
        f"{seconds['gpukit']:,.0f} s"),
        f"- modules: {len(mods) - len({u.split(' ')[0] for u in unfinished})} of the "
        f"{len(modules())} kernel-launching modules ran in both modes"
        + (f"; not finished in this run (left out of every figure): "
           f"{', '.join(sorted({u.split(' ')[0] for u in unfinished}))}" if unfinished
           else ""),
        f"- excluded by the rule: {', '.join(sorted(EXCLUDED))}",
        *([f"- note: {note}"] if note else []),
        "",
        "## Totals",
        "",
        "| | Numba's simulator (NUMBA_ENABLE_CUDASIM=1) | gpukit (pytest --gpukit-simulate) |",
        "| --- | --- | --- |",
        f"| tests collected | {total('numba-cudasim')} | {total('gpukit')} |",
    ]
    for outcome in ("passed", "failed", "error", "skipped", "timeout"):
        lines.append(f"| {outcome} | {totals['numba-cudasim'][outcome]} | "
                     f"{totals['gpukit'][outcome]} |")

    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:.0f}%" if b else "-"

    lines += [
        (f"| passed of those not skipped | {pct(sim_p, ran('numba-cudasim'))} "
        f"({sim_p}/{ran('numba-cudasim')}) | {pct(gk_p, ran('gpukit'))} "
        f"({gk_p}/{ran('gpukit')}) |"),
        (f"| passed of all collected | {pct(sim_p, total('numba-cudasim'))} | "
        f"{pct(gk_p, total('gpukit'))} |"),
        "",
        (f"Ratio of tests passed, gpukit / Numba's simulator: **{gk_p} / {sim_p} = "
        f"{gk_p / sim_p if sim_p else 0:.2f}**."),
        "",
        (f"On the {both_ran['sim_ran']} tests Numba's simulator runs (does not skip), gpukit "
         f"passes {both_ran['gk_passed_of_sim_ran']} "
         f"({pct(both_ran['gk_passed_of_sim_ran'], both_ran['sim_ran'])}), Numba's simulator "
         f"{sim_p} ({pct(sim_p, both_ran['sim_ran'])}). Numba's simulator skips "
         f"{both_ran['sim_skipped']} tests (`skip_on_cudasim` and similar marks); gpukit "
         "runs those marked `skip_on_cudasim`, since numba's `ENABLE_CUDASIM` stays 0 under "
         f"it: of the {both_ran['sim_skipped']} it passes {both_ran['gk_passed_of_sim_skipped']} and "
         f"fails, errs or times out on {both_ran['gk_failed_of_sim_skipped']}."),
        "",
        "## gpukit's failures by kind",
        "",
        "| kind | tests |",
        "| --- | --- |",
    ]
    lines += [f"| {k} | {n} |" for k, n in gk_fail_categories.most_common()]
    lines += ["", "## gpukit's failures by cause (top 25)", "",
              "| cause | tests | e.g. |", "| --- | --- | --- |"]
    lines += [f"| {c.replace('|', '/')} | {n} | {cause_examples[c]} |"
              for c, n in gk_fail_causes.most_common(25)]
    lines += ["", (f"## Tests that pass on Numba's simulator and not on gpukit "
              f"({len(regressions)})"), ""]
    lines += [f"- `{t}`: {r.replace('|', '/')[:240]}" for t, r in regressions]
    lines += ["", "## Per module: passed / failed / error / skipped", "",
              "| module | Numba's simulator | gpukit |", "| --- | --- | --- |", *rows, ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", nargs="*", help="module names (default: all not excluded)")
    parser.add_argument("--modes", nargs="*", default=list(MODES), choices=MODES)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--test-timeout", type=int, default=120)
    parser.add_argument("--module-timeout", type=int, default=1200)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) /
                        "gpukit-numba-cuda-suite")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--note", default="", help="a line about this run, for the report")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the report from the outcomes already in --work")
    args = parser.parse_args(argv)
    mods = args.modules or modules()
    settings = {"test_timeout": args.test_timeout, "module_timeout": args.module_timeout,
                "jobs": args.jobs}
    (args.work).mkdir(parents=True, exist_ok=True)
    settings_file = args.work / "settings.json"
    if args.report_only and settings_file.exists():
        settings = json.loads(settings_file.read_text())
    if not args.report_only:
        settings_file.write_text(json.dumps(settings))
        jobs = [(mode, m) for m in mods for mode in args.modes]
        with ThreadPoolExecutor(args.jobs) as pool:
            futures = {pool.submit(run_module, mode, m, args.work, args.test_timeout,
                                   args.module_timeout): (mode, m) for mode, m in jobs}
            for future, (mode, m) in futures.items():
                meta = future.result()
                print(f"{mode:14s} {m:40s} {meta['seconds']:7.1f} s"
                      + ("  (module time limit)" if meta["timed_out"] else ""), flush=True)
    text = report(args.work, mods, settings, args.note)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
