"""The backend contract, as checks that run against every backend: CPUBackend in-process
(tests/test_contract.py), CUDABackend under Numba's CUDA simulator in a subprocess
(tests/cudasim/contract_checks.py) and on a real GPU where there is one (tests/test_contract.py,
marked gpu). Each check takes a `backend` and asserts what a lesson may rely on: the same types,
the same errors with the same messages, the same semantics. Sizes are tiny: Numba's simulator
runs one Python thread per CUDA thread. The file name does not match test_*.py on purpose.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from numba import cuda

from gpukit.backends.base import (
    DEVICE_ARRAY_MEMBERS,
    FEATURES,
    KERNEL_FEATURES,
    BackendStatus,
    Capabilities,
    MemoryInfo,
)
from gpukit.devices import DeviceProfile
from gpukit.errors import (
    ArgumentTypeError,
    HostAccessError,
    ImplicitTransferWarning,
    InvalidDeviceArrayError,
    LaunchConfigError,
    TransferError,
)
from gpukit.launches import LaunchRecord
from gpukit.sim.memory import TransferRecord
from gpukit.timing import KINDS, time_kernel


def add_one(x, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + 1


def add_pair(out, pair, offsets):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = pair[0][i] + pair[1][i] + offsets[1][0]


def scale_2d(a, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = 2 * a[row, col]


# -- the backend's facts ---------------------------------------------------------------------
def check_device_facts(backend):
    assert isinstance(backend.name, str) and backend.is_available is True
    assert isinstance(backend.device_name, str) and backend.device_name
    assert isinstance(backend.is_simulated, bool)
    profile = backend.profile
    assert isinstance(profile, DeviceProfile)
    caps = backend.capabilities()
    assert isinstance(caps, Capabilities)
    assert backend.compute_capability == caps.compute_capability
    assert profile.cc.max_threads_per_block == caps.max_threads_per_block
    assert backend.device_label.startswith(f"the {backend.device_name} (CC ")
    assert isinstance(backend.memory_info(), MemoryInfo)
    assert isinstance(backend.status(), BackendStatus)
    assert backend.event_kind in KINDS


def check_feature_names(backend):
    features = backend.capabilities().features
    assert features <= set(FEATURES), sorted(features - set(FEATURES))
    assert KERNEL_FEATURES <= features, sorted(KERNEL_FEATURES - features)
    assert backend.supports_feature("pinned_memory") and not backend.supports_feature("nope")


# -- device arrays ---------------------------------------------------------------------------
def check_device_array_interface(backend):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    for array in (backend.to_device(host), backend.allocate((3, 4), np.float32)):
        missing = [m for m in DEVICE_ARRAY_MEMBERS if not hasattr(array, m)]
        assert missing == []
        assert (array.shape, array.dtype, array.nbytes, array.size, array.ndim, array.layout,
                array.is_view, array.is_freed) == ((3, 4), np.float32, 48, 12, 2, "C", False,
                                                   False)
        assert backend.owns(array) and backend.as_device_array(array) is array
    device = backend.to_device(host)
    back = device.copy_to_host()
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, host)


def check_host_access_is_explicit(backend):
    device = backend.to_device(np.ones(4, np.float32))
    message = ("a gpukit device array cannot be converted to numpy implicitly; copy it to the "
               "host with backend.to_host(array) (or array.copy_to_host())")
    with pytest.raises(HostAccessError) as caught:
        np.asarray(device)
    assert str(caught.value) == message and isinstance(caught.value, TypeError)
    for attempt in (lambda: bool(device), lambda: list(device), lambda: device + 1,
                    lambda: device.__setitem__(0, 1), lambda: device[0]):
        with pytest.raises(HostAccessError):
            attempt()


def check_views_and_reshape(backend):
    device = backend.to_device(np.arange(10, dtype=np.float32))
    middle = device[2:6]
    assert middle.is_view and middle.shape == (4,)
    backend.copy_to_device(np.full(4, -1, np.float32), middle)
    np.testing.assert_array_equal(backend.to_host(device),
                                  [0, 1, -1, -1, -1, -1, 6, 7, 8, 9])
    np.testing.assert_array_equal(backend.to_host(device[::3]), [0, -1, 6, 9])
    grid = device.reshape(2, 5)
    assert grid.shape == (2, 5) and not grid.is_view  # all of the memory: no partial view
    np.testing.assert_array_equal(backend.to_host(grid)[1], [-1, 6, 7, 8, 9])
    with pytest.raises(ArgumentTypeError, match=r"device array index \[1, 2\]"):
        device[[1, 2]]


def check_fortran_order_is_kept(backend):
    host = np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    device = backend.to_device(host)
    assert device.layout == "F"
    back = backend.to_host(device)
    np.testing.assert_array_equal(back, host)


def check_to_host_out_and_byte_order(backend):
    device = backend.to_device(np.arange(4, dtype=">f4"))
    assert device.dtype == np.float32
    out = np.zeros(4, ">f4")
    assert backend.to_host(device, out=out) is out
    np.testing.assert_array_equal(out, np.arange(4))
    with pytest.raises(TransferError, match=r"^to_host: the host array is \(2,\) float32 but "
                                            r"the device array is \(4,\) float32"):
        backend.to_host(device, out=np.zeros(2, np.float32))


def check_array_copy_methods(backend):
    device = backend.allocate(4, np.float32)
    device.copy_to_device(np.arange(4, dtype=np.float32))
    target = backend.allocate(4, np.float32)
    target.copy_to_device(device)  # device to device
    out = np.zeros(4, np.float32)
    assert target.copy_to_host(out) is out
    np.testing.assert_array_equal(out, np.arange(4))


def check_numba_style_array_methods(backend):
    device = backend.to_device(np.arange(10, dtype=np.float32))
    pieces = device.split(4)
    assert [p.shape for p in pieces] == [(4,), (4,), (2,)]
    assert device.reshape(2, 5).ravel().shape == (10,)
    assert device.__cuda_array_interface__["shape"] == (10,)


def check_copies_on_streams(backend):
    stream = backend.stream()
    pinned = backend.pinned_array(8, np.float32)
    pinned[...] = np.arange(8)
    device = backend.to_device(pinned, stream=stream)
    target = backend.allocate(8, np.float32)
    backend.copy_to_device(pinned, target, stream=stream)
    out, back = backend.pinned_array(8, np.float32), backend.pinned_array(8, np.float32)
    backend.to_host(target, out=out, stream=stream)
    backend.to_host(device, out=back, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(out, np.arange(8))
    np.testing.assert_array_equal(back, np.arange(8))


def check_array_copies_on_streams(backend):
    stream = backend.stream()
    device = backend.allocate(8, np.float32)
    device.copy_to_device(np.arange(8, dtype=np.float32), stream=stream)
    out = backend.pinned_array(8, np.float32)
    device.copy_to_host(out, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(out, np.arange(8))


def check_pinned_arrays_are_zeroed(backend):
    pinned = backend.pinned_array((3, 5), np.int32)
    assert isinstance(pinned, np.ndarray) and pinned.shape == (3, 5)
    assert pinned.dtype == np.int32 and not pinned.any()


# -- memory: free and its errors -------------------------------------------------------------
def check_free_and_its_errors(backend, other):
    device = backend.to_device(np.ones(3, np.float32))
    backend.free(device)
    assert device.is_freed
    with pytest.raises(InvalidDeviceArrayError) as caught:
        backend.to_host(device)
    assert str(caught.value) == ("use after free: this device array (3,) float32 was freed; "
                                 "allocate a new one (or keep it until you are done with it)")
    with pytest.raises(InvalidDeviceArrayError) as caught:
        backend.free(device)
    assert str(caught.value) == ("double free: this device array was already freed; free each "
                                 "array once")
    with pytest.raises(InvalidDeviceArrayError, match=r"^use after free: this device array"):
        backend.launch_kernel(add_one, 1, 4, device, backend.allocate(3, np.float32))
    whole = backend.to_device(np.ones(4, np.float32))
    with pytest.raises(InvalidDeviceArrayError) as caught:
        backend.free(whole[1:3])
    assert str(caught.value) == ("free: this device array (2,) is a view (a slice) of a larger "
                                 "one; free the array it was sliced from (freeing a view would "
                                 "free all of it)")
    with pytest.raises(TransferError) as caught:
        backend.free(np.ones(3))
    assert str(caught.value) == "free expects a device array of this backend, got ndarray"
    with pytest.raises(InvalidDeviceArrayError) as caught:
        backend.free(other.to_device(np.ones(3)))
    assert str(caught.value) == "free: this device array belongs to another backend's device"


def check_memory_is_counted(backend):
    before = backend.status().memory_in_use_bytes
    device = backend.allocate(1000, np.float32)
    assert backend.status().memory_in_use_bytes >= before + 4000
    backend.free(device)
    assert backend.status().memory_in_use_bytes == before


# -- launches --------------------------------------------------------------------------------
def check_launches_and_their_records(backend):
    x = np.arange(8, dtype=np.float32)
    dx, out = backend.to_device(x), backend.allocate(8, np.float32)
    record = backend.launch_kernel(add_one, 2, 4, dx, out, flops=8)
    assert isinstance(record, LaunchRecord) and backend.launches[-1] is record
    assert (record.kernel, record.grid, record.block, record.stream, record.backend,
            record.extra["flops"]) == ("add_one", (2, 1, 1), (4, 1, 1), 0, backend.name, 8)
    np.testing.assert_array_equal(backend.to_host(out), x + 1)
    kernel = backend.compile_kernel(add_one)
    assert (kernel.name, kernel.py_func) == ("add_one", add_one)
    kernel[2, 4](out, out)
    np.testing.assert_array_equal(backend.to_host(out), x + 2)
    grid = backend.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
    doubled = backend.allocate((2, 3), np.float32)
    backend.launch_kernel(scale_2d, (1, 1), (4, 2), grid, doubled, checks=False)
    np.testing.assert_array_equal(backend.to_host(doubled), 2 * np.arange(6).reshape(2, 3))


def check_host_arrays_in_launches(backend):
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    start = len(backend.transfers)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend.launch_kernel(add_one, 1, 4, x, out)
    assert [str(w.message) for w in caught if w.category is ImplicitTransferWarning] == [(
        "kernel 'add_one': host arrays passed directly (x, out) are copied to the device "
        "before the launch and back after it; copy them once with backend.to_device to avoid "
        "these implicit transfers")]
    np.testing.assert_array_equal(out, x + 1)
    log = backend.transfers[start:]
    assert all(isinstance(t, TransferRecord) for t in log)
    assert sorted((t.direction, t.nbytes, t.implicit) for t in log) == [
        ("d2h", 16, True), ("d2h", 16, True), ("h2d", 16, True), ("h2d", 16, True)]


def check_tuples_of_arrays_and_numbers(backend):
    """numba-cuda takes tuples of arrays and (nested, even empty) tuples of numbers."""
    a = np.arange(4, dtype=np.float32)
    out = backend.allocate(4, np.float32)
    backend.launch_kernel(add_pair, 1, 4, out, (backend.to_device(a), backend.to_device(a)),
                          ((), (10, 20)))
    np.testing.assert_array_equal(backend.to_host(out), 2 * a + 10)
    b = np.zeros(4, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend.launch_kernel(add_pair, 1, 4, b, (a, a + 1), ((), (5,)))
    np.testing.assert_array_equal(b, 2 * a + 6)  # host arrays in tuples are copied back too
    assert [str(w.message) for w in caught if w.category is ImplicitTransferWarning] == [(
        "kernel 'add_pair': host arrays passed directly (out, pair[0], pair[1]) are copied to "
        "the device before the launch and back after it; copy them once with backend.to_device "
        "to avoid these implicit transfers")]


def check_argument_errors(backend):
    out = backend.allocate(4, np.float32)
    with pytest.raises(ArgumentTypeError) as caught:
        backend.launch_kernel(add_one, 1, 4, [1, 2], out)
    assert str(caught.value) == (
        "argument 'x' of kernel 'add_one' is a list; kernels take device arrays "
        "(backend.to_device / allocate), numpy arrays (copied implicitly), numbers, or tuples of "
        "these")
    with pytest.raises(ArgumentTypeError) as caught:
        backend.launch_kernel(add_pair, 1, 4, out, (out, [1, 2]), ((), (1,)))
    assert str(caught.value).startswith("argument 'pair[1]' of kernel 'add_pair' is a list; ")
    with pytest.raises(ArgumentTypeError) as caught:
        backend.launch_kernel(add_one, 1, 4, out)
    assert str(caught.value) == "kernel 'add_one' takes 2 arguments (x, out), got 1"


def check_device_functions_are_not_kernels(backend):
    @cuda.jit(device=True)
    def helper(x):
        return x + 1

    with pytest.raises(ArgumentTypeError) as caught:
        backend.compile_kernel(helper)
    assert str(caught.value) == ("'helper' is a device function (cuda.jit(device=True)); "
                                 "launch a kernel that calls it")


def check_launch_limits(backend):
    out = backend.allocate(4, np.float32)
    with pytest.raises(LaunchConfigError) as caught:
        backend.launch_kernel(add_one, 1, 2048, out, out)
    assert str(caught.value) == (f"kernel 'add_one': block 2048 has 2048 threads; "
                                 f"{backend.device_label} allows at most 1024 threads per block")


def check_transfers_are_logged(backend):
    start = len(backend.transfers)
    device = backend.to_device(np.zeros(256, np.float32))
    backend.to_host(device)
    log = backend.transfers[start:]
    assert [(t.direction, t.nbytes, t.pinned, t.implicit) for t in log] == [
        ("h2d", 1024, False, False), ("d2h", 1024, False, False)]
    assert all(math.isfinite(t.modeled_ms) and t.modeled_ms > 0 for t in log)


def check_events_and_timing(backend):
    dx, out = backend.to_device(np.zeros(8, np.float32)), backend.allocate(8, np.float32)
    begin = backend.record_event()
    backend.launch_kernel(add_one, 1, 8, dx, out)
    end = backend.record_event()
    ms = begin.elapsed_ms(end)
    assert end.kind == backend.event_kind and math.isfinite(ms) and ms >= 0
    timing = time_kernel(add_one, 1, 8, dx, out, backend=backend, repeat=2, warmup=0)
    assert timing.kind in KINDS and len(timing.samples) == 2
    assert all(math.isfinite(s) and s >= 0 for s in timing.samples)


CHECKS = [value for name, value in sorted(globals().items())
          if name.startswith("check_") and callable(value)]
