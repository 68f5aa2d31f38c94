"""A launch's blocks on several host threads (gpukit.sim.parallel): the same results, counters
and errors as one thread, and one thread wherever blocks could see one another's writes."""

from __future__ import annotations

import gc
import math
import os
import signal
import threading
import time
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda, float32

from benchmarks.kernels import TILE, matmul_tiled, vector_add
from gpukit.backends.cpu import CPUBackend
from gpukit.errors import (
    KernelArithmeticError,
    KernelTimeoutError,
    OutOfBoundsError,
    RaceConditionError,
    UninitializedMemoryError,
)
from gpukit.sim import layout as L
from gpukit.sim import parallel


@pytest.fixture(autouse=True)
def any_size(monkeypatch):
    """Test-sized launches are split too (real ones only from parallel.MIN_THREADS threads)."""
    monkeypatch.setattr(parallel, "MIN_THREADS", 0)


@pytest.fixture
def splits(monkeypatch):
    """The number of host threads of each launch that was split, failed ones included."""
    seen: list[int] = []
    run = parallel.run

    def counted(driver, contexts, values, c):
        seen.append(len(contexts))
        return run(driver, contexts, values, c)
    monkeypatch.setattr(parallel, "run", counted)
    return seen


def local_median3(a, out):
    """Each thread sorts three values in a local array and keeps the middle one."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        tmp = cuda.local.array(3, float32)
        for k in range(3):
            tmp[k] = a[i, k]
        for p in range(3):
            for q in range(2 - p):
                if tmp[q] > tmp[q + 1]:
                    tmp[q], tmp[q + 1] = tmp[q + 1], tmp[q]
        out[i] = tmp[1]


def coordinates(out):
    """Every thread writes its block and thread coordinates at its own place."""
    x, y, z = cuda.grid(3)
    if x < out.shape[0] and y < out.shape[1] and z < out.shape[2]:
        out[x, y, z] = (((cuda.blockIdx.x * 7 + cuda.blockIdx.y) * 5 + cuda.blockIdx.z) * 1024
                        + (cuda.threadIdx.x * 11 + cuda.threadIdx.y) * 3 + cuda.threadIdx.z)


def coordinates_reference(shape, block):
    x, y, z = np.indices(shape)
    bx, tx = np.divmod(x, block[0])
    by, ty = np.divmod(y, block[1])
    bz, tz = np.divmod(z, block[2])
    return (((bx * 7 + by) * 5 + bz) * 1024 + (tx * 11 + ty) * 3 + tz).astype(np.int64)


def launch(backend, kernel, grid, block, *host_args, outputs=(), **options):
    """Launch `kernel` on device copies of `host_args` and fresh (uninitialised) arrays of the
    (shape, dtype) in `outputs`; returns (the outputs on the host, the launch's record)."""
    args = [backend.to_device(a) for a in host_args]
    outs = [backend.allocate(shape, dtype) for shape, dtype in outputs]
    backend.launch_kernel(backend.compile_kernel(kernel), grid, block, *args, *outs, **options)
    backend.synchronize()
    return [backend.to_host(o) for o in outs], backend.launches[-1]


def both(kernel, grid, block, *host_args, outputs=(), threads=3):
    """The same launch on one host thread and on `threads`: (serial, parallel) results."""
    return [launch(CPUBackend(num_threads=n), kernel, grid, block, *host_args, outputs=outputs)
            for n in (1, threads)]


def _stats(record):
    s = record.stats
    return (s.global_load_bytes, s.global_store_bytes, s.shared_load_bytes,
            s.shared_store_bytes, s.barriers, s.sites)


def test_vector_add_matches_one_thread_and_numpy():
    rng = np.random.default_rng(1)
    a, b = rng.random(10_000, np.float32), rng.random(10_000, np.float32)
    (serial, one), (split, many) = both(vector_add, 40, 256, a, b,
                                        outputs=[((10_000,), np.float32)])
    np.testing.assert_array_equal(split[0], a + b)
    np.testing.assert_array_equal(split[0], serial[0])
    assert (one.extra["host_threads"], many.extra["host_threads"]) == (1, 3)
    assert _stats(many) == _stats(one)


def test_tiled_matmul_with_shared_memory_and_barriers():
    rng = np.random.default_rng(2)
    A, B = rng.random((37, 29), np.float32), rng.random((29, 45), np.float32)
    grid = (math.ceil(45 / TILE), math.ceil(37 / TILE))
    (serial, one), (split, many) = both(matmul_tiled, grid, (TILE, TILE), A, B,
                                        outputs=[((37, 45), np.float32)], threads=4)
    np.testing.assert_allclose(split[0], A @ B, rtol=1e-5)
    np.testing.assert_array_equal(split[0], serial[0])
    assert many.extra["host_threads"] == 4
    assert _stats(many) == _stats(one)
    assert many.stats.barriers == one.stats.barriers > 0


def test_local_arrays_are_per_host_thread():
    a = np.random.default_rng(3).random((3000, 3), np.float32)
    (serial, _), (split, many) = both(local_median3, 12, 256, a,
                                      outputs=[((3000,), np.float32)])
    np.testing.assert_array_equal(split[0], np.median(a, axis=1))
    np.testing.assert_array_equal(split[0], serial[0])
    assert many.extra["host_threads"] == 3


@settings(max_examples=25, deadline=None)
@given(shape=st.tuples(st.integers(1, 20), st.integers(1, 9), st.integers(1, 5)),
       block=st.tuples(st.integers(1, 8), st.integers(1, 4), st.integers(1, 3)),
       threads=st.integers(2, 5))
def test_every_thread_sees_its_own_coordinates(shape, block, threads):
    grid = tuple(-(-n // b) for n, b in zip(shape, block))
    (out,), record = launch(CPUBackend(num_threads=threads), coordinates, grid, block,
                            outputs=[(shape, np.int64)])
    np.testing.assert_array_equal(out, coordinates_reference(shape, block))
    nblocks = grid[0] * grid[1] * grid[2]
    assert record.extra["host_threads"] == (min(threads, nblocks) if nblocks > 1 else 1)
    assert sum(record.extra["host_blocks"]) == nblocks  # each block ran once
    assert len(record.extra["host_blocks"]) == record.extra["host_threads"]


def test_chunks_are_a_sixteenth_of_a_threads_even_share_and_at_least_a_block():
    assert parallel.chunk(4096, 2) == 128
    assert parallel.chunk(256, 2) == 8
    assert parallel.chunk(40, 3) == 1
    assert parallel.chunk(2, 2) == 1


@pytest.fixture
def late_helpers(monkeypatch):
    """Helpers that start their part of each split launch only once the launching thread has
    run out of blocks to take, or has failed (as a helper whose core is busy with other work
    would start late)."""
    run, stop, done = parallel.run, parallel._stop_claims, threading.Event()

    def stopped(words):
        stop(words)
        done.set()

    def held(driver, contexts, values, c):
        first = contexts[0]
        done.clear()

        def staggered(context, *args):
            if context is not first:
                assert done.wait(30)
            result = driver(context, *args)
            if context is first:
                done.set()
            return result
        return run(staggered, contexts, values, c)
    monkeypatch.setattr(parallel, "run", held)
    monkeypatch.setattr(parallel, "_stop_claims", stopped)


@pytest.mark.parametrize("chunks", [1, 16])
def test_a_thread_that_starts_late_takes_only_the_blocks_left(late_helpers, monkeypatch,
                                                              chunks):
    """Blocks are taken a chunk at a time as threads get to them, not dealt out beforehand:
    here the launching thread runs them all before the helpers start."""
    monkeypatch.setattr(parallel, "CHUNKS_PER_THREAD", chunks)
    rng = np.random.default_rng(4)
    a, b = rng.random(10_000, np.float32), rng.random(10_000, np.float32)
    (out,), record = launch(CPUBackend(num_threads=3), vector_add, 40, 256, a, b,
                            outputs=[((10_000,), np.float32)])
    np.testing.assert_array_equal(out, a + b)
    assert record.extra["host_threads"] == 3
    assert record.extra["host_blocks"] == (40, 0, 0)


@pytest.mark.parametrize("bad", [[10], [3, 30], [39]])
def test_a_failing_block_stops_the_taking_of_blocks_after_it(late_helpers, bad):
    """The launching thread fails at the first bad block; the helpers, starting late, find the
    launch stopped and take no block (the blocks after its chunk are left unrun, as on one
    thread): the error is the one a single thread reports."""
    bad = np.array(bad, np.int64)
    a = np.zeros(10_240, np.float32)
    serial, _ = _error(1, read_past_end, a, bad, nblocks=40,
                       outputs=((10_240,), np.float32), error=OutOfBoundsError)
    backend = CPUBackend(num_threads=3)
    out = backend.to_device(np.full(10_240, -1.0, np.float32))
    with pytest.raises(OutOfBoundsError) as info:
        backend.launch_kernel(backend.compile_kernel(read_past_end), 40, 256, out,
                              backend.to_device(a), backend.to_device(bad))
    assert str(info.value) == serial and f"block ({bad.min()}, 0, 0)" in serial
    chunk_end = (bad.min() // parallel.chunk(40, 3) + 1) * parallel.chunk(40, 3) * 256
    assert (backend.to_host(out)[chunk_end:] == -1.0).all()


# -- launches that stay on one thread ---------------------------------------------------------
def block_sums(a, out):
    """out[blockIdx.x]: written by one thread per block, but not at its own grid index."""
    s = cuda.shared.array(64, float32)
    s[cuda.threadIdx.x] = a[cuda.grid(1)]
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        acc = float32(0.0)
        for k in range(64):
            acc += s[k]
        out[cuda.blockIdx.x] = acc


def count_all(a, counter):
    cuda.atomic.add(counter, 0, a[cuda.grid(1)])


def shout(out):
    i = cuda.grid(1)
    if i == 0:
        print("hello")
    out[i] = i


def test_blocks_that_share_written_memory_run_on_one_thread():
    a = np.ones(640, np.float32)
    (sums,), record = launch(CPUBackend(num_threads=4), block_sums, 10, 64, a,
                             outputs=[((10,), np.float32)])
    np.testing.assert_array_equal(sums, np.full(10, 64, np.float32))
    assert record.extra["host_threads"] == 1
    backend = CPUBackend(num_threads=4)
    counter = backend.to_device(np.zeros(1, np.float32))
    backend.launch_kernel(backend.compile_kernel(count_all), 10, 64, backend.to_device(a),
                          counter)
    assert backend.to_host(counter)[0] == 640
    assert backend.launches[-1].extra["host_threads"] == 1


def test_prints_shuffles_traces_and_small_launches_run_on_one_thread(monkeypatch, capsys):
    _, record = launch(CPUBackend(num_threads=4), shout, 8, 32, outputs=[((256,), np.int64)])
    assert capsys.readouterr().out == "hello\n" and record.extra["host_threads"] == 1
    a = np.ones(2048, np.float32)
    for options in ({"schedule": "shuffle", "seed": 3}, {"trace": True}):
        _, record = launch(CPUBackend(num_threads=4), vector_add, 8, 256, a, a,
                           outputs=[((2048,), np.float32)], **options)
        assert record.extra["host_threads"] == 1, options
    _, record = launch(CPUBackend(num_threads=4), vector_add, 1, 256, a[:256], a[:256],
                       outputs=[((256,), np.float32)])
    assert record.extra["host_threads"] == 1  # one block
    monkeypatch.setattr(parallel, "MIN_THREADS", 4096)
    _, record = launch(CPUBackend(num_threads=4), vector_add, 8, 256, a, a,
                       outputs=[((2048,), np.float32)])
    assert record.extra["host_threads"] == 1  # 2,048 threads: too few to split
    monkeypatch.setattr(parallel, "BUSY_CORES", 0.0)  # (no split launch finds the cores busy)
    _, record = launch(CPUBackend(), vector_add, 16, 256, np.ones(4096, np.float32),
                       np.ones(4096, np.float32), outputs=[((4096,), np.float32)])
    assert record.extra["host_threads"] == min(parallel.usable_cores(), 16)


def _split_by_default(backend, a):
    out = backend.allocate(a.size, np.float32)
    backend.launch_kernel(backend.compile_kernel(vector_add), a.size // 256, 256, a, a, out)
    np.testing.assert_array_equal(backend.to_host(out), 2.0)
    return backend.launches[-1].extra


@pytest.fixture
def gauge(monkeypatch):
    """No split launch measured yet (`parallel._Gauge`), and a crew of the test's own whose
    helpers watch for the next launch for 2 s (awake at each launch of the test)."""
    monkeypatch.setattr(parallel._Gauge, "cores", math.inf)
    monkeypatch.setattr(parallel._Gauge, "at", -math.inf)
    monkeypatch.setattr(parallel, "IDLE_SPIN_S", 2.0)
    monkeypatch.setattr(parallel, "_crew", parallel._Crew())


@pytest.mark.skipif(parallel.usable_cores() < 2, reason="one usable core: nothing splits")
def test_default_launches_run_on_one_thread_while_split_ones_find_the_cores_busy(
        gauge, monkeypatch):
    """A split launch measures the cores' worth of CPU time its threads got; under BUSY_CORES
    (other work keeps the cores busy), launches that may run on one thread do, until a split
    launch PROBE_S later looks again. A number of threads asked for is kept."""
    backend = CPUBackend()
    a = backend.to_device(np.ones(4096, np.float32))
    threads = min(parallel.usable_cores(), 16)
    monkeypatch.setattr(parallel, "BUSY_CORES", 1e9)  # what any launch gets counts as busy
    monkeypatch.setattr(parallel, "PROBE_S", 1e9)
    extra = _split_by_default(backend, a)  # nothing measured before: split
    assert extra["host_threads"] == threads
    assert 0 < extra["host_cores"] <= threads * 1.05  # CPU time over wall time
    # that launch started the crew's helpers (as one they slept through would): not counted
    assert _split_by_default(backend, a)["host_threads"] == threads  # measured, with helpers
    extra = _split_by_default(backend, a)  # awake: under BUSY_CORES, recently
    assert (extra["host_threads"], extra["host_blocks"]) == (1, (16,))
    assert "host_cores" not in extra
    assert _vector_add_on(CPUBackend(num_threads=3)) == 3  # asked for: split all the same
    monkeypatch.setattr(parallel, "PROBE_S", 0.0)  # the latest split launch is old news
    assert _split_by_default(backend, a)["host_threads"] == threads
    monkeypatch.setattr(parallel, "PROBE_S", 1e9)
    monkeypatch.setattr(parallel, "BUSY_CORES", 0.0)  # the cores are free again
    assert _split_by_default(backend, a)["host_threads"] == threads


@pytest.mark.skipif(parallel.usable_cores() < 2, reason="one usable core: nothing splits")
def test_the_measure_is_each_threads_time_on_a_core_in_its_own_part(gauge):
    """Each thread's CPU time over its own part's wall time, summed: threads that spend their
    parts waiting (as a thread taken off its core by other work does) add next to nothing,
    however long the parts, and the hand-offs between the parts are not counted."""
    contexts = [np.zeros(L.HEADER, np.int64) for _ in range(2)]
    for _ in range(2):  # (the first starts the crew's helpers: not counted)
        cores = parallel.run(lambda c: time.sleep(0.02), contexts, [],
                             np.zeros(L.HEADER, np.int64))
        assert cores is not None and 0 <= cores < 0.5
    assert parallel._Gauge.cores == cores  # the helper was awake (the gauge fixture): counted
    assert not parallel.worth_splitting()


@pytest.mark.skipif(parallel.usable_cores() < 2, reason="one usable core: nothing splits")
def test_a_launch_whose_helpers_slept_measures_nothing(gauge, crew, monkeypatch):
    """A helper asleep as the launch begins may come late on an idle machine too: such a
    launch leaves the measure as it was (here: none, so launches keep splitting)."""
    monkeypatch.setattr(parallel, "BUSY_CORES", 1e9)
    monkeypatch.setattr(parallel, "PROBE_S", 1e9)
    backend = CPUBackend()
    a = backend.to_device(np.ones(4096, np.float32))
    for _ in range(3):
        assert _split_by_default(backend, a)["host_threads"] == min(parallel.usable_cores(),
                                                                     16)
        deadline = time.monotonic() + 10
        while crew.sleepers < crew.size - 1 and time.monotonic() < deadline:
            time.sleep(0.001)  # the helpers go back to sleep at once (the crew fixture)


# -- errors: the one a launch on one thread reports ----------------------------------------------
def read_past_end(out, a, bad_blocks):
    i = cuda.grid(1)
    j = i
    for k in range(bad_blocks.size):
        if cuda.blockIdx.x == bad_blocks[k] and cuda.threadIdx.x == 5:
            j += a.size
    out[i] = a[j]


def read_unwritten(scratch, out, bad_block):
    i = cuda.grid(1)
    if cuda.blockIdx.x != bad_block:
        scratch[i] = 2.0
    out[i] = scratch[i] * 2.0


def divide(out, bad_block):
    i = cuda.grid(1)
    d = 0 if cuda.blockIdx.x == bad_block and cuda.threadIdx.x == 3 else 1
    out[i] = i // d


def _error(threads, kernel, *args, nblocks=12, outputs=((3072,), np.float32), error=Exception):
    backend = CPUBackend(num_threads=threads)
    out = backend.allocate(*outputs)
    args = [backend.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(error) as info:
        backend.launch_kernel(backend.compile_kernel(kernel), nblocks, 256, out, *args)
    return str(info.value), backend


def _vector_add_on(backend):
    a = backend.to_device(np.ones(3072, np.float32))
    out = backend.allocate(3072, np.float32)
    backend.launch_kernel(backend.compile_kernel(vector_add), 12, 256, a, a, out)
    np.testing.assert_array_equal(backend.to_host(out), 2.0)
    return backend.launches[-1].extra["host_threads"]


@pytest.mark.parametrize("bad", [[10], [2, 10], [7, 3], [0]])
def test_out_of_bounds_names_the_first_failing_block(bad, splits):
    """Blocks 0-3, 4-7 and 8-11 run on three threads: the error is the first in block order,
    whichever share's thread stops first."""
    bad = np.array(bad, np.int64)
    a = np.zeros(3072, np.float32)
    serial, _ = _error(1, read_past_end, a, bad, error=OutOfBoundsError)
    split, backend = _error(3, read_past_end, a, bad, error=OutOfBoundsError)
    assert splits == [3]
    assert split == serial
    assert f"block ({bad.min()}, 0, 0)" in split
    assert _vector_add_on(backend) == 3  # the helper threads are free again


def test_uninitialised_read_and_division_by_zero_are_reported_as_on_one_thread(splits):
    for threads in (1, 3):
        backend = CPUBackend(num_threads=threads)
        scratch, out = backend.allocate(3072, np.float32), backend.allocate(3072, np.float32)
        with pytest.raises(UninitializedMemoryError) as info:
            backend.launch_kernel(backend.compile_kernel(read_unwritten), 12, 256, scratch, out,
                                  9)
        assert "block (9, 0, 0)" in str(info.value)
        if threads == 1:
            serial = str(info.value)
        else:
            assert str(info.value) == serial
    serial, _ = _error(1, divide, 6, outputs=((3072,), np.int64), error=KernelArithmeticError)
    split, _ = _error(3, divide, 6, outputs=((3072,), np.int64), error=KernelArithmeticError)
    assert split == serial and "thread (3, 0, 0), block (6, 0, 0)" in split
    assert splits == [3, 3]


def spin_in_block(out, block):
    i = cuda.grid(1)
    if cuda.blockIdx.x == block:
        while out[i] >= 0.0:
            out[i] += 1.0
    out[i] = 0.0


def test_the_watchdog_stops_every_host_thread(splits):
    backend = CPUBackend(num_threads=3, watchdog_s=0.3)
    out = backend.to_device(np.zeros(3072, np.float32))
    with pytest.raises(KernelTimeoutError, match="block \\(9, 0, 0\\)"):
        backend.launch_kernel(backend.compile_kernel(spin_in_block), 12, 256, out, 9)
    assert splits == [3]
    assert _vector_add_on(backend) == 3


def neighbour_race(out):
    i = cuda.grid(1)
    out[(i + 1) % out.size] = out[i] + 1.0


def test_race_records_after_a_split_launch_still_find_races():
    """The stamps a split launch leaves behind are the latest any of its threads reached: a
    launch after it still tells a race from an older record."""
    backend = CPUBackend(num_threads=3)
    assert _vector_add_on(backend) == 3
    out = backend.to_device(np.zeros(3072, np.float32))
    with pytest.raises(RaceConditionError):
        backend.launch_kernel(backend.compile_kernel(neighbour_race), 12, 256, out)
    assert _vector_add_on(backend) == 3


@pytest.fixture
def crew(monkeypatch):
    """A crew of helper threads of the test's own (`parallel._Crew`), which sleep as soon as
    their share is done (no watching for the next launch)."""
    monkeypatch.setattr(parallel, "IDLE_SPIN_S", 0.0)
    own = parallel._Crew()
    monkeypatch.setattr(parallel, "_crew", own)
    return own


def test_helpers_asleep_are_woken_for_the_next_launch(crew):
    backend = CPUBackend(num_threads=3)
    for _ in range(3):
        assert _vector_add_on(backend) == 3
        deadline = time.monotonic() + 10
        while crew.sleepers < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert crew.sleepers == 2  # both helpers wait to be woken
        time.sleep(0.01)  # past their first, timed, wait
    assert crew.launch == 3


def test_helpers_that_have_not_started_when_the_blocks_run_out_are_not_waited_for(
        crew, monkeypatch):
    """Helpers held back (as by a busy core) until the launch has returned: the launching
    thread ran every block and did not wait for them; they skip that launch when they get to
    it and take part in the next."""
    held, share, waited_out = threading.Event(), parallel._Crew._share, []

    def late(self, k):
        if not held.wait(5):  # (the launch waited for this helper)
            waited_out.append(k)
        return share(self, k)
    monkeypatch.setattr(parallel._Crew, "_share", late)
    backend = CPUBackend(num_threads=3)
    assert _vector_add_on(backend) == 3
    assert backend.launches[-1].extra["host_blocks"] == (12, 0, 0)
    held.set()
    assert _vector_add_on(backend) == 3
    assert sum(backend.launches[-1].extra["host_blocks"]) == 12
    assert crew.launch == 2 and waited_out == []


def test_a_launch_that_finds_the_crew_busy_runs_its_shares_in_turn(crew, splits):
    """(another host thread splitting a launch holds the crew)"""
    backend = CPUBackend(num_threads=3)
    with crew.busy:
        assert _vector_add_on(backend) == 3
    assert splits == [3]
    assert crew.launch == 0


def test_an_interrupt_while_waiting_stops_the_helpers_first(crew, monkeypatch):
    """A KeyboardInterrupt while the launching thread waits for the helpers: they are stopped
    and waited for, so that the next launch finds the crew free and its contexts untouched."""
    watch, calls = parallel._watch, []

    def interrupted(*args):
        calls.append(args)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return watch(*args)
    monkeypatch.setattr(parallel, "_watch", interrupted)
    backend = CPUBackend(num_threads=3)
    with pytest.raises(KeyboardInterrupt):
        _vector_add_on(backend)
    assert len(calls) >= 2 and not crew.busy.locked()
    assert (crew.flags[1:3] == crew.launch).all()
    assert crew.job == (crew.launch, None, 0)  # the interrupted launch's arrays are let go
    assert _vector_add_on(backend) == 3


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_splits_launches_on_helpers_of_its_own():
    backend = CPUBackend(num_threads=2)
    assert _vector_add_on(backend) == 2  # the parent's crew exists
    pid = os.fork()
    if pid == 0:  # the child: no pytest here, only an exit status
        ok = False
        try:
            signal.alarm(60)  # a child that waited for its parent's helpers would hang
            ok = _vector_add_on(backend) == 2
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_nothing_of_a_split_launch_outlives_it():
    """The helpers keep no reference to a finished launch: a freed array's memory goes back."""
    backend = CPUBackend(num_threads=3)
    a, out = backend.to_device(np.ones(3072, np.float32)), backend.allocate(3072, np.float32)
    backend.launch_kernel(backend.compile_kernel(vector_add), 12, 256, a, a, out)
    assert backend.launches[-1].extra["host_threads"] == 3
    storage = [weakref.ref(array.host_view().base) for array in (a, out)]
    backend.free(a)
    backend.free(out)
    gc.collect()
    assert [ref() for ref in storage] == [None, None]
