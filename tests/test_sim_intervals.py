"""Reads of shared arrays that no thread writes in their barrier interval keep no race records
(gpukit.sim.intervals): the same answers, counts, traces and errors, and every race still found."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda, float32, int32

import gpukit.trace as gt
from gpukit.backends.cpu import CPUBackend
from gpukit.errors import KernelError

TILE = 8
TPB = 32
BIG = 16 * TPB  # more elements than the 8 per thread whose marks a block looks at at once


def tiled_matmul(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    col, row = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    acc = float32(0.0)
    for t in range((A.shape[1] + TILE - 1) // TILE):
        k = t * TILE
        sA[ty, tx] = A[row, k + tx] if row < A.shape[0] and k + tx < A.shape[1] else 0.0
        sB[ty, tx] = B[k + ty, col] if col < B.shape[1] and k + ty < B.shape[0] else 0.0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = acc


def reversed_tile(a, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    out[t] = s[TPB - 1 - t]


def read_then_write_in_one_interval(a, out):
    """A neighbour's element read while the neighbour writes it: the region writes `s` too."""
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    s[t] = s[(t + 1) % TPB] + 1
    cuda.syncthreads()
    out[t] = s[t]


def read_before_a_loop_that_writes(a, out):
    """The read and the loop's first write share an interval: no barrier between them."""
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    x = s[(t + 1) % TPB]
    for k in range(2):
        s[t] = x + k
        cuda.syncthreads()
    out[t] = s[t]


def write_through_a_view(a, out):
    """Thread 0 writes row 0 through a view while the others read it."""
    s = cuda.shared.array((2, TPB), float32)
    t = cuda.threadIdx.x
    s[0, t] = a[t]
    s[1, t] = a[t]
    cuda.syncthreads()
    if t == 0:
        row = s[0]
        row[6] = 100.0
    out[t] = s[0, (t + 5) % TPB]


def aliased(a, out):
    """`alias` is `s` by another name: a write through it is a write of `s`."""
    s = cuda.shared.array(TPB, float32)
    alias = s
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    alias[t] = s[(t + 1) % TPB]
    out[t] = s[t]


def unwritten_element(a, out):
    s = cuda.shared.array(TPB, int32)
    t = cuda.threadIdx.x
    if t > 0:
        s[t] = a[t]
    cuda.syncthreads()
    out[t] = s[TPB - 1 - t]


def _launch(be, func, grid, block, *arrays, regions=True):
    kernel = be.compile_kernel(func)
    if not regions:
        kernel.sim.without_regions()
    dev = [be.to_device(a) for a in arrays]
    record = be.launch_kernel(kernel, grid, block, *dev)
    return kernel, record, [be.to_host(d) for d in dev]


def _unraced(func) -> int:
    sim = CPUBackend().compile_kernel(func).sim
    assert sim.regions, func.__name__
    return sim.explain().count("_g_unraced(")


_NEIGHBOUR = r"_g_mod\(_g_c, t \+ \d, TPB, \d+\)"  # (t + 1) % TPB, rewritten


def _load_unraced(func, load: str) -> bool:
    """Whether the load matching `load` (a pattern of the array and the index as the rewritten
    source spells them) is unraced."""
    source = CPUBackend().compile_kernel(func).sim.explain()
    found = re.findall(r"_g_ld(_unraced|_bare)?\(_g_c, " + load + r", \d+, ", source)
    assert found, (load, source)
    return all(found)


def test_the_reads_between_two_barriers_of_a_tiled_loop_keep_no_records():
    assert _unraced(tiled_matmul) == 2  # sA[ty, j] and sB[j, tx]; not the tile loads
    assert _unraced(reversed_tile) == 1  # after the last barrier, to the block's end


@pytest.mark.parametrize("func, load", [
    (read_then_write_in_one_interval, "s, " + _NEIGHBOUR),
    (read_before_a_loop_that_writes, "s, " + _NEIGHBOUR),
    (write_through_a_view, r"s, \(0, " + _NEIGHBOUR + r"\)"),
    (aliased, "s, " + _NEIGHBOUR)])
def test_reads_a_write_may_meet_keep_their_records(func, load):
    assert not _load_unraced(func, load)


@pytest.mark.parametrize("func", [read_then_write_in_one_interval, read_before_a_loop_that_writes,
                                  write_through_a_view, aliased])
@pytest.mark.parametrize("schedule", ["ordered", "shuffle"])
def test_races_around_reads_are_still_found(func, schedule):
    a = np.arange(TPB, dtype=np.float32)
    messages = []
    for regions in (True, False):
        with pytest.raises(KernelError) as info:
            _launch(CPUBackend(schedule=schedule, seed=3), func, 1, TPB, a, np.zeros_like(a),
                    regions=regions)
        assert type(info.value).__name__ == "RaceConditionError"
        messages.append(sorted(re.findall(r"line \d+", str(info.value))))
    # the same two accesses (regions may report a race across a loop split from its other end)
    assert messages[0] == messages[1]


def test_an_unraced_read_of_an_unwritten_element_is_still_reported():
    assert _unraced(unwritten_element) == 1
    a = np.arange(TPB, dtype=np.int32)
    with pytest.raises(KernelError) as info:
        _launch(CPUBackend(), unwritten_element, 1, TPB, a, np.zeros_like(a))
    assert type(info.value).__name__ == "UninitializedMemoryError"
    assert info.value.thread == (TPB - 1, 0, 0)


def test_unraced_reads_are_counted_and_traced():
    be = CPUBackend()
    A = np.arange(12 * 12, dtype=np.float32).reshape(12, 12) / 7
    B = np.eye(12, dtype=np.float32) * 2
    recorder = gt.Recorder()
    kernel = be.compile_kernel(tiled_matmul)
    dA, dB, dC = be.to_device(A), be.to_device(B), be.allocate((12, 12), np.float32)
    record = be.launch_kernel(kernel, (2, 2), (TILE, TILE), dA, dB, dC, trace=recorder)
    np.testing.assert_allclose(be.to_host(dC), A @ B, rtol=1e-6)
    trace = recorder.finish(record)
    shared_reads = [x for x in trace.accesses(space="shared") if x.kind == "read"]
    # 4 blocks x 64 threads x 2 tiles x 8 steps x 2 arrays
    assert len(shared_reads) == 4 * 64 * 2 * TILE * 2
    assert record.stats.shared_load_bytes == 4 * len(shared_reads)


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 20), k=st.integers(1, 20), n=st.integers(1, 20),
       schedule=st.sampled_from(["ordered", "shuffle"]), seed=st.integers(0, 2**16))
def test_tiled_matmul_matches_numpy_and_generators(m, k, n, schedule, seed):
    rng = np.random.default_rng(seed)
    A = rng.random((m, k), dtype=np.float32)
    B = rng.random((k, n), dtype=np.float32)
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    results = []
    for regions in (True, False):
        be = CPUBackend(schedule=schedule, seed=seed)
        _, record, (_, _, C) = _launch(be, tiled_matmul, grid, (TILE, TILE), A, B,
                                       np.zeros((m, n), np.float32), regions=regions)
        results.append((C, record.stats))
    np.testing.assert_allclose(results[0][0], A @ B, rtol=1e-5)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


def unwritten_in_a_large_array(a, out):
    """An array of more than 8 elements per thread: its marks are checked read by read."""
    s = cuda.shared.array(BIG, int32)
    t = cuda.threadIdx.x
    for k in range(16):
        if t * 16 + k != 77:
            s[t * 16 + k] = a[t]
    cuda.syncthreads()
    out[t] = s[(t * 16 + 77) % BIG]


def test_an_unwritten_element_of_a_large_array_is_still_reported():
    assert _unraced(unwritten_in_a_large_array) == 1
    a = np.arange(TPB, dtype=np.int32)
    with pytest.raises(KernelError) as info:
        _launch(CPUBackend(), unwritten_in_a_large_array, 1, TPB, a, np.zeros_like(a))
    assert type(info.value).__name__ == "UninitializedMemoryError"
    assert info.value.thread == (0, 0, 0)


def written_in_block_zero_only(a, out):
    """Block 0 writes every element; the next blocks all but element 5, which an earlier
    block's write does not make written in theirs (shared memory is the block's own)."""
    s = cuda.shared.array(TPB, int32)
    t = cuda.threadIdx.x
    if cuda.blockIdx.x == 0 or t != 5:
        s[t] = a[t] + cuda.blockIdx.x
    cuda.syncthreads()
    s[t] += 1  # a read and a write, each by its own thread, between barriers
    cuda.syncthreads()
    out[cuda.grid(1)] = s[(t + 1) % TPB]


NO_RACES = ["launch_limits", "bounds", "barriers", "uninitialized", "division_by_zero",
            "wraparound"]


@pytest.mark.parametrize("checks", [True, NO_RACES], ids=["all checks", "all but races"])
@pytest.mark.parametrize("regions", [True, False], ids=["regions", "generators"])
def test_a_shared_element_is_written_only_by_its_own_blocks_writes(checks, regions):
    """With the race check on, a shared element's writer record is also its written mark
    (layout.INIT_WREC); without it, a stamp of its own (INIT_STAMP). Either way, block 0's
    writes are results for block 0 only, and thread 4 of block 1 reads unwritten element 5."""
    a = np.arange(TPB, dtype=np.int32) * 3
    _, _, (_, out) = _launch(CPUBackend(checks=checks), written_in_block_zero_only, 1, TPB,
                             a, np.zeros(TPB, np.int32), regions=regions)
    np.testing.assert_array_equal(out, np.roll(a + 1, -1))
    with pytest.raises(KernelError) as info:
        _launch(CPUBackend(checks=checks), written_in_block_zero_only, 2, TPB, a,
                np.zeros(2 * TPB, np.int32), regions=regions)
    assert type(info.value).__name__ == "UninitializedMemoryError"
    assert (info.value.thread, info.value.block) == ((5, 0, 0), (1, 0, 0))


def shifted_rows(a, out, off, sh, lo, hi):
    """Reads of a written tile in a loop the caller bounds, at a row and rows the caller
    shifts: in bounds, past either end of an axis, or at negative indices (which Numba wraps)."""
    s = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    s[ty, tx] = a[ty, tx]
    cuda.syncthreads()
    r = ty + off
    acc = float32(0.0)
    for j in range(lo, hi):
        acc += s[r, j] * s[j - sh, tx] + s[j + sh, tx]
    out[ty, tx] = acc


def index_changed_in_the_loop(a, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    acc = float32(0.0)
    r = t
    for j in range(4):
        acc += s[r]
        r = (r + 1) % TPB
    out[t] = acc


R = 2  # the box filter's radius
HALO_TILE = TPB + 2 * R


def box_filter(a, out):
    """A 1-D box filter through a shared tile with a halo of R each side: loop bounds and an
    index shifted by names and constants the loop leaves alone."""
    s = cuda.shared.array(HALO_TILE, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t + R] = a[i]
    if t < R:
        s[t] = a[i - R] if i >= R else 0.0
        s[t + TPB + R] = a[i + TPB] if i + TPB < a.shape[0] else 0.0
    cuda.syncthreads()
    acc = float32(0.0)
    for j in range(-R, R + 1):
        acc += s[t + R + j]
    out[i] = acc


def _free_reads(func) -> list[str]:
    source = CPUBackend().compile_kernel(func).sim.explain()
    return re.findall(r"_g_ld_free\(_g_c, (\w+, \([^)]*\)|\w+, [^,]+), ", source)


def test_a_tiles_inner_loop_checks_its_indices_once_before_it_starts():
    assert sorted(_free_reads(tiled_matmul)) == ["sA, (ty, j)", "sB, (j, tx)"]
    assert sorted(_free_reads(shifted_rows)) == ["s, (j + sh, tx)", "s, (j - sh, tx)",
                                                 "s, (r, j)"]
    assert _free_reads(index_changed_in_the_loop) == []  # r changes from trip to trip
    assert _free_reads(box_filter) == ["s, t + R + j"]


def test_a_halo_tiles_filter_loop_reads_free_and_matches_numpy():
    n = 4 * TPB
    a = np.arange(n, dtype=np.float32) % 11
    _, _, (_, out) = _launch(CPUBackend(), box_filter, n // TPB, TPB, a, np.zeros_like(a))
    padded = np.concatenate([np.zeros(R, np.float32), a, np.zeros(R, np.float32)])
    np.testing.assert_array_equal(out, sum(padded[k:k + n] for k in range(2 * R + 1)))


@settings(max_examples=30, deadline=None)
@given(off=st.integers(-2, 2), sh=st.integers(-2, 2), lo=st.integers(-2, 3),
       hi=st.integers(-1, TILE + 2), checks=st.sampled_from([True, NO_RACES[:-1]]))
def test_indices_checked_before_a_loop_fail_and_wrap_as_in_it(off, sh, lo, hi, checks):
    """Where a test before the loop finds every index in bounds, its reads check nothing;
    otherwise the loop as it was runs: the same error at the same thread and line, or (with
    `wraparound` off) the same wrapped reads, as the generator engine, which has no such test."""
    a = (np.arange(TILE * TILE, dtype=np.float32).reshape(TILE, TILE) % 7) - 3
    outcomes = []
    for regions in (True, False):
        be = CPUBackend(checks=checks)
        kernel = be.compile_kernel(shifted_rows)
        if not regions:
            kernel.sim.without_regions()
        out = be.allocate(a.shape, a.dtype)
        try:
            be.launch_kernel(kernel, 1, (TILE, TILE), be.to_device(a), out, off, sh, lo, hi)
            outcomes.append(be.to_host(out))
        except KernelError as exc:
            outcomes.append((type(exc).__name__, exc.thread, str(exc)))
    if isinstance(outcomes[0], tuple):
        assert outcomes[0] == outcomes[1]
        assert outcomes[0][0] == "OutOfBoundsError"
    else:
        np.testing.assert_array_equal(outcomes[0], outcomes[1])
        r = (np.arange(TILE) + off) % TILE
        expect = np.array([[sum(a[r[y], j] * a[(j - sh) % TILE, x] + a[(j + sh) % TILE, x]
                                for j in range(lo, hi)) for x in range(TILE)]
                           for y in range(TILE)], np.float32)
        np.testing.assert_allclose(outcomes[0], expect, rtol=1e-6)
