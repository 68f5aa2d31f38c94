"""bfloat16 in simulated kernels (`numba.cuda.bf16`), as numba-cuda types it and a GPU computes it.

numba-cuda's `cuda.bf16` is generated from CUDA's `cuda_bf16.h`: a type (`Bfloat16`, a Numba
`Number`), typing templates for its constructor, operators and about 150 functions, and for
each a call to a CUDA C shim compiled at link time. Numba's CPU target, which compiles the
simulator's code, has none of it. This module gives it, for the simulator only:

- **values**: a bfloat16 is its 16 bits (the high half of a float32's). Converting to float32
  or float64 is exact. Converting to bfloat16 rounds once, correctly, in the mode asked for
  (`_rn` nearest even, the default; `_rz` toward zero; `_rd` down; `_ru` up), a NaN staying a
  quiet NaN: a float64 or an integer is first rounded to float32 with round-to-odd (exact for
  the second rounding, as float32 keeps 16 more bits than bfloat16: Boldo & Melquiond,
  "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd",
  IEEE Trans. Computers 57(4), 2008), then to bfloat16. A conversion to an integer type rounds
  in its mode, takes NaN to 0 and saturates at the type's range, as CUDA's `cvt` does.
- **types**: numba-cuda's own templates, copied (`_mirror`): a call is typed by the same cases,
  so `hadd(a, 1.5)` converts 1.5 to bfloat16 and `a + 1.5` is float64, as on a GPU. They answer
  only while the simulator compiles a kernel, and for the operators only where an operand is a
  bfloat16.
- **functions** (`functions()`, by their CUDA names): +, -, * and / (and `__hadd` ... `__hdiv`,
  their `_rn` forms) are computed in float32, where the result rounds to bfloat16 exactly as a
  single rounding would (float32 has more than twice bfloat16's precision plus two bits);
  `__hfma` computes the product exactly in float64 and the sum with round-to-odd; `_sat`
  clamps to [0, 1] (a NaN to 0), `__hfma_relu` clamps below at 0 and keeps NaN; `__hmax`,
  `__hmin` return the other operand for a NaN, their `_nan` forms NaN; ordered comparisons are
  false for NaN, the `u` forms true (`!=` is `__hneu`, as in `cuda_bf16.hpp`). `hsqrt`,
  `htrunc`, `hceil`, `hfloor`, `hrint` are correctly rounded as on a GPU; `hsin`, `hexp`,
  `hrsqrt` ... are computed in float32 and rounded, where a GPU's approximations may differ in
  the last bit.

Arrays of bfloat16 are numba-cuda's arrays of `ml_dtypes.bfloat16` (arguments; `register` maps
that dtype for Numba's CPU typing too) and local and shared arrays declared with either type:
two bytes an element, read and written through the data model.

The pairs (`__nv_bfloat162`, `__hadd2` ...) and the raw storage type are not simulated: a kernel
that names one is refused, saying so (`supported`).
"""

from __future__ import annotations

import functools
import math
import operator
import sys
from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.core.datamodel import default_manager, models
from numba.core.imputils import Registry
from numba.core.typing import signature
from numba.core.typing.templates import AbstractTemplate, infer_global
from numba.extending import intrinsic

from .half import round_to_odd_single
from .libdevice import RD, RN, RU, RZ, integral
from .lowlevel import bits_of, from_bits, overload, register_jitable
from .overloads import in_simulator

# The casts and functions are lowered from a registry of this module's, installed in Numba's CPU
# target only: numba-cuda's target takes the third-party implementations of Numba's own
# registry, and its bfloat16 is CUDA C's
_LOWERING = Registry("gpukit.sim.bfloat16")

try:  # the dtype of numba-cuda's bfloat16 arrays, where ml_dtypes is installed
    import ml_dtypes

    ARRAY_DTYPE: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    ARRAY_DTYPE = None
_CANONICAL_NAN = 0x7FFF


def _bf16_type() -> Any:
    from numba.cuda.types.ext_types import bfloat16
    return bfloat16


def _is_bf16(t: Any) -> bool:
    from numba.cuda.types.ext_types import Bfloat16
    return isinstance(t, Bfloat16)


# -- bits ------------------------------------------------------------------------------------
@intrinsic
def _bits(typingctx, x):
    if not _is_bf16(x):
        return None
    return types.uint16(x), lambda context, builder, sig, args: args[0]


@intrinsic
def _from_bits(typingctx, x):
    if not isinstance(x, types.Integer) or x.bitwidth != 16:
        return None
    return _bf16_type()(x), lambda context, builder, sig, args: args[0]


@register_jitable
def _single_bits(x):
    return np.uint32(bits_of(np.float32(x)) & 0xFFFFFFFF)


@register_jitable
def _single(bits):
    return from_bits(np.int64(bits), np.float32(0.0))


@intrinsic
def _single_odd(typingctx, x):
    """float64 -> float32 with round-to-odd."""
    def codegen(context, builder, sig, args):
        return round_to_odd_single(builder, args[0])
    return types.float32(types.float64), codegen


@register_jitable
def to_f32(a):
    return _single(np.uint32(_bits(a)) << np.uint32(16))


@register_jitable
def _round(bits, mode):
    """float32 bits (uint32) rounded to bfloat16 bits in `mode`."""
    if (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):  # NaN: quiet, its sign kept
        return np.uint16((bits >> np.uint32(16)) | np.uint32(0x40))
    hi = bits >> np.uint32(16)
    lo = bits & np.uint32(0xFFFF)
    negative = (bits >> np.uint32(31)) != 0
    up = False
    if mode == RN:
        up = lo > 0x8000 or (lo == 0x8000 and (hi & np.uint32(1)) != 0)
    elif mode == RU:
        up = lo != 0 and not negative
    elif mode == RD:
        up = lo != 0 and negative
    if up:
        hi += np.uint32(1)
    return np.uint16(hi)  # (a magnitude past the largest finite carries into infinity)


@register_jitable
def from_f32(x, mode):
    return _from_bits(_round(_single_bits(np.float32(x)), mode))


@register_jitable
def from_f64(x, mode):
    return from_f32(_single_odd(np.float64(x)), mode)


@register_jitable
def from_int(x, mode):
    """An integer's bfloat16: its top 24 bits, the rest kept as a sticky last bit (rounding to
    odd at float32's precision), then rounded in `mode`."""
    negative = x < 0
    m = np.uint64(-np.int64(x)) if negative else np.uint64(x)
    length = 0
    while length < 64 and (m >> np.uint64(length)) != 0:
        length += 1
    if length > 24:
        shift = np.uint64(length - 24)
        top = m >> shift
        if (m & ((np.uint64(1) << shift) - np.uint64(1))) != 0:
            top |= np.uint64(1)
        single = np.float32(math.ldexp(np.float64(top), length - 24))  # exact
    else:
        single = np.float32(m)
    return from_f32(-single if negative else single, mode)


@register_jitable
def _rounded(a, mode):
    """A bfloat16 rounded to an integral float64 in `mode` (NaN: 0)."""
    v = np.float64(to_f32(a))
    return np.float64(0.0) if np.isnan(v) else integral(v, mode)


def _to_int(dtype: type, mode: int):
    """bfloat16 -> `dtype` in `mode`, saturating at its range (as `cvt` does)."""
    info = np.iinfo(dtype)
    low, high, smallest, largest = float(info.min), float(info.max), dtype(info.min), \
        dtype(info.max)

    def impl(a):
        v = _rounded(a, mode)
        if v <= low:
            return smallest
        if v >= high:  # (float(max) of a 64-bit type is 2**63 or 2**64: past it)
            return largest
        return dtype(v)
    return impl


def convert(x, mode):
    """Any number as a bfloat16, rounded in `mode` (compiled code only)."""


@overload(convert, jit_options={"forceinline": True})
def _ol_convert(x, mode):
    if _is_bf16(x):
        return lambda x, mode: x
    if isinstance(x, types.Float) and x.bitwidth == 64:
        return lambda x, mode: from_f64(x, mode)
    if isinstance(x, types.Float):
        return lambda x, mode: from_f32(np.float32(x), mode)
    if isinstance(x, types.Boolean):
        return lambda x, mode: from_int(np.int64(x), mode)
    if isinstance(x, types.Integer):
        return lambda x, mode: from_int(x, mode)
    return None


# -- arithmetic ---------------------------------------------------------------------------------
@register_jitable
def _nan():
    return _from_bits(np.uint16(_CANONICAL_NAN))


@register_jitable
def _b(x):
    return from_f32(x, RN)


@register_jitable
def _sat(x):
    """Clamped to [0, 1]; NaN to +0."""
    if np.isnan(x) or x <= 0:
        return np.float32(0.0)
    return min(x, np.float32(1.0))


@register_jitable
def _fma(a, b, c):
    """a * b + c rounded once: the product is exact in float64 (8 + 8 bits), and the sum is
    rounded to odd there (TwoSum finds what it dropped), then to float32 and bfloat16."""
    p = np.float64(to_f32(a)) * np.float64(to_f32(b))
    q = np.float64(to_f32(c))
    s = p + q
    if np.isfinite(s):
        v = s - p
        err = (p - (s - v)) + (q - v)
        if err != 0 and (bits_of(s) & 1) == 0:
            s = np.nextafter(s, np.inf if err > 0 else -np.inf)
    return s


@register_jitable
def _fma_rounded(a, b, c):
    return from_f64(_fma(a, b, c), RN)


@register_jitable
def _pick(a, b, a_wins, nan_wins):
    """__hmax / __hmin (and their _nan forms): +0 is above -0."""
    fa, fb = to_f32(a), to_f32(b)
    if np.isnan(fa) or np.isnan(fb):
        if nan_wins or (np.isnan(fa) and np.isnan(fb)):
            return _nan()
        return b if np.isnan(fa) else a
    if fa == fb:  # equal, or +0 and -0
        return a if a_wins == (_bits(a) < _bits(b)) else b
    return a if a_wins == (fa > fb) else b


@register_jitable
def _isinf(a):
    f = to_f32(a)
    if np.isinf(f):
        return np.int32(-1) if f < 0 else np.int32(1)
    return np.int32(0)


@register_jitable
def _relu(a, b, c):
    r = _fma_rounded(a, b, c)
    f = to_f32(r)
    if np.isnan(f):
        return _nan()
    return _b(np.float32(0.0)) if f < 0 else r


def _unary(f):
    f = register_jitable(f) if isinstance(f, type(_unary)) else f  # a numpy ufunc as it is
    return lambda a: _b(np.float32(f(to_f32(a))))


def _binary(f):
    return lambda a, b: _b(np.float32(f(to_f32(a), to_f32(b))))


def _compare(f, unordered):
    def impl(a, b):
        fa, fb = to_f32(a), to_f32(b)
        if np.isnan(fa) or np.isnan(fb):
            return unordered
        return f(fa, fb)
    return impl


def _from(mode):
    return lambda x: convert(x, mode)


def _int_names() -> dict[str, Any]:
    """The integer conversions, by CUDA name: `__bfloat162int_rn`, `__int2bfloat16_rz` ..."""
    out: dict[str, Any] = {"__bfloat162char_rz": _to_int(np.int8, RZ),
                           "__bfloat162uchar_rz": _to_int(np.uint8, RZ)}
    for c_name, dtype in (("short", np.int16), ("ushort", np.uint16), ("int", np.int32),
                          ("uint", np.uint32), ("ll", np.int64), ("ull", np.uint64)):
        for suffix, mode in (("rn", RN), ("rz", RZ), ("rd", RD), ("ru", RU)):
            out[f"__bfloat162{c_name}_{suffix}"] = _to_int(dtype, mode)
            out[f"__{c_name}2bfloat16_{suffix}"] = _from(mode)
    return out


_LE, _LT = operator.le, operator.lt
_GE, _GT = operator.ge, operator.gt
_EQ, _NE = operator.eq, operator.ne


@functools.cache
def functions() -> dict[Any, Any]:
    """The CPU implementation of every simulated function, by its CUDA name (operators by
    their `operator` function)."""
    # (np.divide: IEEE's division by zero, where Python's `/` raises)
    add, sub, mul, div = (_binary(f) for f in (operator.add, operator.sub, operator.mul,
                                               np.divide))
    table: dict[Any, Any] = {
        # arithmetic
        "__hadd": add, "__hsub": sub, "__hmul": mul, "__hdiv": div,
        "__hadd_rn": add, "__hsub_rn": sub, "__hmul_rn": mul,
        "__hadd_sat": lambda a, b: _b(_sat(to_f32(a) + to_f32(b))),
        "__hsub_sat": lambda a, b: _b(_sat(to_f32(a) - to_f32(b))),
        "__hmul_sat": lambda a, b: _b(_sat(to_f32(a) * to_f32(b))),
        "__hfma": _fma_rounded,
        "__hfma_sat": lambda a, b, c: _b(_sat(to_f32(_fma_rounded(a, b, c)))),
        "__hfma_relu": _relu,
        "__hneg": lambda a: _from_bits(np.uint16(_bits(a) ^ np.uint16(0x8000))),
        "__habs": lambda a: _from_bits(np.uint16(_bits(a) & np.uint16(0x7FFF))),
        # comparisons
        "__heq": _compare(_EQ, False), "__hne": _compare(_NE, False),
        "__hge": _compare(_GE, False), "__hgt": _compare(_GT, False),
        "__hle": _compare(_LE, False), "__hlt": _compare(_LT, False),
        "__hequ": _compare(_EQ, True), "__hneu": _compare(_NE, True),
        "__hgeu": _compare(_GE, True), "__hgtu": _compare(_GT, True),
        "__hleu": _compare(_LE, True), "__hltu": _compare(_LT, True),
        "__hmax": lambda a, b: _pick(a, b, True, False),
        "__hmin": lambda a, b: _pick(a, b, False, False),
        "__hmax_nan": lambda a, b: _pick(a, b, True, True),
        "__hmin_nan": lambda a, b: _pick(a, b, False, True),
        "__hisnan": lambda a: np.isnan(to_f32(a)),
        "__hisinf": _isinf,
        # conversions
        "__float2bfloat16": _from(RN), "__double2bfloat16": _from(RN),
        "__float2bfloat16_rn": _from(RN), "__float2bfloat16_rz": _from(RZ),
        "__float2bfloat16_rd": _from(RD), "__float2bfloat16_ru": _from(RU),
        "__bfloat162float": lambda a: to_f32(a),
        "__bfloat16_as_short": lambda a: np.int16(_bits(a)),
        "__bfloat16_as_ushort": lambda a: _bits(a),
        "__short_as_bfloat16": lambda x: _from_bits(np.uint16(x)),
        "__ushort_as_bfloat16": lambda x: _from_bits(np.uint16(x)),
        # math (correctly rounded: trunc, ceil, floor, rint, sqrt; the rest float32's, rounded)
        "htrunc": _unary(np.trunc), "hceil": _unary(np.ceil), "hfloor": _unary(np.floor),
        "hrint": _unary(np.rint), "hsqrt": _unary(np.sqrt),
        "hrsqrt": _unary(lambda x: np.divide(np.float32(1.0), np.sqrt(x))),
        "hrcp": _unary(lambda x: np.divide(np.float32(1.0), x)),
        "hlog": _unary(np.log), "hlog2": _unary(np.log2), "hlog10": _unary(np.log10),
        "hcos": _unary(np.cos), "hsin": _unary(np.sin), "htanh": _unary(np.tanh),
        "htanh_approx": _unary(np.tanh), "hexp": _unary(np.exp), "hexp2": _unary(np.exp2),
        "hexp10": _unary(lambda x: np.power(np.float32(10.0), x)),
        # operators: as __hadd ..., and `!=` as __hneu
        operator.add: add, operator.iadd: add, operator.sub: sub, operator.isub: sub,
        operator.mul: mul, operator.imul: mul, operator.truediv: div,
        operator.itruediv: div, operator.pos: lambda a: a,
        operator.neg: lambda a: _from_bits(np.uint16(_bits(a) ^ np.uint16(0x8000))),
        operator.eq: _compare(_EQ, False), operator.ne: _compare(_NE, True),
        operator.ge: _compare(_GE, False), operator.gt: _compare(_GT, False),
        operator.le: _compare(_LE, False), operator.lt: _compare(_LT, False),
        **_int_names(),
    }
    return {name: register_jitable(impl) for name, impl in table.items()}


# -- Numba's CPU target ----------------------------------------------------------------------
def _generated() -> Any:
    return sys.modules.get("numba.cuda._internal.cuda_bf16")


def names_bfloat16(dtype: Any) -> bool:
    """Whether an array declaration's `dtype` is bfloat16: numba-cuda's type, or ml_dtypes'
    (its scalar type or its dtype)."""
    if _is_bf16(dtype):
        return True
    if ARRAY_DTYPE is None or not isinstance(dtype, (type, np.dtype)):
        return False
    try:
        return np.dtype(dtype) == ARRAY_DTYPE
    except TypeError:
        return False


def supported(obj: Any) -> bool | None:
    """Whether `obj` (a name a kernel uses) is numba-cuda's bfloat16 type or one of its bfloat16
    functions: True where the simulator computes it, False where it does not (the pairs, the
    raw storage type), None where it is not numba-cuda's bfloat16 at all."""
    if obj is _bf16_type():  # (cuda.bfloat16 names it without loading cuda.bf16)
        register()
        return True
    module = _generated()
    if module is None:
        return None
    name = getattr(obj, "__name__", None)
    if getattr(obj, "__module__", None) != module.__name__ or name is None:
        return None
    register()
    return name in functions()


class _Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, ir.IntType(16))


def _cast(impl):
    def lower(context, builder, fromty, toty, val):
        return context.compile_internal(builder, impl, signature(toty, fromty), [val])
    return lower


def _to(t: types.Type):
    if isinstance(t, types.Integer):
        return register_jitable(_to_int(np.dtype(str(t)).type, RZ))
    if t == types.float16:
        return register_jitable(lambda a: np.float16(to_f32(a)))
    if t == types.float64:
        return register_jitable(lambda a: np.float64(to_f32(a)))
    return register_jitable(lambda a: to_f32(a))


def _mirror(key: Any, template: type, operator_key: bool) -> None:
    """numba-cuda's template `template` of `key` for Numba's CPU target: the same cases,
    answering while the simulator compiles (for an operator, only where an operand is a
    bfloat16), ahead of Numba's own templates (`target: cpu`)."""
    from numba.core.typing.templates import ConcreteTemplate

    cases = list(template.cases)

    def generic(self, args, kws):
        if kws or not in_simulator(self.context):
            return None
        if operator_key and not any(_is_bf16(a) for a in args):
            return None
        return self._select(cases, args, kws)

    mirror = type(f"Bfloat16_{getattr(key, '__name__', 'op')}", (AbstractTemplate,), {
        "key": key, "generic": generic, "_select": ConcreteTemplate._select,
        "metadata": {"target": "cpu"}})
    infer_global(key)(mirror)


@functools.cache
def register() -> None:
    """Teach Numba's CPU target bfloat16 (once, when a kernel first names it or is given an
    array of it): its layout, casts, functions, and the type of an array of `ml_dtypes.bfloat16`
    (numba-cuda's `numpy_support` maps that dtype to its bfloat16 as well)."""
    import numba.cuda._internal.cuda_bf16  # noqa: F401 - numba-cuda's typing templates
    from numba.cuda.types.ext_types import Bfloat16
    from numba.np import numpy_support

    module = _generated()
    default_manager.register(Bfloat16, _Model)
    if ARRAY_DTYPE is not None:
        numpy_support.FROM_DTYPE[ARRAY_DTYPE] = _bf16_type()
    bf16 = _bf16_type()
    for source in (types.Float, types.Integer, types.Boolean):
        _LOWERING.lower_cast(source, Bfloat16)(_cast(register_jitable(lambda x: convert(x, RN))))
    for target in (types.float16, types.float32, types.float64, *types.integer_domain):
        _LOWERING.lower_cast(Bfloat16, target)(_cast(_to(target)))
    table = functions()
    for key, ftype in module.typing_registry.globals:
        name = key if key in table else getattr(key, "__name__", None)
        if name not in table:
            continue
        operator_key = not isinstance(name, str)
        for template in ftype.templates:
            _mirror(key, template, operator_key)
            for case in template.cases:
                if operator_key and not all(_is_bf16(a) for a in case.args):
                    continue  # Numba's own lowering (of the case's converted operands)
                impl = table[name]

                def lower(context, builder, sig, args, impl=impl):
                    return context.compile_internal(builder, impl, sig, args)
                _LOWERING.lower(key, *case.args)(lower)
    from numba.core.registry import cpu_target
    context = cpu_target.target_context
    context.refresh()  # (a registry installed before the context's first refresh hides Numba's)
    context.install_registry(_LOWERING)
    _math(bf16)


# numba-cuda's `math` functions of a bfloat16 (numba/cuda/bf16.py), and what computes them
_MATH = {"trunc": "htrunc", "ceil": "hceil", "floor": "hfloor", "sqrt": "hsqrt", "log": "hlog",
         "log10": "hlog10", "cos": "hcos", "sin": "hsin", "tanh": "htanh", "exp": "hexp",
         "exp2": "hexp2"}


def _math(bf16: Any) -> None:
    """`math.f(bfloat16)`: the simulator's `math_f` (gpukit.sim.cudamath) leaves a bfloat16
    argument to this overload, which computes it as numba-cuda's `cuda.bf16` overload does."""
    from numba.core.extending import overload

    from .cudamath import stubs
    table = functions()
    for name, fn in _MATH.items():
        stub = stubs().get(name)
        if stub is None:
            continue
        overload(stub, jit_options={"forceinline": True})(_math_overload(table[fn]))


def _math_overload(impl: Any) -> Any:
    def ol(a):
        return (lambda a: impl(a)) if _is_bf16(a) else None
    return ol
