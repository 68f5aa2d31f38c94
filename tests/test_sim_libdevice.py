"""`numba.cuda.libdevice` in simulated kernels (gpukit.sim.libdevice): all 317 functions
numba-cuda has, each checked against a reference that does not share the simulator's code.

- exact functions (integers, bit casts, the rounding-mode arithmetic and conversions, `fmod`,
  `remquo`, `frexp`, ...) must give the same bits as the reference: Python integers, numpy's
  views, and exact rationals (`fractions.Fraction`) rounded in the named direction here;
- transcendental functions must lie within a few units in the last place of SciPy's or numpy's
  value (libdevice itself is within the few ulps its guide states, not correctly rounded).

The kernels are generated, one for each of numba-cuda's signatures, calling every function of
that signature on the same inputs (edge values and random ones), as numba-cuda's own
test_libdevice generates one call of each function.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

import numpy as np
import pytest
import scipy.special as sp
from numba import cuda, types
from numba.cuda import libdevice
from numba.cuda.libdevicefuncs import create_signature, functions

from gpukit.backends.cpu import CPUBackend
from gpukit.errors import KernelTypingError
from gpukit.sim import libdevice as simulated

RNG = np.random.default_rng(20261206)
N = 160
_NP = {types.float64: np.float64, types.float32: np.float32, types.int32: np.int32,
       types.int64: np.int64, types.int16: np.int16}


def _floats(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.25,
             3.0, 1e-3, 100.0, float(info.max), -float(info.max), float(info.tiny),
             float(info.smallest_subnormal), -float(info.smallest_subnormal),
             float(info.tiny) * 0.75, 2.0 ** 31, -(2.0 ** 31) - 1, 2.0 ** 63, 4.5e9, -7e18,
             0.1, 0.9, 0.999, 1e-300 if dtype == np.float64 else 1e-40, 25.0, -25.0]
    n_random = N - len(edges)
    mags = 2.0 ** RNG.uniform(-30, 30, n_random // 2)
    small = RNG.uniform(-4, 4, n_random - n_random // 2)
    values = np.concatenate([edges, mags * RNG.choice([-1, 1], mags.size), small])
    return values.astype(dtype)


def _ints(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    edges = [e for e in (0, 1, -1, 2, 7, -8, 255, 0x1234, info.max, info.min, info.max - 1,
                         info.min + 1, 0x00FFFFFF, -0x00800000) if info.min <= e <= info.max]
    values = RNG.integers(info.min, info.max, N - len(edges), dtype=dtype, endpoint=True)
    return np.concatenate([np.array(edges, dtype=dtype), values])


def _inputs(argtypes: tuple) -> list[np.ndarray]:
    """One array per operand: the first operand's values, the others shuffled against it (and
    a pass with the operands equal, so that exact ties and cancellations come up)."""
    out = []
    for k, t in enumerate(argtypes):
        dtype = _NP[t]
        values = _floats(dtype) if np.issubdtype(dtype, np.floating) else _ints(dtype)
        if dtype == np.int16 and k == 0:  # half bits: every class of half
            values = RNG.integers(-32768, 32767, N, dtype=np.int16, endpoint=True)
            values[:6] = [0x7C00, -1024, 0x7E00, 0x0001, 0x03FF, 0x3C00]
        if k == 0 and t == types.int32 and len(argtypes) == 2 and argtypes[1] != t:
            values = np.concatenate([[0, 1, -1, 2, 5, -7], RNG.integers(-40, 40, N - 6)])
            values = values.astype(np.int32)  # jn, yn: an order (libm's loops run that long)
        elif k:
            values = np.concatenate([values[: N // 4], RNG.permutation(values)[N // 4:]])
        if argtypes[0] == t and k and np.issubdtype(dtype, np.floating):
            values[N // 4: N // 4 + 8] = -out[0][N // 4: N // 4 + 8]  # x + (-x), x / -x
        out.append(values)
    return out


def _groups() -> dict:
    groups = defaultdict(list)
    for nv_name, (retty, args) in functions.items():
        sig = create_signature(retty, args)
        groups[(tuple(sig.args), sig.return_type)].append(nv_name.removeprefix("__nv_"))
    return groups


def _kernel(names: list[str], nargs: int, ncomp: int):
    xs = ", ".join(f"x{a}" for a in range(nargs))
    lines = [f"def calls(out, {xs}):", "    i = cuda.grid(1)", "    if i < x0.size:"]
    for j, name in enumerate(names):
        call = f"libdevice.{name}({', '.join(f'x{a}[i]' for a in range(nargs))})"
        if ncomp == 1:
            lines.append(f"        out[{j}, 0, i] = {call}")
        else:
            lines.append(f"        r{j} = {call}")
            lines += [f"        out[{j}, {c}, i] = r{j}[{c}]" for c in range(ncomp)]
    scope = {"cuda": cuda, "libdevice": libdevice}
    exec("\n".join(lines), scope)  # noqa: S102 - generated calls, as numba-cuda's test does
    return cuda.jit(scope["calls"])


# -- references ----------------------------------------------------------------------------------
RN, RZ, RU, RD = "rn", "rz", "ru", "rd"


def _round_exact(q: Fraction | float, mode: str, single: bool) -> float:
    """The float32 (single) or float64 nearest q in `mode`, by exact comparison."""
    if isinstance(q, float):
        if not math.isfinite(q) or q == 0:
            return q
        q = Fraction(q)
    dtype = np.float32 if single else np.float64
    big = dtype(np.finfo(dtype).max)
    fbig = Fraction(float(big))
    if q > fbig:
        lo, hi = big, dtype(np.inf)
    elif q < -fbig:
        lo, hi = dtype(-np.inf), -big
    else:
        lo = dtype(float(q))
        while Fraction(float(lo)) > q:
            lo = np.nextafter(lo, dtype(-np.inf))
        while Fraction(float(np.nextafter(lo, dtype(np.inf)))) <= q:
            lo = np.nextafter(lo, dtype(np.inf))
        if Fraction(float(lo)) == q:
            return float(lo)
        hi = np.nextafter(lo, dtype(np.inf))
    if mode == RD:
        return float(lo)
    if mode == RU:
        return float(hi)
    if mode == RZ:
        return float(lo) if q > 0 else float(hi)
    ulp = fbig - Fraction(float(np.nextafter(big, dtype(0))))
    if np.isinf(hi):  # nearest: infinity from half a unit past the largest finite value
        return float(hi) if q - fbig >= ulp / 2 else float(big)
    if np.isinf(lo):
        return float(lo) if -fbig - q >= ulp / 2 else -float(big)
    dl, dh = q - Fraction(float(lo)), Fraction(float(hi)) - q
    if dl != dh:
        return float(lo) if dl < dh else float(hi)
    bits = np.array(lo).view(np.int32 if single else np.int64)
    return float(lo) if int(bits) % 2 == 0 else float(hi)


def _exact_op(op: str, mode: str, single: bool):
    def ref(*xs):
        if any(math.isnan(x) for x in xs):
            return math.nan
        if any(math.isinf(x) for x in xs) or (op in ("div", "rcp") and xs[-1] == 0):
            with np.errstate(all="ignore"):
                a = np.float64 if not single else np.float32
                v = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                     "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
                     "rcp": lambda a: 1 / a, "sqrt": np.sqrt,
                     "fma": lambda a, b, c: a * b + c}[op](*[a(x) for x in xs])
            return float(v)
        q = [Fraction(x) for x in xs]
        if op == "sqrt":
            if xs[0] < 0:
                return math.nan
            if xs[0] == 0:
                return xs[0]
            return _round_sqrt(q[0], mode, single)
        exact = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                 "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
                 "rcp": lambda a: 1 / a, "fma": lambda a, b, c: a * b + c}[op](*q)
        if exact == 0:  # the sign of an exact zero
            signs = {"add": (xs[0], xs[1]), "sub": (xs[0], -xs[1])}.get(op)
            if op == "fma":
                signs = (math.copysign(1.0, xs[0]) * math.copysign(1.0, xs[1]) * 0.0, xs[2])
            if signs is not None:
                both_neg = all(math.copysign(1.0, s) < 0 and s == 0 for s in signs)
                return -0.0 if both_neg or (mode == RD and not all(
                    s == 0 and math.copysign(1.0, s) > 0 for s in signs)) else 0.0
            return math.copysign(0.0, math.copysign(1.0, xs[0]) * math.copysign(
                1.0, xs[-1] if op != "rcp" else 1.0))
        return _round_exact(exact, mode, single)
    return ref


def _round_sqrt(q: Fraction, mode: str, single: bool) -> float:
    """sqrt(q) rounded in mode: the float whose square brackets q, by exact comparison."""
    dtype = np.float32 if single else np.float64
    c = dtype(math.sqrt(float(q)))
    lo = c
    while Fraction(float(lo)) ** 2 > q:
        lo = np.nextafter(lo, dtype(0))
    while Fraction(float(np.nextafter(lo, dtype(np.inf)))) ** 2 <= q:
        lo = np.nextafter(lo, dtype(np.inf))
    if Fraction(float(lo)) ** 2 == q:
        return float(lo)
    hi = np.nextafter(lo, dtype(np.inf))
    if mode in (RD, RZ):
        return float(lo)
    if mode == RU:
        return float(hi)
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    return float(lo) if mid ** 2 > q else float(hi)  # sqrt is never exactly a midpoint


def _cvt_int(mode: str, bits: int, signed: bool, single: bool):
    """A float converted to an integer in `mode`, saturating as a GPU's cvt does (NaN: 0 from
    a float32 to 32 bits, else only the top bit)."""
    def ref(x):
        if math.isnan(x):
            v = 0 if single and bits == 32 else 1 << (bits - 1)
        else:
            r = float({RN: np.rint, RZ: np.trunc, RU: np.ceil, RD: np.floor}[mode](x))
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits)
                                                                                 - 1)
            v = min(max(int(r), lo), hi) if math.isfinite(r) else (hi if r > 0 else lo)
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >= 1 << (bits - 1) else v  # as the signed bits
    return ref


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def _u(v: int, bits: int) -> int:
    return int(v) & ((1 << bits) - 1)


def _byte_perm(x, y, s):
    both = (_u(y, 32) << 32) | _u(x, 32)
    return _signed(sum(((both >> (8 * ((int(s) >> (4 * n)) & 7))) & 0xFF) << (8 * n)
                       for n in range(4)), 32)


def _bitrev(v, bits):
    return _signed(int(format(_u(v, bits), f"0{bits}b")[::-1], 2), bits)


def _ffs(v, bits):
    v = _u(v, bits)
    return (v & -v).bit_length()


def _half_to_float(h):
    return float(np.array(h, dtype=np.int16).view(np.float16))


def _float_to_half(x):
    if math.isnan(x):
        return 0x7FFF
    return int(np.array(np.float16(np.float32(x))).view(np.int16))


def _remquo(x, y):
    r = math.remainder(x, y) if math.isfinite(x) and y != 0 and not math.isnan(y) else math.nan
    if math.isnan(r):
        return (r, 0)
    if math.isinf(y):
        return (x, 0)
    n = (Fraction(x) - Fraction(r)) / Fraction(y)
    k = abs(int(n)) % 8
    return (r, -k if (x < 0) != (y < 0) or (x == 0 and math.copysign(1, x) != math.copysign(
        1, y)) else k)


PI = np.longdouble("3.14159265358979323846264338327950288")  # x86: 64 bits of pi


def _folded(x):
    """r in [-1/2, 1/2] and a sign with sinpi(x) = sign * sinpi(r), exactly (x finite)."""
    r = math.fmod(x, 2.0)  # exact
    if r > 1:
        r -= 2.0
    elif r < -1:
        r += 2.0
    if r > 0.5:
        return 1.0 - r, 1.0
    if r < -0.5:
        return -1.0 - r, 1.0
    return r, 1.0


def _sinpi(x):
    if not math.isfinite(x):
        return math.nan
    r, sign = _folded(x)
    v = sign * float(np.sin(PI * np.longdouble(r)))
    return math.copysign(0.0, x) if v == 0 else v


def _cospi(x):
    if not math.isfinite(x):
        return math.nan
    r = math.fmod(abs(x), 2.0)
    if r > 1:
        r = 2.0 - r  # exact
    v = _sinpi(0.5 - r)  # exact where cospi is small (r near 1/2)
    return 0.0 if v == 0 else v


class Check:
    """How a result is judged where an exact reference is not at hand: within `rel` of `want`
    and `abs_tol` more (`want` rounded to float32 first for a float32 result), or `holds`."""

    def __init__(self, want=None, rel=0.0, abs_tol=0.0, holds=None):
        self.want, self.rel, self.abs_tol, self.holds = want, rel, abs_tol, holds

    def __call__(self, got: float, single: bool) -> bool:
        if self.holds is not None:
            return self.holds(got)
        want = self.want
        if single:
            with np.errstate(over="ignore"):
                want = float(np.float32(want))
        if math.isnan(want) or math.isinf(want):
            return got == want or (math.isnan(want) and math.isnan(got))
        return abs(got - want) <= (self.rel + (2 ** -24 if single else 0)) * abs(want) + \
            self.abs_tol


def _erfcinv(y):
    if y == 1:
        return 0.0
    if 0 < y < 1e-300:  # SciPy gives inf; the x with erfc(x) == y lies near 26.5-27.3
        return Check(holds=lambda got: 26.4 < got < 27.3)
    return sp.erfcinv(y)


def _bessel(fn, rel):
    """SciPy's Bessel function of the first or second kind, to within `rel`, or an absolute
    error of 1e-15 where |x| <= 8 and of 1e-9 of the envelope sqrt(2 / (pi |x|)) beyond (near
    the zeros a relative error means nothing, and libdevice too is within an absolute error
    there; SciPy's and libm's values differ by about 1e-11 of the envelope at |x| ~ 1e5);
    beyond |x| = 1e6, where SciPy loses x - pi/4 to rounding, within the envelope."""
    second_kind = fn in (sp.y0, sp.y1, sp.yn)

    def ref(*args):
        x = args[-1]
        if math.isnan(x) or (second_kind and x < 0):
            return math.nan
        envelope = math.sqrt(2 / math.pi) / math.sqrt(abs(x)) if x else 1.0
        if abs(x) > 1e6:
            return Check(holds=lambda got: abs(got) <= 1.01 * envelope)
        return Check(float(fn(*args)), rel, 1e-15 if abs(x) <= 8 else 1e-9 * envelope)
    return ref


def _lgamma(rel):
    """SciPy's gammaln, within an absolute error of an ulp of 1 near lgamma's zeros (at 1, 2
    and between the negative integers), where SciPy's own error is absolute."""
    def ref(x):
        if math.isinf(x):
            return math.inf
        if 0 < abs(x) < 1e-300:  # SciPy gives inf
            return -math.log(abs(x))
        return Check(float(sp.gammaln(x)), rel, 2 ** -51)
    return ref


def _normcdf(rel):
    """SciPy's ndtr: its own error grows as x*x in the lower tail (it rounds -x/sqrt(2))."""
    def ref(x):
        return Check(float(sp.ndtr(x)), rel + min(x * x, 1e4) * 2 ** -52)
    return ref


def _ulp_close(tol: float):
    return ("close", tol)


EXACT = ("exact", 0)
CHECKED = ("check", 0)  # a reference that returns a Check where it gives no value


def references() -> dict:
    """libdevice name -> (reference over scalars, how to compare)."""
    f64 = {
        "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
        "atan": np.arctan, "atanh": np.arctanh, "cos": np.cos, "cosh": np.cosh,
        "erf": sp.erf, "erfc": sp.erfc, "exp": np.exp, "expm1": np.expm1,
        "log": np.log, "log10": np.log10, "log1p": np.log1p, "log2": np.log2,
        "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt, "tan": np.tan,
        "tanh": np.tanh,  "tgamma": sp.gamma, "cbrt": np.cbrt,
        "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "atan2": np.arctan2,
        "hypot": np.hypot, "pow": lambda x, y: np.power(x, y),
        "powi": lambda x, n: np.power(x, float(n)), "erfinv": lambda y: y if y == 0 else sp.erfinv(y),
        "erfcinv": _erfcinv, "erfcx": sp.erfcx,  "normcdfinv": sp.ndtri,
 "sinpi": _sinpi, "cospi": _cospi,
        "sincos": lambda x: (np.sin(x), np.cos(x)),
        "sincospi": lambda x: (_sinpi(x), _cospi(x)), "rsqrt": lambda x: 1 / np.sqrt(x),
        "rcbrt": lambda x: 1 / np.cbrt(x),
    }
    exact64 = {
        "fabs": abs, "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "rint": np.rint,
        "nearbyint": np.rint, "round": lambda x: math.copysign(math.floor(abs(x) + 0.5), x)
        if abs(x) < 2 ** 52 else x, "copysign": math.copysign, "fmod": np.fmod,
        "remainder": lambda x, y: math.remainder(x, y) if math.isfinite(x) and y != 0 and not
        math.isnan(y) else math.nan, "fdim": lambda x, y: x - y if x > y else (
            math.nan if math.isnan(x) or math.isnan(y) else 0.0),
        "ldexp": lambda x, n: np.ldexp(x, n), "scalbn": lambda x, n: np.ldexp(x, n),
        "frexp": lambda x: np.frexp(x), "modf": lambda x: tuple(np.modf(x)),
        "logb": lambda x: -math.inf if x == 0 else abs(x) if not math.isfinite(x) else float(
            math.frexp(x)[1] - 1),
        "ilogb": lambda x: -2 ** 31 if x == 0 or math.isnan(x) else 2 ** 31 - 1 if math.isinf(
            x) else math.frexp(x)[1] - 1,
        "remquo": _remquo,
        "fmax": lambda a, b: b if math.isnan(a) else a if math.isnan(b) else (
            a if math.copysign(1, a) > 0 else b) if a == b else max(a, b),
        "fmin": lambda a, b: b if math.isnan(a) else a if math.isnan(b) else (
            a if math.copysign(1, a) < 0 else b) if a == b else min(a, b),
    }
    refs: dict = {"fdimf": (lambda x, y: _exact_op("sub", RN, True)(x, y) if x > y else (
        math.nan if math.isnan(x) or math.isnan(y) else 0.0), EXACT)}
    for name, fn in f64.items():
        refs[name] = (fn, _ulp_close(2 ** -46))
        refs[name + "f"] = (fn, _ulp_close(2 ** -22))  # an ulp of float32, and a little
    for name, fn in {"j0": sp.j0, "j1": sp.j1, "y0": sp.y0, "y1": sp.y1, "jn": sp.jv,
                     "yn": sp.yn}.items():
        refs[name] = (_bessel(fn, 2 ** -46), CHECKED)
        refs[name + "f"] = (_bessel(fn, 2 ** -22), CHECKED)
    for name, make in (("normcdf", _normcdf), ("lgamma", _lgamma)):
        refs[name], refs[name + "f"] = (make(2 ** -46), CHECKED), (make(2 ** -22), CHECKED)
    for name, fn in exact64.items():
        refs.setdefault(name, (fn, EXACT))
        refs.setdefault(name + "f", (fn, EXACT))
    refs["nextafter"] = (np.nextafter, EXACT)
    refs["nextafterf"] = (lambda a, b: np.nextafter(np.float32(a), np.float32(b)), EXACT)
    for n in ("cos", "sin", "tan", "exp", "exp10", "log", "log2", "log10", "pow", "sincos"):
        refs[f"fast_{n}f"] = refs[n + "f"]
    refs["fast_fdividef"] = (lambda a, b: np.float32(np.float64(a) / np.float64(b)), EXACT)
    for mode in (RN, RZ, RU, RD):
        for single, p in ((True, "f"), (False, "d")):
            for op in ("add", "mul", "div", "rcp", "sqrt"):
                refs[f"{p}{op}_{mode}"] = (_exact_op(op, mode, single), EXACT)
        refs[f"fsub_{mode}"] = (_exact_op("sub", mode, True), EXACT)
        refs[f"fma_{mode}"] = (_exact_op("fma", mode, False), EXACT)
        refs[f"fmaf_{mode}"] = (_exact_op("fma", mode, True), EXACT)
        refs[f"double2float_{mode}"] = (lambda x, m=mode: _round_exact(x, m, True), EXACT)
        for src, single in (("float", True), ("double", False)):
            refs[f"{src}2int_{mode}"] = (_cvt_int(mode, 32, True, single), EXACT)
            refs[f"{src}2uint_{mode}"] = (_cvt_int(mode, 32, False, single), EXACT)
            refs[f"{src}2ll_{mode}"] = (_cvt_int(mode, 64, True, single), EXACT)
            refs[f"{src}2ull_{mode}"] = (_cvt_int(mode, 64, False, single), EXACT)
        refs[f"int2float_{mode}"] = (lambda x, m=mode: _round_exact(Fraction(int(x)), m, True),
                                     EXACT)
        refs[f"uint2float_{mode}"] = (lambda x, m=mode: _round_exact(
            Fraction(_u(x, 32)), m, True), EXACT)
        for single, to in ((True, "float"), (False, "double")):
            refs[f"ll2{to}_{mode}"] = (lambda x, m=mode, s=single: _round_exact(
                Fraction(int(x)), m, s), EXACT)
            refs[f"ull2{to}_{mode}"] = (lambda x, m=mode, s=single: _round_exact(
                Fraction(_u(x, 64)), m, s), EXACT)
    refs["fma"] = (_exact_op("fma", RN, False), EXACT)
    refs["fmaf"] = (_exact_op("fma", RN, True), EXACT)
    refs["frsqrt_rn"] = (lambda x: 1 / math.sqrt(x) if x > 0 else (
        math.copysign(math.inf, x) if x == 0 else math.nan), _ulp_close(2 ** -23))
    refs.update({
        "abs": (lambda x: _signed(abs(int(x)), 32), EXACT),
        "llabs": (lambda x: _signed(abs(int(x)), 64), EXACT),
        "max": (max, EXACT), "min": (min, EXACT), "llmax": (max, EXACT), "llmin": (min, EXACT),
        "umax": (lambda a, b: _signed(max(_u(a, 32), _u(b, 32)), 32), EXACT),
        "umin": (lambda a, b: _signed(min(_u(a, 32), _u(b, 32)), 32), EXACT),
        "ullmax": (lambda a, b: _signed(max(_u(a, 64), _u(b, 64)), 64), EXACT),
        "ullmin": (lambda a, b: _signed(min(_u(a, 64), _u(b, 64)), 64), EXACT),
        "hadd": (lambda a, b: (int(a) + int(b)) >> 1, EXACT),
        "rhadd": (lambda a, b: (int(a) + int(b) + 1) >> 1, EXACT),
        "uhadd": (lambda a, b: _signed((_u(a, 32) + _u(b, 32)) >> 1, 32), EXACT),
        "urhadd": (lambda a, b: _signed((_u(a, 32) + _u(b, 32) + 1) >> 1, 32), EXACT),
        "mul24": (lambda a, b: _signed(_signed(a, 24) * _signed(b, 24), 32), EXACT),
        "umul24": (lambda a, b: _signed(_u(a, 24) * _u(b, 24), 32), EXACT),
        "mulhi": (lambda a, b: _signed((int(a) * int(b)) >> 32, 32), EXACT),
        "umulhi": (lambda a, b: _signed((_u(a, 32) * _u(b, 32)) >> 32, 32), EXACT),
        "mul64hi": (lambda a, b: _signed((int(a) * int(b)) >> 64, 64), EXACT),
        "umul64hi": (lambda a, b: _signed((_u(a, 64) * _u(b, 64)) >> 64, 64), EXACT),
        "sad": (lambda x, y, z: _signed(abs(int(x) - int(y)) + _u(z, 32), 32), EXACT),
        "usad": (lambda x, y, z: _signed(abs(_u(x, 32) - _u(y, 32)) + _u(z, 32), 32), EXACT),
        "byte_perm": (_byte_perm, EXACT),
        "brev": (lambda x: _bitrev(x, 32), EXACT), "brevll": (lambda x: _bitrev(x, 64), EXACT),
        "popc": (lambda x: _u(x, 32).bit_count(), EXACT),
        "popcll": (lambda x: _u(x, 64).bit_count(), EXACT),
        "clz": (lambda x: 32 - _u(x, 32).bit_length(), EXACT),
        "clzll": (lambda x: 64 - _u(x, 64).bit_length(), EXACT),
        "ffs": (lambda x: _ffs(x, 32), EXACT), "ffsll": (lambda x: _ffs(x, 64), EXACT),
        "float_as_int": (lambda x: int(np.array(x, np.float32).view(np.int32)), EXACT),
        "int_as_float": (lambda x: float(np.array(x, np.int32).view(np.float32)), EXACT),
        "double_as_longlong": (lambda x: int(np.array(x).view(np.int64)), EXACT),
        "longlong_as_double": (lambda x: float(np.array(x, np.int64).view(np.float64)), EXACT),
        "double2hiint": (lambda x: int(np.array(x).view(np.int64)) >> 32, EXACT),
        "double2loint": (lambda x: _signed(int(np.array(x).view(np.int64)), 32), EXACT),
        "hiloint2double": (lambda hi, lo: float(np.array((int(hi) << 32) | _u(lo, 32)).astype(
            np.uint64).view(np.float64)), EXACT),
        "float2half_rn": (_float_to_half, EXACT), "half2float": (_half_to_float, EXACT),
        "isnanf": (lambda x: int(math.isnan(x)), EXACT),
        "isnand": (lambda x: int(math.isnan(x)), EXACT),
        "isinff": (lambda x: int(math.isinf(x)), EXACT),
        "isinfd": (lambda x: int(math.isinf(x)), EXACT),
        "finitef": (lambda x: int(math.isfinite(x)), EXACT),
        "isfinited": (lambda x: int(math.isfinite(x)), EXACT),
        "signbitf": (lambda x: int(math.copysign(1, x) < 0), EXACT),
        "signbitd": (lambda x: int(math.copysign(1, x) < 0), EXACT),
        "saturatef": (lambda x: 0.0 if not x > 0 else min(x, 1.0), EXACT),
        "int2double_rn": (float, EXACT), "uint2double_rn": (lambda x: float(_u(x, 32)), EXACT),
        "llrint": (_cvt_int(RN, 64, True, False), EXACT),
        "llrintf": (_cvt_int(RN, 64, True, True), EXACT),
        "llround": (lambda x: _cvt_int(RZ, 64, True, False)(exact64["round"](x)), EXACT),
        "llroundf": (lambda x: _cvt_int(RZ, 64, True, True)(exact64["round"](x)), EXACT),
    })
    return refs


# -- the checks ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def be() -> CPUBackend:
    return CPUBackend()


def test_every_libdevice_function_has_a_simulation_and_a_reference():
    numba_cuda = {n.removeprefix("__nv_") for n in functions}
    assert len(numba_cuda) == 317
    assert simulated.names() == numba_cuda
    assert references().keys() == numba_cuda


def _same(got, want, how, single) -> bool:
    kind, tol = how
    if isinstance(want, Check):
        return want(float(got), single)
    got, want = float(got), float(want)
    if math.isnan(want):
        return math.isnan(got)
    if kind == "exact" or math.isinf(want) or want == 0:
        if single:  # a reference computed exactly in float64, rounded once to float32
            with np.errstate(over="ignore"):
                want = float(np.float32(want))
        return got == want and math.copysign(1, got) == math.copysign(1, want)
    if single:
        with np.errstate(over="ignore"):
            want32 = np.float32(want)
        if np.isinf(want32):
            return got == float(want32) or abs(got) == float(np.finfo(np.float32).max)
        want = float(want32)
    return abs(got - want) <= tol * abs(want) or abs(got - want) <= 1e-300


def _components(t) -> list:
    return list(t.types) if isinstance(t, types.BaseTuple) else [t]


GROUPS = sorted(_groups().items(), key=lambda kv: str(kv[0]))


@pytest.mark.parametrize(("argtypes", "rettype"), [g[0] for g in GROUPS],
                         ids=[f"{g[0][0]}->{g[0][1]}".replace(" ", "") for g in GROUPS])
def test_libdevice_functions_of_one_signature_match_their_references(be, argtypes, rettype):
    names = dict(GROUPS)[(argtypes, rettype)]
    comps = _components(rettype)
    all_int = all(isinstance(c, types.Integer) for c in comps)
    xs = _inputs(argtypes)
    out = np.zeros((len(names), len(comps), N), np.int64 if all_int else np.float64)
    d_out = be.to_device(out)
    be.launch_kernel(_kernel(names, len(argtypes), len(comps)), 5, 32, d_out,
                     *[be.to_device(x) for x in xs])
    out = be.to_host(d_out)
    refs = references()
    bad = []
    for j, name in enumerate(names):
        fn, how = refs[name]
        for i in range(N):
            args = [x[i].item() for x in xs]
            with np.errstate(all="ignore"):
                try:
                    want = fn(*args)
                except (ValueError, OverflowError, ZeroDivisionError):
                    want = (math.nan,) * len(comps)
            want = want if isinstance(want, tuple) else (want,)
            for c, comp in enumerate(comps):
                single = comp == types.float32
                if not _same(out[j, c, i], want[c], how, single):
                    bad.append(f"{name}{tuple(args)}[{c}] = {out[j, c, i]!r}, want {want[c]!r}")
    assert not bad, f"{len(bad)} wrong:\n" + "\n".join(bad[:40])


def test_a_libdevice_call_numba_cuda_rejects_is_rejected_with_its_reason(be):
    def array_operand(out):
        out[0] = libdevice.sad(out, out, out)

    def keywords(out):
        out[0] = libdevice.sad(x=out[0], y=out[1], z=out[2])

    out = be.to_device(np.zeros(3, np.int32))
    with pytest.raises(KernelTypingError, match=r"libdevice_sad|sad\("):
        be.launch_kernel(cuda.jit(array_operand), 1, 1, out)
    with pytest.raises(KernelTypingError,
                       match=r"kernel 'keywords' for a GPU: libdevice.sad: keyword arguments are "
                             r"not supported, yet"):
        be.launch_kernel(cuda.jit(keywords), 1, 1, out)


def test_libdevice_named_any_way_a_program_may_name_it(be):
    from numba.cuda.libdevice import umulhi

    def kernel(out, a, b):
        i = cuda.grid(1)
        out[0, i] = umulhi(a[i], b[i])
        out[1, i] = cuda.libdevice.mulhi(a[i], b[i])  # numba-cuda loads it: no import needed
        out[2, i] = libdevice.popc(a[i])

    a = np.array([-1, 3, 1 << 30, -7], np.int32)
    b = np.array([-1, 5, 16, 1 << 20], np.int32)
    out = be.to_device(np.zeros((3, 4), np.int64))
    be.launch_kernel(cuda.jit(kernel), 1, 4, out, be.to_device(a), be.to_device(b))
    got = be.to_host(out)
    assert got[0].tolist() == [_signed((_u(x, 32) * _u(y, 32)) >> 32, 32) for x, y in zip(a, b)]
    assert got[1].tolist() == [(int(x) * int(y)) >> 32 for x, y in zip(a, b)]
    assert got[2].tolist() == [32, 2, 1, 30]
