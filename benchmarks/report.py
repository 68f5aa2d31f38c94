"""Formatting for the benchmark harness: the machine's description, the tables, BENCHMARKS.md.

Pure formatting of `benchmarks.simulator.Result`s: it runs and times nothing itself.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (the platform's processor string elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, timeout=10, check=True).stdout
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True, timeout=10,
                               check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.strip() + (" with uncommitted changes" if dirty.strip() else "")


def _memory_gib() -> str:
    try:
        pages, page_bytes = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return "unknown"
    return f"{pages * page_bytes / 2**30:.1f} GiB"


def load_average() -> str:
    try:
        return " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        "CPU": cpu_model(),
        "cores": f"{os.cpu_count()} logical, {usable} usable by this process",
        "memory": _memory_gib(),
        "OS": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version(),
        "numpy": _version("numpy"),
        "numba": _version("numba"),
        "numba-cuda": _version("numba-cuda"),
        "gpukit": f"{_version('gpukit')} (git {_git_commit()})",
    }


def only_names(parser: Any, text: str, known: Sequence[str], what: str) -> list[str]:
    """The comma-separated names of an `--only` option, each one of `known` (else the parser
    stops, naming the unknown ones and the `what`s there are)."""
    wanted = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        parser.error(f"unknown {what}(s) {', '.join(unknown)}; the {what}s are: "
                     f"{', '.join(known)}")
    return wanted


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value >= 0.001 else f"{value:.2e}"


def ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}x" if value >= 10 else f"{value:.2g}x"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded for a terminal; the last column is left unpadded."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    lines = []
    for cells in (headers, ["-" * w for w in widths], *rows):
        padded = [str(c).ljust(w) for c, w in zip(cells[:-1], widths)] + [str(cells[-1])]
        lines.append("  ".join(padded).rstrip())
    return "\n".join(lines)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return "\n".join([line(headers), line(["---"] * len(headers)), *map(line, rows)])


# -- the tables -----------------------------------------------------------------------------------
MAIN_HEADERS = ["kernel", "size", "gpukit s", "Numba sim s", "ratio", "target", "met?",
                "numpy s", "notes"]
DETAIL_HEADERS = ["kernel", "size", "threads", "compile ms", "warm-up s", "best s",
                  "LaunchRecord.wall_ms", "launches", "global MB r/w", "shared MB r/w",
                  "atomics", "barriers", "max abs error"]
MET = {True: "yes", False: "NO", None: "?"}


def main_rows(results: Sequence[Any]) -> list[list[str]]:
    rows = []
    for r in results:
        scaled = " (scaled)" if r.scale != 1 and r.numba_s is not None else ""
        rows.append([
            r.workload.title, r.workload.label(r.row.size),
            seconds(r.gpukit.best_s) if r.gpukit else "FAILED", seconds(r.numba_s) + scaled,
            ratio(r.ratio), "; ".join(t.text() for t in r.row.targets) or "report",
            "; ".join(MET[r.met(t)] for t in r.row.targets) or "-",
            seconds(r.numpy_s), "; ".join(filter(None, [r.error, *r.notes]))])
    return rows


def detail_rows(results: Sequence[Any]) -> list[list[str]]:
    rows = []
    for r in results:
        g = r.gpukit
        if g is None:
            continue
        s = g.stats
        rows.append([
            r.workload.name, r.workload.label(r.row.size), f"{g.threads:,}",
            f"{g.compile_s * 1e3:.1f}", seconds(g.first_s), seconds(g.best_s),
            f"{g.wall_ms:.1f}", str(g.repeats),
            f"{s.global_load_bytes / 1e6:.2f} / {s.global_store_bytes / 1e6:.2f}",
            f"{s.shared_load_bytes / 1e6:.2f} / {s.shared_store_bytes / 1e6:.2f}",
            f"{s.atomics:,}", f"{s.barriers:,}", f"{g.max_error:.2g}"])
    return rows


def summary(results: Sequence[Any]) -> str:
    met = [r.met(t) for r in results for t in r.row.targets]
    wrong = sum(1 for r in results if r.error)
    return (f"targets met: {sum(m is True for m in met)} of {len(met)}"
            + (f"; {met.count(None)} without data" if None in met else "")
            + (f"; {wrong} row(s) with errors" if wrong else "; every result matches numpy"))


METHOD = [
    ("- Same kernel source on both sides (`benchmarks/kernels.py`): gpukit's CPUBackend runs the "
     "plain function; Numba's simulator runs `cuda.jit` of it in a subprocess with "
     "`NUMBA_ENABLE_CUDASIM=1`. Both results are checked against numpy on every launch."),
    ("- gpukit: a fresh `CPUBackend()` (device T4, every check on: launch limits, bounds, races, "
     "barriers, uninitialised reads, division by zero), the kernel compiled once, one warm-up "
     "launch, then the best of the launches shown. A launch is `launch_kernel` + `synchronize` "
     "on device arrays made beforehand (outputs the kernel overwrites are `allocate`d "
     "uninitialised); copies are not timed. `LaunchRecord.wall_ms` is the simulator's own time "
     "for the launch, argument binding included; compile ms is `compile_kernel`."),
    ("- Numba's simulator: one launch (it is slow), copies not timed. Where it would take "
     "minutes it runs at a smaller size and its time is scaled by the work, as the notes say: "
     "linearly in threads for the 1-D kernels, by n^3 for the n x n matmuls (threads times "
     "loop trips, or times barriers for the tiled one)."),
    ("- ratio = Numba sim s / gpukit s. numpy s is numpy's own equivalent (`a + b`, `A @ B`, "
     "`a.sum()`, `np.bincount`, the elementwise expression), best of several runs, for scale."),
    ("- Machines like this one are noisy and shared: compare ratios within one run, not "
     "absolute times across runs."),
]


def scaling_section(path: Path | None = None) -> list[str]:
    """BENCHMARKS.md's pointer to SCALING.md: its date line and its findings, quoted as written
    (no figure here comes from anywhere else); nothing when there is no SCALING.md."""
    path = path or ROOT / "benchmarks" / "SCALING.md"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    written = next((line for line in lines if line.startswith("Written by ")), "")
    try:
        start = lines.index("## Findings") + 1
    except ValueError:
        return []
    stop = next((i for i, line in enumerate(lines[start:], start) if line.startswith("## ")),
                len(lines))
    found = [line for line in lines[start:stop] if line.startswith("- ")]
    return ["## Scaling curves", "",
            ("Every workload from 2^10 elements up, in four check modes, against numpy and "
             "Numba's simulator, in one interleaved run: [SCALING.md](SCALING.md) "
             "(`python -m benchmarks.scaling`). Its findings, quoted from it "
             f"({written[len('Written by '):].split(';')[0].strip()}):"), "", *found, ""]


def refresh_scaling_section(path: Path | None = None) -> bool:
    """Rewrite BENCHMARKS.md's "Scaling curves" section from SCALING.md as it is now (a new
    scaling run must not leave BENCHMARKS.md quoting the old one). False when there is none."""
    path = path or ROOT / "benchmarks" / "BENCHMARKS.md"
    text = path.read_text() if path.exists() else ""
    lines = text.split("\n")
    if "## Scaling curves" not in lines:
        return False
    start = lines.index("## Scaling curves")
    stop = next((k for k in range(start + 1, len(lines)) if lines[k].startswith("## ")),
                len(lines))
    path.write_text("\n".join(lines[:start] + scaling_section() + lines[stop:]))
    return True


def markdown(results: Sequence[Any], command: str, started: Any, loads: tuple[str, str],
             quick: bool, sections: Sequence[tuple[str, str, str]] = ()) -> str:
    """BENCHMARKS.md: the date, the machine, both tables, the method, extra (title, intro,
    table) sections, any profiles."""
    lines = [
        "# Benchmarks: gpukit's simulator and Numba's CUDA simulator", "",
        (f"Written by `{command}` on {started:%Y-%m-%d %H:%M} UTC; do not edit by hand, "
         "rerun it."), "",
        "## Machine", "",
        *[f"- {key}: {value}" for key, value in machine().items()],
        f"- load average (1/5/15 min) before: {loads[0]}; after: {loads[1]}", "",
        "## Results" + (" (quick run: sizes below the targets')" if quick else ""), "",
        markdown_table(MAIN_HEADERS, main_rows(results)), "",
        summary(results) + ".", "",
        "## gpukit's side in detail", "",
        markdown_table(DETAIL_HEADERS, detail_rows(results)), "",
        "## How these numbers are made", "", *METHOD, ""]
    for title, intro, table in sections:
        lines += [f"## {title}", "", intro, "", table, ""]
    lines += scaling_section()
    profiled = [r for r in results if r.gpukit is not None and r.gpukit.profile]
    if profiled:
        lines += ["## Where gpukit's time goes (cProfile of one launch, by own time)", ""]
        for r in profiled:
            lines += [f"### {r.workload.name} {r.workload.label(r.row.size)}", "", "```",
                      r.gpukit.profile, "```", ""]
    return "\n".join(lines)
