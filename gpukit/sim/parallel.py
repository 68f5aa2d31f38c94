"""A launch's blocks on several host threads at once.

Blocks of a launch never wait for one another (a kernel that calls grid.sync() is run as one),
so where nothing a block writes can be seen by another block, they may run side by side. The
launch (`gpukit.sim.launch`) decides where that holds and gives each host thread a context of
its own: its own shared and local memory and its own counters. The threads take the blocks a
chunk at a time, in block order, from a counter they share (`sync.begin_block`): a thread that
starts sooner or runs faster (its core is not busy with other work) takes more chunks, so the
launch does not wait for its slowest thread's fixed share. What the contexts counted is summed
into the launch's context afterwards. An error is the one a launch run one block after another
would report: the one in the first block in block order that failed (`_failing_block`), and as
chunks are taken in block order, once a thread fails the others finish the chunks they hold
and take no more (every block before the failing one has been taken by then).

The helper threads are a crew kept for the process (`_Crew`). Handing a share to a thread that
sleeps costs a wake-up, and on a virtual machine a wake-up can take 50-150 us, several times
over in a pool's hand-offs (the job, the GIL, the result): more than a share of a mid-sized
launch is worth. So a helper, after its share, watches for the next launch for a while
(`IDLE_SPIN_S`) before it sleeps, as OpenMP runtimes do, and the launching thread, after its own
share, watches the helpers' done flags (`WAIT_SPIN_S`) before it sleeps. Watching is a compiled
loop of volatile loads that holds no GIL, and the flags are written from compiled code too (the
launch's number by its driver as it starts, `sync.begin_launch`; a helper's by its next watch),
so that no hand-off waits for the GIL while the other thread holds it. A helper that is slow to
wake finds fewer blocks left. A launch that finds the crew busy (another host thread is
splitting a launch of its own) runs its contexts one after another on its own thread (the
first takes every block).

A split launch pays only where its threads get cores to run on. Each measures the CPU time it
got in its part over its part's wall time (the share of it spent on a core); the shares' sum is
the cores' worth the launch ran on. (Not the CPU time over the launch's wall time: that counts
the hand-offs too, which on an idle machine read as busy cores in a launch of a fraction of a
millisecond: 1.26-1.7 cores' worth for 2^16 threads on 2 idle cores, 2026-12-07, against
1.8-2.0 this way, and about 1 with two other busy processes.)
Under BUSY_CORES, other work keeps the machine's cores busy (a test suite's other workers, a
second notebook): the threads then take turns with it and with each other, and a helper taken
off its core while it holds blocks holds the launch back, so launches the caller left to the
simulator (`num_threads=None`) run on one thread until a split launch PROBE_S later measures
again (`worth_splitting`). Only launches whose helpers were all awake as they began count: one
that slept may start late on an idle machine too.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any

import numpy as np

from . import layout as L
from .engine_cache import njit
from .lowlevel import compare_exchange, poll, relax, signal

# GPU threads; smaller launches run on one host thread: there, handing out the shares costs
# more than it saves (a vector add on 2 cores, 2026-12-07, medians of 200 launches: 2^15 floats
# took 0.28 ms split and 0.29 ms not; 2^16, 0.34 and 0.46 ms; 2^17, 0.53 and 0.90 ms)
MIN_THREADS = 1 << 16
MAX_THREADS = 16
IDLE_SPIN_S = 0.0003  # how long a helper watches for the next launch before it sleeps
WAIT_SPIN_S = 0.002  # how long the launching thread watches the helpers before it sleeps
CHUNKS_PER_THREAD = 16
# A split launch whose threads got less CPU time than this many cores' worth over its wall time
# says the machine's cores are busy with other work: launches that may run on one thread then do,
# until one split launch every PROBE_S looks again (`worth_splitting`)
BUSY_CORES = 1.3
PROBE_S = 0.5


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def chunk(nblocks: int, threads: int) -> int:
    """Blocks a host thread takes at a time: about CHUNKS_PER_THREAD chunks per thread, so that
    the threads finish within a chunk of one another, with a claim (an atomic add on a shared
    word, about 0.1 us) per chunk."""
    return max(1, nblocks // (threads * CHUNKS_PER_THREAD))


class _Gauge:
    """What the latest split launch got: its threads' CPU time over its wall time (the cores'
    worth it ran on) and when it ended (perf_counter seconds)."""

    cores = math.inf
    at = -math.inf


def worth_splitting() -> bool:
    """Whether a launch the simulator may split should be: unless the latest split launch, less
    than PROBE_S ago, got under BUSY_CORES cores' worth of CPU time. On a machine whose cores
    other work keeps busy, a split launch's threads take turns with that work and with each
    other, and a helper taken off its core while it holds blocks holds the launch back: one
    thread, which has a core to itself more often, finishes sooner."""
    return _Gauge.cores >= BUSY_CORES or time.perf_counter() - _Gauge.at >= PROBE_S


@njit(nogil=True)
def _stop_claims(words: int) -> None:
    signal(words + 8, 1)


@njit(nogil=True)
def _take_gate(addr: int, launch: int, taken: int) -> bool:
    return compare_exchange(addr, launch, taken)


def _failing_block(context: np.ndarray) -> int:
    """The block a failed context's error belongs to: the failing thread's (a deferred error's
    thread is kept with it), or, where the watchdog stopped the context as a block started (site
    -1) or Numba raised without a gpukit error, the block it was running."""
    if context[L.ERR_CODE] != 0 and not (context[L.ERR_CODE] == L.E_WATCHDOG
                                         and context[L.ERR_SITE] == -1):
        return int(context[L.ERR_GT]) // int(context[L.TPB])
    return int(context[L.BLIN])


@njit(nogil=True)
def _watch(addr: int, count: int, value: int, polls: int) -> bool:
    """Whether all `count` int64 words from `addr` equal `value` within `polls` looks."""
    k = 0
    for _ in range(polls):
        while k < count and poll(addr + 8 * k) == value:
            k += 1
        if k == count:
            return True
        relax()
    return False


@njit(nogil=True)
def _finish_and_watch(flags: int, k: int, done: int, polls: int) -> bool:
    """Helper `k` has finished launch `done`; whether the next one starts within `polls`."""
    signal(flags + 8 * k, done)
    for _ in range(polls):
        if poll(flags) != done:
            return True
        relax()
    return False


def _looks_per_second(addr: int) -> float:
    """How many looks `_watch` takes a second here: a few million where a look's spin-wait
    hint is slow (a virtual machine may trap it), a hundred million or more where it is not."""
    _watch(addr, 1, -1, 1)  # compiled (or loaded) before it is timed
    polls = 256
    while True:
        start = time.perf_counter()
        _watch(addr, 1, -1, polls)
        elapsed = time.perf_counter() - start
        if elapsed > 2e-4:
            return polls / elapsed
        polls *= 4


class _Crew:
    """Helper threads 1, 2, ..., each running its share of the current launch (`job`).

    `flags[0]` is the number of the latest launch started, `flags[k]` the number of the latest
    launch helper k has finished: the launching thread writes the first (from its driver, or
    here), helper k only its own (from compiled code). `sleepers` counts the helpers that
    stopped watching and wait to be woken (under `wake`).

    `gates[k]` says whether helper k takes part in the launch: the launching thread opens it
    (the launch's number) as the launch starts, and whichever of the two takes it first (an
    atomic compare-and-exchange) decides: the helper as it starts its part (it takes part), or
    the launching thread once its own part is over (the helper does not: it has not started,
    and as the blocks are all taken by then, it would find none). So a helper that wakes late,
    or whose core is busy, is not waited for."""

    def __init__(self) -> None:
        self.flags = np.zeros(MAX_THREADS, np.int64)
        self.address = self.flags.ctypes.data
        self.gates = np.zeros(MAX_THREADS, np.int64)
        self.wake = threading.Condition()
        self.busy = threading.Lock()  # held by the launch the crew is running
        self.launch = 0
        self.job: tuple = (0, None, 0)
        self.size = 1  # threads, counting the launching one
        self.sleepers = 0
        self.polls_per_s = _looks_per_second(self.address)

    def _polls(self, seconds: float) -> int:
        return max(int(seconds * self.polls_per_s), 1)

    def _serve(self, k: int, done: int) -> None:
        idle = self._polls(IDLE_SPIN_S)
        while True:
            if not _finish_and_watch(self.address, k, done, idle):
                with self.wake:
                    self.sleepers += 1
                    timeout = 0.002  # a launch starting now may have missed that it sleeps
                    while self.flags[0] == done:
                        self.wake.wait(timeout)
                        timeout = None
                    self.sleepers -= 1
            done = self._share(k)

    def _share(self, k: int) -> int:
        """Run helper `k`'s share of the current launch, if it has one; the launch's number.
        (Nothing of the launch outlives the call: a freed array's memory is given back.)"""
        launch, one, count = self.job
        if k < count and _take_gate(self.gates.ctypes.data + 8 * k, launch, -launch):
            one(k)
        return launch

    def publish(self, launch: int) -> None:
        """Start `launch` here (its driver did not), waking the helpers that sleep."""
        with self.wake:
            self.flags[0] = launch
            self.wake.notify_all()

    def run(self, one: Any, contexts: list[np.ndarray]) -> bool:
        """`one(k)` for every context k, on this thread (k = 0) and the helpers at once: the
        first context's driver starts the launch (`L.SIGNAL`) unless a helper sleeps. Whether
        every helper was awake, watching for it, as the launch began (none asleep or new)."""
        count = len(contexts)
        awake = self.size >= count and not self.sleepers
        while self.size < count:
            threading.Thread(target=self._serve, args=(self.size, self.launch), daemon=True,
                             name=f"gpukit-blocks-{self.size}").start()
            self.size += 1
        self.gates[1:count] = self.launch + 1  # open before a helper can see the job
        self.job = (self.launch + 1, one, count)
        self.launch += 1
        if self.sleepers:
            self.publish(self.launch)
        else:
            contexts[0][L.SIGNAL], contexts[0][L.SIGNAL_VALUE] = self.address, self.launch
        try:
            one(0)
            if self.flags[0] != self.launch or self.sleepers:  # the driver failed to start,
                self.publish(self.launch)  # or a helper went to sleep as it started
            self.finish(count, WAIT_SPIN_S)
        except BaseException:  # a KeyboardInterrupt while waiting: stop every share first
            for context in contexts:
                context[L.STOP] = 1
            self.publish(self.launch)
            self.finish(count, 0.0)
            raise
        finally:
            self.job = (self.launch, None, 0)  # nothing of the launch is kept
        return awake

    def finish(self, count: int, spin_s: float) -> None:
        """After the launching thread's part: the helpers that have not started the launch
        will not (their gates), and those that have are waited for."""
        for k in range(1, count):
            if _take_gate(self.gates.ctypes.data + 8 * k, self.launch, 0):
                self.flags[k] = self.launch  # as if it had finished: nothing to wait for
        self.wait(count, spin_s)

    def wait(self, count: int, spin_s: float) -> None:
        """Until helpers 1 .. count - 1 have finished the latest launch: watch them for
        `spin_s` (returning to Python each millisecond at most, where a KeyboardInterrupt is
        seen), then look again after each half millisecond of sleep."""
        addr, launch = self.address + 8, self.launch
        polls, end = self._polls(min(spin_s, 0.001)), time.perf_counter() + spin_s
        while not _watch(addr, count - 1, launch, polls):
            if time.perf_counter() > end:
                time.sleep(0.0005)
                polls = 1


_crew: _Crew | None = None
_crew_made = threading.Lock()


def _the_crew() -> _Crew:
    global _crew
    with _crew_made:
        if _crew is None:
            _crew = _Crew()
        return _crew


def _forked() -> None:  # a forked child has none of its parent's threads
    global _crew, _crew_made
    _crew, _crew_made = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def run(driver: Any, contexts: list[np.ndarray], values: list, c: np.ndarray) -> float | None:
    """Run `driver` on every context at once (the first on this thread), then sum what they
    counted into `c`; the cores' worth of CPU time the threads got (the sum of each thread's
    CPU time in its part over its part's wall time), or None where the crew was busy and this
    thread ran every context. If any run raised, `c` becomes the context of the one whose error
    is in the first block, and its exception is raised again."""
    errors: list[BaseException | None] = [None] * len(contexts)
    on_core = [0.0] * len(contexts)  # each thread's CPU time in its part over its wall time

    def one(k: int) -> None:
        start, wall = time.thread_time(), time.perf_counter()
        try:
            driver(contexts[k], *values)
        except BaseException as exc:  # noqa: BLE001 (reported below, in block order)
            errors[k] = exc
            _stop_claims(int(contexts[k][L.CLAIM]))
        on_core[k] = (time.thread_time() - start) / max(time.perf_counter() - wall, 1e-9)

    crew = _the_crew()
    cores = None
    if crew.busy.acquire(blocking=False):
        try:
            awake = crew.run(one, contexts)
            end = time.perf_counter()
            cores = sum(min(share, 1.0) for share in on_core)
            if awake:  # (a helper that slept may come late, busy cores or not: no measure)
                _Gauge.cores, _Gauge.at = cores, end
        finally:
            crew.busy.release()
    else:  # another host thread's launch has the crew
        for k in range(len(contexts)):
            one(k)
    stamp = max(int(context[L.STAMP]) for context in contexts)
    failed = [k for k, exc in enumerate(errors) if exc is not None]
    if failed:
        k = min(failed, key=lambda k: _failing_block(contexts[k]))
        c[:] = contexts[k]
        c[L.STAMP] = stamp
        raise errors[k]
    _merge(c, contexts, stamp)
    return cores


def _merge(c: np.ndarray, contexts: list[np.ndarray], stamp: int) -> None:
    """The launch's counters in `c`: barriers and per-site executions summed, the stamp the
    latest any share reached (what the next launch counts on from)."""
    c[L.STAMP] = stamp
    c[L.BARRIERS] = sum(int(context[L.BARRIERS]) for context in contexts)
    base, n = int(c[L.SITE_BASE]), int(c[L.NSITES]) * L.SITE_FIELDS
    rows = [context[base:base + n] for context in contexts]
    merged = c[base:base + n]
    merged[:] = rows[0]
    for row in rows[1:]:
        merged += row
    sizes = merged[L.SC_ITEMSIZE::L.SITE_FIELDS]  # an item size is the largest, not a sum
    sizes[:] = rows[0][L.SC_ITEMSIZE::L.SITE_FIELDS]
    for row in rows[1:]:
        np.maximum(sizes, row[L.SC_ITEMSIZE::L.SITE_FIELDS], out=sizes)
