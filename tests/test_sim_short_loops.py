"""A loop over a short range known when the kernel is compiled polls the watchdog once, before it
starts, instead of at every trip (gpukit.sim.intrinsics.tick_ahead): the same results, and a
kernel that never finishes is still stopped."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

from gpukit.backends.cpu import CPUBackend
from gpukit.errors import KernelTimeoutError
from gpukit.sim.kernel import SimKernel
from gpukit.sim.transform import SHORT_LOOP

TILE = 16
LONG = SHORT_LOOP + 1


def tile_loop(a, out):
    i = cuda.grid(1)
    acc = 0
    for j in range(TILE):
        acc += a[j]
    out[i] = acc


def stepped_loop(a, out):
    i = cuda.grid(1)
    acc = 0
    for j in range(-4, 12, 3):
        acc += j * a[j + 4]
    out[i] = acc


def local_constant_loop(a, out):
    i = cuda.grid(1)
    half = TILE // 2
    acc = 0
    for j in range(half, -1, -2):  # a local assigned once, from arithmetic on a global
        acc += a[j]
    out[i] = acc


def long_loop(a, out):
    i = cuda.grid(1)
    acc = 0
    for j in range(LONG):
        acc += j
    out[i] = acc


def dynamic_loop(a, out):
    i = cuda.grid(1)
    acc = 0
    for j in range(a.shape[0]):
        acc += a[j]
    out[i] = acc


def barrier_in_loop(a, out):
    i = cuda.grid(1)
    for j in range(4):
        out[i] += a[j]
        cuda.syncthreads()


def _ticks(kernel) -> tuple[int, int]:
    """(polls at every trip, polls before a loop) in the kernel's rewritten source, each loop
    once (a loop gpukit.sim.hoist can bound has a second copy: its polls name the same site)."""
    source = "\n".join(u.source for u in SimKernel(kernel).units)
    return (len(set(re.findall(r"_g_tick\(.*?\)", source))),
            len(set(re.findall(r"_g_tick_ahead\(.*?\)", source))))


@pytest.mark.parametrize("kernel, expected", [
    (tile_loop, (0, 1)),  # range(TILE): a frozen global
    (stepped_loop, (0, 1)),  # literals, a negative start, a step
    (local_constant_loop, (0, 1)),
    (long_loop, (1, 0)),  # longer than SHORT_LOOP
    (dynamic_loop, (1, 0)),  # a length known only at launch
    (barrier_in_loop, (1, 0)),  # a sync point in the body: the loop's trips are the threads'
], ids=lambda v: getattr(v, "__name__", ""))
def test_only_short_loops_known_when_compiled_poll_before_they_start(kernel, expected):
    assert _ticks(kernel) == expected


@settings(max_examples=12, deadline=None)  # each example compiles a kernel
@given(start=st.integers(-20, 20), stop=st.integers(-20, 20),
       step=st.integers(-7, 7).filter(lambda s: s != 0), cut=st.integers(-25, 25))
def test_short_loops_run_every_trip_as_python_does(start, stop, step, cut):
    """Literal bounds (the kernel is made from source, so each example is a new kernel), with a
    `break` and a `continue` in the body."""
    scope: dict = {"cuda": cuda}
    exec(  # noqa: S102 - a kernel with these literals in its range
        "def visit(out):\n"
        "    n = 0\n"
        f"    for j in range({start}, {stop}, {step}):\n"
        f"        if j == {cut}:\n"
        "            break\n"
        "        if j % 2 == 0:\n"
        "            continue\n"
        "        out[n] = j\n"
        "        n += 1\n"
        "    out[40] = n\n", scope)
    visit = scope["visit"]
    assert _ticks(visit) == (0, 1)
    be = CPUBackend()
    out = be.to_device(np.zeros(41, np.int64))
    be.launch_kernel(visit, 1, 1, out)
    expected = []
    for j in range(start, stop, step):
        if j == cut:
            break
        if j % 2 == 0:
            continue
        expected.append(j)
    got = be.to_host(out)
    assert got[40] == len(expected) and list(got[:len(expected)]) == expected


@pytest.mark.parametrize("kernel", [tile_loop, stepped_loop, local_constant_loop, long_loop,
                                    dynamic_loop])
def test_kernels_with_short_and_long_loops_compute_what_numpy_does(kernel):
    a = np.arange(20, dtype=np.int64)
    be = CPUBackend()
    out = be.to_device(np.zeros(64, np.int64))
    be.launch_kernel(kernel, 2, 32, be.to_device(a), out)
    expected = {tile_loop: a[:TILE].sum(),
                stepped_loop: sum(j * a[j + 4] for j in range(-4, 12, 3)),
                local_constant_loop: a[TILE // 2::-2].sum(),
                long_loop: sum(range(LONG)), dynamic_loop: a.sum()}[kernel]
    np.testing.assert_array_equal(be.to_host(out), np.full(64, expected))


def spin_over_short_loops(flag, out):
    i = cuda.grid(1)
    while flag[0] == 0:  # bug: nobody sets the flag; each trip runs two short loops
        for j in range(8):
            out[i] += j
        for j in range(TILE):
            out[i] -= j


def spin_in_a_long_static_loop(out):
    i = cuda.grid(1)
    for j in range(1 << 62):  # known when compiled, but far longer than SHORT_LOOP
        out[i] = j


@pytest.mark.parametrize("kernel, loop", [
    (spin_over_short_loops, r"while flag\[0\] == 0:"),
    (spin_in_a_long_static_loop, r"for j in range\(1 << 62\):"),
], ids=["short loops in a spin wait", "a long loop"])
def test_the_watchdog_still_stops_kernels_that_never_finish(kernel, loop):
    be = CPUBackend(watchdog_s=0.3)
    out = be.to_device(np.zeros(32, np.int64))
    args = (be.to_device(np.zeros(1, np.int32)), out) if kernel is spin_over_short_loops \
        else (out,)
    with pytest.raises(KernelTimeoutError,
                       match=rf"the watchdog stopped kernel '{kernel.__name__}' after 0.3 s "
                             rf"in the loop '{loop}"):
        be.launch_kernel(kernel, 1, 32, *args)
