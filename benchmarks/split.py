"""Where splitting a launch over host threads starts to pay: one host thread against all.

`gpukit.sim.parallel.MIN_THREADS` is the smallest launch the simulator splits over cores. This
measures the vector add of `benchmarks.kernels` with all checks at each size from 2^12 floats,
on `CPUBackend(num_threads=1)`, on `CPUBackend(num_threads=<usable cores>)` (every launch split)
and on `CPUBackend()` (the default: split unless the latest split launch found the cores busy,
`gpukit.sim.parallel.worth_splitting`), with the threshold lowered so that every size may
split. The three alternate in rounds of launches (a round of each, `--rounds` times), so a
burst of load on a shared machine falls on all; each cell is the median launch. A ratio above 1
says the split (or default) launch was faster than one thread. "blocks per thread" is how the
last split launch's blocks fell to its host threads (they take them a chunk at a time as they
get to them, `gpukit.sim.parallel`), "cores" the median cores' worth of CPU time the split
launches' threads got, and "default split" how many of the default's launches were split.

`--busy N` runs N processes that only spin while it measures, as other work on the machine
would: a split launch then has a host thread that runs slower or later than the others.

    python -m benchmarks.split [--sizes 12-20] [--rounds 6] [--launches 40] [--busy 0]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import numpy as np

from .kernels import vector_add
from .report import load_average, machine, text_table

HEADERS = ["floats", "1 thread ms", "split ms", "default ms", "1 thread / split",
           "1 thread / default", "host threads", "blocks per thread", "cores", "default split"]
MODES = {"one": 1, "split": 0, "default": None}  # num_threads (0: every usable core)


def _launcher(threads: int | None, n: int) -> tuple[Callable[[], None], Callable[[], list]]:
    """(a launch, then the records of the launches made so far, checked)."""
    from gpukit.backends.cpu import CPUBackend
    from gpukit.sim import parallel

    if threads == 0:
        threads = min(parallel.usable_cores(), parallel.MAX_THREADS)
    backend = CPUBackend(num_threads=threads, watchdog_s=None)
    kernel = backend.compile_kernel(vector_add)
    a = backend.to_device(np.random.default_rng(0).random(n, np.float32))
    out = backend.allocate(n, np.float32)

    def launch() -> None:
        backend.launch_kernel(kernel, -(-n // 256), 256, a, a, out)

    def verified() -> list:
        np.testing.assert_array_equal(backend.to_host(out), backend.to_host(a) * 2)
        return list(backend.launches)
    return launch, verified


@contextlib.contextmanager
def busy(processes: int) -> Iterator[list[subprocess.Popen]]:
    """`processes` other processes spinning on the machine's cores while the block runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(processes)]
    try:
        yield spinners
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def _timed(launch: Callable[[], None], count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        launch()
        times.append(time.perf_counter() - start)
    return times


def rows(exponents: range, rounds: int, launches: int,
         log: Callable[[str], None] = lambda msg: None) -> list[list[str]]:
    from gpukit.sim import parallel

    table = []
    threshold = parallel.MIN_THREADS
    parallel.MIN_THREADS = 0
    try:
        for e in exponents:
            log(f"2^{e}")
            runs = {mode: _launcher(threads, 1 << e) for mode, threads in MODES.items()}
            for launch, _ in runs.values():
                launch()  # compiled, or loaded from the cache
            times: dict[str, list[float]] = {mode: [] for mode in MODES}
            for _ in range(rounds):
                for mode, (launch, _) in runs.items():
                    times[mode] += _timed(launch, launches)
            one, split, default = (statistics.median(times[k]) * 1e3 for k in MODES)
            split_records = runs["split"][1]()[1:]
            default_records = runs["default"][1]()[1:]
            blocks = split_records[-1].extra["host_blocks"]
            got = [r.extra["host_cores"] for r in split_records if "host_cores" in r.extra]
            cores = f"{statistics.median(got):.2f}" if got else "-"  # (1 core: never split)
            default_split = sum(r.extra["host_threads"] > 1 for r in default_records)
            table.append([f"2^{e}", f"{one:.3f}", f"{split:.3f}", f"{default:.3f}",
                          f"{one / split:.2f}", f"{one / default:.2f}", str(len(blocks)),
                          "/".join(str(n) for n in blocks), cores,
                          f"{default_split}/{len(default_records)}"])
    finally:
        parallel.MIN_THREADS = threshold
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="12-20", help="exponents of 2, FIRST-LAST")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--launches", type=int, default=40, help="launches per round")
    parser.add_argument("--busy", type=int, default=0, help="spinning processes beside it")
    args = parser.parse_args()
    first, last = (int(v) for v in args.sizes.split("-"))
    from gpukit.sim import parallel

    info = machine()
    print(f"{info['CPU']}, {info['cores']}; gpukit {info['gpukit']}")
    print(f"load average before: {load_average()}; MIN_THREADS = {parallel.MIN_THREADS}; "
          f"{args.busy} spinning processes beside it")
    with busy(args.busy):
        table = rows(range(first, last + 1), args.rounds, args.launches)
    print(text_table(HEADERS, table))
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
