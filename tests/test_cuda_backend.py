"""CUDABackend: its checks under Numba's CUDA simulator (in a subprocess), its behaviour on a
machine without a GPU, the kernel-making helpers, and, where a GPU exists, on the GPU itself."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
from cudasim_runner import run_checks

import gpukit
from gpukit.backends import _cuda_env
from gpukit.backends._cuda_kernel import CUDAKernel, is_factory, make_dispatcher
from gpukit.backends.cuda import CUDABackend, cuda_unavailable_reason
from gpukit.errors import BackendUnavailableError

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "tests" / "cudasim" / "cuda_backend_checks.py"
REASON = cuda_unavailable_reason()
HAS_GPU = REASON is None and not _cuda_env.simulator_enabled()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason=f"needs an NVIDIA GPU; here: {REASON}")
no_gpu_only = pytest.mark.skipif(REASON is None, reason="checks the behaviour without CUDA; "
                                 "here CUDA is usable (a GPU, or NUMBA_ENABLE_CUDASIM=1)")


# -- the simulator checks, one subprocess for all of them -----------------------------------------
def _check_names() -> list[str]:
    tree = ast.parse(CHECKS.read_text())
    return [node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


@pytest.fixture(scope="session")
def cudasim_run(tmp_path_factory):
    """Runs tests/cudasim/cuda_backend_checks.py once under NUMBA_ENABLE_CUDASIM=1."""
    return run_checks(CHECKS, tmp_path_factory.mktemp("cudasim"))


@pytest.mark.cudasim
@pytest.mark.parametrize("check", _check_names())
def test_under_numba_simulator(cudasim_run, check):
    results, output = cudasim_run
    runs = {name: found for name, found in results.items() if name.split("[")[0] == check}
    if not runs:
        pytest.fail(f"{check} did not run under the simulator; pytest output:\n{output}")
    problems = [problem for found in runs.values() for problem in found]
    if problems:
        pytest.fail("\n".join(problems) + f"\n--- pytest output of the simulator run ---\n{output}")


# -- without a GPU ---------------------------------------------------------------------------------
@pytest.fixture
def fresh_reason():
    """Clears the cached availability answer before and after a test that fakes the world."""
    cuda_unavailable_reason.cache_clear()
    yield cuda_unavailable_reason
    cuda_unavailable_reason.cache_clear()


@no_gpu_only
def test_reason_names_the_missing_driver():
    assert REASON == ("no CUDA driver found (libcuda.so): this machine has no NVIDIA driver or "
                      "GPU; gpukit uses its CPU simulator instead (get_backend('cpu'))")
    assert cuda_unavailable_reason() is cuda_unavailable_reason()  # cached


def test_reason_never_raises(fresh_reason, monkeypatch):
    def broken():
        raise RuntimeError("boom")
    monkeypatch.setattr(_cuda_env, "_probe", broken)
    assert fresh_reason() == "checking for CUDA failed: RuntimeError: boom"


def test_reason_without_numba_cuda(fresh_reason, monkeypatch):
    real = _cuda_env.package_version
    monkeypatch.setattr(_cuda_env, "package_version",
                        lambda name: None if name == "numba-cuda" else real(name))
    assert fresh_reason() == ("numba-cuda is not installed (pip install numba-cuda); gpukit uses "
                              "its CPU simulator instead (get_backend('cpu'))")
    backend = CUDABackend()
    assert backend.check_available() is False
    assert backend.unavailable_reason.startswith("numba-cuda is not installed")


@no_gpu_only
def test_get_backend_cuda_raises_with_the_reason():
    with pytest.raises(BackendUnavailableError) as caught:
        gpukit.get_backend("cuda")
    assert str(caught.value) == f"backend 'cuda' cannot be used: {REASON}"
    assert gpukit.available_backends()["cuda"] == REASON


@no_gpu_only
def test_auto_falls_back_to_the_cpu_simulator(monkeypatch):
    from gpukit.backends.cpu import CPUBackend
    monkeypatch.delenv("GPUKIT_BACKEND", raising=False)
    assert isinstance(gpukit.get_backend("auto"), CPUBackend)
    assert isinstance(gpukit.get_backend(), CPUBackend)


@no_gpu_only
def test_unavailable_backend_reports_and_refuses():
    backend = CUDABackend()
    assert backend.is_available is False and backend.unavailable_reason == REASON
    status = backend.status()  # never raises
    assert (status.name, status.initialized, status.device) == ("cuda", False, "unavailable")
    assert status.extra["unavailable_reason"] == REASON and status.extra["simulator"] is False
    assert backend.supports_device(0) is False
    assert backend.version.startswith("numba-cuda ")
    for call in (lambda: backend.allocate(4), lambda: backend.to_device(np.ones(2)),
                 backend.synchronize, backend.memory_info, backend.capabilities,
                 backend.initialize, lambda: backend.device_name):
        with pytest.raises(BackendUnavailableError, match="the CUDA backend cannot be used: no "
                                                          "CUDA driver found"):
            call()
    backend.shutdown()  # nothing to shut down: no error


def test_input_errors_come_before_availability():
    """A bad shape, dtype or host array gets the same error with or without a GPU."""
    backend = CUDABackend()
    with pytest.raises(ValueError, match="invalid shape -1"):
        backend.allocate(-1)
    with pytest.raises(TypeError, match="unknown dtype 'floot32'"):
        backend.allocate(3, "floot32")
    with pytest.raises(gpukit.errors.TransferError, match="to_device expects a numpy array"):
        backend.to_device([1, 2])
    with pytest.raises(gpukit.errors.TransferError, match="to_host expects a device array"):
        backend.to_host(np.ones(2))


def test_bad_device_id():
    with pytest.raises(ValueError, match="device_id must be an int >= 0, got -1"):
        CUDABackend(device_id=-1)
    for bad in (1.0, True, "0"):
        with pytest.raises(TypeError, match=f"device_id must be an int >= 0, got "
                                            f"{type(bad).__name__} {bad!r}"):
            CUDABackend(device_id=bad)


def test_importing_the_backend_imports_neither_numba_nor_cupy():
    code = ("import sys, gpukit, gpukit.backends.cuda\n"
            "print(sorted(m for m in ('numba', 'cupy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          check=True, timeout=120)
    assert proc.stdout.strip() == "[]"


# -- making kernels, with a stand-in for numba.cuda ------------------------------------------------
class _FakeCuda:
    """Records cuda.jit calls; `cache_error` makes cache=True fail the way Numba does."""

    def __init__(self, cache_error: str | None = None):
        self.calls: list[tuple[object, dict]] = []
        self.cache_error = cache_error

    def jit(self, signature=None, **options):
        def decorate(func):
            self.calls.append((signature, options))
            if options.get("cache") and self.cache_error:
                raise RuntimeError(self.cache_error)
            return types.SimpleNamespace(py_func=func)
        return decorate


def _kernel(x):
    x[0] = 1


def _factory(cuda):
    def inner(x):
        x[cuda.grid(1)] = 1
    return inner


def test_make_dispatcher_from_functions_and_factories():
    cuda = _FakeCuda()
    py_func, dispatcher = make_dispatcher(cuda, _kernel, "void(float32[:])")
    assert py_func is _kernel and dispatcher.py_func is _kernel
    assert cuda.calls == [("void(float32[:])", {})]
    py_func, _ = make_dispatcher(cuda, _factory)
    assert py_func.__name__ == "inner" and py_func.__closure__[0].cell_contents is cuda
    assert is_factory(_factory) and not is_factory(_kernel) and not is_factory(len)


def test_make_dispatcher_caching_falls_back_with_a_warning():
    cuda = _FakeCuda(cache_error="cannot cache function '_kernel': no locator available")
    with pytest.warns(RuntimeWarning, match="kernel '_kernel' cannot use Numba's on-disk cache"):
        py_func, _ = make_dispatcher(cuda, _kernel, cache=True)
    assert py_func is _kernel
    assert cuda.calls == [(None, {"cache": True}), (None, {})]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_dispatcher(_FakeCuda(), _kernel, cache=True)
    with pytest.raises(RuntimeError, match="something else"):
        make_dispatcher(_FakeCuda(cache_error="something else"), _kernel, cache=True)


def test_cuda_kernel_wrapper():
    launches = []
    backend = types.SimpleNamespace(launch_kernel=lambda *args, **options: launches.append(
        (args, options)))
    dispatcher = types.SimpleNamespace(py_func=_kernel, definitions={"sig": 1})
    kernel = CUDAKernel(dispatcher, _kernel, backend)
    kernel[(2, 2), 32](np.ones(1))
    kernel[4, 64, "stream", 128]("arg")
    assert launches[0][0][1:3] == ((2, 2), 32)
    assert launches[0][1] == {"stream": 0, "dynamic_shared_bytes": 0}
    assert launches[1] == ((kernel, 4, 64, "arg"), {"stream": "stream",
                                                    "dynamic_shared_bytes": 128})
    assert (kernel.name, kernel.py_func, kernel.definitions, kernel.param_names) == (
        "_kernel", _kernel, {"sig": 1}, ["x"])


# -- on a real GPU ---------------------------------------------------------------------------------
@pytest.mark.gpu
@needs_gpu
def test_gpu_round_trip_memory_and_kernel():
    from numba import cuda

    backend = CUDABackend()
    caps = backend.capabilities()
    device = cuda.list_devices()[0]
    assert caps.max_threads_per_block == device.MAX_THREADS_PER_BLOCK
    assert caps.sm_count == device.MULTIPROCESSOR_COUNT
    assert backend.status().extra["simulator"] is False
    before = backend.memory_info()
    big = backend.allocate(256 * 1024 * 1024 // 4, "float32")
    assert backend.memory_info().free_bytes < before.free_bytes
    backend.free(big)
    x = np.arange(1000, dtype=np.float32)
    out = backend.allocate(1000, "float32")
    backend.launch_kernel(_factory_add, 4, 256, backend.to_device(x), out)
    backend.synchronize()
    np.testing.assert_allclose(backend.to_host(out), x + 1)


def _factory_add(cuda):
    def add_one(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = x[i] + 1
    return add_one
