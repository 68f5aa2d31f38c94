"""gpukit.ops on CUDABackend under Numba's CUDA simulator; run by tests/test_ops.py in a subprocess.

NUMBA_ENABLE_CUDASIM must be set before numba.cuda is first imported, so these checks cannot share
a process with the rest of the suite. Numba's simulator runs each thread as a Python thread, so the
sizes are tiny. The file name does not match test_*.py on purpose (see cuda_backend_checks.py).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    pytest.skip("runs only under NUMBA_ENABLE_CUDASIM=1 (tests/test_ops.py runs it so)",
                allow_module_level=True)

from gpukit import ops
from gpukit.backends.cuda import CUDABackend
from gpukit.ops import references

TOL = {np.float32: 1e-5, np.float64: 1e-12}


@pytest.fixture(scope="module")
def backend() -> CUDABackend:
    backend = CUDABackend()
    assert backend.simulator and backend.array_library == "numba"
    return backend


def _data(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _close(backend, result, expected, dtype):
    host = backend.to_host(result)
    assert host.dtype == expected.dtype and host.shape == expected.shape
    np.testing.assert_allclose(host, expected, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("variant", ["naive", "tiled"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm(backend, variant, dtype):
    a, b, c = _data((5, 18), dtype, 1), _data((3, 18), dtype, 2), _data((5, 3), dtype, 3)
    c_dev = backend.to_device(c)
    result = ops.gemm(backend.to_device(a), backend.to_device(b), c_dev, alpha=0.5, beta=-2.0,
                      trans_b=True, variant=variant, backend=backend)
    assert result is c_dev
    _close(backend, result, references.gemm(a, b, c, alpha=0.5, beta=-2.0, trans_b=True), dtype)


def test_batched_gemm(backend):
    a, b = _data((2, 4, 3), np.float32, 1), _data((2, 4, 5), np.float32, 2)
    result = ops.batched_gemm(backend.to_device(a), backend.to_device(b), trans_a=True,
                              variant="naive", backend=backend)
    _close(backend, result, references.batched_gemm(a, b, trans_a=True), np.float32)


NO_SHUFFLES = pytest.mark.skip(reason="the reductions finish with warp shuffles "
                                     "(shfl_down_sync), which Numba's CUDA simulator lacks")


@NO_SHUFFLES
@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_reduce(backend, op):
    x = _data((2, 30), np.float64)
    _close(backend, ops.reduce(op, backend.to_device(x), 1, backend=backend),
           references.reduce(op, x, 1), np.float64)


@NO_SHUFFLES
def test_reduce_everything_in_two_passes(backend):
    x = _data(2100, np.float32)  # 2100 values: a row split over 2 blocks, then a second pass
    _close(backend, ops.reduce("sum", backend.to_device(x), backend=backend),
           references.reduce("sum", x), np.float32)


@pytest.mark.parametrize("causal", [False, True])
def test_attention(backend, causal):
    q, k, v = _data((1, 2, 5, 4), np.float32, 1), _data((1, 2, 7, 4), np.float32, 2), \
        _data((1, 2, 7, 3), np.float32, 3)
    result = ops.attention(backend.to_device(q), backend.to_device(k), backend.to_device(v),
                           causal=causal, backend=backend)
    _close(backend, result, references.attention(q, k, v, causal=causal), np.float32)


def test_conv2d(backend):
    x, w = _data((1, 2, 5, 6), np.float64, 1), _data((3, 2, 3, 2), np.float64, 2)
    result = ops.conv2d_forward(backend.to_device(x), backend.to_device(w), stride=(2, 1),
                                padding=1, backend=backend)
    _close(backend, result, references.conv2d_forward(x, w, (2, 1), 1), np.float64)


def test_elementwise(backend):
    a, b = _data((3, 5), np.float32, 1), _data((3, 5), np.float32, 2)
    _close(backend, ops.unary("sigmoid", backend.to_device(a), backend=backend),
           references.unary("sigmoid", a), np.float32)
    _close(backend, ops.binary("max", backend.to_device(a), backend.to_device(b),
                               backend=backend), references.binary("max", a, b), np.float32)


def test_host_operands_are_copied_and_results_stay_on_the_device(backend):
    from gpukit.errors import ImplicitTransferWarning

    a, b = _data((2, 3), np.float32, 1), _data((3, 2), np.float32, 2)
    with pytest.warns(ImplicitTransferWarning, match=r"gemm: host arrays passed directly \(a, "
                                                     r"b\) are copied to the device"):
        result = ops.gemm(a, b, variant="naive", backend=backend)
    assert not isinstance(result, np.ndarray)
    _close(backend, result, references.gemm(a, b), np.float32)


def test_library_variant_needs_cupy(backend):
    with pytest.raises(ops.OpInputError, match="variant 'library' needs CuPy on a real GPU"):
        ops.gemm(backend.to_device(np.ones((2, 2))), backend.to_device(np.ones((2, 2))),
                 variant="library", backend=backend)


def test_simulator_arrays_are_refused(backend):
    from gpukit.backends.cpu import CPUBackend

    foreign = CPUBackend().to_device(np.ones(4, np.float32))
    with pytest.raises(ops.OpInputError, match="unary: x is a device array of gpukit's CPU "
                                               "simulator, but this call runs on the cuda "
                                               "backend"):
        ops.unary("exp", foreign, backend=backend)
