"""stumpy's GPU tests under Numba's CUDA simulator and under gpukit's simulation mode, timed.

    python -m benchmarks.third_party [--files test_gpu_stump.py ...] [--timeout 1800] [--write]

Each run is a fresh `pytest` in a subprocess, in a scratch copy of tests/third_party/stumpy/
(stumpy's own tests, unchanged, against the installed stumpy): once with NUMBA_ENABLE_CUDASIM=1,
then twice with `--gpukit-simulate` sharing a fresh compiled-kernel cache directory: first with
it empty (every kernel compiled), then warm (compiled kernels loaded from it, as on a second run
of a suite on the same machine). It prints pass counts and wall times side by side; `--write` puts
them in BENCHMARKS.md's "stumpy" section (the rest of the file is kept). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUMPY_DIR = ROOT / "tests" / "third_party" / "stumpy"
BENCHMARKS_MD = ROOT / "benchmarks" / "BENCHMARKS.md"
# the files a CI run can afford on 2 cores (the rest are the same kernels at other entry points)
DEFAULT_FILES = ("test_gpu_stump.py", "test_gpu_aampdist.py", "test_gpu_mpdist.py")
MODES = ("numba-cudasim", "gpukit", "gpukit-warm")  # gpukit-warm: the same cache, filled
# Every check but `wraparound`: stumpy's _compute_and_update_PI_kernel reads `QT_in[i - 1]` at
# i = 0, relying on Numba wrapping the index to the end of the array (the value it computes there
# is overwritten on the next line), which that check exists to report.
GPUKIT_CHECKS = "launch_limits,bounds,races,barriers,uninitialized,division_by_zero"
BEGIN, END = "<!-- third_party:stumpy:begin -->", "<!-- third_party:stumpy:end -->"


@dataclass
class SuiteRun:
    """One pytest run: its counts by outcome, wall seconds, exit code, and the output's tail."""

    mode: str
    files: tuple[str, ...]
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    returncode: int | None = None
    timed_out: bool = False
    tail: str = ""

    @property
    def passed(self) -> int:
        return self.counts.get("passed", 0)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def pytest_counts(output: str) -> dict[str, int]:
    """The outcome counts of pytest's closing line ("3 failed, 5 passed in 2.1s")."""
    lines = [ln for ln in output.strip().splitlines() if re.search(r"\d+ \w+ in [\d.]+s", ln)]
    counts: dict[str, int] = {}
    for number, word in re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)",
                                   lines[-1] if lines else ""):
        counts["error" if word.startswith("error") else word] = int(number)
    return counts


def run_stumpy(mode: str, files: tuple[str, ...] = DEFAULT_FILES, timeout_s: float = 1800,
               extra: tuple[str, ...] = (), cache_dir: str = "off") -> SuiteRun:
    """Run stumpy's test files (names in tests/third_party/stumpy) in a subprocess; gpukit
    keeps compiled kernels in `cache_dir` ("off": none)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    run = SuiteRun(mode, tuple(files))
    env = {**os.environ, "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS": "0", "GPUKIT_CACHE_DIR": cache_dir}
    env.pop("GPUKIT_SIMULATE", None)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore",
            *extra, *files]
    if mode.startswith("gpukit"):
        args[args.index("-W"):args.index("-W")] = ["--gpukit-simulate",
                                                   f"--gpukit-checks={GPUKIT_CHECKS}"]
    else:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    with tempfile.TemporaryDirectory(prefix="gpukit-stumpy-") as scratch:
        for path in STUMPY_DIR.glob("*.py"):
            shutil.copy(path, scratch)
        start = time.perf_counter()
        try:
            done = subprocess.run(args, cwd=scratch, env=env, capture_output=True, text=True,
                                  timeout=timeout_s, check=False)
            output, run.returncode = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as exc:
            run.timed_out = True
            output = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else \
                (exc.stdout or "")
        run.seconds = time.perf_counter() - start
    run.counts = pytest_counts(output)
    run.tail = "\n".join(output.strip().splitlines()[-15:])
    return run


def table(runs: dict[str, SuiteRun]) -> str:
    """A markdown table of the modes side by side."""
    sim = runs["numba-cudasim"]

    def cell(run: SuiteRun) -> str:
        if run.timed_out:
            return f"timed out after {run.seconds:,.0f} s"
        return f"{run.passed}/{run.total} passed, {run.seconds:,.1f} s"

    def ratio(run: SuiteRun) -> str:
        return f"{sim.seconds / run.seconds:,.1f}x" if run.seconds and not sim.timed_out else "-"

    cold, warm = runs["gpukit"], runs["gpukit-warm"]
    return ("| stumpy test files | NUMBA_ENABLE_CUDASIM=1 | pytest --gpukit-simulate, empty "
            "kernel cache | ratio | the same, warm kernel cache | ratio |\n"
            "| --- | --- | --- | --- | --- | --- |\n"
            f"| {', '.join(sim.files)} | {cell(sim)} | {cell(cold)} | {ratio(cold)} | "
            f"{cell(warm)} | {ratio(warm)} |\n")


def write_section(text: str, path: Path = BENCHMARKS_MD) -> None:
    """Replace (or append) the stumpy section of BENCHMARKS.md, keeping everything else."""
    current = path.read_text() if path.exists() else ""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}\n"
    if BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        current = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        current = current.rstrip("\n") + "\n\n" + block
    path.write_text(current)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.third_party", description=__doc__)
    p.add_argument("--files", nargs="+", default=list(DEFAULT_FILES))
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    p.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gpukit-kernel-cache-") as cache_dir:
        runs = {mode: run_stumpy(mode, tuple(args.files), args.timeout,
                                 cache_dir=cache_dir if mode.startswith("gpukit") else "off")
                for mode in MODES}
    for run in runs.values():
        print(f"== {run.mode}: {run.counts} in {run.seconds:.1f} s (exit {run.returncode})")
        print(run.tail)
    text = table(runs)
    print(text)
    if args.write:
        from .report import machine
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        write_section(
            "## Third-party test suites: stumpy's GPU tests\n\n"
            f"Written by `python -m benchmarks.third_party --write` on {stamp} (same machine "
            "kind as above; each mode a fresh pytest process, compile time included). A "
            "ratio is Numba's simulator's time over gpukit's: below 1, gpukit was slower. These "
            "tests launch small grids, so with an empty kernel cache gpukit's time is mostly "
            "compiling: every kernel is typed and compiled by Numba once per signature, seconds "
            "each for stumpy's large kernels. The warm run is the same suite again with the "
            "compiled kernels that run left in the cache directory (`GPUKIT_CACHE_DIR`), as on "
            "a developer's second run or a CI job that keeps `~/.cache/gpukit`.\n\n"
            + text + "\n" + "".join(f"- {k}: {v}\n" for k, v in machine().items()
                                     if k in ("CPU", "cores", "stumpy", "gpukit")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
