"""Launch plans: a launch that repeats an earlier one's binding (the same kernel, geometry,
checks, array objects in the same state, scalars of the same types) reuses that binding
(gpukit.sim.launch). Whatever a loop of launches does in between (other values, other arrays,
views, frees, host writes, kernels that grow the simulator's scratch memory), each launch must
compute and check exactly as a first launch would."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda, float64

import gpukit
import gpukit.sim.launch
from gpukit.backends.cpu import CPUBackend
from gpukit.errors import (
    InvalidDeviceArrayError,
    OutOfBoundsError,
    UninitializedMemoryError,
)
from gpukit.sim.launch import Workspace

N = 64


def scale_through_shared(src, dst, s, limit):
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = src[i] * s
    cuda.syncthreads()
    if i < limit:
        dst[i] = tile[(t + 1) % 32] + i  # a neighbour's element: needs the barrier


def big_shared(out):
    buf = cuda.shared.array(0, float64)  # sized at launch: grows the scratch memory
    t = cuda.threadIdx.x
    buf[t] = t
    cuda.syncthreads()
    out[t] = buf[31 - t]


def _expected(src, s, limit, before):
    got = before.copy()
    shifted = (src.reshape(-1, 32) * s).astype(np.float64)
    shifted = np.roll(shifted, -1, axis=1).reshape(-1) + np.arange(src.size)
    got[:limit] = shifted[:limit]
    return got


@settings(max_examples=12, deadline=None)
@given(steps=st.lists(st.tuples(
    st.sampled_from(["launch", "launch", "launch", "free", "host_write", "grow", "fresh"]),
    st.integers(0, 2), st.integers(0, 2), st.sampled_from([2, 2.5, np.float32(3)]),
    st.sampled_from([N, N, 40])), min_size=3, max_size=12))
def test_a_loop_of_launches_computes_and_checks_as_first_launches_do(steps):
    be = CPUBackend()
    arrays = [be.to_device(np.arange(N, dtype=np.float64) * (k + 1)) for k in range(3)]
    values = [np.arange(N, dtype=np.float64) * (k + 1) for k in range(3)]
    written = [np.ones(N, bool) for _ in range(3)]
    freed = [False] * 3

    def host_write(k, fill):
        values[k] = np.full(N, fill)
        written[k][:] = True
        be.copy_to_device(values[k], arrays[k])

    for action, i, j, s, limit in steps:
        if action == "free" and not freed[i]:
            be.free(arrays[i])
            freed[i] = True
        elif action == "fresh" and freed[i]:  # a new array in a freed one's place
            arrays[i], freed[i] = be.allocate(N, np.float64), False
            written[i][:] = False
        elif action == "host_write" and not freed[i]:
            host_write(i, float(j + 1))
        elif action == "grow":
            out = be.allocate(32, np.float64)
            be.launch_kernel(big_shared, 1, 32, out, dynamic_shared_bytes=48 * 1024)
            np.testing.assert_array_equal(be.to_host(out), np.arange(32)[::-1])
        elif action == "launch":
            args = (arrays[i], arrays[j], s, limit)
            if freed[i] or freed[j]:
                with pytest.raises(InvalidDeviceArrayError, match="use after free"):
                    be.launch_kernel(scale_through_shared, 2, 32, *args)
            elif not written[i].all():
                with pytest.raises(UninitializedMemoryError):
                    be.launch_kernel(scale_through_shared, 2, 32, *args)
                host_write(j, 7.0)  # the blocks before the failing one wrote some of it
            else:
                be.launch_kernel(scale_through_shared, 2, 32, *args)
                values[j] = _expected(values[i], s, limit, values[j])
                written[j][:limit] = True
                np.testing.assert_array_equal(be.to_host(arrays[j])[written[j]],
                                              values[j][written[j]])


def test_a_view_of_the_same_allocation_is_bound_as_itself():
    # two views of one allocation, and a new view object in an old one's place: each launch
    # indexes its own view's elements and bounds
    be = CPUBackend()
    whole = be.to_device(np.arange(N, dtype=np.float64))
    out = be.allocate(32, np.float64)
    for start in (0, 32, 0, 32):
        view = whole[start:start + 32]
        be.launch_kernel(scale_through_shared, 1, 32, view, out, 1.0, 32)
        expected = np.roll(np.arange(start, start + 32), -1) + np.arange(32)
        np.testing.assert_array_equal(be.to_host(out), expected)
    short = whole[:16]
    with pytest.raises(OutOfBoundsError, match="src"):
        be.launch_kernel(scale_through_shared, 1, 32, short, out, 1.0, 32)


def test_a_view_in_a_dropped_views_place_is_bound_as_itself(monkeypatch):
    # each view dies after its launch, so the next may get its id (made certain here: every
    # object has the same id): a strided view must still be typed as strided (Numba's layout
    # "A"), a contiguous one as "C"
    monkeypatch.setattr(gpukit.sim.launch, "id", lambda obj: 0, raising=False)
    be = CPUBackend()
    whole = be.to_device(np.arange(2 * N, dtype=np.float64))
    out = be.allocate(32, np.float64)
    for step in (1, 2, 1, 2, 1, 2):
        record = be.launch_kernel(scale_through_shared, 1, 32, whole[:32 * step:step], out, 1.0,
                                  32)
        assert record.signature[0].layout == ("C" if step == 1 else "A")
        expected = np.roll(np.arange(0, 32 * step, step), -1) + np.arange(32)
        np.testing.assert_array_equal(be.to_host(out), expected)


def test_a_plan_is_not_used_after_the_scratch_memory_it_points_into_is_replaced():
    be = CPUBackend()
    src = be.to_device(np.arange(32, dtype=np.float64))
    dst = be.allocate(32, np.float64)
    kernel = be.compile_kernel(scale_through_shared)
    be.launch_kernel(kernel, 1, 32, src, dst, 2.0, 32)  # writes all of dst: its mask goes
    sim = kernel.select((src, dst, 2.0, 32))
    plans = len(sim.plans)
    for _ in range(3):  # the first binds dst without a mask; the others repeat that binding
        be.launch_kernel(kernel, 1, 32, src, dst, 2.0, 32)
    assert len(sim.plans) == plans + 1
    generation = be.workspace.generation
    be.launch_kernel(big_shared, 1, 32, be.allocate(32, np.float64), dynamic_shared_bytes=48 * 1024)
    assert be.workspace.generation != generation  # the shared-memory buffer was replaced
    be.launch_kernel(kernel, 1, 32, src, dst, 3.0, 32)
    assert len(sim.plans) == plans + 2  # bound again, against the new buffer
    expected = np.roll(np.arange(32) * 3.0, -1) + np.arange(32)
    np.testing.assert_array_equal(be.to_host(dst), expected)


def test_workspace_generations_are_never_shared():
    a, b = Workspace(), Workspace()
    assert a.generation != b.generation
    first = a.generation
    a.get("x", 100)
    grown = a.generation
    assert grown != first
    a.get("x", 64, zero=True)  # fits: the same buffer, the same generation
    assert a.generation == grown
    a.get("x", 1000)
    assert a.generation not in (first, grown, b.generation)


def test_a_repeated_launch_sees_its_arrays_masks_as_they_are_now():
    # the same array objects, launched again after a host write dropped a mask (and after a
    # failed launch dropped the race records it made): bound again, so no stale mask or record
    be = CPUBackend()
    n = 1 << 16
    src, dst = be.allocate(n, np.float64), be.allocate(n, np.float64)
    for _ in range(2):
        with pytest.raises(UninitializedMemoryError, match="src"):
            be.launch_kernel(scale_through_shared, n // 32, 32, src, dst, 1.0, n)
    be.copy_to_device(np.ones(n), src)
    for s in (2.0, 3.0, 3.0):
        be.launch_kernel(scale_through_shared, n // 32, 32, src, dst, s, n)
        np.testing.assert_array_equal(be.to_host(dst), s + np.arange(n))


@cuda.jit
def _fill(out, value):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = value


def test_a_plan_keeps_no_launched_array_alive():
    # numba-cuda's API frees an array when it is collected: launching it, again and again (a
    # repeated launch reuses its binding), must not keep its memory from being freed
    with gpukit.simulate("T4"):
        context = cuda.current_context()
        free = context.get_memory_info().free
        for k in range(12):  # each array is launched three times, then dropped
            a = cuda.device_array(1 << 20, np.float32)
            for _ in range(3):
                _fill[4096, 256](a, float(k))
            assert a.copy_to_host()[-1] == k
            del a
            gc.collect()
            context.memory_manager.deallocations.clear()  # frees what numba-cuda has pending
            assert context.get_memory_info().free == free
