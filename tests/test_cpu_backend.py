"""CPUBackend's contract: simulated device memory (round trips, views, exact accounting, errors,
lazy storage and the host budget), transfers and their modeled durations, status, capabilities,
device profiles, and host arrays passed straight to kernels."""

from __future__ import annotations

import gc
import math
import os
import re
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

import gpukit
from gpukit.backends.base import BackendStatus, Capabilities
from gpukit.backends.cpu import CPUBackend, modeled_copy_ms
from gpukit.backends.validate import (
    SUPPORTED_DTYPES,
    InvalidShapeError,
    ShapeTypeError,
    UnsupportedDtypeError,
)
from gpukit.devices import UnknownDeviceError
from gpukit.errors import (
    DeviceMemoryError,
    GpukitError,
    HostMemoryBudgetError,
    ImplicitTransferWarning,
    InvalidDeviceArrayError,
    LaunchConfigError,
    OutOfMemoryError,
    TransferError,
)

GiB = 1 << 30
T4_BYTES = 15100 * (1 << 20)


def reserved(nbytes: int) -> int:
    """cudaMalloc's granularity, computed independently: whole 256-byte units, at least one."""
    return 256 * max(1, math.ceil(nbytes / 256))


def sample(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values = rng.standard_normal(shape) * 1e3
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


# -- round trips ----------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES, ids=str)
def test_round_trips_for_every_dtype_and_order(dtype, order):
    backend = CPUBackend()
    rng = np.random.default_rng(3)
    for shape in [(7,), (3, 5), (2, 3, 4), (0, 3)]:
        host = np.asarray(sample(dtype, shape, rng), order=order)
        dev = backend.to_device(host)
        assert (dev.shape, dev.dtype, dev.ndim, dev.size) == (shape, dtype, len(shape), host.size)
        assert dev.nbytes == host.nbytes
        assert dev.strides == host.strides or host.size == 0  # numpy's strides of empties vary
        assert dev.layout == ("C" if len(shape) == 1 or host.size == 0 else order)
        back = backend.to_host(dev)
        np.testing.assert_array_equal(back, host)
        assert back.dtype == dtype and (back.strides == host.strides or host.size == 0)
        np.testing.assert_array_equal(dev.copy_to_host(), host)
        out = np.empty_like(host)
        assert backend.to_host(dev, out=out) is out
        np.testing.assert_array_equal(out, host)
        blank = backend.allocate(shape, dtype)
        backend.copy_to_device(host, blank)
        np.testing.assert_array_equal(backend.to_host(blank), host)
        for array in (dev, blank):
            backend.free(array)
    assert backend.get_memory_info() == (T4_BYTES, T4_BYTES)


def test_allocate_accepts_dtypes_as_numpy_spells_them():
    backend = CPUBackend()
    for spec, expected in [("float32", "float32"), ("f8", "float64"), (np.int16, "int16"),
                           (float, "float64"), (np.dtype(">i4"), "int32"), (bool, "bool")]:
        assert backend.allocate(3, spec).dtype == np.dtype(expected)
    assert backend.allocate(4).dtype == np.float32  # the seed interface's default
    assert backend.allocate(np.int64(5), "u1").shape == (5,)
    assert backend.allocate((2, np.int32(3))).shape == (2, 3)


# -- device views ---------------------------------------------------------------------------------
def test_slicing_gives_device_views_that_share_memory():
    backend = CPUBackend()
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    dev = backend.to_device(host)
    view = dev[1:3, ::2]
    assert (view.shape, view.strides, view.layout) == ((2, 3), (24, 8), "A")
    np.testing.assert_array_equal(backend.to_host(view), host[1:3, ::2])
    assert dev[2].shape == (6,) and dev[:, 1].layout == "A" and dev[1:].layout == "C"
    view.copy_to_device(np.full((2, 3), -1, np.float32))
    expected = host.copy()
    expected[1:3, ::2] = -1
    np.testing.assert_array_equal(backend.to_host(dev), expected)
    assert backend.get_memory_info()[0] == T4_BYTES - reserved(96)  # no new allocation


def test_kernels_write_through_device_views():
    def fill_index(out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = i

    backend = CPUBackend()
    dev = backend.to_device(np.zeros(10, np.int32))
    backend.launch_kernel(fill_index, 1, 32, dev[3:9:2])
    np.testing.assert_array_equal(backend.to_host(dev), [0, 0, 0, 0, 0, 1, 0, 2, 0, 0])


def test_device_views_reject_host_style_access():
    backend = CPUBackend()
    dev = backend.to_device(np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match=re.escape(
            "indexing a device array on the host gives device views only; to read element "
            "(1, 2), copy it: backend.to_host(array)[(1, 2)]")):
        dev[1, 2]
    with pytest.raises(IndexError, match="device array index 5: index 5 is out of bounds"):
        dev[5]
    with pytest.raises(TypeError, match="device arrays cannot be assigned on the host"):
        dev[0] = 1.0


def test_freeing_a_view_is_refused_and_keeps_the_array():
    backend = CPUBackend()
    dev = backend.to_device(np.arange(8.0))
    with pytest.raises(InvalidDeviceArrayError, match=re.escape(
            "free: this device array (4,) is a view (a slice) of a larger one; free the array "
            "it was sliced from")):
        backend.free(dev[::2])
    np.testing.assert_array_equal(backend.to_host(dev), np.arange(8.0))
    backend.free(dev[:])  # a view of all of it is the array itself
    assert dev.is_freed


# -- no implicit conversion -----------------------------------------------------------------------
@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda d: np.add(d, 1),
                                     lambda d: np.zeros(3) + d, lambda d: d * 2, abs, bool, list],
                         ids=["asarray", "array", "ufunc", "numpy operator", "operator", "abs",
                              "bool", "iterate"])
def test_implicit_conversion_to_numpy_is_refused_naming_to_host(convert):
    dev = CPUBackend().to_device(np.arange(3.0))
    with pytest.raises(TypeError, match=r"backend\.to_host\(array\)"):
        convert(dev)


# -- exact memory accounting ----------------------------------------------------------------------
DTYPES = st.sampled_from(["uint8", "int16", "float32", "float64", "complex128"])
OPS = st.lists(st.tuples(st.sampled_from(["allocate", "to_device", "free"]),
                         st.integers(0, 3000), DTYPES, st.integers(0, 1000)), max_size=25)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_memory_info_is_exact_after_any_allocations_and_frees(ops):
    backend = CPUBackend()
    live: list = []
    used = 0
    for op, count, dtype, pick in ops:
        if op == "free" and live:
            array, size = live.pop(pick % len(live))
            backend.free(array)
            used -= size
        else:
            array = (backend.allocate(count, dtype) if op == "allocate"
                     else backend.to_device(np.zeros(count, dtype)))
            live.append((array, reserved(array.nbytes)))
            used += live[-1][1]
        assert backend.get_memory_info() == (T4_BYTES - used, T4_BYTES)
        info = backend.memory_info()
        assert (info.used_bytes, backend.status().memory_in_use_bytes) == (used, used)
    for array, _ in live:
        backend.free(array)
    assert backend.get_memory_info() == (T4_BYTES, T4_BYTES)


def test_memory_pressure_follows_what_is_allocated():
    backend = CPUBackend()
    assert backend.memory_info().pressure == "low"
    big = backend.allocate(int(T4_BYTES * 0.9), np.uint8)
    assert backend.memory_info().pressure == "high"
    backend.free(big)
    assert backend.memory_info().pressure == "low"


def test_out_of_memory_names_requested_free_and_total():
    backend = CPUBackend()
    kept = backend.allocate(1000, np.uint8)  # 1024 bytes reserved
    free = T4_BYTES - 1024
    with pytest.raises(OutOfMemoryError) as info:
        backend.allocate((4, GiB), np.float32)
    err = info.value
    assert (err.requested_bytes, err.free_bytes, err.total_bytes) == (16 * GiB, free, T4_BYTES)
    assert str(err).startswith(f"out of device memory: requested 16.00 GiB ({16 * GiB:,} bytes), "
                               f"free 14.75 GiB ({free:,} bytes), total 14.75 GiB "
                               f"({T4_BYTES:,} bytes)")
    assert isinstance(err, MemoryError) and isinstance(err, DeviceMemoryError)
    assert backend.get_memory_info() == (free, T4_BYTES)  # nothing was taken
    rest = backend.allocate(free, np.uint8)  # exactly what is left fits
    assert backend.get_memory_info() == (0, T4_BYTES)
    with pytest.raises(OutOfMemoryError) as info:
        backend.to_device(np.zeros(1, np.uint8))
    assert (info.value.requested_bytes, info.value.free_bytes) == (256, 0)
    backend.free(rest)
    backend.free(kept)


def test_use_after_free_and_double_free():
    backend = CPUBackend()
    dev = backend.to_device(np.arange(4.0))
    view = dev[1:]
    backend.free(dev)
    use_after_free = re.escape("use after free: this device array (4,) float64 was freed")
    for use in (lambda: backend.to_host(dev), dev.copy_to_host, lambda: backend.to_host(view),
                lambda: backend.copy_to_device(np.zeros(4), dev),
                lambda: dev.copy_to_device(np.zeros(4))):
        with pytest.raises(InvalidDeviceArrayError, match=use_after_free.replace("4,", r"\d,")):
            use()
    with pytest.raises(InvalidDeviceArrayError, match="^double free: this device array was "
                                                      "already freed; free each array once$"):
        backend.free(dev)
    assert backend.get_memory_info() == (T4_BYTES, T4_BYTES)
    assert "freed" in repr(dev)


def double(a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] = a[i] * 2


def test_a_freed_array_cannot_be_passed_to_a_kernel():
    backend = CPUBackend()
    dev, launched = backend.to_device(np.arange(4.0)), backend.to_device(np.arange(4.0))
    backend.launch_kernel(double, 1, 32, launched)  # its host view is made and kept
    for array in (dev, launched):
        backend.free(array)
        with pytest.raises(InvalidDeviceArrayError, match="use after free"):
            backend.launch_kernel(double, 1, 32, array)
        with pytest.raises(InvalidDeviceArrayError, match="use after free"):
            array.host_view()


def test_freeing_a_launched_array_gives_its_host_memory_back():
    backend = CPUBackend()
    dev = backend.to_device(np.arange(1 << 16, dtype=np.float64))
    backend.launch_kernel(double, 1 << 8, 1 << 8, dev)  # the launch keeps a view of its storage
    storage = weakref.ref(dev.host_view().base)
    backend.free(dev)  # `dev` itself lives on
    gc.collect()
    assert storage() is None


def test_an_array_python_forgets_is_freed_once_its_views_are_gone():
    # as CuPy frees a collected array (numba-cuda's deferred frees are the simulation mode's)
    backend = CPUBackend()
    dev = backend.to_device(np.arange(1 << 16, dtype=np.float64))
    view = dev[8:]
    backend.launch_kernel(double, 1 << 8, 1 << 8, dev)  # masks, views and a plan made
    del dev
    gc.collect()
    assert backend.memory_info().used_bytes == reserved(8 << 16)  # the view keeps it
    np.testing.assert_array_equal(backend.to_host(view), np.arange(8, 1 << 16) * 2.0)
    del view
    assert backend.get_memory_info() == (T4_BYTES, T4_BYTES)
    assert backend.memory.host_budget.used_bytes == 0 and not backend.memory.live
    dev = backend.allocate(10, np.float32)
    backend.free(dev)
    del dev  # freed before it was forgotten: freed once
    assert backend.get_memory_info() == (T4_BYTES, T4_BYTES)


def test_arrays_of_another_backend_are_refused():
    one, other = CPUBackend(), CPUBackend()
    dev = one.to_device(np.arange(4.0))
    for operation in ("to_host", "free"):
        with pytest.raises(InvalidDeviceArrayError,
                           match=f"^{operation}: this device array belongs to another backend's "
                                 "device$"):
            getattr(other, operation)(dev)


# -- lazy storage and the host budget -------------------------------------------------------------
def rss_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def fill_first(big):
    i = cuda.grid(1)
    if i < 32:
        big[i] = 1.0


def fill_first_reversed(big):
    i = cuda.grid(1)
    if i < 32:
        big[31 - i] = 1.0  # not indexed by the thread's coordinate: the race check keeps records


@pytest.mark.skipif(not Path("/proc/self/statm").exists(),
                    reason="reads the process's resident memory from Linux's /proc/self/statm")
def test_10_gib_on_a_simulated_a100_takes_no_host_memory():
    backend = CPUBackend(device="A100")
    before = rss_bytes()
    big = backend.allocate((10 * GiB) // 4, np.float32)
    view = big[: 5 * GiB // 4]
    assert big.nbytes == 10 * GiB and view.nbytes == 5 * GiB
    assert rss_bytes() - before < 64 << 20
    assert backend.get_memory_info() == (30 * GiB, 40 * GiB)
    assert backend.status().extra["host_memory_used_bytes"] == 0
    backend.free(big)
    assert backend.get_memory_info() == (40 * GiB, 40 * GiB)


def test_a_small_host_budget_turns_a_kernel_touching_a_huge_array_into_an_error():
    budget = 256 << 20
    backend = CPUBackend(device="A100", host_memory_budget_bytes=budget, checks=False)
    big = backend.allocate((10 * GiB) // 4, np.float32)
    before = rss_bytes()
    with pytest.raises(HostMemoryBudgetError, match=re.escape(
            f"simulating this needs 10.00 GiB ({10 * GiB:,} bytes) more host memory for a "
            f"{10 * GiB:,}-byte device array, but 0 bytes of the simulator's host budget of "
            f"256.00 MiB ({budget:,} bytes) is already in use")):
        backend.launch_kernel(fill_first, 1, 32, big)
    assert rss_bytes() - before < 64 << 20
    assert backend.status().extra["host_memory_budget_bytes"] == budget
    # with its checks on, the simulator refuses their records first, with the way out
    checked = CPUBackend(device="A100", host_memory_budget_bytes=budget)
    big = checked.allocate((10 * GiB) // 4, np.float32)
    with pytest.raises(HostMemoryBudgetError, match=re.escape(
            "more host memory for the race check's records of 'big' (or pass "
            "checks={'races': False})")):
        checked.launch_kernel(fill_first_reversed, 1, 32, big)
    # an array indexed by each thread's own coordinate needs none: the storage is refused
    with pytest.raises(HostMemoryBudgetError, match=re.escape(
            f"more host memory for a {10 * GiB:,}-byte device array")):
        checked.launch_kernel(fill_first, 1, 32, big)
    assert isinstance(HostMemoryBudgetError("x"), (MemoryError, DeviceMemoryError))


def test_a_host_budget_error_leaks_neither_budget_nor_device_memory():
    """The race records of the arguments bound before the refused one, and implicit copies of
    host arrays, are given back when the launch fails."""
    def touch_both(small, big):
        i = cuda.grid(1)
        if i < small.shape[0]:
            small[i] = 1.0
            big[i] = 2.0

    backend = CPUBackend(device="A100", host_memory_budget_bytes=256 << 20)
    big = backend.allocate((10 * GiB) // 4, np.float32)
    small = backend.to_device(np.zeros(1000, np.float32))
    memory, host_used = backend.memory_info(), backend.status().extra["host_memory_used_bytes"]
    with pytest.raises(HostMemoryBudgetError):
        backend.launch_kernel(touch_both, 4, 256, small, big)
    assert backend.status().extra["host_memory_used_bytes"] == host_used
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImplicitTransferWarning)
        with pytest.raises(HostMemoryBudgetError):
            backend.launch_kernel(touch_both, 4, 256, np.zeros(1000, np.float32), big)
    assert backend.memory_info() == memory
    assert backend.status().extra["host_memory_used_bytes"] == host_used


# -- transfers ------------------------------------------------------------------------------------
def test_transfers_are_recorded_with_direction_size_and_modeled_duration():
    backend = CPUBackend()
    host = np.arange(1000, dtype=np.float64)
    dev = backend.to_device(host)
    backend.to_host(dev)
    blank = backend.allocate(1000, np.float64)
    backend.copy_to_device(host, blank)
    blank.copy_to_device(dev)
    dev.copy_to_host()
    backend.to_host(dev, out=backend.pinned_array(1000, "float64"))
    dev[:10].copy_to_device(np.zeros(10))
    got = [(t.direction, t.nbytes, t.pinned, t.implicit) for t in backend.transfers]
    assert got == [("h2d", 8000, False, False), ("d2h", 8000, False, False),
                   ("h2d", 8000, False, False), ("d2d", 8000, False, False),
                   ("d2h", 8000, False, False), ("d2h", 8000, True, False),
                   ("h2d", 80, False, False)]
    for t in backend.transfers:
        assert t.modeled_ms > 0
        assert t.modeled_ms == pytest.approx(
            modeled_copy_ms(backend.profile, t.direction, t.nbytes, t.pinned))
    slow, fast = (modeled_copy_ms(backend.profile, "h2d", 1 << 26, p) for p in (False, True))
    assert fast < slow < modeled_copy_ms(backend.profile, "h2d", 1 << 27, False)
    # 64 MiB over a T4's PCIe Gen3 x16 link: milliseconds, not microseconds or seconds
    assert 1.0 < fast < 20.0


# -- bad inputs, each with its exact error ----------------------------------------------------------
@pytest.mark.parametrize(("shape", "error", "message"), [
    (-1, InvalidShapeError, "invalid shape -1: size -1 of axis 0 is negative; sizes must be >= 0"),
    ((3, -2), InvalidShapeError, "invalid shape (3, -2): size -2 of axis 1 is negative"),
    (2.5, ShapeTypeError, "invalid shape 2.5: a shape is an int or a tuple of ints, not float"),
    ((3, 2.0), ShapeTypeError, "invalid shape (3, 2.0): size 2.0 of axis 1 is float, not an int"),
    ("8", ShapeTypeError, "invalid shape '8': a shape is an int or a tuple of ints, not str"),
    (None, ShapeTypeError, ("invalid shape None: a shape is an int or a tuple of ints, not "
                            "NoneType")),
    ((2, True), ShapeTypeError, "invalid shape (2, True): size True of axis 1 is bool"),
])
def test_bad_shapes(shape, error, message):
    with pytest.raises(error, match="^" + re.escape(message)):
        CPUBackend().allocate(shape, np.float32)
    assert issubclass(error, (ValueError, GpukitError))


@pytest.mark.parametrize(("dtype", "message"), [
    ("float128x", ("unknown dtype 'float128x'; accepted dtypes: bool, int8, int16, int32, "
                   "int64, uint8, uint16, uint32, uint64, float16, float32, float64, complex64, "
                   "complex128")),
    (object, ("unsupported dtype <class 'object'> (object): device arrays hold bool and "
              "numeric data only")),
    ("U3", "unsupported dtype 'U3' (<U3): device arrays hold bool and numeric data only"),
    (None, "dtype must be given, got None"),
])
def test_unknown_or_unsupported_dtypes(dtype, message):
    backend = CPUBackend()
    with pytest.raises(UnsupportedDtypeError, match="^" + re.escape(message)):
        backend.allocate(4, dtype)
    if dtype is not None:
        with pytest.raises(UnsupportedDtypeError):
            backend.to_device(np.zeros(2, dtype="U3" if dtype == "float128x" else dtype))


def test_unknown_device_name():
    with pytest.raises(UnknownDeviceError, match=re.escape(
            "unknown device profile 'Z80'; known profiles: T4, V100, A100 40GB, A100 80GB, "
            "RTX 3090, RTX 4090, L4, H100 SXM, H200")):
        CPUBackend(device="Z80")
    with pytest.raises(KeyError):
        gpukit.get_backend("cpu", device="Z80")
    with pytest.raises(TypeError, match="device must be a profile name or a DeviceProfile, not int"):
        CPUBackend(device=3)
    assert CPUBackend().supports_device("a100") and not CPUBackend().supports_device("Z80")


@pytest.mark.parametrize(("value", "message"), [
    ([1, 2, 3], ("to_device expects a numpy array, got list; convert it first with "
                 "numpy.asarray(...)")),
    (3.0, "to_device expects a numpy array, got float"),
    (None, "to_device expects a numpy array, got NoneType"),
])
def test_to_device_of_something_that_is_not_an_array(value, message):
    with pytest.raises(TransferError, match="^" + re.escape(message)):
        CPUBackend().to_device(value)


def test_to_device_of_a_device_array_and_to_host_of_a_host_array():
    backend = CPUBackend()
    dev = backend.to_device(np.zeros(3))
    with pytest.raises(TransferError, match="^to_device expects a numpy array, got a device array "
                                            "that is already on the device"):
        backend.to_device(dev)
    with pytest.raises(TransferError, match="^to_host expects a device array of this backend, got "
                                            "ndarray$"):
        backend.to_host(np.zeros(3))


def test_to_host_of_a_freed_array():
    backend = CPUBackend()
    dev = backend.to_device(np.zeros((2, 2), np.int32))
    backend.free(dev)
    with pytest.raises(InvalidDeviceArrayError, match=re.escape(
            "use after free: this device array (2, 2) int32 was freed; allocate a new one")):
        backend.to_host(dev)


@pytest.mark.parametrize(("host", "what"), [
    (np.zeros(5, np.float32), "(5,) float32"), (np.zeros(4, np.float64), "(4,) float64"),
    (np.zeros((2, 2), np.float32), "(2, 2) float32"),
])
def test_copy_shape_or_dtype_mismatch(host, what):
    backend = CPUBackend()
    dev = backend.allocate(4, np.float32)
    with pytest.raises(TransferError, match="^" + re.escape(
            f"copy_to_device: the host array is {what} but the device array is (4,) float32; "
            "copies need equal shapes and dtypes")):
        backend.copy_to_device(host, dev)
    with pytest.raises(TransferError, match=re.escape(
            f"to_host: the host array is {what} but the device array is (4,) float32")):
        backend.to_host(backend.to_device(np.zeros(4, np.float32)), out=host)
    with pytest.raises(TransferError, match=re.escape("copy_to_device: shape/dtype mismatch")):
        dev.copy_to_device(host)
    with pytest.raises(TransferError, match="^copy_to_device needs a numpy array or a device "
                                            "array, not list$"):
        dev.copy_to_device([0.0] * 4)


def test_bad_backend_options():
    with pytest.raises(ValueError, match="^schedule must be 'ordered' or 'shuffle', got 'random'$"):
        CPUBackend(schedule="random")
    with pytest.raises(ValueError, match="watchdog_s must be a positive number of seconds or None"):
        CPUBackend(watchdog_s=-1)


def _double(a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] = a[i] * 2


def test_a_dispatchers_launch_bounds_are_honoured_as_on_a_gpu():
    bounded = cuda.jit(launch_bounds=64)(_double)
    backend = CPUBackend()
    dev = backend.to_device(np.ones(128, np.float32))
    backend.launch_kernel(bounded, 2, 64, dev)
    np.testing.assert_array_equal(backend.to_host(dev), 2)
    with pytest.raises(LaunchConfigError, match=re.escape(
            "kernel '_double': block 128 has 128 threads, more than the 64 its launch bounds "
            "allow (cuda.jit(launch_bounds=64)); a GPU refuses this launch with "
            "CUDA_ERROR_INVALID_VALUE")):
        backend.launch_kernel(bounded, 1, 128, dev)
    backend.launch_kernel(_double, 1, 128, dev)  # the plain function has no bounds


def test_threads_that_copy_and_launch_at_once_take_turns():
    backend = CPUBackend()

    def one(k):
        dev = backend.to_device(np.full(64, k, np.float32))
        backend.launch_kernel(_double, 1, 64, dev)
        out = backend.to_host(dev)
        backend.free(dev)
        return out

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(32)))
    for k, out in enumerate(results):
        np.testing.assert_array_equal(out, 2 * k)
    assert backend.launches.total == 32 and backend.memory.used_bytes == 0


# -- status, capabilities, profiles ---------------------------------------------------------------
def test_status_reports_memory_launches_and_the_last_error():
    def scale(a):
        i = cuda.grid(1)
        if i < a.shape[0]:
            a[i] = a[i] * 2

    backend = CPUBackend(checks={"races": False}, schedule="shuffle", num_threads=4,
                         use_numba=True)
    status = backend.status()
    assert isinstance(status, BackendStatus)
    assert (status.name, status.initialized, status.device) == ("cpu", True, "simulated T4")
    assert (status.memory_in_use_bytes, status.kernels_launched, status.last_error) == (0, 0, None)
    assert status.extra["checks"] == ["launch_limits", "bounds", "barriers", "uninitialized",
                                      "division_by_zero", "wraparound"]
    assert (status.extra["schedule"], status.extra["num_threads"],
            status.extra["use_numba"]) == ("shuffle", 4, True)
    dev = backend.to_device(np.arange(100, dtype=np.float32))
    backend.launch_kernel(scale, 1, 128, dev)
    with pytest.raises(LaunchConfigError):
        backend.launch_kernel(scale, 1, 2048, dev)
    status = backend.status()
    assert (status.memory_in_use_bytes, status.kernels_launched) == (512, 1)
    assert status.last_error.startswith("LaunchConfigError: kernel 'scale': block 2048 has 2048 "
                                        "threads")
    with backend:
        pass
    assert not backend.status().initialized and backend.status().memory_in_use_bytes == 0
    assert dev.is_freed  # shutdown releases everything
    assert backend.initialize() is backend and backend.initialized


def test_capabilities_of_the_default_t4():
    backend = CPUBackend()
    caps = backend.capabilities()
    assert isinstance(caps, Capabilities)
    assert (caps.warp_size, caps.max_threads_per_block, caps.max_block_dim, caps.max_grid_dim) == (
        32, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535))
    assert (caps.shared_mem_per_block, caps.shared_mem_per_block_optin) == (48 * 1024, 64 * 1024)
    assert (caps.compute_capability, caps.sm_count, caps.total_memory_bytes) == (
        (7, 5), 40, T4_BYTES)
    for feature in ("shared_memory", "dynamic_shared_memory", "atomics", "warp_shuffle",
                    "race_detection", "simulated"):
        assert backend.supports_feature(feature)
    assert not backend.supports_feature("tensor_cores")
    assert (backend.name, backend.is_available, backend.device_name) == ("cpu", True,
                                                                          "simulated T4")
    assert backend.compute_capability == (7, 5) and isinstance(backend.version, str)


def test_an_a100_has_the_a100_limits():
    def fill(out):
        s = cuda.shared.array(0, np.float32)
        s[cuda.threadIdx.x] = 1.0
        cuda.syncthreads()
        out[cuda.threadIdx.x] = s[cuda.threadIdx.x]

    a100 = CPUBackend(device="A100")
    caps = a100.capabilities()
    assert a100.profile.name == "A100 40GB" and a100.get_memory_info() == (40 * GiB, 40 * GiB)
    assert (caps.compute_capability, caps.sm_count, caps.shared_mem_per_block_optin) == (
        (8, 0), 108, 163 * 1024)
    out = a100.to_device(np.zeros(1024, np.float32))
    record = a100.launch_kernel(fill, 1, 1024, out, dynamic_shared_bytes=100 * 1024)
    assert record.dynamic_shared_bytes == 100 * 1024 and a100.to_host(out).all()
    t4 = CPUBackend()
    with pytest.raises(LaunchConfigError, match=r"dynamic_shared_bytes must be an int from 0 to "
                                                r"65536 \(the simulated T4 \(CC 7.5\)'s"):
        t4.launch_kernel(fill, 1, 1024, t4.to_device(np.zeros(1024, np.float32)),
                         dynamic_shared_bytes=100 * 1024)
    with pytest.raises(LaunchConfigError, match="must be an int from 0 to 166912 .*got 167936"):
        a100.launch_kernel(fill, 1, 32, out, dynamic_shared_bytes=164 * 1024)
    assert CPUBackend(device="a100-80gb").get_memory_info() == (80 * GiB, 80 * GiB)


def test_get_backend_passes_options_to_cpu_backend():
    backend = gpukit.get_backend("cpu", device="h100", checks=["bounds"], watchdog_s=5.0)
    assert isinstance(backend, CPUBackend) and backend.profile.name == "H100 SXM"
    assert backend.status().extra["checks"] == ["bounds"] and backend.watchdog_s == 5.0


# -- host arrays passed to kernels ----------------------------------------------------------------
def axpy(alpha, x, y):
    i = cuda.grid(1)
    if i < y.shape[0]:
        y[i] = alpha * x[i] + y[i]


def test_host_arrays_passed_to_a_kernel_are_copied_in_and_back_with_a_warning():
    backend = CPUBackend()
    x, y = np.arange(10, dtype=np.float32), np.ones(10, np.float32)
    with pytest.warns(ImplicitTransferWarning, match=re.escape(
            "kernel 'axpy': host arrays passed directly (x, y) are copied to the device before "
            "the launch and back after it; copy them once with backend.to_device")) as caught:
        record = backend.launch_kernel(axpy, 1, 32, 2.0, x, y)
    assert caught[0].filename == __file__  # the warning points at the launch line
    np.testing.assert_array_equal(y, 2 * np.arange(10) + 1)
    assert record.stats.implicit_transfers == ("x", "y")
    got = [(t.direction, t.nbytes, t.implicit) for t in backend.transfers]
    assert got == [("h2d", 40, True), ("h2d", 40, True), ("d2h", 40, True), ("d2h", 40, True)]
    assert backend.get_memory_info() == (T4_BYTES, T4_BYTES)  # the copies are freed


def test_host_and_device_arrays_mixed_and_fortran_order_copied_back():
    def add_rows(a, out):
        r, c = cuda.grid(2)
        if r < out.shape[0] and c < out.shape[1]:
            out[r, c] += a[r, c] + r

    backend = CPUBackend()
    a = backend.to_device(np.ones((3, 4), np.int64))
    out = np.asfortranarray(np.zeros((3, 4), np.int64))
    kernel = backend.compile_kernel(add_rows)
    with pytest.warns(ImplicitTransferWarning, match=r"host arrays passed directly \(out\)"):
        kernel[(1, 1), (4, 4)](a, out)
    np.testing.assert_array_equal(out, 1 + np.arange(3)[:, None] + np.zeros((3, 4)))
    assert out.flags.f_contiguous
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # device arrays only: no warning
        backend.launch_kernel(add_rows, (1, 1), (4, 4), a, backend.to_device(out))
