"""What the simulator asks Numba to compile for a kernel: one function, the driver, with the
kernel's code inlined into it by Numba before typing, not also compiled, optimised and turned
into machine code on its own; and Python's garbage collector paused while it compiles."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from numba import cuda

from gpukit.backends.cpu import CPUBackend
from gpukit.sim.compiler import collector_paused

SITES = 12


def many_stores(a, b):
    """Twelve stores and twelve loads, each a site of its own."""
    i = cuda.grid(1)
    x = b[i]
    if x > 0:
        a[i] = x
    if x > 1:
        a[i] = x * 2
    if x > 2:
        a[i] = x * 3
    if x > 3:
        a[i] = x * 4
    if x > 4:
        a[i] = x * 5
    if x > 5:
        a[i] = x * 6
    if x > 6:
        a[i] = x * 7
    if x > 7:
        a[i] = x * 8
    if x > 8:
        a[i] = x * 9
    if x > 9:
        a[i] = x * 10
    if x > 10:
        a[i] = x * 11
    if x > 11:
        a[i] = x * 12


@pytest.fixture
def driver(monkeypatch):
    """many_stores' driver, compiled in this process (a driver loaded from the cache directory
    has no LLVM to look at)."""
    monkeypatch.setenv("GPUKIT_CACHE_DIR", "off")
    backend = CPUBackend()
    b = np.arange(64, dtype=np.float64)
    a = backend.to_device(np.zeros(64))
    compiled = backend.compile_kernel(many_stores)
    backend.launch_kernel(compiled, 2, 32, a, backend.to_device(b))
    expected = np.where(b > 0, b * np.minimum(b, SITES), 0.0)
    np.testing.assert_array_equal(backend.to_host(a), expected)
    return compiled.sim.driver


def test_the_kernel_is_compiled_only_as_part_of_its_driver(driver):
    kernel = driver.py_func.__globals__["_g_kernel"]
    assert len(driver.signatures) == 1
    assert kernel.signatures == []  # inlined by Numba before typing: no code of its own


def test_the_garbage_collector_runs_again_after_a_compile(driver):
    assert gc.isenabled()


def test_the_collector_is_paused_only_inside_and_left_as_the_program_set_it():
    assert gc.isenabled()
    with pytest.raises(ValueError, match="a failed compile"), collector_paused():
        assert not gc.isenabled()
        raise ValueError("a failed compile")
    assert gc.isenabled()
    gc.disable()  # a program that turned it off keeps it off
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
