"""Arrays indexed only by the thread's grid coordinates keep no race records (gpukit.sim.
thread_indexed): which parameters the kernel's source qualifies, and which launches may rely on
it. A launch that may not (threads that share coordinates, two arguments on one allocation,
overlapping views) keeps records and reports the race."""

from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

from gpukit.backends.cpu import CPUBackend
from gpukit.errors import RaceConditionError, UninitializedMemoryError
from gpukit.sim.device_array import DeviceArray
from gpukit.sim.thread_indexed import thread_indexed


def _indexed(kernel) -> dict:
    tree = ast.parse(textwrap.dedent(inspect.getsource(kernel)))
    params = tuple(inspect.signature(kernel).parameters)
    return thread_indexed(kernel, tree, params)


# -- which parameters qualify -----------------------------------------------------------------
def by_grid(a, out):
    i = cuda.grid(1)
    if i < out.shape[0] and i < len(a):
        out[i] = a[i] * 2


def by_sum(out):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        out[i] += 1


def by_names(an_array):  # Numba's documentation writes the index this way
    tx = cuda.threadIdx.x
    ty = cuda.blockIdx.x
    bw = cuda.blockDim.x
    pos = tx + ty * bw
    if pos < an_array.size:
        an_array[pos] *= 2


def by_rows(A, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = A[row, col] + A[col, row]


def by_y(out):
    j = cuda.threadIdx.y + cuda.blockDim.y * cuda.blockIdx.y
    out[j] = j


def by_grid_stride(a, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.size, stride):
        out[i] = a[i]
    for j in range(cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x, out.size,
                   cuda.blockDim.x * cuda.gridDim.x):
        out[j] += 1


def test_coordinates_by_grid_sums_and_their_parts_qualify():
    assert _indexed(by_grid) == {"a": (0,), "out": (0,)}
    assert _indexed(by_sum) == {"out": (0,)}
    assert _indexed(by_names) == {"an_array": (0,)}
    assert _indexed(by_rows) == {"C": (1, 0)}  # A is read at two forms: not one thread's
    assert _indexed(by_y) == {"out": (1,)}
    assert _indexed(by_grid_stride) == {"a": (0,), "out": (0,)}


def neighbour(out):
    i = cuda.grid(1)
    out[i + 1] = 0


def moved(out):
    i = cuda.grid(1)
    i += 1
    out[i] = 0


def sliced(out):
    i = cuda.grid(1)
    out[i:][0] = 0


def atomic(out):
    i = cuda.grid(1)
    cuda.atomic.add(out, i, 1)


def renamed(out):
    i = cuda.grid(1)
    view = out
    view[i] = 0


def repeated(out):
    x, _y = cuda.grid(2)
    out[x, x] = 0


def not_a_literal(out, n):
    i = cuda.grid(n)
    out[i] = 0


def other_sum(out):
    i = cuda.threadIdx.x + cuda.blockIdx.y * cuda.blockDim.x
    out[i] = 0


def shadowed(out):
    cuda = None  # noqa: F841 - the kernel's own `cuda` is not numba.cuda
    i = out.size
    out[i] = 0


def reassigned(out, b):
    i = cuda.grid(1)
    out = b
    out[i] = 0


def nested(out):
    i = cuda.grid(1)
    f = lambda: i
    out[f()] = 0


def block_stride(out):
    for i in range(cuda.grid(1), out.size, cuda.blockDim.x):  # blocks' values overlap
        out[i] = 0


def thread_start(out):
    for i in range(cuda.threadIdx.x, out.size, cuda.gridsize(1)):  # blocks start alike
        out[i] = 0


@pytest.mark.parametrize("kernel", [block_stride, thread_start, neighbour, moved, sliced, atomic, renamed, repeated,
                                    not_a_literal, other_sum, shadowed, reassigned, nested])
def test_any_other_use_leaves_the_array_to_the_records(kernel):
    assert _indexed(kernel) == {}


# -- which launches rely on it -----------------------------------------------------------------
@cuda.jit
def double(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] * 2 + cuda.threadIdx.y  # (a write of the bits already there is no race)


@pytest.fixture
def be():
    return CPUBackend()


def test_a_one_dimensional_launch_makes_no_records(be):
    a = be.to_device(np.arange(100, dtype=np.float32))
    out = be.allocate(100, np.float32)
    be.launch_kernel(double, 4, 32, a, out)
    np.testing.assert_array_equal(be.to_host(out), np.arange(100) * 2)
    assert not out.alloc.has_race_records
    assert be.memory.host_budget.used_bytes == 2 * 400  # the two arrays' storage only


def test_threads_that_share_coordinates_keep_records_and_race(be):
    a = be.to_device(np.arange(64, dtype=np.float32))
    out = be.allocate(64, np.float32)
    with pytest.raises(RaceConditionError) as info:
        be.launch_kernel(double, 2, (32, 2), a, out)  # threadIdx.y 0 and 1 write out[i] both
    err = info.value
    assert (err.thread, err.other_thread, err.block, err.other_block) == (
        (0, 1, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0))
    assert str(err).startswith("data race on out[0]: thread (0, 1, 0) of block (0, 0, 0) writes it")


def test_two_arguments_on_one_allocation_keep_records(be):
    x = be.to_device(np.arange(65, dtype=np.float32))
    with pytest.raises(RaceConditionError) as info:  # thread t writes x[t + 1], t + 1 reads it
        be.launch_kernel(double, 2, 32, x[:-1], x[1:])
    err = info.value
    assert {err.thread, err.other_thread} == {(0, 0, 0), (1, 0, 0)}


def test_the_same_array_twice_keeps_records(be):
    x = be.to_device(np.arange(64, dtype=np.float32))
    be.launch_kernel(double, 2, 32, x, x)  # each thread reads and writes its own element
    np.testing.assert_array_equal(be.to_host(x), np.arange(64) * 2)
    assert x.alloc.has_race_records


def test_a_view_with_a_step_is_indexed_by_thread_too(be):
    a = be.to_device(np.arange(64, dtype=np.float32))
    out = be.to_device(np.zeros(128, np.float32))
    be.launch_kernel(double, 2, 32, a, out[::2])
    np.testing.assert_array_equal(be.to_host(out)[::2], np.arange(64) * 2)
    assert not out.alloc.has_race_records


@cuda.jit
def fill_rows(C):
    col, row, z = cuda.grid(3)
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = row * 100 + col + 10000 * z


@settings(max_examples=25, deadline=None)
@given(gx=st.integers(1, 3), gy=st.integers(1, 3), gz=st.integers(1, 2),
       bx=st.integers(1, 8), by=st.integers(1, 8), bz=st.integers(1, 2))
def test_records_are_elided_exactly_when_no_two_threads_share_an_element(gx, gy, gz, bx, by, bz):
    be = CPUBackend()
    C = be.allocate((gy * by, gx * bx), np.int64)
    shared = gz * bz > 1  # threads differing only in z write the same element
    if shared:
        with pytest.raises(RaceConditionError):
            be.launch_kernel(fill_rows, (gx, gy, gz), (bx, by, bz), C)
        return
    be.launch_kernel(fill_rows, (gx, gy, gz), (bx, by, bz), C)
    rows, cols = np.indices(C.shape)
    np.testing.assert_array_equal(be.to_host(C), rows * 100 + cols)
    assert not C.alloc.has_race_records


def test_a_view_whose_elements_overlap_keeps_records(be):
    a = be.to_device(np.arange(64, dtype=np.float32))
    out = be.to_device(np.zeros(64, np.float32))
    every_one_element = DeviceArray(out.alloc, (64,), (0,), 0)  # all 64 indices name out[0]
    with pytest.raises(RaceConditionError) as info:
        be.launch_kernel(double, 2, 32, a, every_one_element)
    assert {info.value.thread, info.value.other_thread} == {(0, 0, 0), (1, 0, 0)}


@cuda.jit
def copy_strided(a, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a[i] + 1


def test_a_grid_stride_loop_makes_no_records(be):
    a = be.to_device(np.arange(1000, dtype=np.float32))
    out = be.allocate(1000, np.float32)
    be.launch_kernel(copy_strided, 3, 32, a, out)  # 96 threads, 10 or 11 elements each
    np.testing.assert_array_equal(be.to_host(out), np.arange(1000) + 1)
    assert not out.alloc.has_race_records


def test_an_array_a_device_function_also_captures_keeps_records():
    be = CPUBackend()
    out = be.to_device(np.zeros(65, np.float32))
    alias = out

    @cuda.jit(device=True)
    def next_one(i):
        return alias[i + 1]  # the element the next thread writes through `out`

    @cuda.jit
    def shifted(out):
        i = cuda.grid(1)
        if i < 64:
            out[i] = next_one(i) + 1

    with pytest.raises(RaceConditionError) as info:
        be.launch_kernel(shifted, 2, 32, out)
    assert {info.value.thread, info.value.other_thread} == {(0, 0, 0), (1, 0, 0)}


@pytest.mark.parametrize("races", [True, False])
def test_an_output_without_records_still_marks_what_it_wrote(be, races):
    # its writes set only the written marks (access.MARK_FLAG); a later read of what no thread
    # wrote is still stopped, at the element
    a = be.to_device(np.arange(64, dtype=np.float32))
    out, again = be.allocate(64, np.float32), be.allocate(64, np.float32)
    be.launch_kernel(double, 1, 32, a, out, checks={"races": races})  # out[0..31]
    assert not out.alloc.has_race_records
    be.launch_kernel(double, 1, 32, out, again)  # reads only what was written
    np.testing.assert_array_equal(be.to_host(again)[:32], np.arange(32) * 4)
    with pytest.raises(UninitializedMemoryError) as info:
        be.launch_kernel(double, 2, 32, out, again)
    assert (info.value.thread, info.value.block) == ((0, 0, 0), (1, 0, 0))
    assert str(info.value).startswith("'a[i]' reads a[32], which was never written")


def copy_first_40(a, out):
    i = cuda.grid(1)
    if i < 40:
        out[i] = a[i]


def copy_all(a, out):
    i = cuda.grid(1)
    out[i] = a[i]


_RECORD12 = np.dtype([("x", np.int32), ("y", np.float32), ("z", np.int32)])


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.complex128, _RECORD12],
                         ids=["1 byte", "2 bytes", "4 bytes", "16 bytes", "12-byte record"])
def test_an_output_marks_the_elements_it_wrote_whatever_their_size(be, dtype):
    # a written mark is a byte per element: the element's index is its offset shifted by the
    # item size's power of two, or divided by a size that is none (the 12-byte record)
    host = np.zeros(64, dtype)
    host.view(np.uint8)[:] = np.arange(host.nbytes) % 251
    out, again = be.allocate(64, dtype), be.allocate(64, dtype)
    be.launch_kernel(copy_first_40, 1, 64, be.to_device(host), out)
    be.launch_kernel(copy_first_40, 1, 64, out, again)  # reads only what was written
    assert be.to_host(again)[:40].tobytes() == host[:40].tobytes()
    with pytest.raises(UninitializedMemoryError) as info:
        be.launch_kernel(copy_all, 1, 64, out, again)
    assert info.value.thread == (40, 0, 0)
    assert str(info.value).startswith("'a[i]' reads a[40], which was never written")
