"""Division, `min`/`max` and shifts in kernels: checked, and with the results a GPU gives.

The transform replaces `a // b`, `a % b` and `divmod(a, b)` with `floordiv(_g_c, a, b, site)`,
`mod(...)` and `divmod_(...)`: an integer zero divisor is an error while the check is on (on a
GPU numba-cuda makes the result 0 and runs on; with the check off the simulator does the same),
and a kernel compiled with `debug=True` gets `py_truediv` and friends, numba-cuda's Python error
model (any zero divisor raises ZeroDivisionError, floats too). `a << b` and `a >> b` become
`shl(a, b)` and `shr(a, b)` (see the end of this module).

Floats are computed as a GPU computes them where Numba's CPU target would differ. Measured on an
NVIDIA H200 with numba-cuda 0.30.4 over every pair of edge values (`benchmarks/gpu_semantics.py`,
recorded in benchmarks/GPU.md and checked by tests/test_sim_semantics.py):

- `%`, `//` and `divmod` of floats: Numba lowers them with LLVM's `frem`, which a CPU computes as
  C's `fmod` (exactly) and NVVM as `x - trunc(x / y) * y`, the multiply and subtract fused into
  one fma (numba-cuda leaves NVVM's `-fma=1` on), with no case for an infinite divisor. So on a
  GPU `5.0 % math.inf` is NaN (5.0 on a CPU) and `1.0 % 1e-300` is 7.1e-17 (exactly 8.96e-301).
  Numba's sign and floor corrections around `frem` are the same on both, and so is a zero
  divisor (no `frem` runs). `math.fmod` is libdevice's, exact as on a CPU (gpukit.sim.cudamath).
- `min` and `max` of two float32/float64 values: numba-cuda calls libdevice's fmin/fmax, which
  return the other operand where one is NaN and order -0.0 below +0.0; Python's `min(nan, 1.0)`
  is nan. Three or more arguments, or an integer with a float, keep Python's rules on a GPU too.
  The transform replaces a two-argument `min(a, b)` with `min_(a, b)` (and `max`).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numba import types

from . import layout as L
from .access import fail
from .intrinsics import fma
from .lowlevel import overload, register_jitable


# -- floats as a GPU divides them ----------------------------------------------------------------
@register_jitable
def _frem(x, y):
    return fma(-np.trunc(x / y), y, x)  # NVVM's frem: rounded once, no infinite-divisor case


@register_jitable
def _float_divmod(x, y, one, half, unsigned):
    """Numba's float divmod (real_divmod_func_body in numba/cpython/numbers.py) around `_frem`,
    for a nonzero `y`; `one` and `half` have the operands' type, so float32 stays float32.

    `unsigned`: the dividend was an unsigned integer or a boolean. LLVM's `frem` keeps the
    dividend's sign, so for a dividend it knows is not negative NVVM folds Numba's `rem < 0` to
    False, and the sign correction never runs, though its fma-based remainder can come out
    negative: on an H200 `np.uint32(131073) % 0.1` is -7.3e-12 (0.0999999999927 by Python's
    rule). NVVM may prove other dividends not negative too (`abs(x)`, a thread index, by its
    range), which the simulator does not follow: those keep the correction here."""
    rem = _frem(x, y)
    div = (x - rem) / y
    if rem != 0:  # nonzero or NaN: the remainder takes the divisor's sign
        if (y < 0) != (rem < 0 and not unsigned):
            div = div - one
            rem = rem + y
    else:
        rem = -abs(rem) if y < 0 else abs(rem)
    if div != 0 and not np.isnan(div):
        quotient = np.floor(div)
        if div - quotient > half:
            quotient = quotient + one
    else:
        div = div * div
        quotient = div * x / y
    return quotient, rem


@register_jitable
def _first(pair):
    return pair[0]


@register_jitable
def _second(pair):
    return pair[1]


@register_jitable
def _both(pair):
    return pair


def _float_type(op: Any, a: types.Type, b: types.Type) -> Any:
    """np.float32 or np.float64 where Numba computes `op(a, b)` in that type, else None."""
    if not all(isinstance(t, (types.Number, types.Boolean)) for t in (a, b)):
        return None
    from numba.core.registry import cpu_target  # lazy: the typing context exists once loaded
    try:
        sig = cpu_target.typing_context.resolve_function_type(op, (a, b), {})
    except Exception:  # noqa: BLE001 - untypable: Numba reports it where the kernel uses it
        return None
    result = getattr(sig, "return_type", None)
    if isinstance(result, types.BaseTuple):  # divmod: (quotient, remainder)
        result = result.types[0]
    return {types.float32: np.float32, types.float64: np.float64}.get(result)


def gpu_division(op: Any, a: types.Type, b: types.Type) -> Any:
    """For `op` (floordiv, mod or divmod) of Numba types `a` and `b`: a jitted `f(x, y)` that
    computes it as a GPU does, or `op` itself where the CPU agrees (integers, float16)."""
    cast = _float_type(op, a, b) if op in (operator.floordiv, operator.mod, divmod) else None
    if cast is None:  # true division, integers, float16: the CPU's result is the GPU's
        return op
    one, half = cast(1.0), cast(0.5)
    pick = {operator.floordiv: _first, operator.mod: _second}.get(op, _both)
    unsigned = isinstance(a, types.Boolean) or (isinstance(a, types.Integer) and not a.signed)

    @register_jitable
    def f(x, y):
        return op(cast(x), cast(y)) if y == 0 else pick(_float_divmod(cast(x), cast(y), one,
                                                                      half, unsigned))
    return f


# -- the transform's division helpers ------------------------------------------------------------
def floordiv(c, a, b, site):
    """a // b (integers: a zero divisor is an error while the check is on)."""


def mod(c, a, b, site):
    """a % b."""


def divmod_(c, a, b, site):
    """divmod(a, b)."""


def _is_int(t) -> bool:
    return isinstance(t, (types.Integer, types.Boolean, types.IntegerLiteral, types.BooleanLiteral))


@register_jitable
def _zero(c, site, op):
    if c[L.CHECKS] & L.CHECK_DIVISION:
        fail(c, L.E_DIVZERO, site, op, 0, 0, 0, 0)


def _checked(op: Any, code: int) -> Any:
    def ol(c, a, b, site):
        f = gpu_division(op, a, b)
        if not (_is_int(a) and _is_int(b)):
            return lambda c, a, b, site: f(a, b)

        def impl(c, a, b, site):
            if b == 0:
                _zero(c, site, code)
            return f(a, b)
        return impl
    return ol


def py_truediv(c, a, b, site):
    """a / b in a kernel compiled with debug=True: numba-cuda compiles it under Python's error
    model, so a zero divisor raises ZeroDivisionError (floats too), whatever the checks."""


def py_floordiv(c, a, b, site):
    """a // b in a kernel compiled with debug=True (see py_truediv)."""


def py_mod(c, a, b, site):
    """a % b in a kernel compiled with debug=True (see py_truediv)."""


def py_divmod(c, a, b, site):
    """divmod(a, b) in a kernel compiled with debug=True (see py_truediv)."""


@register_jitable
def _raise_zero(c, site, op):
    fail(c, L.E_DIVZERO, site, op, 1, 0, 0, 0)  # B=1: Python's error model (debug=True)


def _python_error_model(op: Any, code: int) -> Any:
    def ol(c, a, b, site):
        if not all(isinstance(t, (types.Number, types.Boolean)) for t in (a, b)):
            return lambda c, a, b, site: op(a, b)  # arrays: whole-array arithmetic, as ever
        f = gpu_division(op, a, b)

        def impl(c, a, b, site):
            if b == 0:
                _raise_zero(c, site, code)
            return f(a, b)
        return impl
    return ol


for _stub, _op, _code in ((floordiv, operator.floordiv, 0), (mod, operator.mod, 1),
                          (divmod_, divmod, 2)):
    overload(_stub, jit_options={'forceinline': True})(_checked(_op, _code))
for _stub, _op, _code in ((py_truediv, operator.truediv, 3), (py_floordiv, operator.floordiv, 0),
                          (py_mod, operator.mod, 1), (py_divmod, divmod, 2)):
    overload(_stub, jit_options={'forceinline': True})(_python_error_model(_op, _code))


# -- min and max: libdevice's fmin and fmax ------------------------------------------------------
@register_jitable
def fmax(a, b):
    """libdevice's fmax."""
    if np.isnan(a):
        return b
    if np.isnan(b):
        return a
    if a == b:  # equal: +0.0 above -0.0
        return b if np.signbit(a) else a
    return max(b, a)


@register_jitable
def fmin(a, b):
    """libdevice's fmin."""
    if np.isnan(a):
        return b
    if np.isnan(b):
        return a
    if a == b:
        return a if np.signbit(a) else b
    return min(b, a)


def min_(a, b):
    """min(a, b)."""


def max_(a, b):
    """max(a, b)."""


def gpu_min_max(builtin: Any, a: types.Type, b: types.Type) -> Any:
    """For `builtin` (min or max) of Numba types `a` and `b`: a jitted `f(x, y)` that computes
    it as a GPU does, or `builtin` itself where the CPU agrees."""
    if not all(isinstance(t, types.Float) and t.bitwidth in (32, 64) for t in (a, b)):
        return builtin
    cast = np.float32 if a == b == types.float32 else np.float64
    pick = fmax if builtin is max else fmin

    @register_jitable
    def f(x, y):
        return pick(cast(x), cast(y))
    return f


def _min_max(builtin: Any) -> Any:
    def ol(a, b):
        f = gpu_min_max(builtin, a, b)
        return lambda a, b: f(a, b)
    return ol


overload(max_, jit_options={'forceinline': True})(_min_max(max))
overload(min_, jit_options={'forceinline': True})(_min_max(min))


# -- shifts: a count past the width shifts everything out ----------------------------------------
# Numba shifts in 64 bits (the result's type is int64 or uint64, by the left operand's sign) and
# leaves a count outside 0..63 to LLVM, for which it is undefined: x86 takes the count modulo 64
# (`1 << 64 == 1`), a GPU's shl and shr take it as unsigned and shift everything out (`1 << 64`,
# `1 << -1` and `5 >> 70` are 0, `-8 >> 64` is -1). Measured on an H200 (gpu_semantics.py).
def shl(a, b):
    """a << b."""


def shr(a, b):
    """a >> b."""


def _shift(right: bool) -> Any:
    def ol(a, b):
        if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
            return (lambda a, b: a >> b) if right else (lambda a, b: a << b)
        fill = right and a.signed  # an arithmetic shift out fills with the sign bit

        def impl(a, b):
            if b < 0 or b >= 64:
                z = a << 0  # Numba's result type, which only the left operand decides
                return z >> 63 if fill else z - z
            return a >> b if right else a << b
        return impl
    return ol


overload(shl, jit_options={'forceinline': True})(_shift(False))
overload(shr, jit_options={'forceinline': True})(_shift(True))


# -- negation of an int16: NVVM widens first -------------------------------------------------------
# Numba negates an integer in its own width and then widens the result to int64 ("negate before
# upcasting"), so on a CPU `-x` and `abs(x)` of the int16 -32768 are -32768, as for int8's -128
# and int32's -2**31. On an H200 they are 32768 for an int16 (NVVM keeps an int16 in a 32-bit
# register), and still wrap for 8 and 32 bits (gpu_semantics.py, unary family). The transform
# replaces `-x` and `abs(x)` with these. (numba-cuda types `abs()` of an int16 as an int16; the
# simulator's CPU code, like Numba's, as an int64, which holds the GPU's 32768.)
def neg(x):
    """-x."""


def abs_(x):
    """abs(x)."""


def _int16(x: types.Type) -> bool:
    return isinstance(x, types.Integer) and x.signed and x.bitwidth == 16


@overload(neg, jit_options={'forceinline': True})
def _ol_neg(x):
    return (lambda x: -np.int64(x)) if _int16(x) else (lambda x: -x)


@overload(abs_, jit_options={'forceinline': True})
def _ol_abs(x):
    return (lambda x: abs(np.int64(x))) if _int16(x) else (lambda x: abs(x))
