"""gpukit.ops: every op against numpy on the simulator (hypothesis, sizes that are not multiples of
the block or tile), every input error's exact message, implicit copies, flop counts, numba-cuda
compiling every kernel, and the CUDA backend under Numba's simulator (in a subprocess)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest
from cudasim_runner import run_checks
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gpukit
from gpukit import ops
from gpukit.backends.cpu import CPUBackend
from gpukit.errors import ImplicitTransferWarning, InvalidDeviceArrayError
from gpukit.ops import BinaryOp, OpInputError, ReduceOp, UnaryOp, references


def _declared(record):
    """A launch's `extra` less `host_blocks` (checked here: one host thread ran every block)."""
    assert record.extra["host_blocks"] == (record.grid[0] * record.grid[1] * record.grid[2],)
    return {key: value for key, value in record.extra.items() if key != "host_blocks"}

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "tests" / "cudasim" / "ops_checks.py"
DTYPES = (np.float32, np.float64)
PROPERTY = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def be() -> CPUBackend:
    return CPUBackend()


def data(shape, dtype, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


def assert_close(result, expected, dtype, terms=1):
    """float32: ~1e-6 per accumulated term; float64: ~1e-15. `terms` = values summed per output."""
    eps = 2e-6 if dtype == np.float32 else 1e-14
    tol = eps * max(1.0, float(np.sqrt(terms)) * 4)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_allclose(result, expected, rtol=tol, atol=tol)


# -- numpy comparisons -----------------------------------------------------------------------------
@PROPERTY
@given(m=st.integers(1, 48), n=st.integers(1, 48), k=st.integers(1, 48),
       trans_a=st.booleans(), trans_b=st.booleans(), dtype=st.sampled_from(DTYPES),
       variant=st.sampled_from(["naive", "tiled"]), with_c=st.booleans(),
       alpha=st.sampled_from([1.0, 0.5, -2.0]), beta=st.sampled_from([0.0, 1.0, -0.5]))
def test_gemm_matches_numpy(be, m, n, k, trans_a, trans_b, dtype, variant, with_c, alpha, beta):
    a = data((k, m) if trans_a else (m, k), dtype, 1)
    b = data((n, k) if trans_b else (k, n), dtype, 2)
    c = data((m, n), dtype, 3) if with_c else None
    beta = beta if with_c else 0.0
    c_dev = be.to_device(c) if with_c else None
    result = ops.gemm(be.to_device(a), be.to_device(b), c_dev, alpha=alpha, beta=beta,
                      trans_a=trans_a, trans_b=trans_b, variant=variant, backend=be)
    if with_c:
        assert result is c_dev  # BLAS: C is updated in place
    expected = references.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)
    assert_close(be.to_host(result), expected, dtype, terms=k)
    assert be.launches[-1].kernel == f"gemm_{variant}"
    assert _declared(be.launches[-1]) == {"op": "gemm", "flops": 2 * m * n * k, "host_threads": 1}


@PROPERTY
@given(batch=st.integers(1, 3), m=st.integers(1, 20), n=st.integers(1, 20), k=st.integers(1, 20),
       trans_a=st.booleans(), trans_b=st.booleans(), dtype=st.sampled_from(DTYPES),
       variant=st.sampled_from(["naive", "tiled"]))
def test_batched_gemm_matches_numpy(be, batch, m, n, k, trans_a, trans_b, dtype, variant):
    a = data((batch, k, m) if trans_a else (batch, m, k), dtype, 1)
    b = data((batch, n, k) if trans_b else (batch, k, n), dtype, 2)
    c = data((batch, m, n), dtype, 3)
    result = ops.batched_gemm(be.to_device(a), be.to_device(b), be.to_device(c), alpha=1.5,
                              beta=0.5, trans_a=trans_a, trans_b=trans_b, variant=variant,
                              backend=be)
    expected = references.batched_gemm(a, b, c, alpha=1.5, beta=0.5, trans_a=trans_a,
                                       trans_b=trans_b)
    assert_close(be.to_host(result), expected, dtype, terms=k)
    assert be.launches[-1].grid[2] == batch  # one launch, grid z = batch
    assert be.launches[-1].extra["flops"] == 2 * batch * m * n * k


def test_gemm_with_beta_zero_never_reads_c(be):
    """BLAS: with beta == 0, C is output only. The simulator would raise UninitializedMemoryError
    if the kernel read this never-written allocation."""
    a, b = data((20, 17), np.float32, 1), data((17, 33), np.float32, 2)
    for variant in ("naive", "tiled"):
        c = be.allocate((20, 33), np.float32)
        assert ops.gemm(be.to_device(a), be.to_device(b), c, variant=variant, backend=be) is c
        assert_close(be.to_host(c), references.gemm(a, b), np.float32, terms=17)


@PROPERTY
@given(n=st.integers(1, 2), channels=st.integers(1, 3), h=st.integers(1, 12),
       w=st.integers(1, 12), filters=st.integers(1, 3), r=st.integers(1, 4), s=st.integers(1, 4),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       padding=st.tuples(st.integers(0, 2), st.integers(0, 2)), dtype=st.sampled_from(DTYPES))
def test_conv2d_matches_numpy(be, n, channels, h, w, filters, r, s, stride, padding, dtype):
    assume(h + 2 * padding[0] >= r and w + 2 * padding[1] >= s)
    x, f = data((n, channels, h, w), dtype, 1), data((filters, channels, r, s), dtype, 2)
    result = ops.conv2d_forward(be.to_device(x), be.to_device(f), stride, padding, backend=be)
    expected = references.conv2d_forward(x, f, stride, padding)
    assert_close(be.to_host(result), expected, dtype, terms=channels * r * s)
    _, _, p, q = expected.shape
    assert _declared(be.launches[-1]) == {"op": "conv2d_forward",
                                     "flops": 2 * n * filters * p * q * channels * r * s,
                                     "host_threads": 1}


def test_conv2d_teaching_size_and_int_arguments(be):
    x, f = data((1, 3, 32, 32), np.float32, 1), data((8, 3, 3, 3), np.float32, 2)
    result = ops.conv2d_forward(be.to_device(x), be.to_device(f), stride=2, padding=1,
                                backend=be)
    assert result.shape == (1, 8, 16, 16)
    assert_close(be.to_host(result), references.conv2d_forward(x, f, 2, 1), np.float32, 27)


@PROPERTY
@given(batch=st.integers(1, 2), heads=st.integers(1, 2), seq_q=st.integers(1, 40),
       seq_kv=st.integers(1, 40), d=st.integers(1, 16), dv=st.integers(1, 16),
       causal=st.booleans(), dtype=st.sampled_from(DTYPES),
       scale=st.sampled_from([None, 0.3, 2.0]))
def test_attention_matches_numpy(be, batch, heads, seq_q, seq_kv, d, dv, causal, dtype, scale):
    q, k = data((batch, heads, seq_q, d), dtype, 1), data((batch, heads, seq_kv, d), dtype, 2)
    v = data((batch, heads, seq_kv, dv), dtype, 3)
    result = ops.attention(be.to_device(q), be.to_device(k), be.to_device(v), scale=scale,
                           causal=causal, backend=be)
    expected = references.attention(q, k, v, scale=scale, causal=causal)
    assert_close(be.to_host(result), expected, dtype, terms=seq_kv * d)


def test_attention_is_numerically_stable(be):
    """Scores of several hundred would overflow exp() in a naive softmax (float32 overflows at
    ~88); the online softmax only ever exponentiates differences <= 0."""
    q = data((1, 1, 5, 4), np.float32, 1) * 300
    k, v = data((1, 1, 9, 4), np.float32, 2) * 300, data((1, 1, 9, 4), np.float32, 3)
    result = be.to_host(ops.attention(be.to_device(q), be.to_device(k), be.to_device(v),
                                      backend=be))
    assert np.isfinite(result).all()
    np.testing.assert_allclose(result, references.attention(q, k, v), rtol=1e-4, atol=1e-4)


def test_attention_causal_mask_is_top_left_aligned(be):
    """Query i sees keys 0..i, also when seq_q != seq_kv (PyTorch's is_causal=True)."""
    q, k = data((1, 1, 3, 2), np.float64, 1), data((1, 1, 5, 2), np.float64, 2)
    v = np.eye(5, dtype=np.float64).reshape(1, 1, 5, 5)  # output row = the attention weights
    weights = be.to_host(ops.attention(be.to_device(q), be.to_device(k), be.to_device(v),
                                       causal=True, backend=be))[0, 0]
    assert np.all(weights[np.triu_indices(3, 1, 5)] == 0) and np.all(weights[:, :1] > 0)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    pairs = 1 + 2 + 3
    assert _declared(be.launches[-1]) == {"op": "attention", "flops": 2 * pairs * (2 + 5),
                                     "host_threads": 1}


shapes = st.lists(st.integers(1, 12), min_size=1, max_size=3).map(tuple)


@PROPERTY
@given(shape=shapes, data_=st.data(), op=st.sampled_from(list(ReduceOp)),
       dtype=st.sampled_from(DTYPES))
def test_reduce_matches_numpy(be, shape, data_, op, dtype):
    axis = data_.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    x = data(shape, dtype, 1, 0.5, 1.5)
    result = be.to_host(ops.reduce(op, be.to_device(x), axis, backend=be))
    n = x.size if axis is None else shape[axis]
    assert_close(result, references.reduce(op, x, axis), dtype, terms=n)


@pytest.mark.parametrize("op", list(ReduceOp))
@pytest.mark.parametrize("n", [1, 31, 33, 1000, 65536])
def test_reduce_long_rows(be, op, n):
    """Rows longer than 8 x 256 are split over several blocks and need a second launch."""
    x = data(n, np.float64, n, 0.999, 1.001)
    result = be.to_host(ops.reduce(op, be.to_device(x), 0, backend=be))
    assert_close(result, references.reduce(op, x, 0), np.float64, terms=n)
    launches = be.launches[-2:] if n == 65536 else be.launches[-1:]
    assert [r.extra["op"] for r in launches] == ["reduce"] * len(launches)
    if n == 65536:  # 32 blocks of 256 threads, each folding 8 values, then 32 partials
        assert [r.grid for r in launches] == [(1, 32, 1), (1, 1, 1)]
        assert [r.extra["flops"] for r in launches] == [65536, 32 + (op == ReduceOp.MEAN)]


def test_reduce_propagates_nan_like_numpy(be):
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    for op in ("max", "min", "sum"):
        result = be.to_host(ops.reduce(op, be.to_device(x), 1, backend=be))
        np.testing.assert_array_equal(result, references.reduce(op, x, 1))


def test_reduce_without_warp_shuffles(be, monkeypatch):
    """A backend without shuffles (Numba's CUDA simulator) gets the all-shared-memory tree."""
    monkeypatch.setattr(be, "supports_feature", lambda name: name != "warp_shuffle")
    x = data((3, 100), np.float32, 1)
    result = be.to_host(ops.reduce("sum", be.to_device(x), 1, backend=be))
    assert_close(result, references.reduce("sum", x, 1), np.float32, terms=100)
    assert be.launches[-1].kernel == "reduce_rows"


@PROPERTY
@given(shape=shapes, op=st.sampled_from(list(UnaryOp)), dtype=st.sampled_from(DTYPES))
def test_unary_matches_numpy(be, shape, op, dtype):
    low = 0.1 if op in (UnaryOp.LOG, UnaryOp.SQRT) else -5.0
    x = data(shape, dtype, 1, low, 5.0)
    result = be.to_host(ops.unary(op, be.to_device(x), backend=be))
    assert_close(result, references.unary(op, x), dtype)
    assert _declared(be.launches[-1]) == {"op": "unary", "flops": x.size, "host_threads": 1}


@PROPERTY
@given(shape=shapes, op=st.sampled_from(list(BinaryOp)), dtype=st.sampled_from(DTYPES))
def test_binary_matches_numpy(be, shape, op, dtype):
    a, b = data(shape, dtype, 1), data(shape, dtype, 2, 0.5, 2.0)
    result = be.to_host(ops.binary(op, be.to_device(a), be.to_device(b), backend=be))
    assert_close(result, references.binary(op, a, b), dtype)


def test_elementwise_special_values(be):
    x = np.array([-np.inf, -1000.0, -1.0, -0.0, 0.0, 2.0, 1000.0, np.inf, np.nan], np.float64)
    for op in UnaryOp:
        result = be.to_host(ops.unary(op, be.to_device(x), backend=be))
        np.testing.assert_array_equal(result, references.unary(op, x), err_msg=op.name)
    y = x[::-1].copy()
    for op in BinaryOp:
        result = be.to_host(ops.binary(op, be.to_device(x), be.to_device(y), backend=be))
        np.testing.assert_array_equal(result, references.binary(op, x, y), err_msg=op.name)


def test_ops_pass_the_shuffled_schedule_with_every_check():
    """Block order and racing writes are shuffled: an order-dependent kernel would show here."""
    shuffled = CPUBackend(schedule="shuffle", seed=3)
    a, b = data((33, 20), np.float32, 1), data((20, 18), np.float32, 2)
    for variant in ("naive", "tiled"):
        result = ops.gemm(shuffled.to_device(a), shuffled.to_device(b), variant=variant,
                          backend=shuffled)
        assert_close(shuffled.to_host(result), references.gemm(a, b), np.float32, 20)
    x = data(5000, np.float32, 3)
    assert_close(shuffled.to_host(ops.reduce("sum", shuffled.to_device(x), backend=shuffled)),
                 references.reduce("sum", x), np.float32, 5000)


# -- backends, copies and names --------------------------------------------------------------------
def test_host_arrays_are_copied_once_with_a_warning(be):
    a, b = data((4, 3), np.float32, 1), data((3, 2), np.float32, 2)
    before = len(be.transfers)
    with pytest.warns(ImplicitTransferWarning) as caught:
        result = ops.gemm(a, be.to_device(b), backend=be)
    assert len(caught) == 1 and caught[0].filename == __file__  # points at the caller's line
    assert str(caught[0].message) == (
        "gemm: host arrays passed directly (a) are copied to the device (implicit transfers); "
        "the result stays on the device. Copy inputs once with backend.to_device to avoid "
        "repeated copies")
    new = be.transfers[before:]
    assert [(t.direction, t.nbytes, t.implicit) for t in new] == [("h2d", 24, False),
                                                                  ("h2d", 48, True)]
    assert_close(be.to_host(result), references.gemm(a, b), np.float32, 3)


def test_default_backend_is_the_current_one():
    backend = gpukit.get_backend("cpu")
    x = backend.to_device(np.arange(1.0, 5.0))
    result = ops.reduce(ReduceOp.PROD, x)
    assert backend.to_host(result) == 24.0 and result.shape == ()


def test_ops_and_names_accept_strings():
    assert ops.reduce.__name__ == "reduce" and ReduceOp.MEAN == 3
    be = CPUBackend()
    x = be.to_device(np.array([[1.0, -2.0]], np.float32))
    np.testing.assert_array_equal(be.to_host(ops.unary("Abs", x, backend=be)), [[1.0, 2.0]])
    np.testing.assert_array_equal(be.to_host(ops.binary("sub", x, x, backend=be)), [[0, 0]])


def test_library_variant_uses_cupy_on_the_cuda_backend(monkeypatch):
    """The cuBLAS path, with numpy standing in for CuPy (no GPU here)."""
    module = sys.modules["gpukit.ops.gemm"]  # gpukit.ops.gemm is the function
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(matmul=np.matmul,
                                                                asarray=np.asarray))
    a, b, c = data((2, 3, 4), np.float64, 1), data((2, 5, 3), np.float64, 2), \
        data((2, 4, 5), np.float64, 3)
    module._library_gemm(a, b, c_out := c.copy(), 2.0, 0.5, True, True)
    np.testing.assert_allclose(c_out, references.batched_gemm(a, b, c, alpha=2.0, beta=0.5,
                                                              trans_a=True, trans_b=True))
    def fake(features: set[str]) -> types.SimpleNamespace:
        return types.SimpleNamespace(name="cuda", supports_feature=features.__contains__)

    with pytest.raises(OpInputError, match="variant 'library' needs CuPy on a real GPU"):
        module._check_library("gemm", fake({"atomics", "cupy"}))  # CuPy without cuBLAS
    module._check_library("gemm", fake({"cupy", "cublas"}))


# -- input errors ---------------------------------------------------------------------------------
def _dev(be, shape, dtype=np.float32):
    return be.to_device(np.ones(shape, dtype))


class _ForeignGPUArray:
    """Stands in for a CuPy or Numba array: GPU memory the simulator cannot read."""

    shape, dtype, __cuda_array_interface__ = (2,), np.dtype(np.float32), {}


def _gemm_into_own_input(be):
    a = _dev(be, (2, 2))
    ops.gemm(a, _dev(be, (2, 2)), a, backend=be)


def _unary_after_free(be):
    x = _dev(be, 3)
    be.free(x)
    ops.unary("exp", x, backend=be)


@pytest.mark.parametrize("call, error, message", [
    (lambda be: ops.gemm(_dev(be, 3), _dev(be, (3, 2)), backend=be), OpInputError,
     "gemm: a must be 2-D (rows, cols), got shape (3,)"),
    (lambda be: ops.gemm(_dev(be, (2, 3)), _dev(be, (4, 2)), backend=be), OpInputError,
     ("gemm: inner dimensions differ: op(a) is 2x3 (a (2, 3)) but op(b) is 4x2 (b (4, 2)); op(a) "
      "needs as many columns as op(b) rows")),
    (lambda be: ops.gemm(_dev(be, (2, 3)), _dev(be, (3, 3)), trans_a=True, backend=be),
     OpInputError, ("gemm: inner dimensions differ: op(a) is 3x2 (a (2, 3), transposed) but "
                    "op(b) is 3x3 (b (3, 3)); op(a) needs as many columns as op(b) rows")),
    (lambda be: ops.gemm(_dev(be, (2, 3)), _dev(be, (3, 2), np.float64), backend=be),
     OpInputError, ("gemm: mixed dtypes (a is float32, b is float64); convert them to one dtype "
                    "first")),
    (lambda be: ops.gemm(_dev(be, (2, 3), np.int32), _dev(be, (3, 2)), backend=be), OpInputError,
     ("gemm: a has dtype int32; ops compute in float32 or float64 (convert it first, e.g. "
      "numpy.asarray(x, dtype=numpy.float32))")),
    (lambda be: ops.gemm(_dev(be, (0, 3)), _dev(be, (3, 2)), backend=be), OpInputError,
     "gemm: a has shape (0, 3), with a zero-size dimension; every dimension must be at least 1"),
    (lambda be: ops.gemm(_dev(be, (4, 6))[:, ::2], _dev(be, (3, 2)), backend=be), OpInputError,
     ("gemm: a is not C-contiguous (shape (4, 3), strides (24, 8)): a strided view or Fortran "
      "order; ops read C-contiguous arrays, so pass a contiguous copy")),
    (lambda be: ops.gemm(CPUBackend().to_device(np.ones((2, 2), np.float32)), _dev(be, (2, 2)),
                         backend=be), OpInputError,
     ("gemm: a is a device array of another CPU simulator backend, but this call runs on the cpu "
      "backend; copy it to the host and then to this backend (backend.to_host, "
      "backend.to_device), or pass backend= the backend it belongs to")),
    (lambda be: ops.unary("exp", _ForeignGPUArray(), backend=be), OpInputError,
     ("unary: x is a GPU array (_ForeignGPUArray) in GPU memory, but this call runs on the cpu "
      "backend; copy it to the host and then to this backend (backend.to_host, "
      "backend.to_device), or pass backend= the backend it belongs to")),
    (lambda be: ops.gemm([[1.0]], _dev(be, (1, 1)), backend=be), OpInputError,
     "gemm: a must be a device array of the cpu backend or a numpy array, got list"),
    (lambda be: ops.gemm(_dev(be, (2, 2)), _dev(be, (2, 2)), variant="fast", backend=be),
     OpInputError, "gemm: unknown variant 'fast'; choose one of 'naive', 'tiled', 'library'"),
    (lambda be: ops.gemm(_dev(be, (2, 2)), _dev(be, (2, 2)), variant="library", backend=be),
     OpInputError, ("gemm: variant 'library' calls cuBLAS through CuPy and exists on the CUDA "
                    "backend only; on cpu backend use 'naive' or 'tiled'")),
    (lambda be: ops.gemm(_dev(be, (2, 2)), _dev(be, (2, 2)), beta=1.0, backend=be),
     OpInputError, "gemm: beta is 1.0 but no c was given; pass c, or beta=0"),
    (lambda be: ops.gemm(_dev(be, (2, 3)), _dev(be, (3, 4)), _dev(be, (4, 2)), backend=be),
     OpInputError, "gemm: c has shape (4, 2); op(a) @ op(b) has shape (2, 4)"),
    (_gemm_into_own_input,
     OpInputError, ("gemm: c shares memory with a; the kernel would overwrite a while other "
                    "threads still read it, giving wrong numbers: pass a separate c")),
    (lambda be: ops.batched_gemm(_dev(be, (2, 2, 3)), _dev(be, (3, 3, 2)), backend=be),
     OpInputError, "batched_gemm: batch sizes differ: a has 2, b has 3"),
    (lambda be: ops.batched_gemm(_dev(be, (2, 3)), _dev(be, (3, 2)), backend=be), OpInputError,
     "batched_gemm: a must be 3-D (batch, rows, cols), got shape (2, 3)"),
    (lambda be: ops.conv2d_forward(_dev(be, (1, 3, 5, 5)), _dev(be, (2, 2, 3, 3)), backend=be),
     OpInputError, ("conv2d_forward: x has 3 channels (shape (1, 3, 5, 5)) but w has 2 (shape "
                    "(2, 2, 3, 3)); axis 1 of both must match")),
    (lambda be: ops.conv2d_forward(_dev(be, (1, 1, 2, 5)), _dev(be, (1, 1, 3, 3)), backend=be),
     OpInputError, ("conv2d_forward: the 3x3 filter does not fit the 2x5 input with padding "
                    "(0, 0): the output would be 0x3; use a smaller filter or more padding")),
    (lambda be: ops.conv2d_forward(_dev(be, (1, 1, 5, 5)), _dev(be, (1, 1, 3, 3)), stride=0,
                                   backend=be), OpInputError,
     "conv2d_forward: stride must be an int >= 1 or a pair of them (rows, cols), got 0"),
    (lambda be: ops.conv2d_forward(_dev(be, (1, 1, 5, 5)), _dev(be, (1, 1, 3, 3)),
                                   padding=(1, -1), backend=be), OpInputError,
     "conv2d_forward: padding must be an int >= 0 or a pair of them (rows, cols), got (1, -1)"),
    (lambda be: ops.conv2d_forward(_dev(be, (3, 5, 5)), _dev(be, (1, 1, 3, 3)), backend=be),
     OpInputError, ("conv2d_forward: x must be 4-D (batch, channels, height, width), got shape "
                    "(3, 5, 5)")),
    (lambda be: ops.attention(_dev(be, (1, 2, 3, 4)), _dev(be, (1, 1, 3, 4)),
                              _dev(be, (1, 1, 3, 4)), backend=be), OpInputError,
     ("attention: batch and heads differ: q (1, 2, 3, 4), k (1, 1, 3, 4), v (1, 1, 3, 4); axes "
      "0 and 1 must match")),
    (lambda be: ops.attention(_dev(be, (1, 1, 3, 4)), _dev(be, (1, 1, 3, 5)),
                              _dev(be, (1, 1, 3, 4)), backend=be), OpInputError,
     "attention: q has head_dim 4 but k has 5; the scores q @ k^T need equal head dims"),
    (lambda be: ops.attention(_dev(be, (1, 1, 3, 4)), _dev(be, (1, 1, 3, 4)),
                              _dev(be, (1, 1, 6, 4)), backend=be), OpInputError,
     "attention: k has 3 keys but v has 6 values; axis 2 of k and v must match"),
    (lambda be: ops.attention(_dev(be, (1, 1, 2, 129)), _dev(be, (1, 1, 2, 129)),
                              _dev(be, (1, 1, 2, 4)), backend=be), OpInputError,
     ("attention: q has head_dim 129; this kernel keeps a row in registers and supports "
      "head_dim <= 128")),
    (lambda be: ops.attention(_dev(be, (1, 1, 0, 4)), _dev(be, (1, 1, 3, 4)),
                              _dev(be, (1, 1, 3, 4)), backend=be), OpInputError,
     ("attention: q has shape (1, 1, 0, 4), with a zero-size dimension; every dimension must be "
      "at least 1")),
    (lambda be: ops.reduce("median", _dev(be, 3), backend=be), OpInputError,
     ("reduce: unknown operation 'median'; choose a ReduceOp (SUM, MAX, MIN, MEAN, PROD) or its "
      "name as a string")),
    (lambda be: ops.reduce("sum", _dev(be, (2, 3)), 2, backend=be), OpInputError,
     "reduce: axis 2 is out of range for x of shape (2, 3) (valid: -2 to 1, or None for all)"),
    (lambda be: ops.reduce("sum", _dev(be, (2, 3)), (0, 1), backend=be), OpInputError,
     "reduce: axis must be an int or None, got (0, 1)"),
    (lambda be: ops.reduce("sum", _dev(be, ()), backend=be), OpInputError,
     "reduce: x is 0-d (a single value); reduce needs at least 1 axis"),
    (lambda be: ops.unary(3, _dev(be, 3), backend=be), OpInputError,
     ("unary: unknown operation 3; choose a UnaryOp (RELU, SIGMOID, TANH, EXP, LOG, SQRT, ABS, "
      "NEG) or its name as a string")),
    (lambda be: ops.binary("add", _dev(be, (2, 3)), _dev(be, (3,)), backend=be), OpInputError,
     ("binary: a has shape (2, 3) but b has shape (3,); binary ops need equal shapes (no "
      "broadcasting)")),
    (lambda be: ops.binary("add", _dev(be, 3), 1.0, backend=be), OpInputError,
     "binary: b must be a device array of the cpu backend or a numpy array, got float"),
    (_unary_after_free,
     InvalidDeviceArrayError, ("unary: x is a device array that was freed (use after free); "
                               "allocate a new one with backend.to_device or backend.allocate")),
])
def test_input_errors(be, call, error, message):
    before = (len(be.launches), len(be.transfers))
    with pytest.raises(error) as caught:
        call(be)
    assert str(caught.value) == message
    assert len(be.launches) == before[0]


def test_errors_come_before_any_copy(be):
    """A bad call with host operands costs no transfer."""
    before = len(be.transfers)
    with pytest.raises(OpInputError, match="inner dimensions differ"):
        ops.gemm(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32), backend=be)
    assert len(be.transfers) == before
    assert issubclass(OpInputError, ValueError) and issubclass(OpInputError,
                                                               gpukit.errors.GpukitError)


# -- numba-cuda compiles every kernel --------------------------------------------------------------
def test_every_kernel_compiles_with_numba_cuda():
    """The simulator is more permissive than numba-cuda in places: compile each kernel to PTX for
    sm_75 (no GPU needed, gpukit.inspect compiles device functions too) and check float32
    kernels do no float64 arithmetic."""
    from numba.cuda.cudadrv import nvvm
    if not nvvm.is_available():
        pytest.skip("numba-cuda cannot find NVVM (install gpukit[inspect])")
    from numba import boolean, float32, int64

    from gpukit import inspect as gpukit_inspect

    mods = {name: sys.modules[f"gpukit.ops.{name}"]
            for name in ("gemm", "reduce", "attention", "conv", "elementwise")}
    f, a1, a3, a4 = np.float32, float32[::1], float32[:, :, ::1], float32[:, :, :, ::1]
    gemm_sig = (a3, a3, a3, int64, int64, int64, float32, float32, boolean, boolean)
    kernels = [
        (mods["gemm"].naive_kernel(f), gemm_sig), (mods["gemm"].tiled_kernel(f), gemm_sig),
        (mods["reduce"].reduce_kernel(f, True), (a3, a3, int64, int64, float32)),
        (mods["attention"].attention_kernel(f), (a4, a4, a4, a4, float32, boolean)),
        (mods["conv"].conv2d_kernel(f), (a4, a4, a4, int64, int64, int64, int64)),
        (mods["elementwise"].unary_kernel(f), (a1, a1, int64, int64)),
        (mods["elementwise"].binary_elementwise, (a1, a1, a1, int64, int64)),
    ]
    for kernel, signature in kernels:
        ptx = gpukit_inspect.ptx(kernel, signature, "T4")
        assert ".f64" not in ptx, f"{kernel.__name__} computes in float64 for float32 inputs"


# -- the CUDA backend under Numba's simulator (subprocess) -----------------------------------------
@pytest.fixture(scope="module")
def cudasim_run(tmp_path_factory):
    """Runs tests/cudasim/ops_checks.py once under NUMBA_ENABLE_CUDASIM=1; {test: problems}."""
    return run_checks(CHECKS, tmp_path_factory.mktemp("cudasim_ops"))


@pytest.mark.cudasim
def test_ops_on_the_cuda_backend_under_numba_simulator(cudasim_run):
    results, output = cudasim_run
    assert len(results) >= 16, f"too few checks ran:\n{output}"
    failed = {name: problems for name, problems in results.items() if problems}
    assert not failed, "\n".join(f"{name}: {p}" for name, ps in failed.items() for p in ps) + \
        f"\n--- output ---\n{output}"


# -- a real GPU ------------------------------------------------------------------------------------
def _gpu_reason() -> str | None:
    from gpukit.backends._cuda_env import simulator_enabled
    from gpukit.backends.cuda import cuda_unavailable_reason
    reason = cuda_unavailable_reason()
    return reason or ("Numba's CUDA simulator is on" if simulator_enabled() else None)


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_reason() is not None, reason=f"needs an NVIDIA GPU; here: {_gpu_reason()}")
def test_ops_on_a_gpu():
    from gpukit.backends.cuda import CUDABackend

    gpu = CUDABackend()
    a, b = data((70, 50), np.float32, 1), data((50, 40), np.float32, 2)
    variants = ["naive", "tiled"] + (["library"] if gpu.array_library == "cupy" else [])
    for variant in variants:
        result = ops.gemm(gpu.to_device(a), gpu.to_device(b), variant=variant, backend=gpu)
        assert_close(gpu.to_host(result), references.gemm(a, b), np.float32, 50)
    x = data((3, 5000), np.float32, 3)
    assert_close(gpu.to_host(ops.reduce("sum", gpu.to_device(x), 1, backend=gpu)),
                 references.reduce("sum", x, 1), np.float32, 5000)
