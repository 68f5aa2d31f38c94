"""The simulator computes with Numba's rules, runs the kernel language numba-cuda accepts, and
raises no false alarm on correct code (issue 14's examples, each checked against numpy or against
what Numba itself computes)."""

from __future__ import annotations

import cmath
import enum
import math
import re
from typing import Any

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda
from numba.core.errors import NumbaWarning
from numba.cuda.misc.special import literal_unroll  # numba-cuda's, as kernels import it
from numba.cuda.np.numpy_support import carray
from numba.cuda.tests.cudapy.extensions_usecases import struct_model_type  # numba-cuda's type

from gpukit.backends.cpu import CPUBackend
from gpukit.errors import (
    GpukitWarning,
    KernelError,
    KernelTypingError,
    OutOfBoundsError,
    RaceConditionError,
    UninitializedMemoryError,
    UnsupportedKernelError,
)


@pytest.fixture
def be() -> CPUBackend:
    return CPUBackend()


def run(be: CPUBackend, kernel: Any, grid: Any, block: Any, *arrays: np.ndarray,
        scalars: tuple = (), **options: Any) -> list[np.ndarray]:
    """Launch with device copies of `arrays` (then `scalars`); the arrays after the launch."""
    devs = [be.to_device(a) for a in arrays]
    be.launch_kernel(kernel, grid, block, *devs, *scalars, **options)
    return [be.to_host(d) for d in devs]


# -- arithmetic with Numba's types -----------------------------------------------------------------
def int32_product(out):
    i = cuda.grid(1)
    out[i] = numba.int32(i + 40000) * numba.int32(65536)


def test_int32_times_int32_is_int64_as_numba_types_it(be):
    (out,) = run(be, int32_product, 1, 4, np.zeros(4, np.int64))
    assert out.tolist() == [(i + 40000) * 65536 for i in range(4)]  # no wrap to negatives


def float_accumulator(a, out):
    acc = 0.0  # a Python float: Numba types acc as float64, so it sums in float64
    for k in range(a.shape[0]):
        acc += a[k]
    out[0] = acc


def test_a_python_float_accumulator_sums_in_float64(be):
    a = np.full(100_000, 0.1, np.float32)
    (_, out) = run(be, float_accumulator, 1, 1, a, np.zeros(1, np.float64))
    assert out[0] == np.sum(a.astype(np.float64))
    assert out[0] != np.float32(np.sum(a, dtype=np.float32))


def bools_add(x, y, out):
    i = cuda.grid(1)
    out[i] = (x[i] > 0) + (y[i] > 0)


def test_booleans_add_as_integers(be):
    x, y = np.array([1.0, 1.0, -1.0]), np.array([1.0, -1.0, -1.0])
    (*_, out) = run(be, bools_add, 1, 3, x, y, np.zeros(3, np.int64))
    assert out.tolist() == [2, 1, 0]


@numba.njit
def _fnv_cpu(x):
    h = np.uint32(2166136261)
    for k in range(4):
        h = (h ^ np.uint32((x >> (8 * k)) & 0xFF)) * np.uint32(16777619)
    return h


def fnv_hash(a, out):
    i = cuda.grid(1)
    h = np.uint32(2166136261)
    for k in range(4):
        h = (h ^ np.uint32((a[i] >> (8 * k)) & 0xFF)) * np.uint32(16777619)
    out[i] = h


def test_uint32_hashes_match_numba(be):
    a = np.array([0, 1, 12345, 2**31 - 1], np.uint32)
    (_, out) = run(be, fnv_hash, 1, 4, a, np.zeros(4, np.uint64))
    assert out.tolist() == [int(_fnv_cpu(x)) for x in a]


def clz_of(x, out):
    out[cuda.grid(1)] = cuda.clz(x)


def test_an_eager_signature_is_honoured_clz_counts_in_its_width(be):
    eager = be.compile_kernel(clz_of, "void(int32, int32[:])")
    out = be.allocate(1, np.int32)
    be.launch_kernel(eager, 1, 1, 1048576, out)  # a Python int, converted to int32
    assert be.to_host(out).tolist() == [11]
    lazy = be.compile_kernel(clz_of)  # a Python int is an int64 to Numba: 64 bits counted
    be.launch_kernel(lazy, 1, 1, 1048576, out)
    assert be.to_host(out).tolist() == [43]


def fma_of(out, a, b, c):
    out[0] = cuda.fma(a, b, c)


def test_an_eager_signature_converts_scalars_as_c_does(be):
    """numba-cuda's own tests (test_intrinsics): 0xFFFFFFFF given for an int32 is -1, and a
    float32 fma compiles (found by benchmarks/numba_cuda_suite.py)."""
    out = be.allocate(1, np.int32)
    be.launch_kernel(be.compile_kernel(clz_of, "void(int32, int32[:])"), 1, 1, 0xFFFFFFFF, out)
    assert be.to_host(out).tolist() == [0]  # clz(-1): no leading zeros
    f = be.allocate(1, np.float32)
    be.launch_kernel(be.compile_kernel(fma_of, "void(f4[:], f4, f4, f4)"), 1, 1, f, 2.0, 3.0,
                     4.0)
    assert be.to_host(f).tolist() == [10.0]


def mixed_signedness_index(a, out):
    i = cuda.grid(1)
    j = np.uint64(i)
    out[i] = a[i + j]  # int64 + uint64 is float64 in Numba, an index it truncates


def test_a_mixed_signedness_index_is_a_float_index_as_in_numba(be):
    (_, out) = run(be, mixed_signedness_index, 1, 2, np.arange(4.0), np.zeros(2))
    assert out.tolist() == [0.0, 2.0]


# -- the library ---------------------------------------------------------------------------------
def complex_math(z, out):
    i = cuda.grid(1)
    out[i] = cmath.sqrt(z[i]) + cmath.exp(z[i])


def test_cmath(be):
    z = np.array([1 + 2j, -4 + 0j, 0.5j], np.complex128)
    (_, out) = run(be, complex_math, 1, 3, z, np.zeros(3, np.complex128))
    np.testing.assert_allclose(out, [cmath.sqrt(v) + cmath.exp(v) for v in z], rtol=1e-12)


def nan_atomics(values, hi, lo, nhi, nlo):
    i = cuda.grid(1)
    cuda.atomic.max(hi, 0, values[i])
    cuda.atomic.min(lo, 0, values[i])
    cuda.atomic.nanmax(nhi, 0, values[i])
    cuda.atomic.nanmin(nlo, 0, values[i])


def test_atomic_max_and_min_treat_nan_as_numba_cuda_does(be):
    values = np.array([1.0, np.nan, 3.0, -2.0])
    start = np.zeros(1)
    (_, hi, lo, nhi, nlo) = run(be, nan_atomics, 1, 4, values, start.copy(), start.copy(),
                                start.copy(), start.copy())
    assert (hi[0], lo[0], nhi[0], nlo[0]) == (3.0, -2.0, 3.0, -2.0)
    (_, hi, *_) = run(be, nan_atomics, 1, 4, values, np.full(1, np.nan), start.copy(),
                      np.full(1, np.nan), start.copy())
    assert math.isnan(hi[0])  # max leaves a NaN element alone...


def print_coordinates(out):
    print(cuda.threadIdx, cuda.blockIdx.x, 1.5, True, "done")
    out[0] = 1


def test_print_formats_as_numba_cuda_does(be, capsys):
    run(be, print_coordinates, 1, 1, np.zeros(1))
    assert capsys.readouterr().out == "(0, 0, 0) 0 1.500000 True done\n"


def print_too_many(r, u):
    print(r[0], 1.5, "text", (r[1], True), u[0], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
          r[9], r[10], r[11], r[12], r[13], r[14], r[15], r[16], r[17], r[18], r[19], r[20],
          r[21], r[22], r[23], r[24], r[25], r[26], r[27], r[28], r[29])


def test_a_print_of_more_than_32_items_prints_its_format_as_numba_cuda_does(be, capsys):
    # CUDA's vprintf takes 32 items: numba-cuda warns as it compiles such a call and the
    # kernel prints the raw format string (test_print.py::test_too_many_args there)
    with pytest.warns(NumbaWarning, match=re.escape(
            "CUDA print() cannot print more than 32 items. The raw format string will be "
            "emitted by the kernel instead.")):
        run(be, print_too_many, 1, 1, np.arange(30), np.ones(1, np.uint32))
    assert capsys.readouterr().out == \
        "%lld %f %s (%lld, %s) %llu " + " ".join(["%lld"] * 28) + "\n"


def math_gpu_meanings(x, n, floor, fmod, modf, rem, nxt, pw, ld, inv):
    i = cuda.grid(1)
    floor[i] = math.floor(x[i])  # a float on a GPU (an int on Numba's CPU target)
    fmod[i] = math.fmod(x[i], 0.75)  # these four do not compile for Numba's CPU target
    modf[i] = math.modf(x[i])[0]
    rem[i] = math.remainder(x[i], 0.75)
    nxt[i] = math.nextafter(x[i], 10.0)
    pw[i] = math.pow(x[i], n[i])  # libdevice: 0.0 ** -1 is inf, not an error
    ld[i] = math.ldexp(True, n[i] + 127)  # numba-cuda types ldexp(bool, int32) as float32
    inv[i] = np.float32(1.0) / math.ldexp(True, n[i] + 127)


def test_math_functions_have_their_numba_cuda_types_and_gpu_meanings(be):
    """Found by the differential tester (tests/test_differential.py): the CPU target's math."""
    x = np.array([1e20, -0.0, np.inf, 2.5, -7.25, 0.0, 0.375, -1.5])
    n = np.array([1, 2, 3, 1, 2, -1, 3, 0], np.int32)
    outs = run(be, math_gpu_meanings, 1, 8, x, n, *[np.full(8, 7.0) for _ in range(8)])
    floor, fmod, modf, rem, nxt, pw, ld, inv = outs[2:]
    np.testing.assert_array_equal(floor, np.floor(x))
    assert math.copysign(1.0, floor[1]) == -1.0  # -0.0 stays -0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_array_equal(fmod, np.fmod(x, 0.75))
        np.testing.assert_array_equal(modf, np.modf(x)[0])
        np.testing.assert_array_equal(rem, [math.remainder(v, 0.75) if math.isfinite(v)
                                            else math.nan for v in x])
        np.testing.assert_array_equal(nxt, np.nextafter(x, 10.0))
        np.testing.assert_array_equal(pw, np.power(x, n.astype(np.float64)))
    with np.errstate(over="ignore"):
        f32 = np.ldexp(np.float32(1), n + 127)  # float32: 2**128 overflows to inf
    np.testing.assert_array_equal(ld, f32.astype(np.float64))
    np.testing.assert_array_equal(inv, (np.float32(1) / f32).astype(np.float64))


# -- the language --------------------------------------------------------------------------------
def iterate(a, b, out):
    i = cuda.grid(1)
    if i == 0:
        total = 0.0
        for k, x in enumerate(a):
            total += k * x
        for x, y in zip(a, b):
            total += x * y
        for v in (1.0, 2.0, 3.0):
            total += v
        for x in b:
            total += x
        out[0] = total


def test_for_over_enumerate_zip_tuples_and_arrays(be):
    a, b = np.arange(4.0), np.arange(4.0) + 1
    (*_, out) = run(be, iterate, 1, 1, a, b, np.zeros(1))
    want = sum(k * x for k, x in enumerate(a)) + a @ b + 6 + b.sum()
    assert out[0] == want


def nested_enumerate_zip(x, y, out):
    for i, (xv, yv) in enumerate(zip(x, y), 1):
        out[i - 1] = i * 100 + xv * 10 + yv
    for (i, xv), yv in zip(enumerate(x), y):  # zip stops at the shorter
        out[i] += xv + yv


def test_for_over_enumerate_and_zip_nested_in_each_other(be):
    x, y = np.array([1, 2, 3]), np.array([4, 5, 6, 7])
    (*_, out) = run(be, nested_enumerate_zip, 1, 1, x, y, np.zeros(3, np.int64))
    assert out.tolist() == [(i + 1) * 100 + 11 * x[i] + 2 * y[i] for i in range(3)]


def closures_and_none(a, out):
    i = cuda.grid(1)
    scale = 3.0

    def scaled(x):
        return x * scale

    found = None
    if a[i] > 0:
        found = a[i]
    if found is None:
        out[i] = -1.0
    else:
        out[i] = scaled(found)


def test_inner_functions_closures_and_is_none(be):
    (_, out) = run(be, closures_and_none, 1, 3, np.array([1.0, -1.0, 2.0]), np.zeros(3))
    assert out.tolist() == [3.0, -1.0, 6.0]


@cuda.jit(device=True)
def bin_of(x):
    if x < 0.0:
        return None  # out of range: the caller's index is an optional integer
    return int(x)


def optional_index(x, hist):
    i = cuda.grid(1)
    cuda.atomic.add(hist, bin_of(x[i]), 1)  # None would be Numba's TypeError


def test_an_atomic_takes_an_optional_integer_index_as_numba_casts_it(be):
    # numba-examples' GPU histogram: its bin function returns None out of range
    (_, hist) = run(be, optional_index, 1, 4, np.array([0.5, 1.5, 1.2, 3.9]),
                    np.zeros(4, np.int64))
    assert hist.tolist() == [1, 2, 0, 1]
    with pytest.raises(KernelError, match="expected int64, got None"):
        run(be, optional_index, 1, 1, np.array([-1.0]), np.zeros(4, np.int64))


@cuda.jit(device=True)
def add_at_wrapped(ary, neg_idx):
    # numba-cuda's test_atomics: the untaken path makes `at` (int64, int64), and Numba unifies
    # it with (int32, uint64) as (int64, float64), which numba-cuda's atomic typing lets through
    at = (cuda.threadIdx.x, numba.uint64(cuda.threadIdx.y))
    if neg_idx:
        at = (at[0] % ary.shape[0], at[1] % ary.shape[1])
    cuda.atomic.add(ary, at, 1.0)


def float_index_atomic(ary):
    add_at_wrapped(ary, False)


def float_index_1d(hist, x):
    cuda.atomic.add(hist, x[cuda.threadIdx.x] * 2.0, 1)  # numba-cuda's typing: index intp


def test_a_float_index_of_an_atomic_is_truncated_as_numba_cuda_casts_it(be):
    (ary,) = run(be, float_index_atomic, 1, (4, 8), np.zeros((4, 8)))
    assert ary.tolist() == np.ones((4, 8)).tolist()
    (hist, _) = run(be, float_index_1d, 1, 4, np.zeros(8, np.int64),
                    np.array([0.2, 0.7, 1.4, 3.9]))
    assert hist.tolist() == [1, 1, 1, 0, 0, 0, 0, 1]  # 0.4, 1.4, 2.8, 7.8 toward zero


def with_breakpoint(a):
    breakpoint()  # noqa: T100 - numba-cuda's debugging example: cuda-gdb stops here
    a[0] = 1


def test_breakpoint_is_passed_over_with_a_warning_that_says_so(be):
    with pytest.warns(GpukitWarning, match=r"breakpoint\(\) in kernel 'with_breakpoint' "
                      r"\(.*test_sim_semantics.py, line \d+\) is passed over"):
        (a,) = run(be, with_breakpoint, 1, 1, np.zeros(1, np.int64))
    assert a.tolist() == [1]


@cuda.jit(device=True)
def double_after_barrier(v):
    cuda.syncthreads()  # a sync point: the simulator inlines this function
    if v < 0:
        return  # None, which the caller tests for
    return 2 * v


@cuda.jit(device=True)
def halve_after_barrier(v):
    cuda.syncthreads()
    if v > 0:
        return v / 2
    # falling off the end returns None too


@cuda.jit(device=True)
def first_then_add(n, t):
    sd = cuda.shared.array(1, numba.float64)
    if t == 0:
        sd[0] = n[0]
    cuda.syncthreads()
    return sd[0] + n[t]


@cuda.jit(device=True)
def through_another(n, t):
    return first_then_add(n, t)  # two levels of inlined device functions


@cuda.jit(device=True)
def with_inner_def(v):
    def same(u):
        return u
    return same(v) + cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)


def inlined_device_functions(x, out):
    t = cuda.threadIdx.x
    r = double_after_barrier(x[t])
    h = halve_after_barrier(x[t])
    out[t, 0] = -1.0 if r is None else r
    out[t, 1] = -1.0 if h is None else h
    out[t, 2] = through_another(x, t)
    out[t, 3] = with_inner_def(x[t])


def test_device_functions_with_barriers_return_none_and_nest(be):
    x = np.array([1.0, -2.0, 3.0, -4.0] * 8)
    (_, out) = run(be, inlined_device_functions, 1, 32, x, np.zeros((32, 4)))
    np.testing.assert_array_equal(out[:, 0], np.where(x < 0, -1.0, 2 * x))
    np.testing.assert_array_equal(out[:, 1], np.where(x > 0, x / 2, -1.0))
    np.testing.assert_array_equal(out[:, 2], x[0] + x)
    np.testing.assert_array_equal(out[:, 3], x + x[np.arange(32) ^ 1])


def inner_def_then_barrier(x, out):
    def same(v):
        return v
    t = cuda.threadIdx.x
    s = cuda.shared.array(8, numba.float64)
    s[t] = same(x[t])
    cuda.syncthreads()
    out[t] = s[7 - t]


def test_an_inner_function_keeps_its_returns_in_a_kernel_with_barriers(be):
    x = np.arange(8.0)
    (_, out) = run(be, inner_def_then_barrier, 1, 8, x, np.zeros(8))
    np.testing.assert_array_equal(out, x[::-1])


def zip_over_ranges(x, out):
    s = 0.0
    for a, b in zip(range(3), range(1, 4)):
        s += x[a] * b
    for k, j in enumerate(range(10, 4, -2)):
        s += k * j
    out[cuda.grid(1)] = s


def test_zip_and_enumerate_over_ranges(be):
    x = np.array([1.0, 2.0, 3.0])
    (_, out) = run(be, zip_over_ranges, 1, 2, x, np.zeros(2))
    assert out.tolist() == [1 * 1 + 2 * 2 + 3 * 3 + 0 * 10 + 1 * 8 + 2 * 6] * 2


def const_of_an_argument(a, out):
    c = cuda.const.array_like(a)  # numba-cuda passes an argument through unchanged
    out[cuda.grid(1)] = 2 * c[cuda.grid(1)]


def test_const_array_like_of_an_argument_is_the_argument(be):
    (_, out) = run(be, const_of_an_argument, 1, 4, np.arange(4.0), np.zeros(4))
    assert out.tolist() == [0.0, 2.0, 4.0, 6.0]


def bits_of_numbers(x, out, back):
    i = cuda.grid(1)
    out[i] = x[i].view(np.int64)  # a float64's bits (NVIDIA's floating-point emulation tutorial)
    back[i] = out[i].view(np.float64)


def test_a_number_viewed_as_another_type_keeps_its_bits(be):
    x = np.array([1.0, -2.5, 0.0, np.inf])
    (_, out, back) = run(be, bits_of_numbers, 1, 4, x, np.zeros(4, np.int64), np.zeros(4))
    np.testing.assert_array_equal(out, x.view(np.int64))
    np.testing.assert_array_equal(back, x)


def rows_and_slices(m, out):
    i = cuda.grid(1)
    row = m[i]  # a view of one row
    part = row[1:3]  # a slice of it
    out[i] = row[0] + part[0] + part[1] + m[i][2]


def test_views_slices_and_chained_indexing(be):
    m = np.arange(12.0).reshape(3, 4)
    (_, out) = run(be, rows_and_slices, 1, 3, m, np.zeros(3))
    assert out.tolist() == [r[0] + r[1] + r[2] + r[2] for r in m]


def slice_stores(m, row, out, src):
    i = cuda.grid(1)
    tmp = cuda.local.array(4, numba.float32)
    tmp[:] = 2.0  # a local scratch array zeroed (here: filled) in one statement
    m[i] = row  # a row from a 1-d array
    m[i, 1:3] = tmp[0] + i  # a scalar broadcast to a slice
    out[i, :] = src[0]  # an array of one element broadcast to the row
    out[i, 1:4] = src[i:i + 3]  # a slice from a slice


def test_assigning_to_slices_and_rows_broadcasts_as_numpy_does(be):
    row = np.array([9.0, 8.0, 7.0, 6.0])
    src = np.arange(1.0, 7.0)
    m, _, out, _ = run(be, slice_stores, 1, 3, np.zeros((3, 4)), row, np.zeros((3, 4)), src)
    want_m, want_out = np.tile(row, (3, 1)), np.zeros((3, 4))
    for i in range(3):
        want_m[i, 1:3] = 2.0 + i
        want_out[i, :] = src[0]
        want_out[i, 1:4] = src[i:i + 3]
    np.testing.assert_array_equal(m, want_m)
    np.testing.assert_array_equal(out, want_out)


def shift_right(a):
    a[1:] = a[:-1]  # source and destination overlap: Numba reads all of it first


def test_a_slice_assigned_from_an_overlapping_slice_reads_it_first(be):
    (a,) = run(be, shift_right, 1, 1, np.arange(5.0))
    assert a.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]


def every_thread_fills(out):
    out[:] = cuda.threadIdx.x


def partial_fill_then_read(out):
    tmp = cuda.local.array(4, numba.float64)
    tmp[:2] = 1.0
    out[0] = tmp[3]


def wrong_size(out, src):
    out[0:3] = src


def test_slice_stores_are_checked_element_by_element(be):
    with pytest.raises(RaceConditionError, match=r"data race on out\[0\]"):
        run(be, every_thread_fills, 1, 2, np.zeros(3))
    with pytest.raises(UninitializedMemoryError, match=r"reads tmp\[3\], which was never written"):
        run(be, partial_fill_then_read, 1, 1, np.zeros(1))
    with pytest.raises(KernelError, match="cannot assign slice from input of different size"):
        run(be, wrong_size, 1, 1, np.zeros(4), np.zeros(2))


# numba-cuda's cuda.reduce compiles the function it is given, often a lambda, as a device function
add_op = cuda.jit(device=True)(lambda a, b: a + b)
double, square = cuda.jit(device=True)(lambda x: 2 * x), cuda.jit(device=True)(lambda x: x * x)


def lambdas_as_device_functions(a, out):
    i = cuda.grid(1)
    out[i] = add_op(a[i], double(square(a[i])))


def test_lambdas_as_device_functions_even_two_on_a_line(be):
    a = np.arange(5.0)
    (_, out) = run(be, lambdas_as_device_functions, 1, 5, a, np.zeros(5))
    np.testing.assert_array_equal(out, a + 2 * a * a)


POINT = np.dtype([("x", np.float64), ("y", np.float64)])


def record_fields(points, out):
    i = cuda.grid(1)
    p = points[i]
    out[i] = p.x * p["y"]
    points[i].x = 0.0


def test_records(be):
    pts = np.zeros(3, POINT)
    pts["x"], pts["y"] = [1, 2, 3], [4, 5, 6]
    (after, out) = run(be, record_fields, 1, 3, pts, np.zeros(3))
    assert out.tolist() == [4.0, 10.0, 18.0]
    assert after["x"].tolist() == [0.0, 0.0, 0.0]


PARTICLE = np.dtype([("id", np.int32), ("pos", np.float32, (3,)), ("m", np.float32, (2, 2))])


def particle_fields(parts, out):
    i = cuda.grid(1)
    p = parts[i]
    out[i] = p.pos[0] + p["pos"][2] + p.m[1, 0] + p[0]  # p[0]: the first field, by position
    p.pos[1] = p.id * 10.0
    p["m"][0, 1] = -1.0


def particle_overrun(parts, out):
    i = cuda.grid(1)
    out[i] = parts[i].pos[3]


def test_array_fields_of_records_are_read_and_written_in_place(be):
    parts = np.zeros(4, PARTICLE)
    parts["id"] = np.arange(4)
    parts["pos"] = np.arange(12, dtype=np.float32).reshape(4, 3)
    parts["m"][:, 1, 0] = 0.5
    (after, out) = run(be, particle_fields, 1, 4, parts.copy(), np.zeros(4))
    np.testing.assert_array_equal(
        out, parts["pos"][:, 0] + parts["pos"][:, 2] + 0.5 + parts["id"])
    np.testing.assert_array_equal(after["pos"][:, 1], parts["id"] * 10.0)
    np.testing.assert_array_equal(after["m"][:, 0, 1], -1.0)
    with pytest.raises(OutOfBoundsError, match=r"parts\[i\]\.pos\[3\].* at 3, outside 0\.\.2"):
        run(be, particle_overrun, 1, 4, parts, np.zeros(4))


class Colour(enum.Enum):
    red = 1
    green = 2


class Size(enum.IntEnum):
    small = 3


def enums(out, a, b):
    out[0] = a == b
    out[1] = a is not b
    out[2] = Colour.red == Colour["red"]  # a member looked up on the class, by attribute or name
    out[3] = Size.small + 1


@pytest.mark.parametrize("b", [Colour.red, Colour.green])
def test_enum_members_as_arguments_and_enum_classes_as_globals(be, b):
    (out,) = run(be, enums, 1, 1, np.zeros(4, np.int64), scalars=(Colour.red, b))
    assert out.tolist() == [Colour.red == b, Colour.red is not b, True, 4]


@cuda.jit(device=True)
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def fibonacci(out):
    i = cuda.grid(1)
    out[i] = fib(i)


def test_a_recursive_device_function(be):
    (out,) = run(be, fibonacci, 1, 11, np.zeros(11, np.int64))
    assert out.tolist() == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55]


def vectors(out):
    v = cuda.float64x4(1.0, 3.0, 5.0, 7.0)
    s = cuda.short2(10, 11.7)  # converted to the element type, as numba-cuda does
    f2 = cuda.float32x2(2, 3)
    out[0], out[1], out[2] = v.x, v.w, s.y
    j = 3
    for w in (cuda.float32x4(f2, f2), cuda.float32x4(v.y, f2, 9)):  # built from vectors too
        out[j] = w.x + 10 * w.y + 100 * w.z + 1000 * w.w
        j += 1
    big = cuda.short2(v.w * 1e4, -1e9)  # converted as a GPU converts them: clamped
    out[5], out[6] = big.x, big.y


def test_vector_types_are_built_from_numbers_and_vectors_and_read_by_field(be):
    (out,) = run(be, vectors, 1, 1, np.zeros(7))
    assert out.tolist() == [1.0, 7.0, 11.0, 3232.0, 9323.0, 32767.0, -32768.0]


class Overflow(Exception):
    pass


def raising(out, x):
    if x == 1:
        raise Overflow
    if x == 2:
        raise Overflow("too big")
    out[cuda.threadIdx.x] = x


def test_raise_raises_the_kernels_exception_as_numba_cuda_does_in_debug_mode(be):
    (out,) = run(be, raising, 1, 2, np.zeros(2), scalars=(0,))
    assert out.tolist() == [0.0, 0.0]
    line = raising.__code__.co_firstlineno
    with pytest.raises(Overflow, match=rf"^In function 'raising', file {re.escape(__file__)}, "
                                       rf"line {line + 2}, tid=\[0, 0, 0\] ctaid=\[0, 0, 0\] "):
        run(be, raising, 1, 2, np.zeros(2), scalars=(1,))
    with pytest.raises(KernelError, match=r"ctaid=\[0, 0, 0\]: too big \[kernel 'raising'"):
        run(be, raising, 1, 2, np.zeros(2), scalars=(2,))


# -- warps and memory ordering: no false alarms ------------------------------------------------------
def warp_sums(a, out):
    s = cuda.shared.array(64, numba.float32)
    t = cuda.threadIdx.x
    lane = t % 32
    s[t] = a[t]
    cuda.syncwarp()
    offset = 16
    while offset > 0:
        if lane < offset:
            s[t] += s[t + offset]
        cuda.syncwarp()
        offset //= 2
    if lane == 0:
        out[t // 32] = s[t]


def test_a_per_warp_reduction_with_syncwarp_in_a_64_thread_block(be):
    a = np.arange(64, dtype=np.float32)
    (_, out) = run(be, warp_sums, 1, 64, a, np.zeros(2, np.float32))
    assert out.tolist() == [a[:32].sum(), a[32:].sum()]


def useful_syncwarp(ary):
    i = cuda.grid(1)
    if i == 0:
        ary[0] = 42
    cuda.syncwarp(0xFFFFFFFF)
    ary[i] = ary[0]


def test_numba_cudas_useful_syncwarp_example_is_not_a_race(be):
    (out,) = run(be, useful_syncwarp, 1, 32, np.zeros(32, np.int32))
    assert out.tolist() == [42] * 32


def half_warp_votes(a, out):
    i = cuda.grid(1)
    lane = cuda.laneid
    if lane < 16:
        out[i] = cuda.ballot_sync(0x0000FFFF, a[i] > 0)
    else:
        out[i] = cuda.ballot_sync(0xFFFF0000, a[i] > 0)


def test_warp_intrinsics_with_half_warp_masks_honour_the_mask(be):
    a = np.where(np.arange(32) % 3 == 0, 1.0, -1.0)
    (_, out) = run(be, half_warp_votes, 1, 32, a, np.zeros(32, np.int64))
    bits = sum(1 << k for k in range(32) if a[k] > 0)
    assert out[:16].tolist() == [bits & 0xFFFF] * 16
    assert (out[16:] & 0xFFFFFFFF).tolist() == [bits & 0xFFFF0000] * 16


def last_block_sum(a, partial, count, total):
    """The CUDA Programming Guide's threadfence reduction: the last block to finish adds up."""
    s = cuda.shared.array(32, numba.float64)
    is_last = cuda.shared.array(1, numba.int32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.grid(1)]
    cuda.syncthreads()
    if t == 0:
        block_sum = 0.0
        for k in range(32):
            block_sum += s[k]
        partial[cuda.blockIdx.x] = block_sum
        cuda.threadfence()
        ticket = cuda.atomic.inc(count, 0, cuda.gridDim.x)
        is_last[0] = ticket == cuda.gridDim.x - 1
    cuda.syncthreads()
    if is_last[0] and t == 0:
        grand = 0.0
        for b in range(cuda.gridDim.x):
            grand += partial[b]
        total[0] = grand
        count[0] = 0


def test_the_threadfence_last_block_reduction_is_correct_and_not_a_race(be):
    a = np.arange(8 * 32, dtype=np.float64)
    for schedule in ("ordered", "shuffle"):
        (_, _, count, total) = run(be, last_block_sum, 8, 32, a, np.zeros(8),
                                   np.zeros(1, np.uint32), np.zeros(1), schedule=schedule)
        assert (total[0], count[0]) == (a.sum(), 0)


@cuda.jit(device=True)
def lock(mutex):
    while cuda.atomic.cas(mutex, 0, 0, 1) != 0:
        pass
    cuda.threadfence()


@cuda.jit(device=True)
def unlock(mutex):
    cuda.threadfence()  # releases the critical section's writes...
    cuda.atomic.exch(mutex, 0, 0)  # ...to the thread whose cas takes the lock next


def locked_count(total, mutex):
    """datashader's spin lock around a plain read-modify-write."""
    lock(mutex)
    total[0] = total[0] + 1.0
    unlock(mutex)


def written_after_the_release_fence(total, mutex):
    lock(mutex)
    total[0] = total[0] + 1.0
    cuda.threadfence()
    total[1] = cuda.threadIdx.x + 1.0  # after the fence: the exch does not release it
    cuda.atomic.exch(mutex, 0, 0)


def test_a_lock_of_atomics_and_fences_orders_threads_of_a_block_and_of_blocks(be):
    for schedule in ("ordered", "shuffle"):
        (total, mutex) = run(be, locked_count, 2, 4, np.zeros(1), np.zeros(1, np.int32),
                             schedule=schedule)
        assert (total[0], mutex[0]) == (8.0, 0)
    with pytest.raises(RaceConditionError, match=r"data race on total\[1\]: thread \(1, 0, 0\)"
                       r" of block \(0, 0, 0\) writes it .* thread \(0, 0, 0\) of block "
                       r"\(0, 0, 0\) writes it"):
        run(be, written_after_the_release_fence, 1, 2, np.zeros(2), np.zeros(1, np.int32))


def discarded_uninitialised_read(out):
    s = cuda.shared.array(96, numba.float32)
    t = cuda.threadIdx.x
    s[t] = t
    cuda.syncthreads()
    x = s[t + 32]  # threads 32..63 read s[64..95], never written...
    if t < 32:
        out[t] = x  # ...but only threads that read written elements use the value


def test_an_uninitialised_read_whose_value_is_discarded_is_no_error(be):
    (out,) = run(be, discarded_uninitialised_read, 1, 64, np.zeros(32, np.float32))
    assert out.tolist() == list(range(32, 64))


# -- checks without holes ------------------------------------------------------------------------
@cuda.jit(device=True)
def store_value(dst, i, value):
    dst[i] = value


def races_through_aliases_and_calls(out):
    dst = out  # an alias
    store_value(dst, 0, cuda.threadIdx.x)  # a device function writing through it


def test_writes_through_aliases_and_device_functions_are_tracked(be):
    with pytest.raises(RaceConditionError, match=r"data race on out\[0\]"):
        run(be, races_through_aliases_and_calls, 1, 2, np.zeros(1))


def init_then_atomics(hist):
    if cuda.grid(1) == 0:
        hist[0] = 5
    cuda.atomic.add(hist, 0, 1)


def test_a_plain_initialisation_racing_atomics_of_other_blocks_is_caught(be):
    with pytest.raises(RaceConditionError):
        run(be, init_then_atomics, 4, 1, np.zeros(1, np.int32))


def from_the_end(a, m, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[-1] + m[i, -1] + m[-2, 0]  # literal negatives count from the end, as in Numba
        m[i, -1] = 0


def test_literal_negative_indices_count_from_the_end(be):
    a, m = np.arange(5.0), np.arange(12.0).reshape(3, 4)
    (_, m_after, out) = run(be, from_the_end, 1, 3, a, m, np.zeros(3))
    assert out.tolist() == [a[-1] + m[i, -1] + m[-2, 0] for i in range(3)]
    assert m_after[:, -1].tolist() == [0.0, 0.0, 0.0]


def backward_difference(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] - a[i - 1]  # at i = 0, Numba reads a[-1]: the last element


def test_code_that_relies_on_numba_wrapping_a_negative_index_runs_without_that_check(be):
    a = np.arange(1.0, 6.0) ** 2
    (_, out) = run(be, backward_difference, 1, 5, a, np.zeros(5),
                   checks={"wraparound": False})
    assert out.tolist() == (a - np.roll(a, 1)).tolist()
    with pytest.raises(OutOfBoundsError, match=r"at -1, outside 0\.\.4; a computed index"):
        run(be, backward_difference, 1, 5, a, np.zeros(5))


# -- functions and constants passed to device functions (numba-cuda's test_atomics does) ---------
@cuda.jit(device=True)
def apply_op(op, ary, i, v):
    return op(ary, i, v)


@cuda.jit(device=True)
def apply_twice(op, then, ary, i, v):
    then(op, ary, i, v)
    return apply_op(op, ary, i, v)


@cuda.jit(device=True)
def as_int(x):
    return int(x)


@cuda.jit(device=True)
def apply_then_sync(op, ary, i, v):
    op(ary, i, v)
    cuda.syncthreads()
    return ary[i]


def ops_as_arguments(counts, old, hi, lo, synced):
    i = cuda.threadIdx.x
    old[i] = apply_op(cuda.atomic.add, counts, i % 4, 1)
    apply_twice(cuda.atomic.max, apply_op, hi, 0, i)
    apply_op(cuda.atomic.min, lo, as_int(0.0), i)
    synced[i] = apply_then_sync(cuda.atomic.add, counts, 4, 1)


def test_intrinsics_and_device_functions_pass_as_arguments(be):
    n = 32
    counts, old, hi, lo, synced = run(
        be, ops_as_arguments, 1, n, np.zeros(5, np.int64), np.zeros(n, np.int64),
        np.zeros(1, np.int64), np.full(1, 99, np.int64), np.zeros(n, np.int64))
    np.testing.assert_array_equal(counts, [8, 8, 8, 8, n])
    np.testing.assert_array_equal(np.sort(old), np.repeat(np.arange(8), 4))
    assert hi[0] == n - 1 and lo[0] == 0
    np.testing.assert_array_equal(synced, np.full(n, n))  # every add done before the barrier


def shape_from_a_local_constant(out):
    n = 48
    tile = cuda.shared.array(n, numba.int32)
    local = cuda.local.array(n, numba.int32)
    t = cuda.threadIdx.x
    local[t] = t
    tile[t] = local[t] * 2
    cuda.syncthreads()
    out[t] = tile[(t + 24) % n]


def test_a_shape_from_a_local_assigned_a_constant_once_is_a_constant(be):
    # numba-cuda infers n's constant; `n // 2` as a shape it rejects, and so does gpukit
    (out,) = run(be, shape_from_a_local_constant, 1, 48, np.zeros(48, np.int32))
    assert out.tolist() == [2 * ((t + 24) % 48) for t in range(48)]


def shape_from_a_changing_local(out):
    n = 16
    n += 1
    tile = cuda.shared.array(n, numba.int32)
    out[0] = tile.shape[0]


def shape_from_locals_defined_by_each_other(out):
    n = m  # noqa: F821 - m is assigned only below: no constant (UnboundLocalError in Python)
    m = n
    tile = cuda.shared.array(m, numba.int32)
    out[0] = tile.shape[0]


@pytest.mark.parametrize("kernel", [shape_from_a_changing_local,
                                    shape_from_locals_defined_by_each_other])
def test_a_shape_from_a_local_that_is_no_constant_is_refused_as_numba_cuda_refuses_it(be, kernel):
    with pytest.raises(UnsupportedKernelError, match="a shape that is not a compile-time "
                                                      "constant"):
        run(be, kernel, 1, 1, np.zeros(1, np.int32))


def dtype_of_an_argument(a, out):
    tile = cuda.shared.array(8, a.dtype)
    scratch = cuda.local.array(8, dtype=out.dtype)
    t = cuda.threadIdx.x
    tile[t] = a[t] * 3
    cuda.syncthreads()
    for k in range(8):
        scratch[k] = tile[(t + k) % 8]
    total = scratch[0]
    for k in range(1, 8):
        total += scratch[k]
    out[t] = total


@settings(max_examples=12, deadline=None)
@given(dtypes=st.lists(st.tuples(st.sampled_from(["int16", "int64", "float32", "float64",
                                                    "uint8"]),
                                  st.sampled_from(["int32", "float64", "float32"])),
                        min_size=1, max_size=4))
def test_shared_and_local_arrays_take_an_arguments_dtype_as_numba_cuda_compiles_them(dtypes):
    # numba-cuda compiles one overload per argument types; the simulator lays the kernel out
    # for each launch's argument dtypes (the same kernel, launched with several in turn)
    be = CPUBackend()
    kernel = be.compile_kernel(dtype_of_an_argument)
    for a_type, out_type in dtypes:
        a = np.arange(1, 9).astype(a_type)
        tile = (a * np.array(3, a_type)).astype(a_type)  # the tile holds a's type (wraps too)
        expected = np.full(8, tile.astype(out_type).sum(dtype=out_type), out_type)
        dev_a, dev_out = be.to_device(a), be.allocate(8, out_type)
        record = be.launch_kernel(kernel, 1, 8, dev_a, dev_out)
        np.testing.assert_array_equal(be.to_host(dev_out), expected)
        assert record.stats.static_shared_bytes == 8 * np.dtype(a_type).itemsize
        assert record.stats.local_bytes_per_thread >= 8 * np.dtype(out_type).itemsize
        assert kernel.static_shared_bytes == 8 * np.dtype(a_type).itemsize  # the latest launch's


def test_a_layout_from_argument_dtypes_is_known_once_launched_or_from_a_signature(be):
    kernel = be.compile_kernel(dtype_of_an_argument)
    with pytest.raises(UnsupportedKernelError, match=re.escape(
            "kernel 'dtype_of_an_argument' declares shared or local memory with an argument's "
            "dtype, so its layout depends on the arguments' types: launch it first (or compile "
            "it with a signature)")):
        kernel.explain()
    eager = be.compile_kernel(dtype_of_an_argument, "void(float64[:], int32[:])")
    assert eager.static_shared_bytes == 64  # laid out at compile time, as numba-cuda does
    out = be.allocate(8, np.int32)
    be.launch_kernel(eager, 1, 8, be.to_device(np.ones(8)), out)
    assert be.to_host(out).tolist() == [24] * 8


def checks_in_a_layout_by_dtype(a):
    tile = cuda.shared.array(4, dtype=a.dtype)
    t = cuda.threadIdx.x
    if t > 0:
        tile[t] = a[t]
    cuda.syncthreads()
    a[t] = tile[(t + 1) % 4]


def test_a_layout_by_argument_dtypes_keeps_every_check(be):
    with pytest.raises(UninitializedMemoryError, match=re.escape(
            "'tile[(t + 1) % 4]' reads tile[0], which was never written")):
        run(be, checks_in_a_layout_by_dtype, 1, 4, np.ones(4, np.float32))


def dtype_of_a_scalar(a, n):
    tile = cuda.shared.array(4, n.dtype)
    tile[0] = a[0]
    a[1] = tile[0]


def dtype_of_a_reassigned_argument(a, b):
    a = b
    tile = cuda.shared.array(4, a.dtype)
    tile[0] = a[0]
    a[1] = tile[0]


def test_an_argument_dtype_that_is_not_an_arrays_is_refused(be):
    with pytest.raises(UnsupportedKernelError, match=re.escape(
            "'n.dtype' where argument 'n' is not an array (numba-cuda's typing refuses it too) "
            "is not supported")):
        run(be, dtype_of_a_scalar, 1, 1, np.zeros(2, np.float32), scalars=(3,))
    with pytest.raises(UnsupportedKernelError, match=re.escape(
            "a dtype that is neither a constant nor `a.dtype` of an array parameter the kernel "
            "does not reassign (numba-cuda needs one of these too) is not supported")):
        run(be, dtype_of_a_reassigned_argument, 1, 1, np.zeros(2), np.zeros(2))


def local_array_of_an_extension_type(out):
    arr = cuda.local.array(4, dtype=struct_model_type)  # noqa: F841
    out[0] = 1


def test_an_array_of_a_type_from_numbas_extension_api_is_laid_out_by_its_data_model(be):
    # numba-cuda's own test type (installed with it): a StructModel type, no numpy dtype
    # (its values and checks: tests/test_sim_extensions.py)
    (out,) = run(be, local_array_of_an_extension_type, 1, 1, np.zeros(1, np.int32))
    assert out[0] == 1


@cuda.jit(device=True)
def block_sum(values, n, dtype):
    """A shared array whose size and type come from the caller, as constants."""
    tile = cuda.shared.array(n, dtype)
    t = cuda.threadIdx.x
    if t < n:
        tile[t] = values[t]
    cuda.syncthreads()
    total = tile[0]
    for k in range(1, n):
        total += tile[k]
    cuda.syncthreads()
    return total


def two_shared_sizes(a, b, out):
    t = cuda.threadIdx.x
    s32 = block_sum(a, 32, numba.float32)
    s16 = block_sum(b, 16, numba.int32)
    out[t] = s32 + s16


def test_constants_passed_for_a_shared_array_shape_and_dtype(be):
    a = np.arange(32, dtype=np.float32)
    b = np.arange(32, dtype=np.int32)
    record_out = np.zeros(32, np.float64)
    *_, out = run(be, two_shared_sizes, 1, 32, a, b, record_out)
    np.testing.assert_array_equal(out, np.full(32, a.sum() + b[:16].sum()))


# -- warp-synchronous reads and writes ordered by syncwarp ----------------------------------------
def shift_add(a, out):
    """out[t] = a[t] + a[t - 1] in place in shared memory, ordered by syncwarp only."""
    cache = cuda.shared.array(32, numba.float32)
    t = cuda.threadIdx.x
    cache[t] = a[t]
    cuda.syncwarp()
    left = 0.0
    if t >= 1:
        left = cache[t - 1]
    cuda.syncwarp()
    cache[t] += left
    cuda.syncwarp()
    out[t] = cache[t]


def shift_add_unordered(a, out):
    cache = cuda.shared.array(32, numba.float32)
    t = cuda.threadIdx.x
    cache[t] = a[t]
    cuda.syncwarp()
    left = 0.0
    if t >= 1:
        left = cache[t - 1]
    cache[t] += left  # another lane may still be about to read cache[t]
    cuda.syncwarp()
    out[t] = cache[t]


@pytest.mark.parametrize("n", [8, 32])
def test_a_read_then_write_ordered_by_syncwarp_is_no_race(be, n):
    a = np.arange(n, dtype=np.float32)
    _, out = run(be, shift_add, 1, n, a, np.zeros(n, np.float32))
    np.testing.assert_array_equal(out, a + np.concatenate([[0], a[:-1]]))
    with pytest.raises(RaceConditionError, match=r"^data race on cache\[\d+\]"):
        run(be, shift_add_unordered, 1, n, a, np.zeros(n, np.float32))


# -- branches on frozen constants are pruned, as Numba prunes them ---------------------------------
def make_maybe_synced(flag):
    def maybe_synced(out):
        if flag:
            cuda.syncthreads()
        out[cuda.threadIdx.x] = 1.0
    return maybe_synced


@pytest.mark.parametrize("flag", [True, False])
def test_a_barrier_under_a_constant_condition(be, flag):
    (out,) = run(be, make_maybe_synced(flag), 1, 4, np.zeros(4, np.float32))
    np.testing.assert_array_equal(out, np.ones(4, np.float32))


# -- overloads declared for the CUDA target ----------------------------------------------------------
def scale_ol(x):
    """Overloaded below: by 3 on the CUDA target, by 2 everywhere else."""


def only_on_gpu(x):
    """Overloaded below for the CUDA target only."""


def generic_calls_cuda(x):
    """A generic overload whose implementation calls a CUDA-only one."""


def _overload(func, target, factor, then=None):
    from numba.cuda.extending import overload

    @overload(func, target=target)
    def ol(x):
        def impl(x):
            x[0] *= factor
            if then is not None:
                then(x)
        return impl


_overload(scale_ol, "generic", 2)
_overload(scale_ol, "cuda", 3)
_overload(only_on_gpu, "cuda", 5)
_overload(generic_calls_cuda, "generic", 7, then=only_on_gpu)


def calls_overloads(x):
    scale_ol(x)
    generic_calls_cuda(x)


def test_cuda_target_overloads_win_in_kernels_as_on_a_gpu_and_nowhere_else(be):
    (x,) = run(be, calls_overloads, 1, 1, np.ones(1, np.int64))
    assert x[0] == 3 * 7 * 5  # the CUDA scale_ol (3, not 2), and the CUDA-only one called inside
    on_cpu = np.ones(1, np.int64)
    numba.njit(lambda x: scale_ol(x))(on_cpu)
    assert on_cpu[0] == 2  # Numba's CPU target still gets the generic overload


def compose_twice(func, *args):
    """Overloaded below: func applied to args, then to its own result (numba-cuda's
    test_make_function_to_jit_function has the same shape)."""


def _compose_twice_ol(func, *args):
    def impl(func, *args):
        return func(func(*args))
    return impl


def closure_escapes(out, x):
    offset = 10

    def add_all(*z):
        total = z[0]  # a tuple: no memory read, so the closure needs no launch context
        if len(z) == 2:
            total += z[1]
        return total + offset

    out[0] = compose_twice(add_all, x[0])


def closure_escapes_with_a_loop(out, x):
    def add_up(n):
        total = 0
        for k in range(n):  # the watchdog counts the trips: the closure needs the launch
            total += k
        return total

    out[0] = compose_twice(add_up, x[0])


def test_an_inner_function_may_escape_to_an_overload_as_numba_lets_it(be):
    from numba.cuda.extending import overload
    overload(compose_twice)(_compose_twice_ol)
    (out, _) = run(be, closure_escapes, 1, 1, np.zeros(1, np.int64), np.array([5], np.int64))
    assert out[0] == 25
    with pytest.raises(UnsupportedKernelError, match=(
            r"^passing inner function 'add_up' on as a value when it reads memory, loops or "
            r"calls what the simulator checks \(Numba lets a function that escapes capture only "
            r"constants, and the simulator's checks need the launch\); call it directly, or "
            r"define it at module level with @cuda.jit\(device=True\) is not supported in "
            r"kernels by gpukit's simulator")):
        run(be, closure_escapes_with_a_loop, 1, 1, np.zeros(1, np.int64), np.array([5], np.int64))


# -- kernels built with exec() ---------------------------------------------------------------------
EXTREME = """
def extreme(res, ary):
    i = cuda.threadIdx.x
    cuda.atomic.{op}(res, 0, ary[i + {shift}])
"""


def built(op: str, shift: int = 0) -> Any:
    namespace = {"cuda": cuda}
    exec(EXTREME.format(op=op, shift=shift), namespace)  # noqa: S102 - as generated kernels are
    return namespace["extreme"]


def test_kernels_built_with_exec_run_each_from_its_own_text(be):
    # the same name, file ("<string>") and line: only the text tells the two kernels apart
    ary = np.arange(5.0, 37.0)
    (res,) = run(be, built("max"), 1, 32, np.array([10.0]), ary)[:1]
    assert res[0] == 36.0
    (res,) = run(be, built("min"), 1, 32, np.array([10.0]), ary)[:1]
    assert res[0] == 5.0


def test_a_bug_in_an_exec_built_kernel_names_its_line_in_the_text(be):
    with pytest.raises(OutOfBoundsError, match=r"ary\[i \+ 1\].*thread \(31, 0, 0\).*<string>:4"):
        run(be, built("max", shift=1), 1, 32, np.array([0.0]), np.zeros(32))


def shape_from_the_end(ary):
    x = cuda.threadIdx.x
    if x == 2:
        ary[0] = ary.shape[-x]  # a 1-D shape has no index -2: Python's IndexError


def test_a_python_exception_in_a_kernel_keeps_its_class_and_names_the_thread(be):
    with pytest.raises(IndexError) as caught:
        run(be, shape_from_the_end, 1, 3, np.zeros(2, np.int64))
    assert str(caught.value) == (
        "tuple index out of range; on a GPU numba-cuda reports exceptions only from kernels "
        "compiled with debug=True: without it the thread goes on with an undefined value "
        "[kernel 'shape_from_the_end', thread (2, 0, 0), block (0, 0, 0)]")
    assert isinstance(caught.value, KernelError) and caught.value.thread == (2, 0, 0)


def test_a_python_exception_under_debug_is_numba_cudas_own(be):
    kernel = be.compile_kernel(cuda.jit(debug=True, opt=False)(shape_from_the_end))
    with pytest.raises(IndexError) as caught:
        run(be, kernel, 1, 3, np.zeros(2, np.int64))
    assert str(caught.value) == ("tuple index out of range [kernel 'shape_from_the_end', "
                                 "thread (2, 0, 0), block (0, 0, 0)]")


def round_to(ary, c, ndigits):
    ary[0] = round(c, ndigits)


@pytest.mark.parametrize("dtype, value, ndigits, want", [
    (np.float32, 0.3425, 3, 0.343),  # numba-cuda scales in float64: 342.500001 -> 343
    (np.float64, 0.3425, 3, 0.342),  # 342.5 exactly: half to even (CPython says 0.343)
    (np.float32, 2.5, 0, 2.0),
    (np.float64, 1234.5678, -2, 1200.0),
    (np.float32, np.inf, 2, np.inf),
])
def test_round_with_ndigits_follows_numba_cudas_algorithm(be, dtype, value, ndigits, want):
    # Numba's CPU target scales in the value's own type: float32 0.3425 -> 0.342
    (ary,) = run(be, round_to, 1, 1, np.zeros(1, dtype), scalars=(dtype(value), np.int32(ndigits)))
    assert ary[0] == dtype(want)


WEIGHTS = np.array([1.0, 2.0, 4.0])[::-1]  # a global array: frozen at compile, as Numba does


def uses_a_global_arrays_methods(out):
    out[0] = WEIGHTS.sum() * 10 + WEIGHTS.argmin()


def test_methods_of_a_global_array_are_called_in_the_kernel(be):
    (out,) = run(be, uses_a_global_arrays_methods, 1, 1, np.zeros(1))
    assert out[0] == 72  # (4 + 2 + 1) * 10 + the index of 1.0 in [4, 2, 1]


CASES = (np.float64([3.0, -1.0, 2.5]), np.float64([[0.0, 7.0], [1.0, 0.0]]))


def reductions_of_global_arrays(out):
    i = 0
    for case in literal_unroll(CASES):  # a tuple of arrays of different dimensions
        out[i, 0] = case.max()
        out[i, 1] = case.copy().sum()
        i += 1  # noqa: SIM113 - Numba unrolls the loop over literal_unroll as written


def test_kernels_that_allocate_run_when_numba_cudas_runtime_is_on(be, monkeypatch):
    from numba.cuda import config
    monkeypatch.setattr(config, "CUDA_ENABLE_NRT", True)
    (out,) = run(be, reductions_of_global_arrays, 1, 1, np.zeros((2, 2)))
    assert out.tolist() == [[a.max(), a.sum()] for a in CASES]


def bit_count(ary, c):
    ary[0] = c.bit_count()


@pytest.mark.parametrize("value, want", [
    (np.uint8(0xFF), 8), (np.uint64(2**64 - 1), 64), (np.int32(-1), 32), (np.int16(-1), 16),
    (7, 3),
])
def test_int_bit_count_counts_set_bits_as_numba_cudas_popc(be, value, want):
    (ary,) = run(be, bit_count, 1, 1, np.zeros(1, np.int32), scalars=(value,))
    assert ary[0] == want


def test_int_bit_count_stays_a_kernel_method_not_one_of_numbas_cpu_target(be):
    run(be, bit_count, 1, 1, np.zeros(1, np.int32), scalars=(3,))  # declared in the simulator
    with pytest.raises(numba.core.errors.TypingError, match="Unknown attribute 'bit_count'"):
        numba.njit(lambda c: c.bit_count())(3)


def tuple_oob(x):
    i = cuda.grid(1)
    x[0][i] = x[1][i + 1]


def tuple_race(x):
    x[0][0] = cuda.threadIdx.x


def tuple_uninit(x):
    i = cuda.grid(1)
    x[0][i] = x[1][i]


def sum_of_a_tuple(out, arrays):
    i = cuda.grid(1)
    acc = 0.0
    for a in arrays:
        acc += a[i]
    out[i] = acc


def test_arrays_in_tuple_arguments_compute_as_numba_cuda(be):
    parts = (np.arange(8.0), np.ones(8), np.full(8, 10.0))
    out = be.allocate(8, np.float64)
    be.launch_kernel(sum_of_a_tuple, 1, 8, out, tuple(be.to_device(p) for p in parts))
    np.testing.assert_array_equal(be.to_host(out), sum(parts))


@pytest.mark.parametrize("kernel, error, words", [
    (tuple_oob, OutOfBoundsError, "'x[1][i + 1]' indexes global array x (shape (8,)) at 8"),
    (tuple_race, RaceConditionError, "data race on x[0][0]: thread (1, 0, 0) of block (0, 0, 0)"),
    (tuple_uninit, UninitializedMemoryError, "'x[1][i]' reads x[1][0], which was never written"),
])
def test_arrays_in_tuple_arguments_are_checked_like_any_array(be, kernel, error, words):
    x = (be.to_device(np.zeros(8)), be.allocate(8, np.float64) if kernel is tuple_uninit
         else be.to_device(np.ones(8)))
    with pytest.raises(error) as caught:
        be.launch_kernel(kernel, 1, 8, x)
    assert words in str(caught.value)


times2 = cuda.declare_device("times2", "int32(int32)")  # CUDA C/C++ or PTX linked in on a GPU


def calls_linked_code(out):
    out[0] = times2(out[0])


def test_a_function_linked_with_declare_device_is_refused_in_words(be):
    with pytest.raises(UnsupportedKernelError) as caught:
        run(be, calls_linked_code, 1, 1, np.ones(1, np.int32))
    assert str(caught.value).startswith(
        "calling times2, which cuda.declare_device declares from linked CUDA C/C++ or PTX "
        "code, is not supported in kernels by gpukit's simulator [kernel 'calls_linked_code'")


@cuda.jit(device=True)
def add3(a, b, c):
    return a + b + c


@cuda.jit(device=True)
def apply(func, *args):  # numba-cuda passes *args as a tuple
    return func(*args)


@cuda.jit(device=True)
def total(*xs):
    s = 0
    for x in xs:
        s += x
    return s


def star_args(out):
    out[0] = apply(add3, 1, 2, 3)
    out[1] = total(4, 5, 6, 7)
    t = (10, 20, 30)
    out[2] = add3(*t)
    out[3] = total(out[0], 0.5)


def test_device_functions_take_star_args_and_calls_unpack_tuples(be):
    (out,) = run(be, star_args, 1, 1, np.zeros(4))
    assert out.tolist() == [6, 22, 60, 6.5]


# 13 bytes, packed; each field aligned within the record, as numba-cuda requires (below)
ODD_RECORD = np.dtype([("y", np.float64), ("x", np.int32), ("z", np.int8)])


def fill_own_record(a):
    i = cuda.grid(1)
    a[i]["x"] = i
    a[i]["y"] = 0.5 * i
    a[i]["z"] = -i


def fill_record_zero(a):
    a[0]["x"] = cuda.threadIdx.x


def test_fields_of_records_of_any_size_are_checked_by_their_record(be):
    # a field's element is its record's, found by the record's size (the field's size found
    # another record's element for a 13-byte record: false races, and records written out of
    # bounds of their check buffers)
    (a,) = run(be, fill_own_record, 2, 32, np.zeros(64, ODD_RECORD))
    assert a["x"].tolist() == list(range(64)) and a["z"].tolist() == [-i for i in range(64)]
    np.testing.assert_array_equal(a["y"], 0.5 * np.arange(64))
    with pytest.raises(RaceConditionError, match=r"^data race on a\[0\]: thread \(1, 0, 0\)"):
        run(be, fill_record_zero, 1, 2, np.zeros(4, ODD_RECORD))


UNALIGNED_RECORD = np.dtype([("a", np.int32), ("b", np.float64)])  # b at byte 4


def copy_unaligned_field(a):
    i = cuda.grid(1)
    a[i].a = a[i].b


def test_a_record_field_not_aligned_for_its_type_is_refused_as_numba_cuda_refuses_it(be):
    # a GPU faults on a misaligned 8-byte load; numba-cuda's lowering refuses the field
    # (its test_alignment::test_record_alignment_error)
    with pytest.raises(KernelTypingError, match=re.escape(
            "Record(a[type=int32;offset=0],b[type=float64;offset=4];12;False).b of type "
            "float64 is not aligned")) as info:
        run(be, copy_unaligned_field, 1, 2, np.zeros(2, UNALIGNED_RECORD))
    assert info.value.lineno == copy_unaligned_field.__code__.co_firstlineno + 2
    aligned = np.dtype([("a", np.int32), ("b", np.float64)], align=True)  # b at byte 8
    values = np.zeros(2, aligned)
    values["b"] = [7, 9]
    (out,) = run(be, copy_unaligned_field, 1, 2, values)
    assert out["a"].tolist() == [7, 9]


def misspelt_barrier(a):
    a[cuda.threadIdx.x] = 1.0
    cuda.syncthread()


def misspelt_index(a):
    a[0] = cuda.threadIdy.x


@pytest.mark.parametrize(("kernel", "name", "line"), [(misspelt_barrier, "syncthread", 2),
                                                      (misspelt_index, "threadIdy", 1)])
def test_a_misspelt_cuda_name_gets_numba_cudas_attribute_error(be, kernel, name, line):
    # numba-cuda's compile raises the AttributeError getattr gives (cuda.compile_ptx too)
    with pytest.raises(AttributeError, match=re.escape(
            f"numba-cuda would not compile kernel '{kernel.__name__}' for a GPU: module "
            f"'numba.cuda' has no attribute '{name}'")) as info:
        run(be, kernel, 1, 2, np.zeros(2))
    assert isinstance(info.value, KernelTypingError)
    assert info.value.lineno == kernel.__code__.co_firstlineno + line


# -- alignment= of shared and local arrays ---------------------------------------------------------
@cuda.jit(device=True)
def _aligned_scratch(out, t):
    scratch = cuda.local.array(3, np.float64, alignment=128)
    scratch[0] = 1.0
    out[t, 2] = scratch.ctypes.data % 128


def aligned_arrays(out):
    t = cuda.threadIdx.x
    first = cuda.shared.array(1, np.uint8)  # pushes the next one off a 16-byte boundary
    tile = cuda.shared.array(5, np.float32, alignment=256)
    mine = cuda.local.array(3, np.uint8, alignment=64)
    first[0] = 1
    tile[0] = 1.0
    mine[0] = 1
    cuda.syncthreads()  # threads then run one by one: each has its own local frame
    out[t, 0] = tile.ctypes.data % 256
    out[t, 1] = mine.ctypes.data % 64
    _aligned_scratch(out, t)


def test_alignment_places_shared_and_local_arrays_as_numba_cuda_does(be):
    (out,) = run(be, aligned_arrays, 1, 8, np.full((8, 3), -1, np.int64))
    assert (out == 0).all()


def _declaring(alignment):
    def declares(out):
        a = cuda.local.array(2, np.uint64, alignment=alignment)
        a[0] = 7
        out[0] = a[0]
    return declares


@pytest.mark.parametrize(("alignment", "message"), [
    (-16, "Alignment must be positive"), (0, "Alignment must be positive"),
    (24, "Alignment must be a power of 2"), (4, "Alignment must be a multiple of 8"),
])
def test_an_invalid_alignment_gets_numba_cudas_error(be, alignment, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        run(be, _declaring(alignment), 1, 1, np.zeros(1, np.uint64))


@pytest.mark.parametrize("alignment", ["16", 16.0])
def test_an_alignment_that_is_no_integer_fails_numba_cudas_typing(be, alignment):
    (out,) = run(be, _declaring(None), 1, 1, np.zeros(1, np.uint64))  # the same source: cached
    assert out[0] == 7
    with pytest.raises(numba.core.errors.TypingError, match="alignment must be a constant "
                                                            "integer"):
        run(be, _declaring(alignment), 1, 1, np.zeros(1, np.uint64))


def test_a_device_array_a_kernel_captures_is_used_by_pointer(be):
    """A gpukit device array in a kernel's closure, as numba-cuda captures one: by pointer, with
    an argument's checks (here: the writes of every thread to the same element race)."""
    table = be.to_device(np.array([3.0, 4.0]))

    def lookup(idx, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = table[idx[i]]

    (_, out) = run(be, lookup, 1, 4, np.array([1, 0, 1, 1]), np.zeros(4))
    assert out.tolist() == [4.0, 3.0, 4.0, 4.0]

    def overwrite():
        table[0] = cuda.threadIdx.x

    with pytest.raises(RaceConditionError, match=r"data race on table\[0\]"):
        be.launch_kernel(overwrite, 1, 2)


def pointer_axpy(r, a, x, y, n):
    i = cuda.grid(1)
    if i < n:
        r[i] = a * x[i] + y[i]


def pointer_carray(ptr, n, out):
    a = carray(ptr, (n,))
    for k in range(n):
        out[k] = a[k]
    a[0] = 99.0


POINTER_AXPY = "void(CPointer(int32), int32, CPointer(int32), CPointer(int32), uint32)"


def test_raw_pointer_parameters_index_the_memory_they_point_into(be):
    """An eager signature's CPointer parameters take addresses, as numba-cuda's do; each
    access must land in the allocation its pointer points into."""
    x, y = be.to_device(np.arange(10, dtype=np.int32)), be.to_device(np.arange(10, dtype=np.int32))
    r = be.allocate(10, np.int32)
    kernel = be.compile_kernel(pointer_axpy, POINTER_AXPY)

    def address(d, k=0):
        return d.__cuda_array_interface__["data"][0] + 4 * k

    be.launch_kernel(kernel, 1, 16, address(r), 5, address(x), address(y), 10)
    assert be.to_host(r).tolist() == [6 * k for k in range(10)]
    with pytest.raises(OutOfBoundsError, match=re.escape(
            "'x[i]' indexes raw pointer x at 8, and it points at element 2 of x (10 elements "
            "of 4 bytes), so element 10 is outside 0..9; a pointer has no bounds on a GPU")):
        be.launch_kernel(kernel, 1, 16, address(r), 5, address(x, 2), address(y), 10)
    with pytest.raises(TypeError, match=r"argument 'x' of kernel 'pointer_axpy' points to "
                                        r"address 0x[0-9a-f]+, which is in no array of the "
                                        r"simulated device"):
        be.launch_kernel(kernel, 1, 16, address(r), 5, np.zeros(3).ctypes.data, address(y), 3)
    with pytest.raises(TypeError, match=r"argument 'r' of kernel 'pointer_axpy' is a pointer "
                                        r"\(int32\*\): pass an address as an int"):
        be.launch_kernel(kernel, 1, 16, r, 5, address(x), address(y), 10)


def test_carray_over_a_raw_pointer_is_checked_against_its_allocation(be):
    data = be.to_device(np.arange(6, dtype=np.float64))
    out = be.to_device(np.zeros(6))
    kernel = be.compile_kernel(pointer_carray, "void(CPointer(float64), int64, float64[:])")
    start = data.__cuda_array_interface__["data"][0]
    be.launch_kernel(kernel, 1, 1, start + 8, 5, out)
    assert be.to_host(out).tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 0.0]
    assert be.to_host(data).tolist() == [0.0, 99.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(OutOfBoundsError, match=re.escape(
            "makes an array of 6 elements over raw pointer ptr, and it points at element 1 of "
            "ptr (6 elements of 8 bytes), so element 6 is outside 0..5")):
        be.launch_kernel(kernel, 1, 1, start + 8, 6, out)



_TABLE = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)


def writes_constant_memory(out):
    table = cuda.const.array_like(_TABLE)
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = table[i]  # reads are fine; the write below is not
        table[i] = 0.0


@pytest.mark.parametrize("checks", [True, False])
def test_a_write_to_constant_memory_is_refused_with_or_without_checks(checks):
    # numba-cuda types constant memory read-only: the kernel is refused with its reason before
    # it runs, whatever the checks
    be = CPUBackend(checks=checks)
    out = be.to_device(np.zeros(4, np.float32))
    with pytest.raises(UnsupportedKernelError, match=re.escape(
            "numba-cuda would not compile kernel 'writes_constant_memory' for a GPU")) as info:
        be.launch_kernel(writes_constant_memory, 1, 4, out)
    assert "Cannot modify readonly array of type: readonly array(float32, 1d, C)" \
        in str(info.value)


# -- which arguments get race records ------------------------------------------------------------
def reads_its_input_by_shape(a, out):
    """`a` is only read: its shape feeds range() and a variable, its elements a shared tile."""
    tile = cuda.shared.array(32, np.float32)
    t = cuda.threadIdx.x
    n = a.shape[0]
    tile[t] = a[t] if t < n else 0.0
    cuda.syncthreads()
    acc = 0.0
    for k in range(a.shape[0]):
        acc += tile[k % 32]
    out[t] = acc


def writes_through_an_alias(a, out):
    dst = out
    dst[0] = a[cuda.threadIdx.x]  # every thread writes the same element: a race


def test_an_input_read_through_its_shape_and_elements_gets_no_race_records(be):
    # race records (8 bytes per element each) are made only for arrays a kernel may write;
    # reading an array's shape or storing its elements elsewhere writes nothing through it
    a = be.to_device(np.ones(32, np.float32))
    out = be.to_device(np.zeros(32, np.float32))
    be.launch_kernel(reads_its_input_by_shape, 1, 32, a, out)
    np.testing.assert_array_equal(be.to_host(out), np.full(32, 32, np.float32))
    assert not a.allocation.has_race_records and out.allocation.has_race_records


def test_an_array_written_through_an_alias_keeps_its_race_records(be):
    a = be.to_device(np.arange(4, dtype=np.float32))
    out = be.to_device(np.zeros(4, np.float32))
    with pytest.raises(RaceConditionError, match=r"dst\[0\]"):  # (found by its records)
        be.launch_kernel(writes_through_an_alias, 1, 4, a, out)


def writes_through_a_tuple(a, out):
    pair = (a, out)
    pair[1][0] = a[cuda.threadIdx.x]  # every thread writes out[0] through the tuple


def test_an_array_written_through_a_tuple_keeps_its_race_records(be):
    a = be.to_device(np.arange(4, dtype=np.float32))
    out = be.to_device(np.zeros(4, np.float32))
    with pytest.raises(RaceConditionError, match=re.escape(
            "data race on out[0]: thread (1, 0, 0) of block (0, 0, 0) writes it at line ")):
        be.launch_kernel(writes_through_a_tuple, 1, 4, a, out)
