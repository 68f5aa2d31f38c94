"""Division, min/max, shifts and float-to-integer conversions in simulated kernels give what a
GPU gives (gpukit.sim.arith, gpukit.sim.conversions).

`tests/data/h200_semantics.npz` is `python benchmarks/gpu_semantics.py run --backend cuda` on an
NVIDIA H200 with numba-cuda 0.30.4 (benchmarks/GPU.md), saved again with `np.savez_compressed`:
float `%`, `//`, `divmod`, `math.fmod`, `math.remainder`, `math.modf`, `math.copysign` and
`min`/`max` in several forms over every pair of 21 edge values, float32 and float64 converted to
every integer type (constructors, `int`, `math.floor`/`ceil`, `round`, a store), `<<`, `>>`,
`//` and `%` of four integer types with counts past the width and zero divisors, and unary `-`,
`+`, `~` and `abs()` of small integers at their ends. The simulator must give the same bits.
"""

from __future__ import annotations

import math
import platform
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

from benchmarks import gpu_semantics
from gpukit.backends.cpu import CPUBackend

H200 = Path(__file__).with_name("data") / "h200_semantics.npz"
INF, NAN = math.inf, math.nan


@pytest.fixture(scope="module")
def be() -> CPUBackend:
    return CPUBackend()


def test_every_edge_value_pair_matches_an_h200_bit_for_bit(tmp_path, capsys):
    simulated = tmp_path / "simulator.npz"
    gpu_semantics.run("cpu", simulated)
    assert gpu_semantics.compare(H200, simulated) == 0, capsys.readouterr().out


def binary(a, b, rem, quot, lo, hi):
    i = cuda.grid(1)
    if i < a.size:
        rem[i] = a[i] % b[i]
        quot[i] = a[i] // b[i]
        lo[i] = min(a[i], b[i])
        hi[i] = max(a[i], b[i])


def launch(be, a, b):
    a, b = np.array(a), np.array(b)
    outs = [be.to_device(np.zeros_like(a)) for _ in range(4)]
    be.launch_kernel(binary, 1, 32, be.to_device(a), be.to_device(b), *outs)
    return [be.to_host(o) for o in outs]


def bits(values) -> list[str]:
    return [float(v).hex() if not math.isnan(v) else "nan" for v in values]


def test_float_remainder_is_nvvms_frem(be):
    # NaN for an infinite divisor; x - trunc(x / y) * y, fused, for a huge quotient
    rem, quot, _, _ = launch(be, [5.0, -5.0, 1.0, 7.0, 1.0], [INF, INF, 1e-300, 2.5, 0.0])
    assert bits(rem) == bits([NAN, NAN, 7.113783875736513e-17, 2.0, NAN])
    assert bits(quot) == bits([NAN, NAN, 9.999999999999999e299, 2.0, INF])  # y == 0: x / y


def test_float32_remainder_stays_float32(be):
    rem, quot, _, _ = launch(be, np.float32([5.5, -7.0]), np.float32([INF, 2.0]))
    assert rem.dtype == np.float32 and bits(rem) == bits([NAN, 1.0])
    assert bits(quot) == bits([NAN, -4.0])


def test_min_and_max_of_two_floats_are_libdevices(be):
    _, _, lo, hi = launch(be, [NAN, 1.0, -0.0, 0.0, NAN], [1.0, NAN, 0.0, -0.0, NAN])
    assert bits(lo) == bits([1.0, 1.0, -0.0, -0.0, NAN])  # the other operand; -0.0 below +0.0
    assert bits(hi) == bits([1.0, 1.0, 0.0, 0.0, NAN])


def python_rules(a, b, lo3, lo_int):
    i = cuda.grid(1)
    if i < a.size:
        lo3[i] = min(a[i], b[i], a[i])  # three arguments: Python's rules, on a GPU too
        lo_int[i] = min(i, b[i])  # an int with a float: also Python's


def unsigned_remainder(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] % 0.1


def test_an_unsigned_dividends_float_remainder_keeps_nvvms_sign(be):
    # the GPU's values for these dividends, from the differential tester's run on an H200: NVVM
    # knows an unsigned dividend is not negative and drops Numba's sign correction
    a = np.array([131073, 4294967295, 44, 7], np.uint32)
    out = be.to_device(np.zeros(4))
    be.launch_kernel(unsigned_remainder, 1, 4, be.to_device(a), out)
    assert bits(be.to_host(out)) == bits([-7.276013125334657e-12, -2.3841857904605135e-07,
                                          -2.4424906541753444e-15, -3.885780586188048e-16])


def test_other_min_forms_keep_pythons_rules(be):
    a, b = np.array([NAN, 1.0]), np.array([1.0, NAN])
    outs = [be.to_device(np.zeros(2)) for _ in range(2)]
    be.launch_kernel(python_rules, 1, 2, be.to_device(a), be.to_device(b), *outs)
    lo3, lo_int = (be.to_host(o) for o in outs)
    assert bits(lo3) == bits([NAN, 1.0]) and bits(lo_int) == bits([0.0, 1.0])


def test_numba_njit_code_keeps_the_cpus_rules():
    assert math.isnan(numba.njit(lambda a, b: min(a, b))(NAN, 1.0))
    assert numba.njit(lambda a, b: a % b)(5.0, INF) == 5.0


def conversions(a, i32, u8, floor, rounded):
    i = cuda.grid(1)
    if i < a.size:
        i32[i] = np.int32(a[i])
        u8[i] = np.uint8(a[i])
        floor[i] = math.floor(a[i])
        rounded[i] = round(a[i])


def convert(be, a):
    outs = [be.to_device(np.zeros(a.size, d)) for d in (np.int32, np.uint8, np.int64, np.int64)]
    be.launch_kernel(conversions, 1, 32, be.to_device(a), *outs)
    return [be.to_host(o).tolist() for o in outs]


I32, I64 = np.iinfo(np.int32), np.iinfo(np.int64)


def test_floats_convert_to_integers_saturating_as_a_gpu_does(be):
    i32, u8, floor, rounded = convert(be, np.array([NAN, INF, -INF, 1e10, -1e10, 300.7, -2.5]))
    assert i32 == [I32.min, I32.max, I32.min, I32.max, I32.min, 300, -2]
    assert u8 == [0, 255, 0, 255, 0, 44, 0]  # 16 bits saturated, then the low byte
    assert floor == [I64.min, I64.max, I64.min, 10**10, -10**10, 300, -3]
    assert rounded == [I64.min, I64.max, I64.min, 10**10, -10**10, 301, -2]


def test_a_float32_nan_converts_to_zero_below_64_bits(be):
    i32, u8, floor, rounded = convert(be, np.array([NAN], np.float32))
    assert (i32, u8, floor, rounded) == ([0], [0], [I64.min], [I64.min])


def shifts(x, s, left, right, by_three):
    i = cuda.grid(1)
    if i < x.size:
        left[i] = x[i] << s[i]
        right[i] = x[i] >> s[i]
        by_three[i] = x[i] << 3


def test_counts_past_the_width_shift_everything_out(be):
    x, s = np.array([1, -8, 5, 1, -8]), np.array([63, 64, 70, -1, 2])
    outs = [be.to_device(np.zeros(5, np.int64)) for _ in range(3)]
    be.launch_kernel(shifts, 1, 5, be.to_device(x), be.to_device(s), *outs)
    left, right, by_three = (be.to_host(o).tolist() for o in outs)
    assert left == [I64.min, 0, 0, 0, -32]
    assert right == [0, -1, 0, 0, -2]  # an arithmetic shift out leaves the sign
    assert by_three == [8, -64, 40, 8, -64]


def test_unsigned_shifts_out_leave_zero(be):
    x, s = np.array([2**64 - 8, 5], np.uint64), np.array([64, 1], np.uint64)
    outs = [be.to_device(np.zeros(2, np.uint64)) for _ in range(3)]
    be.launch_kernel(shifts, 1, 2, be.to_device(x), be.to_device(s), *outs)
    assert [be.to_host(o).tolist() for o in outs] == [[0, 10], [0, 2], [2**64 - 64, 40]]


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="x86's own conversion of an out-of-range float is what is checked")
def test_numba_njit_conversions_keep_the_cpus_rules(be):
    convert(be, np.array([1e10]))  # the simulator has compiled its conversions
    assert numba.njit(lambda x: np.int32(x))(1e10) == I32.min  # x86's "integer indefinite"


def negations(a, neg, absolute):
    i = cuda.grid(1)
    if i < a.size:
        neg[i] = -a[i]
        absolute[i] = abs(a[i])


@pytest.mark.parametrize("dtype, lowest", [(np.int16, 32768), (np.int8, -128),
                                           (np.int32, -2**31)])
def test_only_an_int16_negates_past_its_range_as_on_an_h200(be, dtype, lowest):
    a = np.array([np.iinfo(dtype).min, -5], dtype)
    outs = [be.to_device(np.zeros(2, np.int64)) for _ in range(2)]
    be.launch_kernel(negations, 1, 2, be.to_device(a), *outs)
    assert [be.to_host(o).tolist() for o in outs] == [[lowest, 5], [lowest, 5]]


def integer_division(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        q, r = divmod(a[i], b[i])
        out[i] = q * 1000 + r


def test_integers_divide_as_before(be):
    a, b = np.array([7, -7, 7, -7]), np.array([3, 3, -3, -3])
    out = be.to_device(np.zeros(4, np.int64))
    be.launch_kernel(integer_division, 1, 4, be.to_device(a), be.to_device(b), out)
    assert be.to_host(out).tolist() == [q * 1000 + r for q, r in map(divmod, a, b)]


def remainders(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = math.remainder(a[i], b[i])


finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(finite, finite.filter(lambda v: v != 0)), min_size=1, max_size=32))
def test_math_remainder_is_exact(be, pairs):
    """libdevice's remainder is exact IEEE (as Python's); the smallest subnormal divisor too."""
    pairs = [*pairs, (1.0, 5e-324), (-2.5, 5e-324)]
    a, b = (np.array(v) for v in zip(*pairs))
    out = be.to_device(np.zeros(len(a)))
    be.launch_kernel(remainders, 1, len(a), be.to_device(a), be.to_device(b), out)
    assert bits(be.to_host(out)) == bits(math.remainder(x, y) for x, y in pairs)


def quotients(a, b, out, rem):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] / b[i]
        rem[i] = a[i] % b[i]


def test_a_debug_kernel_divides_with_the_same_rules(be):
    """debug=True compiles under Python's error model (a zero divisor raises); the values of
    true division and of the float remainder are the same as without it."""
    kernel = cuda.jit(debug=True, opt=False)(quotients)
    a, b = np.array([5.0, 7.0]), np.array([INF, 2.0])
    out, rem = be.to_device(np.zeros(2)), be.to_device(np.zeros(2))
    be.launch_kernel(kernel, 1, 2, be.to_device(a), be.to_device(b), out, rem)
    assert bits(be.to_host(out)) == bits([0.0, 3.5])
    assert bits(be.to_host(rem)) == bits([NAN, 1.0])
