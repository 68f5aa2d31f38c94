"""grid.sync() of cooperative groups (`g = cuda.cg.this_grid(); g.sync()`): every block runs to
its next grid.sync(), then the grid goes on together. Results against numpy, across block and
thread counts and both schedules; shared memory that lives on across a grid.sync(); the checks
(races between blocks within a stretch, a block that finishes while others wait, a grid.sync()
not every thread reaches); and the cooperative launch limit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda, float32, int32

from gpukit.backends.cpu import CPUBackend
from gpukit.errors import BarrierError, LaunchConfigError, RaceConditionError


def sequential_rows(M):
    # numba-cuda's test_cooperative_groups kernel: each row reads the previous row's mirror
    col = cuda.grid(1)
    g = cuda.cg.this_grid()
    rows, cols = M.shape[0], M.shape[1]
    for row in range(1, rows):
        opposite = cols - col - 1
        M[row, col] = M[row - 1, opposite] + 1
        g.sync()


def rows_without_sync(M):
    col = cuda.grid(1)
    rows, cols = M.shape[0], M.shape[1]
    for row in range(1, rows):
        M[row, col] = M[row - 1, cols - col - 1] + 1


def rotate(buf, out, steps):
    # ping-pong between two arrays: each step reads a neighbour another block wrote last step
    i = cuda.grid(1)
    n = buf.shape[1]
    for s in range(steps):
        src, dst = s % 2, (s + 1) % 2
        buf[dst, i] = buf[src, (i + 1) % n] * 2 + s
        cuda.cg.this_grid().sync()
    out[i] = buf[steps % 2, i]


def grid_sum(a, partial, out):
    # block sums with syncthreads, then one thread adds them up after a grid.sync()
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = a[i] if i < a.shape[0] else 0.0
    cuda.syncthreads()
    stride = 32
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]
    cuda.cg.this_grid().sync()
    if i == 0:
        total = 0.0
        for b in range(partial.shape[0]):
            total += partial[b]
        out[0] = total


def mirror_past_the_end(a, out, res):
    i = cuda.grid(1)
    if i >= a.shape[0]:
        return  # threads past the end leave: the rest of their block still syncs
    out[i] = a[i]
    cuda.cg.this_grid().sync()
    res[i] = out[i] + out[a.shape[0] - 1 - i]


def shared_survives(out):
    s = cuda.shared.array(32, int32)
    t = cuda.threadIdx.x
    s[t] = cuda.blockIdx.x * 100 + t
    r = cuda.cg.this_grid().sync()
    out[cuda.grid(1)] = s[31 - t] + r  # another thread's element, written before the sync


def race_within_a_stretch(a):
    i = cuda.grid(1)
    a[i] = i
    a[(i + cuda.blockDim.x) % a.shape[0]] += 1  # another block's element, before any sync
    cuda.cg.this_grid().sync()


def race_two_syncs_later(a):
    i = cuda.grid(1)
    g = cuda.cg.this_grid()
    a[i] = i
    g.sync()
    a[(i + cuda.blockDim.x) % a.shape[0]] += 1  # another block's element, ordered by the sync
    g.sync()
    a[i] += a[(i + cuda.blockDim.x) % a.shape[0]]  # but this races with the other block's own


def block_leaves_early(out):
    i = cuda.grid(1)
    if cuda.blockIdx.x == 1:
        return
    out[i] = 1
    cuda.cg.this_grid().sync()
    out[i] = 2


def sync_in_a_branch(out):
    i = cuda.grid(1)
    if i % 2 == 0:
        out[i] = 1
        cuda.cg.this_grid().sync()


@cuda.jit(device=True)
def device_step(a, i):
    a[i] += 1
    cuda.cg.this_grid().sync()


def through_a_device_function(a, out):
    i = cuda.grid(1)
    device_step(a, i)
    out[i] = a[(i + 1) % a.shape[0]]


@pytest.fixture(scope="module")
def backend():
    return CPUBackend()


def test_numba_cudas_sequential_rows_kernel_matches_numpy(backend):
    M = np.zeros((24, 64), np.int32)
    d = backend.to_device(M)
    backend.launch_kernel(sequential_rows, 2, 32, d)
    np.testing.assert_array_equal(backend.to_host(d), np.tile(np.arange(24), (64, 1)).T)


def test_without_grid_sync_the_same_kernel_races_between_blocks(backend):
    d = backend.to_device(np.zeros((4, 64), np.int32))
    with pytest.raises(RaceConditionError, match="threads of different blocks cannot wait"):
        backend.launch_kernel(rows_without_sync, 2, 32, d)


@settings(max_examples=12, deadline=None)
@given(blocks=st.integers(1, 6), threads=st.sampled_from([1, 7, 32, 64]),
       steps=st.integers(0, 5), shuffle=st.booleans())
def test_ping_pong_across_blocks_matches_numpy(blocks, threads, steps, shuffle):
    n = blocks * threads
    start = np.arange(n, dtype=np.int64) % 11
    expected = start.copy()
    for s in range(steps):
        expected = np.roll(expected, -1) * 2 + s
    backend = CPUBackend()
    buf = backend.to_device(np.stack([start, np.zeros(n, np.int64)]))
    out = backend.allocate(n, np.int64)
    backend.launch_kernel(rotate, blocks, threads, buf, out, steps,
                          schedule="shuffle" if shuffle else "ordered", seed=3)
    np.testing.assert_array_equal(backend.to_host(out), expected)


@pytest.mark.parametrize("schedule", ["ordered", "shuffle"])
def test_block_sums_then_a_grid_sum_matches_numpy(backend, schedule):
    a = np.random.default_rng(5).random(300).astype(np.float32)
    partial, out = backend.allocate(5, np.float32), backend.allocate(1, np.float32)
    backend.launch_kernel(grid_sum, 5, 64, backend.to_device(a), partial, out,
                          schedule=schedule, seed=1)
    np.testing.assert_allclose(backend.to_host(out)[0], a.astype(np.float64).sum(), rtol=1e-5)


def test_threads_that_return_before_a_grid_sync_are_excused(backend):
    a = np.arange(100, dtype=np.int64)
    out, res = backend.allocate(100, np.int64), backend.allocate(100, np.int64)
    backend.launch_kernel(mirror_past_the_end, 2, 64, backend.to_device(a), out, res)
    np.testing.assert_array_equal(backend.to_host(res), a + a[::-1])


def test_shared_memory_lives_on_across_a_grid_sync(backend):
    out = backend.allocate(96, np.int32)
    record = backend.launch_kernel(shared_survives, 3, 32, out)
    expected = [b * 100 + 31 - t for b in range(3) for t in range(32)]  # sync() returns 0
    np.testing.assert_array_equal(backend.to_host(out), expected)
    assert record.stats.barriers == 3  # one grid.sync() passed by each of the 3 blocks


def test_a_race_between_blocks_before_the_sync_is_reported_with_the_fix(backend):
    a = backend.to_device(np.zeros(64, np.int64))
    with pytest.raises(RaceConditionError, match=r"put a grid.sync\(\) between the two "
                                                 r"accesses, or make both atomic"):
        backend.launch_kernel(race_within_a_stretch, 2, 32, a)


def test_a_race_after_two_syncs_names_the_right_blocks_and_nothing_earlier(backend):
    a = backend.to_device(np.zeros(64, np.int64))
    line = race_two_syncs_later.__code__.co_firstlineno + 7
    with pytest.raises(RaceConditionError) as info:
        backend.launch_kernel(race_two_syncs_later, 2, 32, a)
    assert str(info.value).startswith(
        f"data race on a[0]: thread (0, 0, 0) of block (1, 0, 0) reads it at line {line} "
        "('a[(i + cuda.blockDim.x) % a.shape[0]]'), and thread (0, 0, 0) of block (0, 0, 0) "
        f"writes it at line {line} ('a[i]') with nothing ordering the two; put a grid.sync() "
        "between the two accesses, or make both atomic")


def test_a_block_that_finishes_while_others_wait_is_a_deadlock(backend):
    out = backend.allocate(96, np.int32)
    with pytest.raises(BarrierError) as info:
        backend.launch_kernel(block_leaves_early, 3, 32, out)
    assert str(info.value).startswith(
        "grid.sync() deadlock: block (0, 0, 0) waits at 'cuda.cg.this_grid().sync()' (line "
        f"{block_leaves_early.__code__.co_firstlineno + 5}), but block (1, 0, 0) finished "
        "without reaching it. grid.sync() waits for every block of the grid, so on a GPU the "
        "launch would hang")


def test_a_grid_sync_that_some_threads_skip_is_a_divergent_barrier(backend):
    out = backend.allocate(32, np.int32)
    with pytest.raises(BarrierError, match=r"divergent barrier: 16 of the 32 live threads of "
                                           r"block \(0, 0, 0\) reached cuda.cg.this_grid\(\)"
                                           r".sync\(\) at line"):
        backend.launch_kernel(sync_in_a_branch, 1, 32, out)


def test_grid_sync_inside_a_device_function(backend):
    a = backend.to_device(np.arange(64, dtype=np.int64))
    out = backend.allocate(64, np.int64)
    backend.launch_kernel(through_a_device_function, 2, 32, a, out)
    np.testing.assert_array_equal(backend.to_host(out), np.roll(np.arange(64) + 1, -1))


def test_a_grid_larger_than_the_device_holds_at_once_is_refused():
    backend = CPUBackend(device="T4")
    out = backend.allocate(32 * 641, np.int32)
    with pytest.raises(LaunchConfigError) as info:
        backend.launch_kernel(shared_survives, 641, 32, out)
    assert str(info.value) == (
        "kernel 'shared_survives' calls grid.sync(), so it is launched cooperatively: all 641 "
        "blocks must be resident on the GPU at once, but the simulated T4 holds at most 640 "
        "blocks of 32 threads (16 per SM on 40 SMs, before counting registers, which can only "
        "lower it); a GPU refuses the launch (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE). Launch "
        "at most max_cooperative_grid_blocks(blockdim) blocks and give each thread several "
        "elements (a grid-stride loop)")
    backend.launch_kernel(shared_survives, 640, 32, out)  # the most it holds runs
    backend.launch_kernel(shared_survives, 641, 32, out, checks={"launch_limits": False})
