"""The simulator-speed targets, measured for several git revisions of gpukit in one run.

    python -m benchmarks.revisions REV [REV ...] [--repeat N] [--quick] [--target NAME]
                                   [--threads N] [--output PATH]
    python -m benchmarks.revisions db49acd .    # the speed issue's baseline; the tree now

Each REV is a commit (anything `git rev-parse` takes) or `.` for the working tree. Each is copied
out (`git archive`; the working tree's tracked files as they are on disk) into a scratch folder
with a kernel cache of its own, and every measurement runs in a fresh Python process of that copy
(this file's `worker`, with the copy's gpukit and `benchmarks.kernels`), the revisions taking
turns at each target and each repeat, so that a burst of load on a shared machine falls on all of them alike. The targets
are the speed issue's (#19), all with every check on: a tiled 16x16 shared-memory matmul of
1024x1024, a tree reduction of 2^24 floats, two elementwise kernels of 2^24 elements against
numpy's time in the same process, and a loop of 1,000 launches of a 32-thread vector add (per
launch). A worker compiles its kernel and warms up at a small size, then times the best of its
launches; the result is checked against numpy. `--threads N` runs every launch on N host threads
(`CPUBackend(num_threads=N)`; by default a large launch is split over the cores): with 1, what a
change to the code each simulated thread runs saves shows apart from how the launch is split.
Writes benchmarks/REVISIONS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from . import report

OUTPUT = report.ROOT / "benchmarks" / "REVISIONS.md"
# name -> (workload, size, warm-up size, timed launches, #19's target)
TARGETS = {
    "tiled matmul 1024x1024": ("matmul_tiled", 1024, 64, 1,
                               "10x faster than when #19 was filed (53 s on its machine)"),
    "tree reduction 2^24": ("reduce_sum", 1 << 24, 1 << 12, 3,
                            "10x faster than when #19 was filed (7 s on its machine)"),
    "vector add 2^24": ("vector_add", 1 << 24, 1 << 12, 3, "within 10x numpy's time"),
    "elementwise hypot 2^24": ("hypot_scale", 1 << 24, 1 << 12, 3, "within 10x numpy's time"),
    "1,000 launches of 32 threads": ("loop", 1000, 10, 3, "under 50 us a launch"),
}
# the last commit before the compiled engine: the simulator #19 measured when it was filed
FILED = "db49acd"
QUICK = {"tiled matmul 1024x1024": 256, "tree reduction 2^24": 1 << 20,
         "vector add 2^24": 1 << 20, "elementwise hypot 2^24": 1 << 20,
         "1,000 launches of 32 threads": 100}


# -- a worker: one target, one revision, one process ------------------------------------------
def _device_args(be, case):
    return [be.allocate(v.shape, v.dtype) if k in case.fresh
            else be.to_device(v) if isinstance(v, np.ndarray) else v
            for k, v in enumerate(case.args)]


def _once(be, kernel, case, launches: int) -> float:
    args = _device_args(be, case)
    start = time.perf_counter()
    for _ in range(launches):
        be.launch_kernel(kernel, case.grid, case.block, *args)
    be.synchronize()
    seconds = time.perf_counter() - start
    case.verify([be.to_host(args[k]) for k in case.outputs])
    return seconds


def worker(name: str, size: int, warm: int, repeats: int, threads: int | None = None) -> dict:
    from gpukit.backends.cpu import CPUBackend

    from . import kernels as K

    loop = name == "loop"
    workload = K.WORKLOADS["vector_add" if loop else name]
    if loop:  # one block of 32 threads (K.build_small_launch, which older revisions lack)
        def build(n: int) -> Any:
            return replace(K.build_vector_add(32, 0), block=(32,))
    else:
        def build(n: int) -> Any:
            return workload.build(n, 0)
    be = CPUBackend(watchdog_s=None, num_threads=threads)
    kernel = be.compile_kernel(workload.kernel)
    _once(be, kernel, build(warm), warm if loop else 1)  # compile and warm up
    case = build(size)
    best = min(_once(be, kernel, case, size if loop else 1) for _ in range(repeats))
    result = {"s": best / size if loop else best}
    if not loop:
        floor = float("inf")
        for _ in range(10):
            start = time.perf_counter()
            workload.numpy_op(*case.args)
            floor = min(floor, time.perf_counter() - start)
        result["numpy_s"] = floor
    return result


# -- the run ---------------------------------------------------------------------------------
def _copy(rev: str, into: Path) -> str:
    """Copy revision `rev` into `into`; its short description."""
    root = report.ROOT
    if rev == ".":
        files = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True,
                               check=True).stdout.decode().split("\0")
        with tarfile.open(into / "tree.tar", "w") as tar:
            for f in files:
                if f and (root / f).is_file():
                    tar.add(root / f, arcname=f)
        label = "working tree"
    else:
        commit = subprocess.run(["git", "rev-parse", "--short", rev], cwd=root, check=True,
                                capture_output=True, text=True).stdout.strip()
        with open(into / "tree.tar", "wb") as out:
            subprocess.run(["git", "archive", commit], cwd=root, stdout=out, check=True)
        label = commit
    with tarfile.open(into / "tree.tar") as tar:
        tar.extractall(into / "src", filter="data")
    # the workers run this file's code against the copy's gpukit and benchmark kernels
    (into / "src" / "benchmarks" / "revisions.py").write_text(Path(__file__).read_text())
    return label


def _measure(src: Path, cache: Path, target: str, quick: bool, threads: int | None = None
             ) -> dict:
    name, size, warm, repeats, _ = TARGETS[target]
    size = QUICK[target] if quick else size
    env = {**os.environ, "PYTHONPATH": str(src), "GPUKIT_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-m", "benchmarks.revisions", "--worker",
                           json.dumps([name, size, warm, repeats, threads])], cwd=src, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cell(result: dict | None, target: str) -> str:
    if result is None:
        return "-"
    if "error" in result:
        return f"failed: {result['error']}"
    if "numpy_s" not in result:
        return f"{result['s'] * 1e6:.1f} us"
    return f"{report.seconds(result['s'])} s ({result['s'] / result['numpy_s']:.1f}x numpy)"


def run(revs: list[str], repeat: int, quick: bool, targets: list[str] | None = None,
        threads: int | None = None) -> str:
    started = dt.datetime.now(dt.timezone.utc)
    load_before = report.load_average()
    with tempfile.TemporaryDirectory(prefix="gpukit-revisions-") as tmp:
        copies = []
        for k, rev in enumerate(revs):
            into = Path(tmp) / f"rev{k}"
            (into / "cache").mkdir(parents=True)
            copies.append((_copy(rev, into), into))
        best: dict[tuple[str, str], dict] = {}
        chosen = [t for t in TARGETS if not targets or t in targets]
        for _ in range(repeat):
            for target in chosen:
                for label, into in copies:
                    result = _measure(into / "src", into / "cache", target, quick, threads)
                    print(f"{target} @ {label}: {_cell(result, target)}", flush=True)
                    old = best.get((target, label))
                    if old is None or "error" in old or result.get("s", 1e99) < old["s"]:
                        best[(target, label)] = result
    labels = [label for label, _ in copies]
    rows = []
    for target in chosen:
        goal = TARGETS[target][-1]
        cells = [_cell(best.get((target, label)), target) for label in labels]
        first, last = best.get((target, labels[0]), {}), best.get((target, labels[-1]), {})
        gain = first.get("s", 0) / last["s"] if "s" in first and "s" in last else None
        rows.append([target, *cells, report.ratio(gain) if gain else "-", goal])
    headers = ["target (all checks)", *labels, f"{labels[0]} / {labels[-1]}", "#19's target"]
    machine = "\n".join(f"- {k}: {v}" for k, v in report.machine().items())
    return "\n".join([
        "# The simulator-speed targets, revision by revision",
        "",
        (f"Written by `python -m benchmarks.revisions {' '.join(revs)}"
         f"{' --quick' if quick else ''}"
         f"{''.join(f' --target {t!r}' for t in targets or [])}"
         f"{f' --threads {threads}' if threads else ''} --repeat {repeat}` on "
         f"{started:%Y-%m-%d %H:%M} UTC; do not edit by hand, rerun it."),
        "",
        "## Machine", "", machine,
        f"- load average (1/5/15 min) before: {load_before}; after: {report.load_average()}",
        "", "## Results", "",
        ("The best of each revision's workers (each a fresh process, the revisions taking "
         "turns); numpy's time is measured in the same worker. The ratio column is the first "
         f"revision's time over the last one's. {FILED} is the last commit before the compiled "
         "engine: the simulator the speed issue (#19) measured when it was filed, on a slower "
         "machine than this one."), "",
        report.markdown_table(headers, rows), "",
        "Sizes: " + ("the quick ones (" + ", ".join(f"{t}: {QUICK[t]:,}" for t in chosen)
                     + ")" if quick else "as named") + ".", ""])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.revisions",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("revs", nargs="*", help="commits, or . for the working tree")
    parser.add_argument("--repeat", type=int, default=2, help="workers per target and revision")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--target", action="append", choices=list(TARGETS),
                        help="measure only this target (again for more); default: all")
    parser.add_argument("--threads", type=int, help="host threads per launch (default: the "
                        "simulator's choice, which splits large launches over the cores)")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write the report")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.worker:
        print(json.dumps(worker(*json.loads(options.worker))))
        return
    if not options.revs:
        parser.error("name at least one revision (a commit, or . for the working tree)")
    text = run(options.revs, options.repeat, options.quick, options.target, options.threads)
    options.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
