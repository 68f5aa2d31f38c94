"""`numba.cuda.libdevice` in simulated kernels: numba-cuda's types, the GPU's meaning.

numba-cuda gives kernels libdevice's 317 functions (`libdevice.sincos(x)`, `libdevice.umulhi(a,
b)`, `libdevice.fadd_rz(a, b)` ...), each typed by one signature (`numba.cuda.libdevicefuncs`:
unsigned values travel as int32/int64 bits, pointer results come back as a tuple). Each call here
is typed by that same signature (arguments converted as numba-cuda converts them) and computed
by the CPU function below with libdevice's meaning (NVIDIA's libdevice User's Guide):

- **exact functions** give the GPU's bits: integer functions (`mulhi`, `sad`, `byte_perm`, ...),
  bit casts, `fmod`, `remainder`, `remquo`, `frexp`, `ldexp`, `rint`, `round` (half away from
  zero), `fmin`/`fmax`, `float2half_rn`, and the arithmetic and conversions with an explicit
  rounding mode (`_rn` nearest even, `_rz` toward zero, `_ru` up, `_rd` down): the exact result
  is carried as an unevaluated sum of two doubles (Knuth's TwoSum, an fma's remainder,
  Shewchuk's expansions for a fused multiply-add; J. R. Shewchuk, "Adaptive precision
  floating-point arithmetic and fast robust geometric predicates", 1997), then rounded once in
  the named direction, subnormal results included. Float-to-integer conversions saturate as a
  GPU's `cvt` does (gpukit.sim.conversions, measured on an H200).
- **transcendental functions** are computed in float64 (libm, or the few written below:
  `erfinv`, `erfcinv`, `erfcx`, `normcdf(inv)`, `sinpi`/`cospi`) and, for the `f` versions,
  rounded to float32: within an ulp of the correctly rounded value, where libdevice is within
  the few ulps its guide states. The `fast_` functions are the GPU's hardware approximations
  (`__expf` ...); here they give the accurate value.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

from . import arith, cudamath
from .intrinsics import brev, clz, ffs, fma, popc
from .lowlevel import bits_of, from_bits, register_jitable

RN, RZ, RU, RD = 0, 1, 2, 3  # rounding modes
_MODES = {"rn": RN, "rz": RZ, "ru": RU, "rd": RD}
_TWO32 = 4294967296.0


# -- libm functions Numba's CPU `math` lacks ---------------------------------------------------
def _libm(name: str, with_order: bool = False):
    """libm's double function `name` (jn and yn take an int order first), called from compiled
    code by its symbol (resolved in the process, which has libm loaded)."""
    params = (types.int32, types.float64) if with_order else (types.float64,)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.DoubleType(), [context.get_value_type(p) for p in params])
        fn = cgutils.get_or_insert_function(builder.module, fnty, name)
        return builder.call(fn, [context.cast(builder, v, t, p)
                                 for v, t, p in zip(args, signature.args, params)])

    if with_order:
        @intrinsic
        def call2(typingctx, n, x):
            return types.float64(n, x), codegen
        return call2

    @intrinsic
    def call(typingctx, x):
        return types.float64(x), codegen
    return call


_j0, _j1, _y0, _y1 = (_libm(n) for n in ("j0", "j1", "y0", "y1"))
# libm's lgamma and tgamma keep their precision near lgamma's zeros at 1 and 2, where Numba's
# (CPython's Lanczos sum) loses it
_lgamma, _tgamma = _libm("lgamma"), _libm("tgamma")
_jn, _yn = (_libm(n, with_order=True) for n in ("jn", "yn"))


# -- exact sums and rounding in a direction ----------------------------------------------------
@register_jitable
def _two_sum(a, b):
    """s, e with s = a + b rounded and s + e == a + b exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@register_jitable
def _nearest(x, single, scale):
    """x * 2**-scale rounded to nearest even: float32 if `single`, else float64 (as float64)."""
    if single:
        return np.float64(np.float32(x))
    return math.ldexp(x, -scale)


@register_jitable
def _step(f, up, single):
    """The next float32 (single) or float64 after f, up or down."""
    if single:
        return np.float64(np.nextafter(np.float32(f), np.float32(np.inf if up else -np.inf)))
    return np.nextafter(f, np.inf if up else -np.inf)


@register_jitable
def _rounded(hi, lo, mode, single, scale):
    """(hi + lo) * 2**-scale rounded once in `mode`, to float32 (single; scale 0) or float64.
    hi + lo is the exact value; lo is small beside hi (within its last place), and only its sign,
    and whether it carries hi past a midpoint, count."""
    f = _nearest(hi, single, scale)
    if not np.isfinite(hi):
        return f
    if np.isinf(f):  # beyond the largest finite value
        if _to_infinity(hi > 0, mode):
            return f
        return _step(f, hi < 0, single)  # the largest finite value of hi's sign
    back = math.ldexp(f, scale)
    d = hi - back  # exact: back is hi's neighbour
    if mode == RN:
        if lo == 0 or d == 0:
            return f
        g = _step(f, d > 0, single)
        if abs(math.ldexp(g, scale) - hi) == abs(d) and (lo > 0) == (d > 0):
            return g  # hi lay on the midpoint, and lo carries the value past it
        return f
    err = d + lo  # the sign of (exact - f), exactly
    if err == 0:
        return f
    if mode == RZ:
        mode = RD if back > 0 or (back == 0 and err > 0) else RU
    if mode == RU:
        return _step(f, True, single) if err > 0 else f
    return _step(f, False, single) if err < 0 else f


@register_jitable
def _to_infinity(positive, mode):
    """Whether a result past the largest finite value rounds to infinity in `mode` (else to
    the largest finite value)."""
    return mode == RN or (mode == RU and positive) or (mode == RD and not positive)


@register_jitable
def _overflowed(s, mode):
    """A float64 operation of finite operands whose rounded result s is infinite."""
    if _to_infinity(s > 0, mode):
        return s
    return np.nextafter(s, 0.0)


@register_jitable
def _exact_zero(a, b, mode):
    """The sign of an exactly zero sum a + b: +0 unless both are -0, or -0 rounding down."""
    if mode == RD and not (a == 0 and b == 0 and not np.signbit(a) and not np.signbit(b)):
        return -0.0
    return a + b


@register_jitable
def _add(a, b, mode, single):
    a, b = np.float64(a), np.float64(b)
    s, e = _two_sum(a, b)
    if s == 0 and e == 0:
        return _exact_zero(a, b, mode)
    if np.isinf(s) and np.isfinite(a) and np.isfinite(b):
        return _overflowed(s, mode)
    return _rounded(s, e, mode, single, 0)


@register_jitable
def _scaled_up(x, k):
    """x * 2**600 where |x| < 2**-300 (and k + 600), else x and k: keeps products and quotients
    of tiny operands out of the subnormal range, where an fma's remainder is not exact."""
    if x != 0 and abs(x) < 2.0 ** -300:
        return math.ldexp(x, 600), k + 600
    return x, k


@register_jitable
def _mul(a, b, mode, single):
    a, b = np.float64(a), np.float64(b)
    p = a * b
    if single:  # exact in float64
        return _rounded(p, 0.0, mode, True, 0)
    if not np.isfinite(p) or a == 0 or b == 0:
        return _overflowed(p, mode) if np.isinf(p) and np.isfinite(a) and np.isfinite(b) else p
    k = 0
    if abs(p) < 2.0 ** -969:
        a, k = _scaled_up(a, k)
        b, k = _scaled_up(b, k)
        p = a * b
    return _rounded(p, fma(a, b, -p), mode, False, k)


@register_jitable
def _div(a, b, mode, single):
    a, b = np.float64(a), np.float64(b)
    q = a / b
    if not (np.isfinite(a) and np.isfinite(b)) or a == 0 or b == 0:
        return q
    if np.isinf(q):
        return _overflowed(q, mode)
    k = 0
    if not single and abs(q) < 2.0 ** -969:
        a, k = _scaled_up(a, k)
        if abs(b) > 2.0 ** 300:
            b, k = math.ldexp(b, -600), k + 600
        q = a / b
    return _rounded(q, fma(-q, b, a) / b, mode, single, k)


@register_jitable
def _sqrt(a, mode, single):
    a = np.float64(a)
    s = math.sqrt(a)
    if not (a > 0 and np.isfinite(a)):
        return s
    k = 0
    if a < 2.0 ** -900:
        a, k = math.ldexp(a, 1200), 600
        s = math.sqrt(a)
    return _rounded(s, fma(-s, s, a) / (s + s), mode, single, k)


@register_jitable
def _residual(p, pe, c, r):
    """A value with the sign of p + pe + c - r (exactly): Shewchuk's Grow-Expansion of the
    nonoverlapping pe, p by c and then -r; the largest nonzero component has the sum's sign."""
    q, h1 = _two_sum(c, pe)
    q, h2 = _two_sum(q, p)
    t, g1 = _two_sum(-r, h1)
    t, g2 = _two_sum(t, h2)
    t, g3 = _two_sum(t, q)
    for v in (t, g3, g2, g1):
        if v != 0:
            return v
    return 0.0


@register_jitable
def _fma(a, b, c, mode, single):
    a, b, c = np.float64(a), np.float64(b), np.float64(c)
    if single:  # the product is exact in float64, the sum exact as two doubles
        p = a * b
        s, e = _two_sum(p, c)
        if s == 0 and e == 0:
            return _exact_zero(p, c, mode)
        return _rounded(s, e, mode, True, 0)
    r = fma(a, b, c)
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return r
    if np.isinf(r):
        return _overflowed(r, mode)
    if a == 0 or b == 0:
        return _add(a * b, c, mode, False)
    p = a * b
    k = 0
    if abs(p) < 2.0 ** -969:
        if abs(c) >= 2.0 ** -900:  # the product is below c's last place: it only nudges c
            return _rounded(c, math.copysign(1.0, a) * math.copysign(1.0, b) * 2.0 ** -1074,
                            mode, False, 0)
        a, k = _scaled_up(a, k)
        b, k = _scaled_up(b, k)
        c = math.ldexp(c, k)
        p = a * b
        r = fma(a, b, c)
    residual = _residual(p, fma(a, b, -p), c, r)
    if r == 0 and residual == 0:
        return _exact_zero(p, c, mode)
    return _rounded(r, residual, mode, False, k)


@register_jitable
def _int_as_double(hi, lo_bits):
    """hi * 2**32 + lo_bits (lo_bits < 2**32) as an exact pair of doubles."""
    return _two_sum(np.float64(hi) * _TWO32, np.float64(lo_bits))


@register_jitable
def _from_ll(x, mode, single):
    x = np.int64(x)
    s, e = _int_as_double(x >> 32, x & 0xFFFFFFFF)
    return _rounded(s, e, mode, single, 0)


@register_jitable
def _from_ull(x, mode, single):
    u = np.uint64(x)
    s, e = _int_as_double(u >> np.uint64(32), u & np.uint64(0xFFFFFFFF))
    return _rounded(s, e, mode, single, 0)


@register_jitable
def integral(x, mode):
    """x rounded to an integral value in `mode` (its own float type)."""
    if mode == RN:
        return np.rint(x)
    if mode == RZ:
        return np.trunc(x)
    if mode == RU:
        return np.ceil(x)
    return np.floor(x)


# -- functions written here --------------------------------------------------------------------
@register_jitable
def _round_half_away(x):
    t = np.trunc(x)
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return t


@register_jitable
def _pi_trig(x, shift):
    """sin(pi * x + shift * pi/2): sinpi (shift 0) or cospi (shift 1). x = r + q/2 exactly,
    with |r| <= 1/4, so that sin and cos see a small argument."""
    x = np.float64(x)
    if not np.isfinite(x):
        return np.nan
    if abs(x) >= 2.0 ** 52:  # an integer
        r, q = 0.0, int(np.fmod(x, 2.0)) * 2
    else:
        n = np.rint(x + x)
        r, q = x - 0.5 * n, int(np.fmod(n, 4.0))
    q = (q + shift) % 4
    s, c = math.sin(math.pi * r), math.cos(math.pi * r)
    v = s if q == 0 else c if q == 1 else -s if q == 2 else -c
    if v == 0:  # sinpi(n) is 0 with n's sign, cospi(n + 1/2) is +0
        return math.copysign(0.0, x) if shift == 0 else 0.0
    return v


@register_jitable
def _erfcx(x):
    """exp(x*x) * erfc(x) without overflow or the error of rounding x*x."""
    x = np.float64(x)
    if np.isnan(x):
        return x
    if x < -26.7:  # exp(x*x) * 2 overflows
        return np.inf
    if x < 26.0:
        h = x * x
        lo = fma(x, x, -h)  # x*x == h + lo exactly
        return math.exp(h) * (1.0 + lo) * math.erfc(x)
    if np.isinf(x):
        return 0.0
    t = 1.0 / (2.0 * x * x)  # the asymptotic series, 1/(x sqrt(pi)) (1 - t + 3t^2 - ...)
    s, term = 1.0, 1.0
    for k in range(1, 8):
        term *= -(2 * k - 1) * t
        s += term
    return s / (x * math.sqrt(math.pi))


@register_jitable
def _erfinv_newton(z):
    """x >= 0 with erf(x) == z, for 0 <= z <= 1/2: Newton's method from erf(x) ~ 2x/sqrt(pi)."""
    x = z * 0.886226925452758
    for _ in range(40):
        step = (math.erf(x) - z) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= step
        if abs(step) <= 1e-17 * x:
            break
    return x


@register_jitable
def _erfcinv_newton(y):
    """x > 0 with erfc(x) == y, for 0 < y < 1/2: Newton's method on log(erfcx(x)) - x*x, which
    keeps its precision where erfc(x) is tiny, from the asymptotic x ~ sqrt(-log(y sqrt(pi)))."""
    ly = math.log(y)
    x = math.sqrt(max(-ly - 0.5 * math.log(-ly + 1.0) - 0.5 * math.log(math.pi), 0.25))
    for _ in range(60):
        e = _erfcx(x)
        # d/dx log(erfc(x)) = -2 exp(-x^2) / (sqrt(pi) erfc(x)) = -2 / (sqrt(pi) erfcx(x))
        step = (math.log(e) - x * x - ly) * (math.sqrt(math.pi) * e) / -2.0
        x -= step
        if abs(step) <= 1e-17 * abs(x):
            break
    return x


@register_jitable
def _erfcinv(y):
    y = np.float64(y)
    if np.isnan(y) or y < 0 or y > 2:
        return np.nan
    if y == 0:
        return np.inf
    if y == 2:
        return -np.inf
    if y < 0.5:
        return _erfcinv_newton(y)
    if y > 1.5:
        return -_erfcinv_newton(2.0 - y)  # exact: 2 - y
    z = 1.0 - y  # exact; erfcinv(y) = erfinv(1 - y)
    return math.copysign(_erfinv_newton(abs(z)), z) if z != 0 else 0.0


@register_jitable
def _erfinv(y):
    y = np.float64(y)
    if np.isnan(y) or abs(y) > 1:
        return np.nan
    a = abs(y)
    if a == 1:
        return math.copysign(np.inf, y)
    if a == 0:
        return y
    x = _erfcinv_newton(1.0 - a) if a > 0.5 else _erfinv_newton(a)  # exact: 1 - a
    return math.copysign(x, y)


@register_jitable
def _normcdf(x):
    """0.5 * erfc(-x / sqrt(2)), with -x/sqrt(2)'s rounding error corrected for (it grows
    with x*x in the far tail)."""
    x = np.float64(x)
    if not np.isfinite(x):
        return x if np.isnan(x) else (1.0 if x > 0 else 0.0)
    c_hi, c_lo = 0.7071067811865476, -4.833646656726457e-17  # 1/sqrt(2) as two doubles
    t = -x * c_hi
    dt = fma(-x, c_hi, -t) - x * c_lo  # -x/sqrt(2) == t + dt
    e = math.erfc(t)
    return 0.5 * (e - dt * 2.0 / math.sqrt(math.pi) * math.exp(-t * t))


@register_jitable
def _normcdfinv(p):
    x = -math.sqrt(2.0) * _erfcinv(np.float64(p) + np.float64(p))
    return x if x != 0 else 0.0


@register_jitable
def _logb(x):
    x = np.float64(x)
    if x == 0:
        return -np.inf
    if not np.isfinite(x):
        return abs(x)
    return np.float64(math.frexp(x)[1] - 1)


@register_jitable
def _ilogb(x):
    x = np.float64(x)
    if x == 0 or np.isnan(x):
        return np.int32(-2147483648)
    if np.isinf(x):
        return np.int32(2147483647)
    return np.int32(math.frexp(x)[1] - 1)


@register_jitable
def _remquo(x, y):
    """remainder(x, y) and the quotient's low 3 bits with its sign."""
    x, y = np.float64(x), np.float64(y)
    r = cudamath.remainder(x, y)
    if np.isnan(r):
        return r, np.int32(0)
    ay = abs(y)
    a = np.fmod(abs(x), 8.0 * ay) if np.isfinite(8.0 * ay) else abs(x)  # |x| mod 8|y|
    k = np.int32(np.rint((a - cudamath.remainder(a, ay)) / ay)) % 8
    return r, np.int32(-k if np.signbit(x) != np.signbit(y) else k)


@register_jitable
def _fdim(x, y, single):
    """x - y where x > y (rounded once, to float32 if `single`), else +0; NaN for NaN."""
    if np.isnan(x) or np.isnan(y):
        return np.float64(x) + np.float64(y)
    return _add(x, -y, RN, single) if x > y else 0.0


@register_jitable
def _saturate(x):
    if not x > 0:  # NaN too
        return np.float32(0.0)
    return np.float32(1.0) if x > 1 else x


@register_jitable
def _half_bits(x):
    """float32 -> IEEE half bits, rounded to nearest even (an int16). A NaN becomes 0x7fff."""
    x = np.float64(x)
    if np.isnan(x):
        return np.int16(0x7FFF)
    sign = 0x8000 if np.signbit(x) else 0
    a = abs(x)
    if a >= 65520.0:  # 65504 and a half unit above it: rounds to infinity
        return np.int16(sign | 0x7C00)
    if a < 2.0 ** -14:  # subnormal (1024 units is the smallest normal: its bits are the same)
        return np.int16(sign | int(np.rint(math.ldexp(a, 24))))
    e = math.frexp(a)[1] - 1
    q = int(np.rint(math.ldexp(a, 10 - e)))  # 1024..2048 units of 2**(e-10)
    if q == 2048:
        e, q = e + 1, 1024
    return np.int16(sign | ((e + 15) << 10) | (q - 1024))


@register_jitable
def _half_value(h):
    """IEEE half bits (an int16) -> float32, exactly (a NaN keeps its payload)."""
    b = np.int64(h) & 0xFFFF
    sign = -1.0 if b & 0x8000 else 1.0
    e, m = (b >> 10) & 0x1F, b & 0x3FF
    if e == 31:
        return from_bits(((b & 0x8000) << 16) | 0x7F800000 | (m << 13), np.float32(0))
    if e == 0:
        return np.float32(sign * math.ldexp(np.float64(m), -24))
    return np.float32(sign * math.ldexp(np.float64(m + 1024), e - 25))


@register_jitable
def _umul64hi(a, b):
    """The high 64 bits of the 128-bit product of two uint64."""
    mask = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0, a1, b0, b1 = a & mask, a >> s32, b & mask, b >> s32
    lo = a0 * b0
    mid1 = a1 * b0 + (lo >> s32)
    mid2 = a0 * b1 + (mid1 & mask)
    return a1 * b1 + (mid1 >> s32) + (mid2 >> s32)


@register_jitable
def _mul64hi(a, b):
    a, b = np.int64(a), np.int64(b)
    h = _umul64hi(np.uint64(a), np.uint64(b))
    if a < 0:
        h -= np.uint64(b)
    if b < 0:
        h -= np.uint64(a)
    return np.int64(h)


@register_jitable
def _byte_perm(x, y, s):
    both = (np.int64(np.uint32(y)) << 32) | np.int64(np.uint32(x))  # bytes 0-3 x, 4-7 y
    out = 0
    for n in range(4):
        sel = (np.int64(s) >> (4 * n)) & 7
        out |= ((both >> (8 * sel)) & 0xFF) << (8 * n)
    return np.int32(np.uint32(out))


# -- the table: libdevice name -> CPU function --------------------------------------------------
@register_jitable
def _exp10(x):
    return np.power(10.0, x)


@register_jitable
def _sincos(x):
    return math.sin(x), math.cos(x)


@register_jitable
def _sincospi(x):
    return _pi_trig(x, 0), _pi_trig(x, 1)


@register_jitable
def _rsqrt(x):
    return 1.0 / math.sqrt(x)


@register_jitable
def _rcbrt(x):
    return 1.0 / np.cbrt(x)


def _math_pairs() -> dict[str, Any]:
    """Functions libdevice has in a double and a float version (`sin`, `sinf`): the float
    version's operands are computed as float64 (`stub`) and its result rounded to float32."""
    same = {n: getattr(math, n) for n in (
        "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "erf", "erfc", "exp",
        "expm1", "log", "log10", "log1p", "log2", "sin", "sinh", "sqrt", "tan", "tanh",
        "atan2", "hypot", "copysign", "frexp")}
    same.update({
        "lgamma": _lgamma, "tgamma": _tgamma, "cbrt": np.cbrt, "exp2": np.exp2, "fabs": abs, "exp10": _exp10,
        "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "rint": np.rint,
        "nearbyint": np.rint, "round": _round_half_away, "fmod": np.fmod,
        "remainder": cudamath.remainder, "pow": cudamath.power, "powi": cudamath.power,
        "ldexp": np.ldexp, "scalbn": np.ldexp, "modf": cudamath.modf,
        "sinpi": lambda x: _pi_trig(x, 0), "cospi": lambda x: _pi_trig(x, 1), "sincos": _sincos, "sincospi": _sincospi,
        "rsqrt": _rsqrt, "rcbrt": _rcbrt, "logb": _logb, "ilogb": _ilogb, "erfinv": _erfinv,
        "erfcinv": _erfcinv, "erfcx": _erfcx, "normcdf": _normcdf, "normcdfinv": _normcdfinv,
        "remquo": _remquo, "j0": _j0, "j1": _j1, "y0": _y0, "y1": _y1, "jn": _jn, "yn": _yn,
        "fmax": arith.fmax, "fmin": arith.fmin, "nextafter": np.nextafter,
    })
    return {**same, **{name + "f": fn for name, fn in same.items()},
            "fdim": lambda x, y: _fdim(x, y, False), "fdimf": lambda x, y: _fdim(x, y, True)}


@register_jitable
def _sub(a, b, mode, single):
    return _add(a, -b, mode, single)


@register_jitable
def _rcp(x, mode, single):
    return _div(1.0, x, mode, single)


@register_jitable
def _narrowed(x, mode, single):
    return _rounded(np.float64(x), 0.0, mode, single, 0)


@register_jitable
def _from_uint(x, mode, single):
    return _rounded(np.float64(np.uint32(x)), 0.0, mode, single, 0)


def _rounding_family() -> dict[str, Any]:
    """The arithmetic and conversions with a rounding mode in their name."""
    out: dict[str, Any] = {}
    for tag, mode in _MODES.items():
        for single, prefix in ((True, "f"), (False, "d")):
            out[f"{prefix}add_{tag}"] = _binary(_add, mode, single)
            out[f"{prefix}mul_{tag}"] = _binary(_mul, mode, single)
            out[f"{prefix}div_{tag}"] = _binary(_div, mode, single)
            out[f"{prefix}rcp_{tag}"] = _unary(_rcp, mode, single)
            out[f"{prefix}sqrt_{tag}"] = _unary(_sqrt, mode, single)
        out[f"fsub_{tag}"] = _binary(_sub, mode, True)
        out[f"fma_{tag}"] = _ternary(_fma, mode, False)
        out[f"fmaf_{tag}"] = _ternary(_fma, mode, True)
        out[f"double2float_{tag}"] = _unary(_narrowed, mode, True)
        out[f"int2float_{tag}"] = _unary(_narrowed, mode, True)
        out[f"uint2float_{tag}"] = _unary(_from_uint, mode, True)
        for single, to in ((True, "float"), (False, "double")):
            out[f"ll2{to}_{tag}"] = _unary(_from_ll, mode, single)
            out[f"ull2{to}_{tag}"] = _unary(_from_ull, mode, single)
        for src in ("float", "double"):  # the integral value, then the GPU's saturating cvt
            out[f"{src}2int_{tag}"] = _to_int(mode, np.int32, np.int32)
            out[f"{src}2uint_{tag}"] = _to_int(mode, np.uint32, np.int32)
            out[f"{src}2ll_{tag}"] = _to_int(mode, np.int64, np.int64)
            out[f"{src}2ull_{tag}"] = _to_int(mode, np.uint64, np.int64)
    return out


def _unary(fn, mode, single):
    return lambda x: fn(x, mode, single)


def _binary(fn, mode, single):
    return lambda a, b: fn(a, b, mode, single)


def _ternary(fn, mode, single):
    return lambda a, b, c: fn(a, b, c, mode, single)


def _to_int(mode, kind, bits):
    return lambda x: bits(kind(integral(x, mode)))


def _integer_family() -> dict[str, Any]:
    i32, i64, u32, u64 = np.int32, np.int64, np.uint32, np.uint64
    return {
        "abs": lambda x: i32(-i64(x)) if x < 0 else x, "llabs": lambda x: -x if x < 0 else x,
        "max": lambda a, b: max(a, b), "min": lambda a, b: min(a, b),
        "llmax": lambda a, b: max(a, b), "llmin": lambda a, b: min(a, b),
        "umax": lambda a, b: i32(max(u32(a), u32(b))),
        "umin": lambda a, b: i32(min(u32(a), u32(b))),
        "ullmax": lambda a, b: i64(max(u64(a), u64(b))),
        "ullmin": lambda a, b: i64(min(u64(a), u64(b))),
        "hadd": lambda a, b: i32((i64(a) + i64(b)) >> 1),
        "rhadd": lambda a, b: i32((i64(a) + i64(b) + 1) >> 1),
        "uhadd": lambda a, b: i32((i64(u32(a)) + i64(u32(b))) >> 1),
        "urhadd": lambda a, b: i32((i64(u32(a)) + i64(u32(b)) + 1) >> 1),
        "mul24": lambda a, b: i32(((i64(a) << 40) >> 40) * ((i64(b) << 40) >> 40)),
        "umul24": lambda a, b: i32((i64(a) & 0xFFFFFF) * (i64(b) & 0xFFFFFF)),
        "mulhi": lambda a, b: i32((i64(a) * i64(b)) >> 32),
        "umulhi": lambda a, b: i32((u64(u32(a)) * u64(u32(b))) >> u64(32)),
        "mul64hi": _mul64hi, "umul64hi": lambda a, b: i64(_umul64hi(u64(a), u64(b))),
        "sad": lambda x, y, z: i32(abs(i64(x) - i64(y)) + i64(u32(z))),
        "usad": lambda x, y, z: i32(abs(i64(u32(x)) - i64(u32(y))) + i64(u32(z))),
        "byte_perm": _byte_perm,
        "brev": lambda x: brev(x), "brevll": lambda x: brev(x), "popc": lambda x: i32(popc(x)),
        "popcll": lambda x: i32(popc(x)), "clz": lambda x: i32(clz(x)),
        "clzll": lambda x: i32(clz(x)), "ffs": lambda x: i32(ffs(x)),
        "ffsll": lambda x: i32(ffs(x)),
    }


def _bits_family() -> dict[str, Any]:
    i32, i64, f32, f64 = np.int32, np.int64, np.float32, np.float64
    return {
        "float_as_int": lambda x: i32(bits_of(x)), "int_as_float": lambda x: from_bits(
            i64(x), f32(0)),
        "double_as_longlong": lambda x: bits_of(x), "longlong_as_double": lambda x: from_bits(x, 0.0),
        "double2hiint": lambda x: i32(bits_of(x) >> 32),
        "double2loint": lambda x: i32(bits_of(x) & 0xFFFFFFFF),
        "hiloint2double": lambda hi, lo: from_bits((i64(hi) << 32) | i64(np.uint32(lo)), 0.0),
        "float2half_rn": _half_bits, "half2float": _half_value,
        "isnanf": lambda x: i32(np.isnan(x)), "isnand": lambda x: i32(np.isnan(x)),
        "isinff": lambda x: i32(np.isinf(x)), "isinfd": lambda x: i32(np.isinf(x)),
        "finitef": lambda x: i32(np.isfinite(x)), "isfinited": lambda x: i32(np.isfinite(x)),
        "signbitf": lambda x: i32(np.signbit(x)), "signbitd": lambda x: i32(np.signbit(x)),
        "saturatef": _saturate, "int2double_rn": f64, "uint2double_rn": lambda x: f64(
            np.uint32(x)),
        "llrint": lambda x: i64(np.rint(x)), "llrintf": lambda x: i64(np.rint(x)),
        "llround": lambda x: i64(_round_half_away(x)),
        "llroundf": lambda x: i64(_round_half_away(x)),
        "fma": lambda a, b, c: fma(a, b, c), "fmaf": lambda a, b, c: _fma(a, b, c, RN, True),
        "frsqrt_rn": lambda x: 1.0 / math.sqrt(f64(x)),
    }


def _fast_family(pairs: dict[str, Any]) -> dict[str, Any]:
    """The `fast_` functions (the GPU's hardware approximations): the accurate value here."""
    out = {f"fast_{n}f": pairs[n] for n in ("cos", "sin", "tan", "exp", "exp10", "log",
                                           "log2", "log10", "pow", "sincos")}
    out["fast_fdividef"] = lambda a, b: np.float64(a) / np.float64(b)
    return out


@functools.cache
def _table() -> tuple[dict[str, Any], frozenset[str]]:
    """libdevice name (without `__nv_`) -> its CPU function; and the names whose float32
    operands are computed as float64."""
    pairs = _math_pairs()
    fast = _fast_family(pairs)
    table = {**pairs, **_rounding_family(), **_integer_family(), **_bits_family(), **fast}
    return table, frozenset(pairs.keys() - {"nextafterf", "fdimf"}) | fast.keys()


def names() -> frozenset[str]:
    """The libdevice functions the simulator computes (all numba-cuda has)."""
    return frozenset(_table()[0])


@functools.cache
def templates() -> dict[str, Any]:
    """numba-cuda's libdevice functions and their typing templates, by name."""
    from numba.cuda import libdevicedecl
    return {func.__name__: (func, typ.templates[0])
            for func, typ in libdevicedecl.registry.globals}


def cuda_case(name: str, args: tuple) -> Any:
    """The signature numba-cuda gives `libdevice.<name>` for argument types `args`, or None."""
    from numba.core.registry import cpu_target
    func, template = templates()[name]
    try:
        return cpu_target.typing_context.resolve_overload(func, list(template.cases), args, {})
    except TypingError:
        return None


def _computed_as(t: types.Type) -> str:
    return "np.float64" if t == types.float32 else cudamath.converter(t)


@functools.cache
def stub(name: str) -> Any:
    """`libdevice_<name>(...)`: the function a simulated kernel calls for libdevice.<name>."""
    table, in_double = _table()
    fn = table[name]
    if getattr(fn, "__name__", "") == "<lambda>":
        fn = register_jitable(fn)
    return cudamath.typed_stub(
        f"libdevice_{name}", fn, len(templates()[name][1].cases[0].args),
        functools.partial(cuda_case, name), f"libdevice.{name}",
        _computed_as if name in in_double else cudamath.converter)
