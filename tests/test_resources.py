"""gpukit.occupancy.resources and gpukit.occupancy.ptxas: ptxas's numbers for real kernels without
a GPU, from the inspect extra's wheels."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from numba import cuda, float32, int32

from gpukit.errors import GpukitError
from gpukit.occupancy import occupancy, ptxas
from gpukit.occupancy import resources as gi

pytestmark = pytest.mark.skipif(gi.unavailable_reason() is not None,
                                reason=f"{gi.unavailable_reason()}")

TPB = 16


def matmul(A, B, C):
    """The tiled shared-memory matmul of Numba's documentation: two 16x16 float32 tiles."""
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tmp = float32(0.0)
    for i in range(cuda.gridDim.x):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * TPB) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * TPB]
        if x < B.shape[1] and (ty + i * TPB) < B.shape[0]:
            sB[ty, tx] = B[ty + i * TPB, x]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp


MATRICES = tuple(np.zeros((64, 64), np.float32) for _ in range(3))
ARCHS = {"T4": "sm_75", "A100": "sm_80", "H100": "sm_90"}


def _wheel_ptxas() -> Path:
    spec = importlib.util.find_spec("nvidia.cuda_nvcc")
    return Path(next(iter(spec.submodule_search_locations))) / "bin" / "ptxas"


@pytest.fixture(scope="module")
def matmul_resources():
    return {device: gi.resources(matmul, MATRICES, device) for device in ARCHS}


@pytest.mark.parametrize("device", list(ARCHS))
def test_tiled_matmul_reports_ptxas_numbers(matmul_resources, device):
    res = matmul_resources[device]
    assert res.arch == ARCHS[device] and res.source == "ptxas"
    assert res.shared_mem_bytes == 2 * TPB * TPB * 4 == 2048
    assert 16 <= res.regs_per_thread <= 64
    assert (res.local_mem_bytes, res.const_mem_bytes, res.barriers) == (0, 0, 1)
    assert res.kernel_name == "matmul"
    # Run the wheel's ptxas on the same PTX and read its report independently.
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "k.ptx")
        src.write_text(gi.ptx(matmul, MATRICES, device))
        proc = subprocess.run([str(_wheel_ptxas()), "-v", f"-arch={ARCHS[device]}", str(src),
                               "-o", str(Path(tmp, "k.cubin"))],
                              capture_output=True, text=True, check=True)
    text = proc.stdout + proc.stderr  # ptxas -v reports on stderr
    used = re.search(r"Used (\d+) registers, used (\d+) barriers, (\d+) bytes smem", text)
    assert used is not None, text
    assert (res.regs_per_thread, res.barriers, res.shared_mem_bytes) == tuple(
        int(g) for g in used.groups())
    assert res.ptxas_output.count("Used ") == 1
    assert res.summary().startswith(f"{ARCHS[device]}: {res.regs_per_thread} registers/thread, "
                                    "2048 B static shared/block, 0 B local/thread, 0 B constant, "
                                    "1 barrier")


def test_ptxas_comes_from_the_python_wheel():
    path = Path(gi.ptxas_path())
    assert path == _wheel_ptxas()
    assert "site-packages" in path.parts and "cuda_nvcc" in path.parts
    assert not str(path.resolve()).startswith("/usr/local/cuda")
    version = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                             check=True).stdout
    assert "release 12." in version


def test_ptx_targets_the_architecture():
    text = gi.ptx(matmul, MATRICES, "A100")
    assert ".target sm_80" in text and ".shared" in text
    assert gi.ptx(matmul, MATRICES, "A100") is text  # cached


def test_results_are_cached_per_function_signature_and_arch(matmul_resources, monkeypatch):
    calls = {"numba": 0, "ptxas": 0}
    compile_ptx, run_ptxas = gi._compile_ptx, ptxas.run_ptxas

    def counting_compile(*args, **kwargs):
        calls["numba"] += 1
        return compile_ptx(*args, **kwargs)

    def counting_ptxas(*args, **kwargs):
        calls["ptxas"] += 1
        return run_ptxas(*args, **kwargs)

    monkeypatch.setattr(gi, "_compile_ptx", counting_compile)
    monkeypatch.setattr(ptxas, "run_ptxas", counting_ptxas)
    # The same kernel through other spellings: a string signature, Numba types, a dispatcher,
    # a gpukit-style kernel object with .py_func, a compute capability instead of a name.

    class GpukitKernel:
        def __init__(self, py_func):
            self.py_func = py_func

    same = [gi.resources(matmul, MATRICES, "A100"),
            gi.resources(matmul, "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])", "8.0"),
            gi.resources(matmul, gi.signature_from_args(MATRICES), (8, 0)),
            gi.resources(cuda.jit(matmul), MATRICES, "A100 80GB"),
            gi.resources(GpukitKernel(matmul), MATRICES, "sm_80")]
    assert all(r is matmul_resources["A100"] for r in same)
    assert calls == {"numba": 0, "ptxas": 0}
    # Another signature compiles once, then is cached too.
    ints = tuple(np.zeros((8, 8), np.int32) for _ in range(3))
    first = gi.resources(matmul, ints, "A100")
    assert gi.resources(matmul, ints, "A100") is first
    assert calls == {"numba": 1, "ptxas": 1}


def test_local_and_constant_memory_and_max_registers():
    weights = np.arange(64, dtype=np.float32)

    def scratch(a, n):
        c = cuda.const.array_like(weights)
        local = cuda.local.array(200, float32)
        i = cuda.grid(1)
        for j in range(200):
            local[j] = a[(i + j) % n] * c[j % 64]
        s = float32(0.0)
        for j in range(n):
            s += local[(j * 7) % 200]
        a[i] = s

    res = gi.resources(scratch, (np.zeros(10, np.float32), 10), "A100")
    assert res.local_mem_bytes >= 200 * 4
    assert res.const_mem_bytes == 64 * 4
    assert res.shared_mem_bytes == 0 and res.barriers == 0
    # @cuda.jit(max_registers=...) reaches ptxas as -maxrregcount.
    uncapped = gi.resources(matmul, MATRICES, "A100").regs_per_thread
    capped = gi.resources(cuda.jit(max_registers=uncapped - 4)(matmul), MATRICES, "A100")
    assert capped.regs_per_thread <= uncapped - 4


def test_kernel_occupancy_uses_the_real_resources(matmul_resources):
    res = matmul_resources["A100"]
    result = gi.kernel_occupancy(matmul, (16, 16), "A100", MATRICES)
    assert result == occupancy("A100", 256, res.regs_per_thread, 2048)
    with_dynamic = gi.kernel_occupancy(matmul, 256, "A100", MATRICES, dynamic_shared_bytes=4096)
    assert with_dynamic.shared_mem_bytes == 2048 + 4096

    class CompiledOnce:  # a dispatcher with one compiled signature (eager compiling needs a GPU)
        def __init__(self):
            self.py_func = matmul
            self.overloads = {gi.signature_from_args(MATRICES): object()}

    assert gi.kernel_occupancy(CompiledOnce(), (16, 16), "A100") == result
    with pytest.raises(gi.InspectSignatureError, match="pass signature="):
        gi.kernel_occupancy(matmul, 256, "A100")


def test_theoretical_occupancy_with_ptxas(matmul_resources):
    occ, res, source = gi.theoretical_occupancy(matmul, MATRICES, (16, 16), 0, "T4")
    assert source == "ptxas" and res is matmul_resources["T4"]
    assert occ == occupancy("T4", 256, res.regs_per_thread, 2048)


def test_theoretical_occupancy_never_raises_for_uncompilable_kernels(monkeypatch):
    def not_numba(a):
        a[0] = {}

    calls = []
    compile_ptx = gi._compile_ptx
    monkeypatch.setattr(gi, "_compile_ptx", lambda *a, **k: calls.append(1) or compile_ptx(*a, **k))
    occ, res, source = gi.theoretical_occupancy(not_numba, (np.zeros(4, np.float32),), 128, 512,
                                                "T4", static_shared_bytes=1024)
    assert res is None
    assert source.startswith("defaults: numba could not compile not_numba(array(float32, 1d, C)) "
                             "for sm_75: TypingError")
    assert source.endswith("(assumed 32 registers per thread and 1024 B of static shared memory)")
    assert occ == occupancy("T4", 128, 32, 1024 + 512)
    with pytest.raises(gi.InspectCompileError, match="numba could not compile not_numba"):
        gi.resources(not_numba, (np.zeros(4, np.float32),), "T4")
    assert len(calls) == 1  # the failure is cached too


def test_missing_extra_says_how_to_install(monkeypatch):
    def fresh(a):  # nothing cached for it: results already computed stay usable
        a[0] = 1

    monkeypatch.setattr(ptxas, "find_ptxas", lambda: None)
    message = (r"^the inspect extra is not installed: missing ptxas and NVVM "
               r"\(nvidia-cuda-nvcc-cu12\); install it with: pip install \"gpukit\[inspect\]\"$")
    with pytest.raises(gi.InspectUnavailableError, match=message) as info:
        gi.resources(fresh, MATRICES[:1], "A100")
    assert isinstance(info.value, GpukitError)
    with pytest.raises(gi.InspectUnavailableError, match=message):
        gi.ptx(fresh, MATRICES[:1], "A100")
    monkeypatch.setattr(ptxas, "find_nvrtc", lambda: None)
    assert "and NVRTC (nvidia-cuda-nvrtc-cu12)" in gi.unavailable_reason()
    occ, res, source = gi.theoretical_occupancy(fresh, MATRICES[:1], 256, 0, "A100",
                                                static_shared_bytes=2048)
    assert res is None and occ == occupancy("A100", 256, 32, 2048)
    assert source.startswith("defaults: the inspect extra is not installed")
    assert 'pip install "gpukit[inspect]"' in source


def test_numba_simulator_is_reported(monkeypatch):
    def fresh(a):
        a[0] = 1

    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    with pytest.raises(gi.InspectUnavailableError, match="NUMBA_ENABLE_CUDASIM=1"):
        gi.resources(fresh, MATRICES[:1], "A100")


class FakeDeviceArray:
    """What gpukit's simulated device arrays expose."""

    def __init__(self, shape, dtype, layout):
        self.shape, self.dtype, self.ndim, self.layout = shape, np.dtype(dtype), len(shape), layout


def test_signature_from_args():
    from numba import types

    sig = gi.signature_from_args((
        np.zeros((3, 4), np.float32), np.zeros((3, 4), order="F"), np.zeros(8)[::2],
        FakeDeviceArray((5, 6), "int32", "F"), 3, 2.5, True, np.float32(1), int32))
    assert sig == (types.Array(types.float32, 2, "C"), types.Array(types.float64, 2, "F"),
                   types.Array(types.float64, 1, "A"), types.Array(types.int32, 2, "F"),
                   types.int64, types.float64, types.boolean, types.float32, types.int32)
    assert gi.signature_from_args(np.zeros(3, np.float32)) == (types.float32[::1],)
    with pytest.raises(gi.InspectSignatureError,
                       match=r"^cannot work out a Numba type for argument 1 \(object\); pass an "
                             r"explicit signature"):
        gi.signature_from_args((1, object()))
    with pytest.raises(gi.InspectSignatureError, match="expected a kernel function"):
        gi.resources(42, (1,), "A100")
    with pytest.raises(gi.InspectSignatureError, match="cannot read signature 'void\\(float33"):
        gi.resources(matmul, "void(float33[:])", "A100")


def test_parse_ptxas_output_of_other_versions():
    text = """ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_70'
ptxas info    : Function properties for _Z1kPf
    96 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads
ptxas info    : Used 255 registers, 4096 bytes smem, 360 bytes cmem[0], 128 bytes lmem
"""
    res = gi.parse_ptxas_output(text, ".const .align 4 .f32 scale;\n.const .align 8 .b64 t[3][2];")
    assert (res.regs_per_thread, res.shared_mem_bytes, res.local_mem_bytes) == (255, 4096, 128)
    assert (res.spill_store_bytes, res.spill_load_bytes, res.barriers) == (40, 40, 0)
    assert (res.const_mem_bytes, res.arch) == (4 + 48, "sm_70")
    with pytest.raises(gi.InspectCompileError, match="no entry function"):
        gi.parse_ptxas_output("ptxas info    : 0 bytes gmem")


@pytest.mark.gpu
def test_real_gpu_matches_numba_attributes():
    if not cuda.is_available():
        pytest.skip("needs a real NVIDIA GPU")
    device = cuda.get_current_device()
    cc = "{}.{}".format(*device.compute_capability)
    dispatcher = cuda.jit(matmul)
    res = gi.resources(dispatcher, MATRICES, cc)
    kernel = dispatcher.compile(gi.signature_from_args(MATRICES))  # what a launch would load
    assert res.regs_per_thread == kernel.regs_per_thread
    assert res.shared_mem_bytes == kernel.shared_mem_per_block == 2048


def test_kernels_calling_device_functions_compile_without_a_gpu():
    """numba-cuda asks the current GPU for its compute capability when it compiles a device
    function; gpukit.inspect answers with the architecture inspected instead."""
    from numba import cuda

    @cuda.jit(device=True)
    def twice(v):
        return 2 * v

    def scale(x):
        i = cuda.grid(1)
        if i < x.shape[0]:
            x[i] = twice(x[i])

    for device, arch in (("T4", "sm_75"), ("H100", "sm_90")):
        res = gi.resources(scale, (np.zeros(4, np.float32),), device)
        assert res.arch == arch and res.source == "ptxas" and res.regs_per_thread > 0
