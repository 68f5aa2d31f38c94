"""Kernels whose sync points are all block-wide barriers run region by region (gpukit.sim.regions):
the same answers, checks and errors as running every thread as a generator, and the cases that
must stay generators do."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda, float32, int32

from gpukit.backends.cpu import CPUBackend
from gpukit.errors import KernelError

TPB = 64


def tree_sum(a, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = a[i] if i < a.size else 0.0
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


def tiled_rows(a, out):
    """Sums each row of `a` in tiles of TPB columns (a block-level for over tiles)."""
    tile = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    row = cuda.blockIdx.x
    acc = float32(0.0)
    for k in range((a.shape[1] + TPB - 1) // TPB):
        col = k * TPB + t
        tile[t] = a[row, col] if col < a.shape[1] else 0.0
        cuda.syncthreads()
        if t == 0:
            for j in range(TPB):
                acc += tile[j]
        cuda.syncthreads()
    if t == 0:
        out[row] = acc


def early_exit_counts(a, out):
    """Threads past the end return before the barriers (excused, as on Volta and later)."""
    i = cuda.grid(1)
    if i >= a.size:
        return
    n = cuda.syncthreads_count(1 if a[i] > 0 else 0)
    every = cuda.syncthreads_and(1 if a[i] > 0 else 0)
    some = cuda.syncthreads_or(1 if a[i] > 0 else 0)
    out[i, 0] = n
    out[i, 1] = every
    out[i, 2] = some


def returns_in_loop(a, out):
    i = cuda.grid(1)
    for k in range(4):
        if i % 5 == k:
            return
    cuda.syncthreads()
    out[i] = a[i] * 2


def divergent(a, out):
    i = cuda.grid(1)
    if i < 16:
        cuda.syncthreads()
    out[i] = a[i]


def per_thread_trips(a, out):
    i = cuda.grid(1)
    k = 0
    while k < i % 3:
        cuda.syncthreads()
        k += 1
    out[i] = k


def keeps_a_tuple(a, out):
    i = cuda.grid(1)
    pair = (i, i + 1)
    cuda.syncthreads()
    out[i] = a[pair[0]] + a[pair[1] % a.size]


def changes_type(a, out):
    """`m` is float64 (from -inf) before the barrier and float32 (a shared element) after it."""
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    m = -math.inf
    for c in range(t, a.size, TPB):
        m = max(m, a[c])
    s[t] = m
    cuda.syncthreads()
    m = s[0]
    cuda.syncthreads()
    out[t] = a[t] - m


def missing_barrier(a, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    s[t] = s[(t + 1) % TPB] + 1  # reads a neighbour's element while the neighbour writes it
    cuda.syncthreads()
    out[t] = s[t]


def uninitialised_tile(a, out):
    s = cuda.shared.array(TPB, int32)
    t = cuda.threadIdx.x
    if t > 0:
        s[t] = a[t]
    cuda.syncthreads()
    out[t] = s[TPB - 1 - t]


def _run(backend, func, grid, block, *arrays, regions=True, **options):
    kernel = backend.compile_kernel(func)
    if not regions and kernel.sim.regions:
        kernel.sim.without_regions()
    dev = [backend.to_device(a) for a in arrays]
    backend.launch_kernel(kernel, grid, block, *dev, **options)
    return kernel, [backend.to_host(d) for d in dev]


def test_uniform_barrier_kernels_run_as_regions():
    be = CPUBackend()
    for func in (tree_sum, tiled_rows, early_exit_counts, returns_in_loop, missing_barrier):
        assert be.compile_kernel(func).sim.regions, func.__name__


def test_divergent_or_per_thread_control_stays_generators():
    be = CPUBackend()
    for func in (divergent, per_thread_trips):
        assert not be.compile_kernel(func).sim.regions, func.__name__


def test_tree_sum_matches_numpy():
    a = np.random.default_rng(1).random(1000).astype(np.float32)
    out = np.zeros(16, np.float32)
    kernel, (_, out) = _run(CPUBackend(), tree_sum, 16, TPB, a, out)
    assert kernel.sim.regions
    np.testing.assert_allclose(out, np.pad(a, (0, 24)).reshape(16, TPB).sum(axis=1), rtol=1e-5)


def test_block_level_for_matches_numpy():
    a = np.random.default_rng(2).random((5, 150)).astype(np.float32)
    _, (_, out) = _run(CPUBackend(), tiled_rows, 5, TPB, a, np.zeros(5, np.float32))
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5)


def test_sync_count_and_or_with_threads_that_returned():
    a = np.array([1, 2, -1, 4, 5, 6, 7], np.int32)
    _, (_, out) = _run(CPUBackend(), early_exit_counts, 1, 8, a, np.zeros((7, 3), np.int32))
    np.testing.assert_array_equal(out, [[6, 0, 1]] * 7)
    b = np.ones(7, np.int32)
    _, (_, out) = _run(CPUBackend(), early_exit_counts, 1, 8, b, np.zeros((7, 3), np.int32))
    np.testing.assert_array_equal(out, [[7, 1, 1]] * 7)


def test_return_inside_a_loop_leaves_the_thread():
    a = np.arange(20, dtype=np.float32)
    out = np.full(20, -1, np.float32)
    _, (_, out) = _run(CPUBackend(), returns_in_loop, 1, 20, a, out)
    expected = np.where(np.arange(20) % 5 == 4, a * 2, -1)
    np.testing.assert_array_equal(out, expected)


def test_a_kept_tuple_falls_back_to_generators():
    be = CPUBackend()
    a = np.arange(32, dtype=np.float32)
    kernel, (_, out) = _run(be, keeps_a_tuple, 1, 32, a, np.zeros(32, np.float32))
    assert not kernel.sim.regions  # typing `keep` of a tuple failed: compiled as generators
    np.testing.assert_array_equal(out, a + np.roll(a, -1))


def test_a_variable_that_changes_type_falls_back_to_generators():
    a = np.linspace(-1, 1, TPB).astype(np.float32)
    kernel, (_, out) = _run(CPUBackend(), changes_type, 1, TPB, a, np.zeros_like(a))
    assert not kernel.sim.regions  # numba-cuda types m float64, then float32
    np.testing.assert_array_equal(out, a - a[0])


@pytest.mark.parametrize("func, error", [(missing_barrier, "RaceConditionError"),
                                         (uninitialised_tile, "UninitializedMemoryError")])
@pytest.mark.parametrize("schedule", ["ordered", "shuffle"])
def test_checks_report_the_same_error_as_generators(func, error, schedule):
    a = np.arange(TPB).astype(np.float32 if func is missing_barrier else np.int32)
    messages = []
    for regions in (True, False):
        with pytest.raises(KernelError) as info:
            _run(CPUBackend(schedule=schedule), func, 1, TPB, a, np.zeros_like(a),
                 regions=regions)
        assert type(info.value).__name__ == error
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 700), blocks=st.integers(1, 12), seed=st.integers(0, 2**16),
       schedule=st.sampled_from(["ordered", "shuffle"]))
def test_regions_and_generators_agree(n, blocks, seed, schedule):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, n).astype(np.float32)
    results = []
    for regions in (True, False):
        be = CPUBackend(schedule=schedule, seed=seed)
        _, (_, out) = _run(be, tree_sum, blocks, TPB, a, np.zeros(blocks, np.float32),
                           regions=regions)
        results.append(out)
        results.append(be.launches[-1].stats)
    np.testing.assert_array_equal(results[0], results[2])
    assert results[1] == results[3]


# -- values the block computes once ------------------------------------------------------------
def uniform_mid_region(a, out, d):
    """`half` is uniform but assigned between two threads' statements that read it: each thread
    keeps its own; `quot` divides by a parameter (it may fail, so every thread computes it)."""
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    half = cuda.blockDim.x // 4
    s[t] = a[t] + half
    half = cuda.blockDim.x // 2
    s[t] += half
    quot = cuda.blockDim.x // d
    cuda.syncthreads()
    if t < half:
        out[t] = s[t + half] + quot


def uniform_between_independent_statements(a, out):
    """`n` is assigned among threads' statements that do not touch it: the block computes it."""
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    n = a.shape[0] // 2
    s[t] += 1
    cuda.syncthreads()
    if t < n:
        out[t] = s[t] + s[t + n]


def test_a_reductions_stride_is_computed_once_by_the_block():
    sim = CPUBackend().compile_kernel(tree_sum).sim
    assert sim.unit.region_vars == ("t",)  # stride is no thread's to keep
    source = sim.explain()
    # the stride's two assignments sit outside the threads' loops (block-level indentation)
    assert "\n    stride = _g_floordiv(_g_c, _g_bdim_x(_g_c), 2, " in source
    assert "\n        stride = _g_floordiv(_g_c, stride, 2, " in source


def shifted_sum(a, out):
    s = cuda.shared.array(256, np.float32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.grid(1)]
    cuda.syncthreads()
    step = cuda.blockDim.x >> 1
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step >>= 1
    if t == 0:
        out[cuda.blockIdx.x] = -s[0]


def test_a_stride_halved_by_a_shift_is_the_blocks_too():
    # `>>`, unary `-` and friends become calls of the simulator's operators (sim.arith): pure
    # calls, which keep a value uniform
    be = CPUBackend()
    kernel = be.compile_kernel(shifted_sum)
    assert kernel.sim.regions and kernel.sim.unit.region_vars == ("t",)
    out = be.to_device(np.zeros(4, np.float32))
    be.launch_kernel(kernel, 4, 256, be.to_device(np.ones(1024, np.float32)), out)
    assert be.to_host(out).tolist() == [-256.0] * 4


def test_a_uniform_value_between_threads_statements_stays_per_thread():
    be = CPUBackend()
    kernel = be.compile_kernel(uniform_mid_region)
    assert set(kernel.sim.unit.region_vars) >= {"half", "quot"}
    a = np.arange(TPB, dtype=np.float32)
    out = be.to_device(np.zeros(TPB // 2, np.float32))
    be.launch_kernel(kernel, 1, TPB, be.to_device(a), out, 4)
    np.testing.assert_array_equal(be.to_host(out), a[TPB // 2:] + TPB // 4 + TPB // 2 + TPB // 4)


def test_a_uniform_value_among_statements_that_do_not_touch_it_is_the_blocks():
    a = np.arange(TPB, dtype=np.float32)
    kernel, (_, out) = _run(CPUBackend(), uniform_between_independent_statements, 1, TPB, a,
                            np.zeros(TPB // 2, np.float32))
    assert "n" not in kernel.sim.unit.region_vars
    assert "\n    n = _g_floordiv(_g_c, a.shape[0], 2, " in kernel.sim.explain()
    np.testing.assert_array_equal(out, a[:TPB // 2] + a[TPB // 2:] + 2)


def test_a_division_the_block_might_fail_is_reported_by_the_first_thread():
    be = CPUBackend()
    a = be.to_device(np.arange(TPB, dtype=np.float32))
    out = be.to_device(np.zeros(TPB // 2, np.float32))
    with pytest.raises(KernelError, match=r"integer division by zero in 'cuda.blockDim.x // d'") \
            as info:
        be.launch_kernel(uniform_mid_region, 1, TPB, a, out, 0)
    assert info.value.thread == (0, 0, 0) and info.value.block == (0, 0, 0)


# -- threads a region need not visit ------------------------------------------------------------
def guarded_writes(out, b, op):
    """Each thread that passes `threadIdx.x <op> b` (op chosen per launch) marks its element."""
    t = cuda.threadIdx.x
    cuda.syncthreads()
    if op == 0:
        cuda.syncthreads()
        if t < b:
            out[t, cuda.threadIdx.y] += 1
    elif op == 1:
        cuda.syncthreads()
        if t <= b:
            out[t, cuda.threadIdx.y] += 1
    elif op == 2:
        cuda.syncthreads()
        if b == t:
            out[t, cuda.threadIdx.y] += 1
    elif op == 3:
        cuda.syncthreads()
        if b <= t:
            out[t, cuda.threadIdx.y] += 1
    else:
        cuda.syncthreads()
        if t > b and out.shape[0] > 0:
            out[t, cuda.threadIdx.y] += 1
    cuda.syncthreads()


_OPS = [np.less, np.less_equal, np.equal, np.greater_equal, np.greater]


def test_a_region_guarded_by_the_thread_index_visits_only_the_threads_it_lets_through():
    source = CPUBackend().compile_kernel(tree_sum).sim.explain()
    # the tree's steps visit threads [0, stride); the last region, thread 0 alone
    assert "_g_lo, _g_hi = _g_thread_span(_g_c, 0, stride)\n" in source
    assert "_g_lo, _g_hi = _g_thread_span(_g_c, 2, 0)\n" in source
    assert source.count("_g_thread_span(") == 2  # not the first region: it has no such guard


@pytest.mark.parametrize("schedule", ["ordered", "shuffle"])
def test_a_guarded_region_runs_exactly_the_threads_its_guard_lets_through(schedule):
    # each comparison, with integer and float bounds inside and outside the block, in 1-D and
    # 2-D blocks (where threadIdx.x is not the thread's place in the block: every thread is
    # visited) and under both schedules
    be = CPUBackend(schedule=schedule)
    kernel = be.compile_kernel(guarded_writes)
    assert kernel.sim.regions and kernel.sim.explain().count("_g_thread_span(") == 5
    for block in [(TPB, 1), (37, 1), (16, 2)]:
        tx = np.arange(block[0])[:, None].repeat(block[1], axis=1)
        for op, compare in enumerate(_OPS):
            for b in (-2, -1, 0, 1, 15, 16, 36, 37, 63, 64, 65, 2**40, 2.5, -0.5, 36.0):
                out = be.to_device(np.zeros(block, np.int32))
                be.launch_kernel(kernel, 1, block, out, b, op)
                np.testing.assert_array_equal(be.to_host(out), compare(tx, b).astype(np.int32),
                                              err_msg=f"{block} op {op} b {b}")


def leave_then_count(out):
    """Threads 0-7 return in a region that visits only them; the others go on."""
    t = cuda.threadIdx.x
    cuda.syncthreads()
    if t < 8:
        return
    cuda.syncthreads()
    out[t] = cuda.syncthreads_count(1)


def test_threads_the_guarded_region_did_not_visit_keep_the_block_running():
    be = CPUBackend()
    kernel = be.compile_kernel(leave_then_count)
    assert kernel.sim.regions and "_g_thread_span(_g_c, 0, 8)" in kernel.sim.explain()
    out = be.to_device(np.full(TPB, -1, np.int32))
    be.launch_kernel(kernel, 1, TPB, out)
    np.testing.assert_array_equal(be.to_host(out), [-1] * 8 + [TPB - 8] * (TPB - 8))


def guarded_out_of_bounds(a, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    s[t] = a[t]
    cuda.syncthreads()
    if t < 40:
        out[t] = s[t + 30]  # threads 34-39 read past the tile


def test_checks_in_a_guarded_region_name_the_thread_that_fails():
    be = CPUBackend()
    a = be.to_device(np.arange(TPB, dtype=np.float32))
    with pytest.raises(KernelError, match=r"'s\[t \+ 30\]' indexes shared array s \(shape "
                       r"\(64,\)\) at 64, outside 0..63") as info:
        be.launch_kernel(guarded_out_of_bounds, 1, TPB, a, be.to_device(np.zeros(TPB, np.float32)))
    assert info.value.thread == (34, 0, 0)


# -- each thread's coordinates, set by the loop over the block's threads ----------------------
def coordinates_past_a_barrier(out, ids):
    """Each thread writes its coordinates and its linear index in the grid after a barrier (a
    region's loop over the block's threads sets them, `sync.begin_thread_in`)."""
    s = cuda.shared.array(1, int32)
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0 and cuda.threadIdx.z == 0:
        s[0] = 1
    cuda.syncthreads()
    x, y, z = cuda.grid(3)
    if x < out.shape[0] and y < out.shape[1] and z < out.shape[2]:
        out[x, y, z] = ((cuda.threadIdx.x * 16 + cuda.threadIdx.y) * 16
                        + cuda.threadIdx.z) * s[0]
        ids[x, y, z] = ((cuda.blockIdx.z * cuda.gridDim.y + cuda.blockIdx.y) * cuda.gridDim.x
                        + cuda.blockIdx.x)


@settings(max_examples=20, deadline=None)
@given(shape=st.tuples(st.integers(1, 12), st.integers(1, 6), st.integers(1, 4)),
       block=st.tuples(st.integers(1, 8), st.integers(1, 4), st.integers(1, 3)),
       schedule=st.sampled_from(["ordered", "shuffle"]), seed=st.integers(0, 99))
def test_every_thread_of_a_region_sees_its_own_coordinates(shape, block, schedule, seed):
    grid = tuple(-(-n // b) for n, b in zip(shape, block))
    be = CPUBackend(schedule=schedule, seed=seed)
    kernel, (out, ids) = _run(be, coordinates_past_a_barrier, grid, block,
                              np.zeros(shape, np.int64), np.zeros(shape, np.int64))
    assert kernel.sim.regions
    (x, y, z), (bx, by, bz) = np.indices(shape), block
    np.testing.assert_array_equal(out, ((x % bx * 16 + y % by) * 16 + z % bz))
    np.testing.assert_array_equal(ids, (z // bz * grid[1] + y // by) * grid[0] + x // bx)


def reads_past_the_end_in_one_thread(a, out):
    s = cuda.shared.array(TPB, float32)
    i = cuda.grid(1)
    s[cuda.threadIdx.x] = a[i]
    cuda.syncthreads()
    j = i + 1000 if i == 200 else i
    out[i] = s[cuda.threadIdx.x] + a[j]


@pytest.mark.parametrize("schedule", ["ordered", "shuffle"])
def test_an_error_in_a_row_block_names_its_thread_and_block(schedule):
    be = CPUBackend(schedule=schedule)
    with pytest.raises(KernelError, match=r"^'a\[j\]' indexes global array a \(shape \(256,\)\) "
                       r"at 1200, outside 0..255") as info:
        _run(be, reads_past_the_end_in_one_thread, 4, TPB, np.zeros(4 * TPB, np.float32),
             np.zeros(4 * TPB, np.float32))
    assert (info.value.thread, info.value.block) == ((200 - 3 * TPB, 0, 0), (3, 0, 0))
