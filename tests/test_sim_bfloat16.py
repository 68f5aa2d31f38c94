"""bfloat16 in simulated kernels (gpukit.sim.bfloat16): numba-cuda's `cuda.bf16` computed as a GPU
rounds it, checked against an exact reference (every bfloat16 value, from ml_dtypes, and exact
rational arithmetic), and typed as numba-cuda types it."""

from __future__ import annotations

import bisect
import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda
from numba.cuda import bf16, float32
from numba.cuda._internal import cuda_bf16

from gpukit.backends.cpu import CPUBackend
from gpukit.errors import UnsupportedKernelError

ml_dtypes = pytest.importorskip("ml_dtypes", reason="the reference bfloat16 values (test extra)")

MODES = ("rn", "rz", "rd", "ru")
INF_BITS, NAN = 0x7F80, float("nan")


@functools.cache
def _table() -> tuple[list[Fraction], list[int]]:
    """Every bfloat16 value but NaN and -0, ascending, as exact fractions with its bits; the
    infinities stand at +-2**128, where rounding past the largest finite value lands."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    with np.errstate(invalid="ignore"):
        values = bits.view(ml_dtypes.bfloat16).astype(np.float64)
    pairs = sorted((Fraction(v) if np.isfinite(v) else Fraction(int(np.sign(v))) * 2 ** 128,
                    int(b)) for v, b in zip(values, bits) if not np.isnan(v) and b != 0x8000)
    return [p[0] for p in pairs], [p[1] for p in pairs]


def reference(x: Fraction, mode: str = "rn") -> int:
    """The bits of `x` rounded to bfloat16 in `mode` (a zero result is +0)."""
    values, bits = _table()
    if abs(x) >= 2 ** 128:  # past the infinities' places: infinity, or the largest finite
        sign = 0x8000 if x < 0 else 0
        toward_zero = mode == "rz" or (mode == "rd" and x > 0) or (mode == "ru" and x < 0)
        return (0x7F7F if toward_zero else INF_BITS) | sign
    k = bisect.bisect_left(values, x)
    if k < len(values) and values[k] == x:
        return bits[k]
    lo, hi = k - 1, k  # values[lo] < x < values[hi]
    if mode == "rz":
        return bits[lo] if x > 0 else bits[hi]
    if mode == "rd":
        return bits[lo]
    if mode == "ru":
        return bits[hi]
    below, above = x - values[lo], values[hi] - x
    if below != above:
        return bits[lo] if below < above else bits[hi]
    return bits[lo] if bits[lo] % 2 == 0 else bits[hi]


def as_float(b: int) -> float:
    return float(np.array([b], np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)[0])


def same(got: int, want: int) -> bool:
    """Equal bfloat16 bits, where a zero may have either sign and any NaN is a NaN."""
    g, w = as_float(got), as_float(want)
    return (math.isnan(g) and math.isnan(w)) or g == w


@functools.cache
def _compiled(kernel):
    backend = CPUBackend(device="A100")  # (bfloat16 needs compute capability 8.0)
    return backend, backend.compile_kernel(kernel)


def run(kernel, *arrays, outputs):
    """`kernel` launched on one block of 64 threads with device copies of `arrays` and fresh
    arrays of the (shape, dtype) in `outputs`: the outputs, on the host."""
    backend, compiled = _compiled(kernel)
    outs = [backend.allocate(shape, dtype) for shape, dtype in outputs]
    backend.launch_kernel(compiled, 1, 64, *[backend.to_device(a) for a in arrays], *outs)
    return [backend.to_host(o) for o in outs]


# -- conversions -----------------------------------------------------------------------------
def from_numbers(x32, x64, xi, xu, r32, r64, ri, ru):
    for i in range(cuda.threadIdx.x, x32.size, cuda.blockDim.x):
        r32[i, 0] = bf16.bfloat16_as_uint16(bf16.float32_to_bfloat16_rn(x32[i]))
        r32[i, 1] = bf16.bfloat16_as_uint16(bf16.float32_to_bfloat16_rz(x32[i]))
        r32[i, 2] = bf16.bfloat16_as_uint16(bf16.float32_to_bfloat16_rd(x32[i]))
        r32[i, 3] = bf16.bfloat16_as_uint16(bf16.float32_to_bfloat16_ru(x32[i]))
        r64[i] = bf16.bfloat16_as_uint16(bf16.float64_to_bfloat16(x64[i]))
        ri[i, 0] = bf16.bfloat16_as_uint16(bf16.int64_to_bfloat16_rn(xi[i]))
        ri[i, 1] = bf16.bfloat16_as_uint16(bf16.int64_to_bfloat16_rz(xi[i]))
        ri[i, 2] = bf16.bfloat16_as_uint16(bf16.int64_to_bfloat16_rd(xi[i]))
        ri[i, 3] = bf16.bfloat16_as_uint16(bf16.int64_to_bfloat16_ru(xi[i]))
        ru[i] = bf16.bfloat16_as_uint16(bf16.uint64_to_bfloat16_rn(xu[i]))


TIES = [1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -(1.0 + 2.0 ** -8), 3.0e38, -3.39e38, 1e-40,
        2.0 ** -134, 2.0 ** -133 * 1.5, 0.0, -0.0, float("inf"), -float("inf")]


@settings(max_examples=8, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=64),
       st.lists(st.floats(allow_nan=False), min_size=1, max_size=64),
       st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), min_size=1, max_size=64),
       st.lists(st.integers(0, 2 ** 64 - 1), min_size=1, max_size=64))
def test_numbers_round_to_bfloat16_in_each_mode_exactly(f32, f64, ints, uints):
    n = 64
    x32 = np.resize(np.array(TIES + f32, np.float32), n)
    x64 = np.resize(np.array([2.0 ** -8 + 1 + 2.0 ** -60, 1 + 2.0 ** -8] + f64, np.float64), n)
    xi = np.resize(np.array([2 ** 62 + 2 ** 54, -(2 ** 63), 257, 2 ** 40 + 1] + ints, np.int64),
                   n)
    xu = np.resize(np.array([2 ** 64 - 1, 2 ** 56 + 2 ** 48] + uints, np.uint64), n)
    r32, r64, ri, ru = run(from_numbers, x32, x64, xi, xu, outputs=[
        ((n, 4), np.uint16), ((n,), np.uint16), ((n, 4), np.uint16), ((n,), np.uint16)])
    for i in range(n):
        for m, mode in enumerate(MODES):
            exact = Fraction(float(x32[i])) if np.isfinite(x32[i]) else None
            want = reference(exact, mode) if exact is not None else \
                (INF_BITS if x32[i] > 0 else INF_BITS | 0x8000)
            assert same(int(r32[i, m]), want), (float(x32[i]), mode)
            assert same(int(ri[i, m]), reference(Fraction(int(xi[i])), mode)), (int(xi[i]), mode)
        if np.isfinite(x64[i]):
            assert same(int(r64[i]), reference(Fraction(float(x64[i])))), float(x64[i])
        assert same(int(ru[i]), reference(Fraction(int(xu[i])))), int(xu[i])


def to_integers(bits, i8, i32, u16, i64):
    for i in range(cuda.threadIdx.x, bits.size, cuda.blockDim.x):
        a = bf16.uint16_as_bfloat16(bits[i])
        i8[i] = bf16.bfloat16_to_int8_rz(a)
        i32[i, 0] = bf16.bfloat16_to_int32_rn(a)
        i32[i, 1] = bf16.bfloat16_to_int32_rz(a)
        i32[i, 2] = bf16.bfloat16_to_int32_rd(a)
        i32[i, 3] = bf16.bfloat16_to_int32_ru(a)
        u16[i] = bf16.bfloat16_to_uint16_rn(a)
        i64[i] = bf16.bfloat16_to_int64_rz(a)


def test_conversions_to_integers_round_saturate_and_take_nan_to_zero():
    values = [2.5, 3.5, -2.5, -0.75, 0.75, 300.0, -300.0, 1e10, -1e10, 7e4, 1e30, NAN,
              float("inf"), -float("inf")]
    bits = np.array([reference(Fraction(v)) if math.isfinite(v) else
                     (0x7FC0 if math.isnan(v) else INF_BITS | (0x8000 if v < 0 else 0))
                     for v in values], np.uint16)
    i8, i32, u16, i64 = run(to_integers, bits, outputs=[
        ((len(values),), np.int8), ((len(values), 4), np.int32), ((len(values),), np.uint16),
        ((len(values),), np.int64)])
    exact = [as_float(int(b)) for b in bits]  # 1e10 as bfloat16 is 9999220736.0

    def saturated(v, rounded, dtype):
        info = np.iinfo(dtype)
        return 0 if math.isnan(v) else int(min(max(rounded, info.min), info.max))

    for k, v in enumerate(exact):
        assert i8[k] == saturated(v, math.trunc(v) if math.isfinite(v) else v, np.int8)
        for m, rounding in enumerate((round, math.trunc, math.floor, math.ceil)):
            want = saturated(v, rounding(v) if math.isfinite(v) else v, np.int32)
            assert i32[k, m] == want, (v, MODES[m])
        assert u16[k] == saturated(v, round(v) if math.isfinite(v) else v, np.uint16)
        assert i64[k] == saturated(v, math.trunc(v) if math.isfinite(v) else v, np.int64)


# -- arithmetic ------------------------------------------------------------------------------
def arithmetic(a_bits, b_bits, c_bits, out):
    for i in range(cuda.threadIdx.x, a_bits.size, cuda.blockDim.x):
        a = bf16.uint16_as_bfloat16(a_bits[i])
        b = bf16.uint16_as_bfloat16(b_bits[i])
        c = bf16.uint16_as_bfloat16(c_bits[i])
        out[i, 0] = bf16.bfloat16_as_uint16(bf16.hadd(a, b))
        out[i, 1] = bf16.bfloat16_as_uint16(bf16.hsub(a, b))
        out[i, 2] = bf16.bfloat16_as_uint16(bf16.hmul(a, b))
        out[i, 3] = bf16.bfloat16_as_uint16(bf16.hdiv(a, b))
        out[i, 4] = bf16.bfloat16_as_uint16(bf16.hfma(a, b, c))
        out[i, 5] = bf16.bfloat16_as_uint16(a * b + c)  # two roundings, as the operators do
        out[i, 6] = bf16.bfloat16_as_uint16(bf16.hsqrt(a))


FINITE = st.integers(0, 0xFFFF).filter(lambda b: (b & 0x7F80) != 0x7F80)


@settings(max_examples=6, deadline=None)
@given(st.lists(st.tuples(FINITE, FINITE, FINITE), min_size=1, max_size=64))
def test_arithmetic_is_rounded_once_as_on_a_gpu(triples):
    a, b, c = (np.resize(np.array(col, np.uint16), 64) for col in zip(*triples))
    (out,) = run(arithmetic, a, b, c, outputs=[((64, 7), np.uint16)])
    for i in range(64):
        x, y, z = (Fraction(as_float(int(v[i]))) for v in (a, b, c))
        assert same(int(out[i, 0]), reference(x + y))
        assert same(int(out[i, 1]), reference(x - y))
        assert same(int(out[i, 2]), reference(x * y))
        if y != 0:
            assert same(int(out[i, 3]), reference(x / y))
        assert same(int(out[i, 4]), reference(x * y + z))
        product = reference(x * y)  # (infinity, where it overflows: plus z it stays so)
        two_roundings = product if math.isinf(as_float(product)) else \
            reference(Fraction(as_float(product)) + z)
        assert same(int(out[i, 5]), two_roundings)
        if x >= 0:  # float64's square root, correctly rounded, is never a bfloat16 tie
            assert same(int(out[i, 6]), reference(Fraction(math.sqrt(x))))


def special_values(out, flags):
    one, two, half = bf16.bfloat16(1.0), bf16.bfloat16(2.0), bf16.bfloat16(0.5)
    nan, inf = bf16.bfloat16(math.nan), bf16.bfloat16(math.inf)
    zero, negzero = bf16.bfloat16(0.0), bf16.hneg(bf16.bfloat16(0.0))
    out[0] = float32(bf16.hadd_sat(one, half))      # 1.5 -> 1
    out[1] = float32(bf16.hsub_sat(half, one))      # -0.5 -> 0
    out[2] = float32(bf16.hfma_sat(two, two, one))  # 5 -> 1
    out[3] = float32(bf16.hadd_sat(nan, one))       # NaN -> 0
    out[4] = float32(bf16.hfma_relu(bf16.hneg(two), two, one))  # -3 -> 0
    out[5] = float32(bf16.hfma_relu(nan, two, one))  # NaN stays
    out[6] = float32(bf16.hmax(nan, two))
    out[7] = float32(bf16.hmin(two, nan))
    out[8] = float32(bf16.hmax_nan(nan, two))
    out[9] = float32(bf16.hmax(negzero, zero))
    out[10] = float32(bf16.hmin(zero, negzero))
    out[11] = float32(bf16.habs(bf16.hneg(two)))
    out[12] = float32(bf16.hdiv(one, zero))
    out[13] = float32(bf16.hisinf(bf16.hneg(inf)))
    flags[0] = bf16.hisnan(nan)
    flags[1] = bf16.heq(nan, nan)
    flags[2] = bf16.hequ(nan, nan)
    flags[3] = bf16.hne(nan, one)
    flags[4] = bf16.hneu(nan, one)
    flags[5] = nan != one   # the operator is the unordered __hneu
    flags[6] = nan == bf16.bfloat16(math.nan)  # ordered: false
    flags[7] = bf16.hlt(one, two) and bf16.hge(two, two) and not bf16.hgt(one, one)


def test_saturation_relu_nan_and_signed_zeros():
    out, flags = run(special_values, outputs=[((14,), np.float32), ((8,), np.bool_)])
    assert out[:5].tolist() == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert math.isnan(out[5]) and out[6] == 2.0 and out[7] == 2.0 and math.isnan(out[8])
    assert out[9] == 0.0 and not np.signbit(out[9])  # hmax(-0, +0) is +0
    assert out[10] == 0.0 and np.signbit(out[10])  # hmin(+0, -0) is -0
    assert out[11] == 2.0 and out[12] == np.inf and out[13] == -1
    assert flags.tolist() == [True, False, True, False, True, True, False, True]


# -- types, as numba-cuda gives them ---------------------------------------------------------
def typed(x, out64, out32):
    a = bf16.bfloat16(1.25)
    out64[0] = a + x  # bfloat16 + float64 is float64 (numba-cuda's operator cases)
    out32[0] = float32(bf16.hadd(a, x))  # x converted to bfloat16 first
    out32[1] = float32(math.sin(bf16.bfloat16(x)))  # math on a bfloat16 is bfloat16
    y = a
    y += a  # in place, bfloat16
    out32[2] = float32(y * bf16.bfloat16(x))


def test_operators_and_math_take_numba_cudas_types():
    backend = CPUBackend(device="A100")
    out64, out32 = backend.allocate(1, np.float64), backend.allocate(3, np.float32)
    backend.launch_kernel(backend.compile_kernel(typed), 1, 1, 0.1, out64, out32)
    assert backend.to_host(out64)[0] == 1.25 + 0.1
    x = Fraction(as_float(reference(Fraction(0.1))))
    got = backend.to_host(out32)
    assert got[0] == as_float(reference(Fraction(1.25) + x))
    sin = Fraction(float(np.sin(np.float32(as_float(reference(Fraction(0.1)))))))
    assert got[1] == as_float(reference(sin))
    assert got[2] == as_float(reference(Fraction(2.5) * x))


def pairs(out):
    p = cuda_bf16.__floats2bfloat162_rn(1.0, 2.0)
    out[0] = float32(cuda_bf16.__low2float(p))


def test_bfloat16_pairs_are_refused_in_words():
    """(numba-cuda generates them, in numba.cuda._internal.cuda_bf16, but cuda.bf16 does not
    export them)"""
    backend = CPUBackend(device="A100")
    with pytest.raises(UnsupportedKernelError, match="bfloat16 pairs and raw bfloat16 storage"):
        backend.compile_kernel(pairs)


def printed():
    a = cuda.bfloat16(0.9375)  # (the type named through numba.cuda, as numba-cuda's test does)
    print(a, bf16.hneg(a))


def test_a_bfloat16_prints_as_numba_cuda_prints_it(capfd):
    backend = CPUBackend(device="A100")
    backend.launch_kernel(backend.compile_kernel(printed), 1, 1)
    backend.synchronize()
    assert capfd.readouterr().out.strip() == "0.937500 -0.937500"


# -- arrays of ml_dtypes' bfloat16 -----------------------------------------------------------
def on_arrays(a, b, c, x, out, stored, widened):
    i = cuda.threadIdx.x
    out[i] = a[i] * b[i] + c[i]  # bfloat16 elements: two roundings, as the operators do
    stored[i] = x[i]  # a float64 stored into a bfloat16 array: rounded to nearest even
    widened[i] = a[i]  # exact


@settings(max_examples=6, deadline=None)
@given(st.lists(st.tuples(FINITE, FINITE, FINITE,
                          st.floats(allow_nan=False, allow_infinity=False)),
                min_size=1, max_size=64))
def test_arrays_of_ml_dtypes_bfloat16_are_read_and_written_as_on_a_gpu(rows):
    """numba-cuda types an array of `ml_dtypes.bfloat16` as an array of its bfloat16."""
    a, b, c = (np.resize(np.array(col, np.uint16), 64).view(ml_dtypes.bfloat16)
               for col in list(zip(*rows))[:3])
    x = np.resize(np.array([r[3] for r in rows]), 64)
    out, stored, widened = run(on_arrays, a, b, c, x, outputs=[
        (64, ml_dtypes.bfloat16), (64, ml_dtypes.bfloat16), (64, np.float64)])
    assert out.dtype == stored.dtype == ml_dtypes.bfloat16
    bits = [v.view(np.uint16) for v in (a, b, c, out, stored)]
    for i in range(64):
        p, q, r = (Fraction(as_float(int(v[i]))) for v in bits[:3])
        product = reference(p * q)
        two_roundings = product if math.isinf(as_float(product)) else \
            reference(Fraction(as_float(product)) + r)
        assert same(int(bits[3][i]), two_roundings)
        assert same(int(bits[4][i]), reference(Fraction(x[i])))
        assert widened[i] == as_float(int(bits[0][i]))


def declared(x, out):
    i = cuda.threadIdx.x
    mine = cuda.local.array(2, dtype=bf16.bfloat16)
    mine[0] = x[i]
    mine[1] = mine[0] * mine[0]
    tile = cuda.shared.array(64, dtype=ml_dtypes.bfloat16)
    tile[i] = mine[1]
    cuda.syncthreads()
    out[i] = tile[63 - i]


def test_local_and_shared_arrays_of_bfloat16():
    """Declared with numba-cuda's bfloat16 or ml_dtypes': two bytes an element either way."""
    x = np.linspace(-3.0, 3.0, 64)
    (out,) = run(declared, x, outputs=[(64, ml_dtypes.bfloat16)])
    for i in range(64):
        rounded = Fraction(as_float(reference(Fraction(x[63 - i]))))
        assert same(int(out.view(np.uint16)[i]), reference(rounded * rounded))


def test_arrays_of_bfloat16_are_checked():
    from gpukit.errors import OutOfBoundsError, UninitializedMemoryError

    @cuda.jit
    def reads(src, out):
        i = cuda.threadIdx.x
        out[i] = src[i + 1]

    backend = CPUBackend()
    src, out = backend.allocate(4, ml_dtypes.bfloat16), backend.allocate(4, ml_dtypes.bfloat16)
    with pytest.raises(UninitializedMemoryError, match=r"'src\[i \+ 1\]' reads src\[1\], which "
                       r"was never written.*\[kernel 'reads', thread \(0, 0, 0\)"):
        backend.launch_kernel(backend.compile_kernel(reads), 1, 4, src, out)
    backend.copy_to_device(np.arange(4).astype(ml_dtypes.bfloat16), src)
    with pytest.raises(OutOfBoundsError, match=r"'src\[i \+ 1\]' indexes global array src "
                       r"\(shape \(4,\)\) at 4, outside 0\.\.3.*\[kernel 'reads', thread \(3, 0, 0\)"):
        backend.launch_kernel(backend.compile_kernel(reads), 1, 4, src, out)
    backend.launch_kernel(backend.compile_kernel(reads), 1, 3, src, out)
    np.testing.assert_array_equal(backend.to_host(out)[:3].astype(np.float32), [1, 2, 3])
