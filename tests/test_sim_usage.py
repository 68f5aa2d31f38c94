"""How a kernel's code may use its array parameters (gpukit.sim.usage): an element handed on
(`x = a[i]`, `f(a[i])`) reads the array, a view or a record handed on may write it, and an
atomic writes its array without reading an element. What a launch makes of it: race records only
for arrays that may be written (reader records only for those also read), blocks split over host
threads where nothing they may write is shared, and the check of races between streams."""

from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np
import pytest
from numba import cuda, float32

from gpukit.backends.cpu import CPUBackend
from gpukit.errors import RaceConditionError
from gpukit.sim import parallel
from gpukit.sim.usage import ANY, Usage, param_usage

N = 1 << 16  # threads enough for a launch that may be split over host threads


def _usage(kernel) -> dict[str, Usage]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(kernel)))
    return param_usage(kernel, tree, tuple(inspect.signature(kernel).parameters))


@cuda.jit(device=True)
def twice(x):
    return x * 2


def element_to_a_name(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        x = a[i]
        out[i] = x * 2


def element_to_a_call(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = twice(a[i])


def elements_by_loop_and_grid(A, out):
    col, row = cuda.grid(2)
    total = float32(0)
    for k in range(A.shape[1]):
        v = A[row, k]
        total += v
    j = col
    j += cuda.threadIdx.x * 0
    w = A[row, min(j, A.shape[1] - 1)]
    if row < out.shape[0]:
        out[row] = total + w


def histogram(data, hist):
    i = cuda.grid(1)
    if i < data.shape[0]:
        cuda.atomic.add(hist, data[i], 1)


def index_a_parameter(a, k, out):
    v = a[k]  # k is the launch's: a slice object would make this a view
    out[0] = v


def index_a_slice(a, out):
    s = slice(0, 2)
    v = a[s]
    out[0] = v[0]


def index_from_a_call(a, out):
    s = twice(0)  # what a device function returns is not followed
    v = a[s]
    out[0] = v


def view_written(A):
    i = cuda.grid(1)
    row = A[0]
    row[0] = i


def test_elements_handed_on_read_the_array_and_views_may_write_it():
    for kernel in (element_to_a_name, element_to_a_call):
        usage = _usage(kernel)["a"]
        assert usage == Usage(True, False, frozenset({1}))
        assert usage.of((N,)) == (True, False)  # an element of a 1-D array: a copy
        assert usage.of((N, 4)) == (True, True)  # a row of a 2-D array: a view
        assert usage.of((N,), structured=True) == (True, True)  # a record: by reference
        assert usage.of(None) == (True, True)  # an array in a tuple: `t[0]` is the array
    usage = _usage(elements_by_loop_and_grid)
    assert usage["A"] == Usage(True, False, frozenset({2}))
    assert usage["A"].of((8, 8)) == (True, False)
    assert usage["out"] == Usage(False, True)


def test_an_atomic_writes_its_array_and_its_index_is_an_element_read():
    usage = _usage(histogram)
    assert usage["hist"] == Usage(False, True)
    assert usage["data"].of((N,)) == (True, False)


@pytest.mark.parametrize("kernel", [index_a_parameter, index_a_slice, index_from_a_call])
def test_an_index_not_proven_an_integer_may_make_a_view(kernel):
    assert _usage(kernel)["a"] == ANY


def test_a_view_handed_to_a_name_may_write():
    usage = _usage(view_written)["A"]
    assert usage == Usage(True, False, frozenset({1}))  # `A[0]`: a row of a 2-D array
    assert usage.of((4, 4)) == (True, True)
    backend = CPUBackend()
    A = backend.to_device(np.full((4, 4), -1, np.int64))
    with pytest.raises(RaceConditionError, match="A"):
        backend.launch_kernel(backend.compile_kernel(view_written), 1, 2, A)


def test_an_input_read_through_a_name_keeps_no_records_and_the_launch_splits():
    backend = CPUBackend(num_threads=2)
    a = backend.to_device(np.arange(N, dtype=np.float32))
    out = backend.allocate(N, np.float32)
    backend.launch_kernel(backend.compile_kernel(element_to_a_call), N // 256, 256, a, out)
    np.testing.assert_array_equal(backend.to_host(out), np.arange(N, dtype=np.float32) * 2)
    assert not a.alloc.has_race_records
    if parallel.usable_cores() >= 2:
        assert backend.launches[-1].extra["host_threads"] == 2


def test_a_histograms_bins_keep_writer_records_only_and_its_input_none():
    backend = CPUBackend()
    data = np.random.default_rng(1).integers(0, 16, 4096).astype(np.uint8)
    d = backend.to_device(data)
    hist = backend.to_device(np.zeros(16, np.int64))
    backend.launch_kernel(backend.compile_kernel(histogram), 16, 256, d, hist)
    np.testing.assert_array_equal(backend.to_host(hist), np.bincount(data, minlength=16))
    assert not d.alloc.has_race_records
    assert hist.alloc.has_race_records and hist.alloc.readers_address == 0


def test_two_streams_reading_one_input_through_elements_do_not_race():
    backend = CPUBackend()
    a = backend.to_device(np.ones(1024, np.float32))
    outs = [backend.allocate(1024, np.float32) for _ in range(2)]
    kernel = backend.compile_kernel(element_to_a_name)
    for out in outs:  # on two streams, nothing ordering them: both read `a`
        kernel[4, 256, backend.stream()](a, out)
    backend.synchronize()
    for out in outs:
        np.testing.assert_array_equal(backend.to_host(out), 2.0)
