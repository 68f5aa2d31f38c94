"""The CUDA backend's defects of issue 17, each shown without a GPU: with numba-cuda's and
cuda-python's real classes where they work without a driver (numba's pending-deallocation queue,
its device arrays and memory pointers, CudaAPIError, cuda.pathfinder), and with fakes that
follow the real API where they do not (CuPy's memory pool needs a driver even to be made).
Their checks under Numba's CUDA simulator are in tests/cudasim/cuda_backend_checks.py."""

from __future__ import annotations

import logging
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import tomllib

import gpukit
from gpukit.backends import _cuda_arrays, _cuda_copies, _cuda_device, _cuda_env, _cuda_toolkit
from gpukit.backends._cuda_arrays import CUDADeviceArray, free_numba_memory, release
from gpukit.backends._cuda_launch import opt_in_shared_memory, translate_fault
from gpukit.backends.cpu import CPUBackend
from gpukit.backends.cuda import CUDABackend
from gpukit.devices import PROFILES, match_profile, names_device
from gpukit.errors import BackendUnavailableError, KernelFaultError

ROOT = Path(__file__).resolve().parents[1]


# -- free(): numba's memory goes back at once; CuPy's block goes back to the pool -----------------
def _numba_array(monkeypatch, freed: list[int]):
    """A real numba DeviceNDArray over a real AutoFreePointer whose finalizer queues cuMemFree on
    a real _PendingDeallocs, as numba-cuda's memory manager makes them (the driver faked)."""
    from numba.cuda.cudadrv import driver as drv
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    monkeypatch.setattr(drv, "driver", types.SimpleNamespace(cuMemFree=freed.append))
    monkeypatch.setattr(drv, "_logger", logging.getLogger("numba.cuda.test"), raising=False)
    manager = types.SimpleNamespace(allocations={}, deallocations=drv._PendingDeallocs(1 << 40))
    context = types.SimpleNamespace(memory_manager=manager,
                                    deallocations=drv._PendingDeallocs(1 << 40))
    pointer, size = 0x7000_0000, 4096
    memory = drv.AutoFreePointer(context, pointer, size,
                                 finalizer=drv._alloc_finalizer(manager, pointer, pointer, size))
    manager.allocations[pointer] = memory
    array = DeviceNDArray((1024,), (4,), np.float32, gpu_data=memory.own())
    return array, context, pointer


def test_free_returns_numba_memory_to_the_driver_at_once(monkeypatch):
    freed: list[int] = []
    array, context, pointer = _numba_array(monkeypatch, freed)
    free_numba_memory(array, context)
    assert freed == [pointer]
    assert len(context.memory_manager.deallocations) == 0


def test_clearing_the_contexts_queue_alone_frees_nothing(monkeypatch):
    """What free() used to do: the memory waited for ten more frees or an out-of-memory retry."""
    freed: list[int] = []
    array, context, _ = _numba_array(monkeypatch, freed)
    array.gpu_data.free()
    context.deallocations.clear()
    assert freed == [] and len(context.memory_manager.deallocations) == 1


class _PooledMemory:
    """CuPy's PooledMemory: free() returns the block to its pool (and sets ptr to 0)."""

    def __init__(self, pool: _Pool, size: int):
        self.pool, self.size, self.ptr = pool, size, 0x1000

    def free(self) -> None:
        if self.ptr:
            self.ptr = 0
            self.pool.in_use -= self.size


class _Pool:
    """CuPy's MemoryPool: blocks in use and blocks held free for reuse."""

    def __init__(self, total: int):
        self.total, self.in_use = total, 0

    def free_bytes(self) -> int:
        return self.total - self.in_use


def _cupy_array(pool: _Pool, shape=(256,), dtype=np.float32):
    """A CuPy ndarray as gpukit reads one: shape, dtype, strides, data.mem (a PooledMemory)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    pool.in_use += size
    pool.total = max(pool.total, pool.in_use)
    cls = type("ndarray", (), {"__module__": "cupy._core.core"})
    array = cls()
    array.shape, array.dtype, array.strides = shape, np.dtype(dtype), (np.dtype(dtype).itemsize,)
    array.data = types.SimpleNamespace(mem=_PooledMemory(pool, size), ptr=0x1000)
    return array


def test_free_returns_a_cupy_block_to_the_pool_now():
    pool = _Pool(0)
    array = CUDADeviceArray(types.SimpleNamespace(), _cupy_array(pool))
    assert pool.free_bytes() == 0
    release(array, None)
    assert pool.free_bytes() == 1024 and array.is_freed


def test_memory_info_counts_the_pools_free_blocks_and_runs_numbas_pending_frees(monkeypatch):
    pool = _Pool(1 << 20)  # 1 MiB held by CuPy's pool, unused: any allocation reuses it
    flushed = []
    queue = types.SimpleNamespace(clear=lambda: flushed.append("memory manager"))
    context = types.SimpleNamespace(memory_manager=types.SimpleNamespace(deallocations=queue),
                                    get_memory_info=lambda: (3 << 30, 16 << 30))
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(
        get_default_memory_pool=lambda: pool))
    monkeypatch.setattr(_cuda_env, "cupy_usable", lambda: True)
    backend = types.SimpleNamespace(
        simulator=False, require_cuda=lambda: types.SimpleNamespace(
            current_context=lambda: context), device_call=lambda: _nothing())
    info = _cuda_copies.memory_info(backend)
    assert (info.free_bytes, info.total_bytes) == ((3 << 30) + (1 << 20), 16 << 30)
    assert flushed == ["memory manager"]


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# -- the cuda extra and the CUDA libraries --------------------------------------------------------
def test_the_cuda_extra_brings_every_library_a_gpu_needs():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    names = {r.split(">")[0].split("=")[0].split("<")[0] for r in extras["cuda"]}
    assert {"cupy-cuda12x", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvrtc-cu12",
            "nvidia-nvjitlink-cu12", "nvidia-cublas-cu12"} <= names


def test_gpukit_loads_nvrtc_nvvm_and_nvjitlink_from_the_wheels():
    """This machine has a system CUDA 13 toolkit in /usr/local/cuda; what gpukit loads (and
    numba-cuda then finds loaded) must be the cu12 wheels' in site-packages."""
    loaded = _cuda_toolkit.load_toolkit()
    for name in ("nvrtc", "nvvm", "nvJitLink"):
        lib = loaded[name]
        assert lib.path is not None, lib.error
        assert lib.from_wheel and "site-packages" in lib.path, lib
        assert not lib.path.startswith("/usr/local/cuda"), lib
    assert _cuda_toolkit.toolkit_problem(loaded, (12, 4)) is None


def test_the_probe_refuses_a_missing_nvrtc_and_a_system_toolkit():
    wheel = _cuda_toolkit.load_toolkit()
    missing = {**wheel, "nvrtc": _cuda_toolkit.LoadedLibrary("nvrtc", None, None, "not found")}
    assert _cuda_toolkit.toolkit_problem(missing).startswith(
        "NVRTC (which numba-cuda asks for the GPU architectures) was not found (not found): "
        "pip install 'gpukit[cuda]' installs nvidia-cuda-nvrtc-cu12")
    system = {**wheel, "nvvm": _cuda_toolkit.LoadedLibrary(
        "nvvm", "/usr/local/cuda-13.0/lib64/libnvvm.so.4", "system-search")}
    assert _cuda_toolkit.toolkit_problem(system).startswith(
        "NVVM (which compiles kernels) was loaded from /usr/local/cuda-13.0/lib64/libnvvm.so.4 "
        "(found via system-search), not from the nvidia-cuda-nvcc-cu12 wheel")
    no_linker = {**wheel, "nvJitLink": _cuda_toolkit.LoadedLibrary("nvJitLink", None, None, "x")}
    assert _cuda_toolkit.toolkit_problem(no_linker, (12, 9)) is None  # the driver is new enough
    assert "nvidia-nvjitlink-cu12" in _cuda_toolkit.toolkit_problem(no_linker, (12, 4))


def test_without_the_wheels_the_probe_notices_the_system_toolkit():
    hide_wheels = ("import site\nsite.getsitepackages = lambda *a, **k: []\n"
                   "from gpukit.backends._cuda_toolkit import load_toolkit, toolkit_problem\n"
                   "print(toolkit_problem(load_toolkit()))\n")
    proc = subprocess.run([sys.executable, "-S", "-c", hide_wheels], cwd=ROOT, text=True,
                          capture_output=True, timeout=120, check=False,
                          env={"PYTHONPATH": ":".join(sys.path[1:])})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() != "None"


def test_the_runtime_version_is_cudarts_not_nvrtcs(monkeypatch):
    from cuda.bindings import nvrtc, runtime
    monkeypatch.setattr(runtime, "cudaRuntimeGetVersion", lambda: (0, 12040))
    monkeypatch.setattr(nvrtc, "nvrtcVersion", lambda: (0, 12, 9))
    found = _cuda_toolkit.versions()
    assert (found["CUDA runtime (cudart)"], found["NVRTC"]) == ("12.4", "12.9")


# -- device names, the device's profile ---------------------------------------------------------
@pytest.mark.parametrize(("name", "device", "expected"), [
    ("L4", "NVIDIA L4", True), ("L4", "NVIDIA L40S", False), ("T4", "Tesla T4", True),
    ("A100", "NVIDIA A100-SXM4-80GB", True), ("A100 40GB", "NVIDIA A100-SXM4-80GB", False),
    ("4090", "NVIDIA GeForce RTX 4090", True), ("H100", "NVIDIA H100 80GB HBM3", True),
    ("H10", "NVIDIA H100 80GB HBM3", False),
])
def test_device_names_match_whole_words(name, device, expected):
    assert names_device(name, device) is expected


def test_find_device_and_match_profile():
    names = ["NVIDIA L40S", "NVIDIA L4", "NVIDIA A100-SXM4-80GB"]
    assert [_cuda_device.find_device(d, names) for d in
            ("L4", "L40S", "A100", "A100 80GB", "A100 40GB", "cuda:2", 0, 3, "cuda:x", "T4")] == [
        1, 0, 2, 2, None, 2, 0, None, None, None]
    assert _cuda_device.find_device("H100 SXM", ["NVIDIA H100 80GB HBM3"]) == 0
    assert match_profile("NVIDIA L40S") is None
    assert match_profile("NVIDIA A100-SXM4-80GB") is PROFILES["A100 80GB"]
    assert match_profile("Tesla T4") is PROFILES["T4"]


def test_a_real_gpus_profile_reads_its_clocks():
    dev = types.SimpleNamespace(MEMORY_CLOCK_RATE=5_001_000, GLOBAL_MEMORY_BUS_WIDTH=256,
                                CLOCK_RATE=1_590_000, ASYNC_ENGINE_COUNT=3)
    profile = _cuda_device.real_profile("Tesla T4", (7, 5), 40, 15 << 30, dev)
    assert (profile.name, profile.memory_bandwidth_gb_s, profile.fp32_tflops,
            profile.pcie_gen, profile.copy_engines) == ("Tesla T4", 320.1, 8.1, 3, 3)
    newer = _cuda_device.real_profile("NVIDIA Jetson", (8, 7), 16, 8 << 30, dev)
    assert newer.compute_capability == (8, 6) and newer.fp32_tflops == 6.5


# -- shared memory above 48 KiB, faults, contexts -----------------------------------------------
def test_dynamic_shared_memory_above_48_kib_opts_in():
    from numba.cuda.cudadrv.driver import binding
    calls = []
    cufunc = types.SimpleNamespace(handle="kernel handle", device=types.SimpleNamespace(id=1))
    compiled = types.SimpleNamespace(
        _codelibrary=types.SimpleNamespace(get_cufunc=lambda: cufunc), shared_mem_per_block=0)
    driver = types.SimpleNamespace(cuKernelSetAttribute=lambda *args: calls.append(args))
    opt_in_shared_memory(compiled, 96 * 1024, driver, binding)
    attribute = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert calls == [(attribute, 96 * 1024, "kernel handle", 1)]


def test_a_kernel_fault_becomes_a_kernel_fault_error():
    from numba.cuda.cudadrv.driver import CudaAPIError, binding
    exc = CudaAPIError(binding.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access")
    fault = translate_fault(exc, "saxpy")
    assert isinstance(fault, KernelFaultError) and fault.kernel == "saxpy"
    assert str(fault).startswith("kernel 'saxpy' faulted on the GPU (CUDA_ERROR_ILLEGAL_ADDRESS: ")
    assert "the process's GPU context is lost" in str(fault)
    assert translate_fault(CudaAPIError(binding.CUresult.CUDA_ERROR_OUT_OF_MEMORY, "oom"),
                           "k") is None
    assert translate_fault(ValueError("x"), "k") is None


@pytest.fixture
def a_gpu_whose_context_fails(monkeypatch):
    from numba.cuda.cudadrv.driver import CudaAPIError, binding

    def fail(device_id):
        raise CudaAPIError(binding.CUresult.CUDA_ERROR_OUT_OF_MEMORY, "out of memory")

    monkeypatch.setattr(_cuda_env, "_driver_problem", lambda: None)
    monkeypatch.setattr(_cuda_env, "device_count", lambda: 1)
    monkeypatch.setattr(_cuda_env, "toolkit_problem", lambda *args: None)
    monkeypatch.setattr(_cuda_env, "create_context", fail)
    for cached in (_cuda_env.cuda_unavailable_reason, _cuda_env.context_problem):
        cached.cache_clear()
    yield
    for cached in (_cuda_env.cuda_unavailable_reason, _cuda_env.context_problem):
        cached.cache_clear()


def test_a_context_that_cannot_be_created_falls_back(a_gpu_whose_context_fails, monkeypatch):
    monkeypatch.delenv("GPUKIT_BACKEND", raising=False)
    reason = _cuda_env.cuda_unavailable_reason()
    assert reason.startswith("a CUDA context could not be created on GPU 0 (CudaAPIError: ")
    assert reason.endswith("gpukit uses its CPU simulator instead (get_backend('cpu'))")
    assert isinstance(gpukit.get_backend("auto"), CPUBackend)
    with pytest.raises(BackendUnavailableError, match="a CUDA context could not be created"):
        gpukit.get_backend("cuda")


# -- get_backend's options on a GPU machine ------------------------------------------------------
@pytest.fixture
def a_t4_machine(monkeypatch):
    """The registry sees a usable GPU named "Tesla T4" (no CUDA call is made)."""
    from gpukit import backends
    monkeypatch.delenv("GPUKIT_BACKEND", raising=False)
    monkeypatch.setattr(backends, "_cuda_usable", lambda: (True, ""))
    monkeypatch.setattr(backends, "simulator_enabled", lambda: False)
    monkeypatch.setattr(_cuda_device, "device_names", lambda cuda, simulator: ["Tesla T4"])
    monkeypatch.setattr(_cuda_device, "availability", lambda backend, general: (
        None if backend.device is None or _cuda_device.find_device(backend.device, ["Tesla T4"])
        is not None else "not this GPU"))


def test_get_backend_with_simulator_options_on_a_gpu_machine(a_t4_machine):
    a100 = gpukit.get_backend(device="A100")
    assert isinstance(a100, CPUBackend) and a100.profile.name == "A100 40GB"
    assert isinstance(gpukit.get_backend(device="T4"), CUDABackend)
    quiet = gpukit.get_backend(checks=False, seed=3)  # no TypeError: checked, no effect
    assert isinstance(quiet, CUDABackend) and quiet.simulator_options.seed == 3
    with pytest.raises(TypeError, match="checks must be True, False, a dict or a list"):
        gpukit.get_backend(checks="yes")
    with pytest.raises(BackendUnavailableError, match="not this GPU"):
        gpukit.get_backend("cuda", device="A100")


# -- a CuPy array reaches kernels as a Numba view made once, without a stream sync --------------
def test_cupy_arrays_reach_kernels_as_one_numba_view_without_sync():
    made = []
    cuda = types.SimpleNamespace(as_cuda_array=lambda raw, sync=True: made.append(sync) or "view")
    backend = types.SimpleNamespace(require_cuda=lambda: cuda)
    array = CUDADeviceArray(backend, _cupy_array(_Pool(0)))
    assert array.numba_view() == "view" and array.numba_view() == "view"
    assert made == [False]  # once, and numba-cuda will not synchronise CuPy's stream


def test_the_module_layout_keeps_the_backend_small():
    assert len((ROOT / "gpukit" / "backends" / "cuda.py").read_text().splitlines()) < 400
    assert _cuda_arrays.CUDADeviceArray.__module__ == "gpukit.backends._cuda_arrays"


# -- inspect on a GPU of the emulated device's compute capability -----------------------------------
def test_inspect_falls_back_to_ptxas_when_the_gpus_numbers_cannot_be_read(monkeypatch):
    """On a GPU of the same compute capability, resources() asks numba's compiled kernel; where
    that fails (here: no driver, so compiling for the GPU raises) it must not crash."""
    from numba import cuda

    from gpukit.occupancy import resources as res

    def kernel(a, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] * 2

    signature = "void(float32[::1], float32[::1])"
    expected = res.resources(kernel, signature, "T4")
    res.clear_cache()
    monkeypatch.setattr(res, "_real_gpu_cc", lambda: (7, 5))  # "the GPU here is a T4"
    found = res.resources(kernel, signature, "T4")
    assert found == expected and found.source == "ptxas"


def test_cupy_makes_bfloat16_arrays_from_version_14_on(monkeypatch):
    """Older CuPy has no bfloat16: there, CUDABackend's arrays of it are Numba's."""
    import cupy
    import ml_dtypes

    cupy_holds = _cuda_env.cupy_holds
    bf16 = np.dtype(ml_dtypes.bfloat16)
    for version, holds in (("13.6.0", False), ("14.0.0", True), ("15.1.2", True)):
        monkeypatch.setattr(cupy, "__version__", version)
        assert cupy_holds(bf16) is holds
        assert cupy_holds(np.dtype(np.float32)) and cupy_holds(np.dtype(np.uint16))
