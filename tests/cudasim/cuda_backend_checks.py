"""CUDABackend under Numba's CUDA simulator; run by tests/test_cuda_backend.py in a subprocess.

NUMBA_ENABLE_CUDASIM must be set before numba.cuda is first imported, so these checks cannot share
a process with the rest of the suite. The file name does not match test_*.py on purpose: the main
run collects only the wrapper, which runs this file with `python -m pytest` and reports each check.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from numba import cuda, float32

import gpukit
from gpukit.backends.cuda import SIMULATOR_ONLY_OPTIONS, CUDABackend, cuda_unavailable_reason
from gpukit.errors import (
    BackendUnavailableError,
    ImplicitTransferWarning,
    InvalidDeviceArrayError,
    LaunchConfigError,
    OptionTypeError,
    TransferError,
    UnsupportedOperationError,
)
from gpukit.launches import LaunchRecord

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    pytest.skip("runs only under NUMBA_ENABLE_CUDASIM=1 (tests/test_cuda_backend.py runs it so)",
                allow_module_level=True)

DTYPES = ["bool", "int8", "int32", "int64", "uint16", "float16", "float32", "float64",
          "complex64", "complex128", ml_dtypes.bfloat16]  # (ml_dtypes: the test extra)


@pytest.fixture
def backend() -> CUDABackend:
    return CUDABackend()


def vadd(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


def block_sums(values, sums):
    """Each block sums its 64 values through shared memory (a tree reduction)."""
    tile = cuda.shared.array(64, dtype=np.float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    tile[t] = values[i] if i < values.size else 0
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            tile[t] += tile[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        sums[cuda.blockIdx.x] = tile[0]


def reverse_dynamic(values):
    """Reverses each block's slice through dynamically sized shared memory."""
    tile = cuda.shared.array(0, dtype=float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    tile[t] = values[i]
    cuda.syncthreads()
    values[i] = tile[cuda.blockDim.x - 1 - t]


@cuda.jit(device=True)
def twice(v):
    return 2 * v


def _inputs(n: int = 100):
    rng = np.random.default_rng(0)
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)


# -- availability and device facts -------------------------------------------------------------
def test_available_under_the_simulator_and_says_so(backend):
    assert cuda_unavailable_reason() is None
    assert backend.is_available and backend.check_available()
    assert backend.unavailable_reason is None
    assert backend.simulator is True
    assert backend.device_name == "Numba CUDA simulator"
    assert backend.compute_capability == tuple(cuda.get_current_device().compute_capability)
    assert backend.version.startswith("numba-cuda ") and "simulator" in backend.version
    assert backend.array_library == "numba"


def test_registry_gives_cuda_but_auto_keeps_the_gpukit_simulator():
    assert isinstance(gpukit.get_backend("cuda"), CUDABackend)
    assert not isinstance(gpukit.get_backend("auto"), CUDABackend)


def test_missing_device_id_is_unavailable_with_reason():
    backend = CUDABackend(device_id=1)
    assert backend.check_available() is False
    assert backend.unavailable_reason == (
        "device_id 1 does not exist: 1 CUDA device(s) found (ids 0 to 0)")
    with pytest.raises(BackendUnavailableError, match="device_id 1 does not exist"):
        gpukit.get_backend("cuda", device_id=1)
    with pytest.raises(BackendUnavailableError, match="device_id 1 does not exist"):
        backend.allocate(4)


def test_capabilities_and_features(backend):
    caps = backend.capabilities()
    assert caps.warp_size == 32
    assert caps.max_threads_per_block == 1024
    assert caps.max_block_dim == (1024, 1024, 64)
    assert caps.compute_capability == backend.compute_capability
    assert caps.shared_mem_per_block == 48 * 1024
    assert caps.total_memory_bytes == backend.memory_info().total_bytes
    assert backend.supports_feature("numba_simulator")
    assert backend.supports_feature("shared_memory")
    assert not backend.supports_feature("tensor_cores")


def test_memory_info_is_host_memory_labelled(backend):
    info = backend.memory_info()
    assert 0 < info.free_bytes <= info.total_bytes
    assert info.pressure in ("low", "medium", "high", "critical")
    free_bytes, total_bytes = backend.get_memory_info()
    assert isinstance(free_bytes, int) and total_bytes == info.total_bytes
    assert backend.status().extra["memory_source"].startswith("host RAM")


def test_status_counts_memory_and_launches(backend):
    status = backend.status()  # a snapshot: it does not initialise the backend
    assert (status.name, status.device, status.kernels_launched, status.initialized) == (
        "cuda", "Numba CUDA simulator", 0, False)
    assert status.extra["simulator"] is True
    x, y = _inputs()
    dx, dy = backend.to_device(x), backend.to_device(y)
    out = backend.allocate(100, "float32")
    assert backend.status().memory_in_use_bytes == 3 * 400
    backend.launch_kernel(vadd, 4, 32, dx, dy, out)
    backend.free(out)
    status = backend.status()
    assert status.initialized
    assert (status.memory_in_use_bytes, status.kernels_launched) == (800, 1)


def test_supports_device(backend):
    assert backend.supports_device(0) and backend.supports_device("cuda:0")
    assert not backend.supports_device(1)
    assert not backend.supports_device(-1)
    assert not backend.supports_device(True)
    assert not backend.supports_device("T4")
    assert backend.supports_device("simulator")


def test_initialize_shutdown_and_context_manager():
    with CUDABackend() as backend:
        assert backend.initialized
        kept = backend.allocate(8)
    assert not backend.initialized
    with pytest.raises(InvalidDeviceArrayError, match="use after free"):
        backend.to_host(kept)
    backend.shutdown()  # idempotent
    assert backend.initialize() is backend and backend.initialize().initialized


# -- memory ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_each_dtype(backend, dtype):
    host = (np.arange(24).reshape(4, 6) % 3).astype(dtype)
    device = backend.to_device(host)
    assert (device.shape, device.dtype) == ((4, 6), np.dtype(dtype))
    back = backend.to_host(device)
    assert isinstance(back, np.ndarray) and back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, host)
    host[0, 0] = 1  # the device holds a copy
    assert backend.to_host(device)[0, 0] == 0


def test_allocate_shapes_and_dtypes(backend):
    assert backend.allocate(5).shape == (5,) and backend.allocate(5).dtype == np.float32
    assert backend.allocate((2, 3), "float64").shape == (2, 3)
    assert backend.allocate([np.int64(4)], np.int32).dtype == np.int32
    assert backend.allocate(0).size == 0


def test_copies_into_existing_arrays(backend):
    host = np.arange(10, dtype=np.float32)[::2]  # not contiguous
    np.testing.assert_array_equal(backend.to_host(backend.to_device(host)), host)
    target = backend.allocate(5, "float32")
    assert backend.copy_to_device(host, target) is target
    out = np.zeros(5, np.float32)
    assert backend.to_host(target, out) is out
    np.testing.assert_array_equal(out, host)


def test_free_then_use_and_double_free(backend):
    device = backend.to_device(np.ones(3, np.float32))
    backend.free(device)
    with pytest.raises(InvalidDeviceArrayError,
                       match=r"^use after free: this device array \(3,\) float32 was freed; "
                             r"allocate a new one \(or keep it until you are done with it\)$"):
        backend.to_host(device)
    with pytest.raises(InvalidDeviceArrayError, match="^double free: this device array was "
                                                      "already freed; free each array once$"):
        backend.free(device)
    with pytest.raises(InvalidDeviceArrayError, match=r"^use after free: this device array"):
        backend.launch_kernel(vadd, 1, 32, np.ones(3), np.ones(3), device)
    with pytest.raises(TransferError, match="free expects a device array of this backend, got "
                                            "ndarray"):
        backend.free(np.ones(3))


def test_transfer_errors(backend):
    with pytest.raises(TransferError, match="to_device expects a numpy array, got list"):
        backend.to_device([1, 2, 3])
    device = backend.to_device(np.ones(3, np.float32))
    with pytest.raises(TransferError, match="to_device expects a numpy array, got a device array "
                                            "that is already on the device"):
        backend.to_device(device)
    with pytest.raises(TransferError, match="to_host expects a device array of this backend, "
                                            "got ndarray"):
        backend.to_host(np.ones(3))
    with pytest.raises(TransferError, match=r"copy_to_device: the host array is \(4,\) float32 "
                                            r"but the device array is \(3,\) float32; copies "
                                            r"need equal shapes and dtypes"):
        backend.copy_to_device(np.ones(4, np.float32), device)
    with pytest.raises(TransferError, match=r"the host array is \(3,\) float64 but the device "
                                            r"array is \(3,\) float32"):
        backend.copy_to_device(np.ones(3, np.float64), device)
    with pytest.raises(TransferError, match=r"to_host: the host array is \(2,\) float32 but the "
                                            r"device array is \(3,\) float32"):
        backend.to_host(device, np.zeros(2, np.float32))
    with pytest.raises(TransferError, match="copy_to_device expects a device array of this "
                                            "backend, got ndarray"):
        backend.copy_to_device(np.ones(3), np.ones(3))
    with pytest.raises(TransferError, match="to_host's out must be a numpy array, got list"):
        backend.to_host(device, [0, 0, 0])


@pytest.mark.parametrize(("shape", "error", "message"), [
    (-1, ValueError, r"invalid shape -1: size -1 of axis 0 is negative"),
    ((4, -2), ValueError, r"invalid shape \(4, -2\): size -2 of axis 1 is negative"),
    (2.5, TypeError, r"invalid shape 2.5: a shape is an int or a tuple of ints, not float"),
    ((2, 3.0), TypeError, r"invalid shape \(2, 3.0\): size 3.0 of axis 1 is float, not an int"),
    ((True,), TypeError, r"size True of axis 0 is bool, not an int"),
    ("16", TypeError, r"invalid shape '16': a shape is an int or a tuple of ints, not str"),
])
def test_bad_shapes(backend, shape, error, message):
    with pytest.raises(error, match=message):
        backend.allocate(shape)


@pytest.mark.parametrize(("dtype", "message"), [
    ("floot32", r"unknown dtype 'floot32'; accepted dtypes: bool, int8, "),
    (object, r"unsupported dtype <class 'object'> \(object\)"),
    ("U4", r"unsupported dtype 'U4' \(<U4\)"),
])
def test_bad_dtypes(backend, dtype, message):
    with pytest.raises(TypeError, match=message):
        backend.allocate(3, dtype)


def test_to_device_rejects_non_numeric_arrays(backend):
    with pytest.raises(TypeError, match=r"unsupported dtype dtype\('<U1'\)"):
        backend.to_device(np.array(["a", "b"]))


# -- kernels ---------------------------------------------------------------------------------
def test_vector_add_both_launch_forms(backend):
    x, y = _inputs()
    dx, dy = backend.to_device(x), backend.to_device(y)
    kernel = backend.compile_kernel(vadd)
    assert (kernel.name, kernel.py_func) == ("vadd", vadd)
    for launch in (kernel[4, 32], kernel[(4,), (32,), 0, 0]):
        out = backend.allocate(100, "float32")
        launch(dx, dy, out)
        np.testing.assert_allclose(backend.to_host(out), x + y)
    out = backend.allocate(100, "float32")
    backend.launch_kernel(vadd, 4, 32, dx, dy, out)
    np.testing.assert_allclose(backend.to_host(out), x + y)
    assert backend.status().kernels_launched == 3


# GPU-Puzzles style factories are left out: their kernels capture `cuda` in a closure cell, which
# Numba's simulator does not swap for its fake module (tests/test_cuda_backend.py covers them).
@pytest.mark.parametrize("form", ["jit", "signature", "compiled"])
def test_kernel_forms(backend, form):
    x, y = _inputs()
    out = backend.allocate(100, "float32")
    if form == "jit":
        kernel = cuda.jit(vadd)
    elif form == "signature":
        kernel = backend.compile_kernel(vadd, "void(float32[:], float32[:], float32[:])")
    else:
        kernel = backend.compile_kernel(vadd)
    backend.launch_kernel(kernel, 4, 32, backend.to_device(x), backend.to_device(y), out)
    np.testing.assert_allclose(backend.to_host(out), x + y)


def test_compile_kernel_caches_and_rejects(backend):
    assert backend.compile_kernel(vadd) is backend.compile_kernel(vadd)
    kernel = backend.compile_kernel(vadd)
    assert backend.compile_kernel(kernel) is kernel
    assert CUDABackend(enable_caching=True).compile_kernel(vadd).py_func is vadd
    with pytest.raises(TypeError, match=r"'twice' is a device function"):
        backend.compile_kernel(twice)
    with pytest.raises(TypeError, match="expects a Python function or a numba.cuda.jit kernel, "
                                        "got int"):
        backend.compile_kernel(42)
    with pytest.raises(LaunchConfigError, match=r"needs a launch configuration: call it as "
                                                r"vadd\[grid, block\]"):
        kernel(1, 2, 3)


def test_shared_memory_kernel_both_launch_forms(backend):
    values = np.arange(256, dtype=np.float32)
    expected = values.reshape(4, 64).sum(axis=1)
    device = backend.to_device(values)
    for launch in ("indexing", "launch_kernel"):
        sums = backend.allocate(4, "float32")
        if launch == "indexing":
            backend.compile_kernel(block_sums)[4, 64](device, sums)
        else:
            backend.launch_kernel(block_sums, 4, 64, device, sums)
        np.testing.assert_allclose(backend.to_host(sums), expected)


def test_dynamic_shared_memory_both_launch_forms(backend):
    values = np.arange(64, dtype=np.float32)
    expected = values.reshape(2, 32)[:, ::-1].ravel()
    device = backend.to_device(values)
    backend.compile_kernel(reverse_dynamic)[2, 32, 0, 32 * 4](device)
    np.testing.assert_array_equal(backend.to_host(device), expected)
    backend.launch_kernel(reverse_dynamic, 2, 32, device, dynamic_shared_bytes=32 * 4)
    np.testing.assert_array_equal(backend.to_host(device), values)


@pytest.mark.parametrize(("grid", "block", "shared", "message"), [
    (1, 2048, 0, (r"kernel 'vadd': block 2048 has 2048 threads; the Numba CUDA simulator "
                  r"\(CC 5.2\) allows at most 1024")),
    (1, (1, 1, 128), 0, (r"block dimension z is 128; the Numba CUDA simulator \(CC 5.2\) "
                         r"allows at most 64")),
    ((1, 70000), 32, 0, (r"grid dimension y is 70000; the Numba CUDA simulator \(CC 5.2\) "
                         r"allows at most 65535")),
    (1, 0, 0, r"kernel 'vadd': block 0 is invalid: every dimension must be an int >= 1"),
    (1, (2, 2, 2, 2), 0, r"block must be an int or a tuple of 1 to 3 ints"),
    ("a", 32, 0, r"kernel 'vadd': grid must be an int or a tuple of 1 to 3 ints, got 'a'"),
    (1, 32, 10**6, r"dynamic_shared_bytes must be an int from 0 to 49152"),
])
def test_bad_launch_configurations(backend, grid, block, shared, message):
    args = (np.ones(4), np.ones(4), np.ones(4))
    with pytest.raises(LaunchConfigError, match=message):
        backend.compile_kernel(vadd)[grid, block, 0, shared](*args)
    with pytest.raises(LaunchConfigError, match=message):
        backend.launch_kernel(vadd, grid, block, *args, dynamic_shared_bytes=shared)
    with pytest.raises(LaunchConfigError, match=r"launch kernel 'vadd' as vadd\[grid, block\]"):
        backend.compile_kernel(vadd)[32]


@pytest.mark.parametrize("option", sorted(SIMULATOR_ONLY_OPTIONS - {"trace"}))
def test_simulator_options_are_checked_and_change_nothing(backend, option):
    values = {"checks": False, "schedule": "shuffle", "seed": 3, "watchdog_s": 2.0}
    x, y = _inputs(64)
    out = backend.allocate(64, "float32")
    backend.launch_kernel(vadd, 1, 64, backend.to_device(x), backend.to_device(y), out,
                          **{option: values[option]})
    np.testing.assert_allclose(backend.to_host(out), x + y)
    with pytest.raises(ValueError, match=option):  # the simulator's errors for bad values
        backend.launch_kernel(vadd, 1, 32, out, out, out, **{option: "no"})


def test_traces_are_the_simulators(backend):
    with pytest.raises(UnsupportedOperationError, match="records what each simulated thread"):
        backend.launch_kernel(vadd, 1, 32, np.ones(3), np.ones(3), np.ones(3), trace=True)


def test_unknown_launch_option_raises(backend):
    with pytest.raises(OptionTypeError, match="unexpected option\\(s\\) shared; the CUDA "
                                              "backend accepts stream, dynamic_shared_bytes, "
                                              "flops, checks"):
        backend.launch_kernel(vadd, 1, 32, np.ones(3), np.ones(3), np.ones(3), shared=1)


def test_big_endian_host_arrays_convert(backend):
    host = np.arange(4, dtype=">f4")
    device = backend.to_device(host)
    np.testing.assert_array_equal(backend.to_host(device), np.arange(4, dtype=np.float32))
    out = np.zeros(4, ">f4")
    assert backend.to_host(device, out=out) is out
    np.testing.assert_array_equal(out, np.arange(4))
    result = np.zeros(4, ">f4")  # copied in and back, converted both ways, as on the simulator
    with pytest.warns(ImplicitTransferWarning):
        backend.launch_kernel(vadd, 1, 32, host, host, result)
    np.testing.assert_array_equal(result, 2 * np.arange(4))


def test_launches_are_logged_as_common_launch_records(backend):
    x, y = _inputs(64)
    record = backend.launch_kernel(vadd, 1, 64, x, y, np.zeros(64, np.float32), flops=64)
    assert isinstance(record, LaunchRecord) and backend.launches == [record]
    assert (record.kernel, record.grid, record.block, record.stream, record.backend,
            record.extra["flops"]) == ("vadd", (1, 1, 1), (64, 1, 1), 0, "cuda", 64)
    assert (record.wall_ms, record.stats, record.occupancy) == (None, None, None)
    assert backend.is_simulated is False and backend.event_kind == "wall"


# -- issue 17's defects, on the backend's own paths ------------------------------------------------
def test_time_kernel_events_enclose_the_enqueue_alone(backend, monkeypatch):
    """Checks and compilation happen before the first event, even with warmup=0; between the
    two events of a sample there is only the launch."""
    from gpukit import timing
    from gpukit.backends import _cuda_launch, _cuda_streams

    log = []
    monkeypatch.setattr(_cuda_streams, "events_timed", lambda be: True)
    event_type = type(cuda.event())
    monkeypatch.setattr(event_type, "record", lambda self, stream=0: log.append("record"))
    monkeypatch.setattr(event_type, "elapsed_time", lambda self, other: 0.5)
    real_check, real_compile = _cuda_launch.check_launch, _cuda_launch.compile_for
    monkeypatch.setattr(_cuda_launch, "check_launch",
                        lambda *a, **k: log.append("check") or real_check(*a, **k))
    monkeypatch.setattr(_cuda_launch, "compile_for",
                        lambda *a: log.append("compile") or real_compile(*a))
    real_run = _cuda_launch.LaunchPlan.run
    monkeypatch.setattr(_cuda_launch.LaunchPlan, "run",
                        lambda self: log.append("run") or real_run(self))
    x, y = _inputs(32)
    t = timing.time_kernel(vadd, 1, 32, backend.to_device(x), backend.to_device(y),
                           backend.allocate(32, "float32"), backend=backend, repeat=2, warmup=0)
    assert log == ["check", "compile", "record", "run", "record", "record", "run", "record"]
    assert (t.kind, t.samples) == ("cuda-events", (0.5, 0.5))


def test_static_plus_dynamic_shared_memory_is_checked_and_opted_in(backend, monkeypatch):
    from gpukit.backends import _cuda_launch

    compiled = type("Compiled", (), {"shared_mem_per_block": 40 * 1024})()
    monkeypatch.setattr(_cuda_launch, "compile_for", lambda *args: compiled)
    opted = []
    monkeypatch.setattr(backend, "opt_in_shared", lambda c, n: opted.append((c, n)))
    values = backend.to_device(np.arange(64, dtype=np.float32))
    with pytest.raises(LaunchConfigError, match=r"kernel 'reverse_dynamic' needs 40,960 bytes of "
                                                r"static plus 12,288 bytes of dynamic shared "
                                                r"memory per block, over the Numba CUDA "
                                                r"simulator \(CC 5.2\)'s limit of 49,152 bytes"):
        backend.launch_kernel(reverse_dynamic, 2, 32, values, dynamic_shared_bytes=12288)
    caps = backend.capabilities()
    monkeypatch.setattr(backend, "_capabilities", type(caps)(**{
        **caps.__dict__, "shared_mem_per_block_optin": 99 * 1024}))  # a GPU with opt-in
    backend.launch_kernel(reverse_dynamic, 2, 32, values, dynamic_shared_bytes=32 * 1024)
    assert opted == [(compiled, 32 * 1024)]


def test_pinned_arrays_are_zeroed(backend, monkeypatch):
    monkeypatch.setattr(cuda, "pinned_array", lambda shape, dtype: np.full(shape, 7, dtype))
    pinned = backend.pinned_array(16, "int32")  # numba's pinned memory is not zeroed
    assert not pinned.any() and backend.is_pinned(pinned[4:])


def test_a_kernel_fault_is_a_kernel_fault_error_and_loses_the_context(monkeypatch):
    from numba.cuda.cudadrv.driver import CudaAPIError

    from gpukit.backends import _cuda_launch
    from gpukit.errors import KernelFaultError

    backend = CUDABackend()
    out = backend.allocate(4, "float32")

    def faulting_run(plan):
        backend.last_kernel = plan.kernel.name
        with backend.device_call():  # where CUDA reports the fault: a launch, a sync, a copy
            raise CudaAPIError(700, "an illegal memory access was encountered")

    monkeypatch.setattr(_cuda_launch.LaunchPlan, "run", faulting_run)
    with pytest.raises(KernelFaultError, match=r"^kernel 'vadd' faulted on the GPU "
                                               r"\(CUDA_ERROR_ILLEGAL_ADDRESS: "):
        backend.launch_kernel(vadd, 1, 4, out, out, out)
    for later in (lambda: backend.to_host(out), backend.synchronize,
                  lambda: backend.allocate(4)):
        with pytest.raises(KernelFaultError, match="the process's GPU context is lost"):
            later()
    assert backend.status().device == "unavailable"
    assert "kernel 'vadd' faulted on the GPU" in backend.status().last_error


def test_numba_arrays_made_elsewhere_are_accepted(backend):
    raw = cuda.to_device(np.arange(8, dtype=np.float32))
    out = backend.allocate(8, "float32")
    backend.launch_kernel(vadd, 1, 8, raw, raw, out)
    np.testing.assert_array_equal(backend.to_host(out), 2 * np.arange(8))
    np.testing.assert_array_equal(backend.to_host(raw), np.arange(8))
    adopted = backend.as_device_array(raw)
    assert adopted.is_adopted and adopted.raw is raw and adopted.shape == (8,)
    with pytest.raises(InvalidDeviceArrayError, match="^free: this numba array was not "
                                                      "allocated by gpukit"):
        backend.free(raw)
    assert backend.as_device_array(out.raw) is out  # its own arrays' CuPy/Numba arrays too


def test_selftest_passes_on_the_cuda_backend():
    from gpukit.selftest import selftest

    report = selftest(["cuda"], quick=True)
    assert report.passed, report.text()
    assert report.devices["cuda"].startswith("Numba CUDA simulator (numba-cuda ")
    assert report.versions["CUDA driver"] == "Numba's CUDA simulator"
