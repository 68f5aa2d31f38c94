"""Bounds checked once before a counted loop (gpukit.sim.hoist): the same answers, and the same
error at the same thread and index, as a loop that checks every trip."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

from benchmarks.kernels import matmul_naive as naive_matmul
from gpukit.backends.cpu import CPUBackend
from gpukit.errors import KernelError


def shifted_sums(a, out, lo, hi, sh):
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = 0.0
        for k in range(lo, hi):
            acc += a[i, k + sh]
            out[i, k] = acc


def shifted_sums_checked_every_trip(a, out, lo, hi, sh):
    """`shifted_sums` with its column through a name the loop assigns: no test can bound the
    read (the store still is)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = 0.0
        for k in range(lo, hi):
            col = k + sh
            acc += a[i, col]
            out[i, k] = acc


def _source(func) -> str:
    return CPUBackend().compile_kernel(func).sim.explain()


def test_a_naive_matmuls_loop_checks_its_bounds_once_and_matches_numpy():
    source = _source(naive_matmul)
    assert "_g_ld_inb(_g_c, A, (row, k), " in source and "_g_ld_inb(_g_c, B, (k, col), " in source
    assert "_g_ld(_g_c, A, (row, k), " in source  # the loop as written, when the test fails
    assert "_g_st_inb(" not in source  # C[row, col] is outside the loop
    assert "_inb(" in _source(shifted_sums) and "_g_st_inb(_g_c, out, (i, k), " in _source(
        shifted_sums)
    assert "_g_ld_inb(" not in _source(shifted_sums_checked_every_trip)  # a[i, col]
    be = CPUBackend()
    rng = np.random.default_rng(1)
    A = rng.random((20, 13), dtype=np.float32)
    B = rng.random((13, 9), dtype=np.float32)
    C = be.allocate((20, 9), np.float32)
    be.launch_kernel(be.compile_kernel(naive_matmul), (2, 3), (8, 8), be.to_device(A),
                     be.to_device(B), C)
    np.testing.assert_allclose(be.to_host(C), A @ B, rtol=1e-5)


def _outcome(func, checks, lo: int, hi: int, sh: int):
    be = CPUBackend(checks=checks)
    a = np.arange(24, dtype=np.float64).reshape(4, 6) % 5 - 2
    out = be.to_device(np.zeros((4, 6)))
    try:
        be.launch_kernel(be.compile_kernel(func), 1, 4, be.to_device(a), out, lo, hi, sh)
    except KernelError as exc:
        at = re.search(r"axis (\d) of global array (\w+) \(shape \(4, 6\)\) at (-?\d+)", str(exc))
        return type(exc).__name__, exc.thread, exc.block, at and at.groups()
    return be.to_host(out)


@settings(max_examples=25, deadline=None)
@given(lo=st.integers(-2, 3), hi=st.integers(-1, 8), sh=st.integers(-2, 2),
       wraparound=st.booleans())
def test_a_loop_checked_once_fails_and_wraps_as_one_checked_every_trip(lo, hi, sh, wraparound):
    checks = True if wraparound else {"wraparound": False}
    got = _outcome(shifted_sums, checks, lo, hi, sh)
    want = _outcome(shifted_sums_checked_every_trip, checks, lo, hi, sh)
    if isinstance(want, tuple):
        assert got == want
        assert want[0] == "OutOfBoundsError" and want[3] is not None
    else:
        np.testing.assert_array_equal(got, want)
