"""A launch's blocks on several host threads at once.

Blocks of a launch never wait for one another (a kernel that calls grid.sync() is run as one),
so where nothing a block writes can be seen by another block, they may run side by side. The
launch (`gpukit.sim.launch`) decides where that holds and gives each host thread a context of
its own: its share of the blocks (a contiguous run of block indices, as `ORDER`), its own shared
and local memory, and its own counters. The compiled driver releases the GIL, so the threads run
on as many cores. What the contexts counted is summed into the launch's context afterwards; an
error is the one the first failing share (in block order) stopped at, as a launch run one block
after another would report it, and the shares after a failing one are stopped early.
"""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from . import layout as L

# GPU threads; smaller launches run on one host thread: there, handing out the shares costs
# more than it saves (`python -m benchmarks.scaling` on 2 cores with this at 2^17, 2026-12-06:
# a vector add of 2^17 floats took 1.47 ms split and 1.09 ms not; of 2^18, 1.35 and 1.93 ms)
MIN_THREADS = 1 << 18
MAX_THREADS = 16

_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def shares(nblocks: int, threads: int) -> list[np.ndarray]:
    """`nblocks` block indices in `threads` contiguous runs of nearly equal length."""
    bounds = np.linspace(0, nblocks, threads + 1).astype(np.int64)
    return [np.arange(lo, hi, dtype=np.int64) for lo, hi in itertools.pairwise(bounds)]


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    if _pool is None or _pool_size < workers:
        if _pool is not None:
            _pool.shutdown(wait=False)
        _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gpukit-blocks")
        _pool_size = workers
    return _pool


def run(driver: Any, contexts: list[np.ndarray], values: list, c: np.ndarray) -> None:
    """Run `driver` on every context at once (the first on this thread), then sum what they
    counted into `c`. If any run raised, `c` becomes the context of the first that did and
    its exception is raised again."""
    errors: list[BaseException | None] = [None] * len(contexts)

    def one(k: int) -> None:
        try:
            driver(contexts[k], *values)
        except BaseException as exc:  # noqa: BLE001 (reported below, in block order)
            errors[k] = exc
            for later in contexts[k + 1:]:  # their errors would come after this one
                later[L.STOP] = 1

    futures = [_executor(len(contexts) - 1).submit(one, k) for k in range(1, len(contexts))]
    try:
        one(0)
        wait(futures)
    except BaseException:  # a KeyboardInterrupt while waiting: stop every share first
        for context in contexts:
            context[L.STOP] = 1
        wait(futures)
        raise
    stamp = max(int(context[L.STAMP]) for context in contexts)
    for k, exc in enumerate(errors):
        if exc is not None:
            c[:] = contexts[k]
            c[L.STAMP] = stamp
            raise exc
    _merge(c, contexts, stamp)


def _merge(c: np.ndarray, contexts: list[np.ndarray], stamp: int) -> None:
    """The launch's counters in `c`: barriers and per-site executions summed, the stamp the
    latest any share reached (what the next launch counts on from)."""
    c[L.STAMP] = stamp
    c[L.BARRIERS] = sum(int(context[L.BARRIERS]) for context in contexts)
    base, n = int(c[L.SITE_BASE]), int(c[L.NSITES]) * L.SITE_FIELDS
    rows = np.stack([context[base:base + n] for context in contexts]).reshape(
        len(contexts), -1, L.SITE_FIELDS)
    merged = rows.sum(axis=0)
    merged[:, L.SC_ITEMSIZE] = rows[:, :, L.SC_ITEMSIZE].max(axis=0)
    c[base:base + n] = merged.ravel()
