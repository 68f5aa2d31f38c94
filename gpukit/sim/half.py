"""float16 (half precision) in simulated kernels, as numba-cuda types and computes it.

Numba's CPU target, which compiles the simulator's code, has no float16: no data model, no
arithmetic typing. This module gives it what numba-cuda gives the CUDA target, for the simulator
only:

- **values**: a float16 is an LLVM `half`. On x86 LLVM computes `half` arithmetic, comparisons
  and conversions from float32 and integers with the F16C instructions (so a CPU without F16C
  keeps float16 refused, in words: `supported()`), and each result is rounded to half precision,
  as a GPU's `add.f16` rounds it. Only float64 -> float16 has no instruction: LLVM calls
  compiler-rt's `__truncdfhf2`, which Numba does not link, so this module gives Numba's JIT one:
  `_double_to_half`, which rounds once, correctly: to float32 with round-to-odd, then to half
  (an exact technique: float32 keeps at least twice half's precision plus two bits; Boldo &
  Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
  odd", IEEE Trans. Computers 57(4), 2008).
- **types**: `half <op> half` is half for + - * / (and in place), unary - + and abs(), and a
  comparison is bool, exactly where numba-cuda's templates say so
  (`numba.cuda._internal.cuda_fp16`): both operands half, or the other one convertible to half
  exactly, by promotion or safely (an int8). Everything else falls to Numba's own rules, which
  numba-cuda shares: half * float32 is float32, half + 1 is float64. `float(h)` stays half.
- **cuda.fp16**: each function of numba-cuda's `cuda.fp16` is computed in float32 and rounded to
  half. A GPU computes +, -, *, /, sqrt, rint, floor, ceil, trunc, abs, neg, max, min and
  comparisons exactly this way. `hfma` is computed in float64, where the product is exact and
  the sum rounds once before the half rounding (it can differ from a fused result in the last
  bit only where that first rounding lands on a tie); a GPU's `hsin`, `hexp` ... are
  approximations that may differ from the correctly rounded value here in the last bit.

The typing templates apply only while the simulator compiles a kernel (`overloads.in_simulator`):
`numba.njit` code keeps Numba's own rules.
"""

from __future__ import annotations

import functools
import math
import operator
import platform

import numpy as np
from llvmlite import ir
from numba.core import boxing, types
from numba.core.datamodel import default_manager, models
from numba.core.pythonapi import NativeValue, _boxers, _unboxers
from numba.core.typeconv import Conversion
from numba.core.typeconv.rules import default_type_manager as _CONVERSIONS
from numba.core.typing import signature
from numba.core.typing.templates import AbstractTemplate, infer_global

from .lowlevel import register_jitable
from .overloads import in_simulator, overload_in_simulator

_ARITHMETIC = (operator.add, operator.iadd, operator.sub, operator.isub, operator.mul,
               operator.imul)
_DIVISION = (operator.truediv, operator.itruediv)
_COMPARISONS = (operator.eq, operator.ne, operator.ge, operator.gt, operator.le, operator.lt)
_UNARY = (abs, operator.abs, operator.neg, operator.pos)


@functools.cache
def supported() -> bool:
    """Whether this CPU computes half precision in hardware (F16C on x86; ARMv8 has it)."""
    import llvmlite.binding as llvm
    if platform.machine().lower() in ("aarch64", "arm64"):
        return True
    return "+f16c" in llvm.get_host_cpu_features().flatten().split(",")


# -- values ----------------------------------------------------------------------------------
class _HalfModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, ir.HalfType())


def round_to_odd_single(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """A float64 rounded to float32 with round-to-odd: a second rounding of it, to any format
    at least two bits narrower, is the correct single rounding of `value`."""
    f32, i32 = ir.FloatType(), ir.IntType(32)
    single = builder.fptrunc(value, f32)  # round to nearest even
    bits = builder.bitcast(single, i32)
    back = builder.fpext(single, ir.DoubleType())
    fabs = builder.module.declare_intrinsic("llvm.fabs", [ir.DoubleType()])
    inexact = builder.fcmp_ordered("one", back, value)  # false for NaN
    even = builder.icmp_unsigned("==", builder.and_(bits, i32(1)), i32(0))
    # round to odd: an inexact result with an even last bit moves to its odd neighbour, toward
    # the exact value (bits are sign and magnitude: -1 shrinks the magnitude, +1 grows it)
    shrink = builder.fcmp_ordered(">", builder.call(fabs, [back]), builder.call(fabs, [value]))
    stepped = builder.select(shrink, builder.sub(bits, i32(1)), builder.add(bits, i32(1)))
    odd = builder.select(builder.and_(inexact, even), stepped, bits)
    return builder.bitcast(odd, f32)


def _double_to_half(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    return builder.fptrunc(round_to_odd_single(builder, value), ir.HalfType())


_ENGINES: list = []  # the compiled conversion's engine, kept alive


def _provide_truncdfhf2() -> None:
    """Give Numba's JIT the routine LLVM calls for float64 -> float16 (`__truncdfhf2`, from a
    compiler runtime Numba does not link): `_double_to_half`, compiled for this CPU."""
    import llvmlite.binding as llvm
    module = ir.Module("gpukit.sim.half")
    func = ir.Function(module, ir.FunctionType(ir.HalfType(), [ir.DoubleType()]),
                       "gpukit_truncdfhf2")
    builder = ir.IRBuilder(func.append_basic_block())
    builder.ret(_double_to_half(builder, func.args[0]))
    llvm.initialize_native_target()  # as Numba does (both idempotent)
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten())
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), machine)
    engine.finalize_object()
    _ENGINES.append(engine)
    llvm.add_symbol("__truncdfhf2", engine.get_function_address("gpukit_truncdfhf2"))


def _with_half(convert, half):
    """Numba's boxing or unboxing of floats (`convert`), with `half` for float16."""
    return lambda typ, value, c: (half if typ == types.float16 else convert)(typ, value, c)


def _unbox_half(typ, obj, c):  # a Python float or np.float16 passed for a float16 parameter
    number = c.pyapi.number_float(obj)
    double = c.pyapi.float_as_double(number)
    c.pyapi.decref(number)
    half = c.builder.fptrunc(double, ir.HalfType())  # calls __truncdfhf2 (above)
    return NativeValue(half, is_error=c.pyapi.c_api_error())


def _box_half(typ, val, c):
    return c.pyapi.float_from_double(c.builder.fpext(val, c.pyapi.double))


# -- types -----------------------------------------------------------------------------------
def _half_operands(args: tuple) -> bool:
    """numba-cuda's rule: one operand half, the other half or convertible to it exactly, by
    promotion or safely."""
    if len(args) != 2 or types.float16 not in args:
        return False
    other = args[1] if args[0] == types.float16 else args[0]
    conversion = _CONVERSIONS.check_compatible(other, types.float16)
    return conversion in (Conversion.exact, Conversion.promote, Conversion.safe)


def _template(op, result) -> type:
    arity = 1 if op in _UNARY else 2

    def generic(self, args, kws):
        if kws or not in_simulator(self.context):
            return None
        if arity == 1:
            ok = len(args) == 1 and args[0] == types.float16
        else:
            ok = _half_operands(args)
        if ok:
            return signature(result, *[types.float16] * arity)
        return None

    name = f"Half_{getattr(op, '__name__', 'op')}"
    return type(name, (AbstractTemplate,), {"key": op, "generic": generic,
                                            "metadata": {"target": "cpu"}})


def _half_divide(a, b):
    if _half_operands((a, b)):  # half / half rounds the float32 quotient: exact
        return lambda a, b: np.float16(np.float32(a) / np.float32(b))  # (24 >= 2 * 11 + 2)
    return None


def _half_float(h):
    if h == types.float16:
        return lambda h: h  # numba-cuda: float() of a half stays half
    return None


def _register() -> None:
    assert boxing.box_float  # Numba's float boxing, registered when numba.core.boxing loads
    handler = default_manager._handlers[types.Float]  # the Float model Numba registered
    default_manager._handlers[types.Float] = (
        lambda dmm, t: _HalfModel(dmm, t) if t.bitwidth == 16 else handler(dmm, t))
    _provide_truncdfhf2()
    for registry, half in ((_unboxers, _unbox_half), (_boxers, _box_half)):
        registry.functions[types.Float] = _with_half(registry.functions[types.Float], half)
    # Numba's real division tests the divisor in ways that know no half, and a half stays
    # half under float(): both computed by functions, so that no lowering is registered
    # (numba-cuda's target takes third-party lowering from Numba's registry, and its half
    # is another LLVM type)
    for op in _DIVISION:
        overload_in_simulator(op, _half_divide)
    overload_in_simulator(float, _half_float)
    for op in _ARITHMETIC + _UNARY:
        infer_global(op)(_template(op, types.float16))
    for op in _COMPARISONS:
        infer_global(op)(_template(op, types.boolean))


if supported():
    _register()


# -- cuda.fp16 -------------------------------------------------------------------------------
@register_jitable
def _h(x):
    return np.float16(x)


@register_jitable
def _f(x):
    return np.float32(x)


@register_jitable
def _either(a, b, a_wins):  # __hmax and __hmin: the other operand where one is NaN
    if np.isnan(_f(a)):
        return b
    if np.isnan(_f(b)):
        return a
    return a if a_wins else b


# name -> its CPU function (compiled into kernels that call cuda.fp16.<name>)
FP16 = {name: register_jitable(fn) for name, fn in {
    "hadd": lambda a, b: _h(_f(a) + _f(b)), "hsub": lambda a, b: _h(_f(a) - _f(b)),
    "hmul": lambda a, b: _h(_f(a) * _f(b)), "hdiv": lambda a, b: _h(_f(a) / _f(b)),
    "hfma": lambda a, b, c: _h(np.float64(a) * np.float64(b) + np.float64(c)),
    "hneg": lambda a: _h(-_f(a)), "habs": lambda a: _h(abs(_f(a))),
    "heq": lambda a, b: _f(a) == _f(b), "hne": lambda a, b: _f(a) != _f(b),
    "hge": lambda a, b: _f(a) >= _f(b), "hgt": lambda a, b: _f(a) > _f(b),
    "hle": lambda a, b: _f(a) <= _f(b), "hlt": lambda a, b: _f(a) < _f(b),
    "hmax": lambda a, b: _either(a, b, _f(a) > _f(b)),
    "hmin": lambda a, b: _either(a, b, _f(a) < _f(b)),
    "hsin": lambda a: _h(math.sin(_f(a))), "hcos": lambda a: _h(math.cos(_f(a))),
    "htanh": lambda a: _h(math.tanh(_f(a))), "htanh_approx": lambda a: _h(math.tanh(_f(a))),
    "hlog": lambda a: _h(math.log(_f(a))), "hlog2": lambda a: _h(math.log2(_f(a))),
    "hlog10": lambda a: _h(math.log10(_f(a))), "hexp": lambda a: _h(math.exp(_f(a))),
    "hexp2": lambda a: _h(np.exp2(_f(a))), "hexp10": lambda a: _h(np.power(_f(10.0), _f(a))),
    "hsqrt": lambda a: _h(math.sqrt(_f(a))), "hrsqrt": lambda a: _h(_f(1.0) / math.sqrt(_f(a))),
    "hrcp": lambda a: _h(_f(1.0) / _f(a)), "hrint": lambda a: _h(np.rint(_f(a))),
    "hceil": lambda a: _h(np.ceil(_f(a))), "hfloor": lambda a: _h(np.floor(_f(a))),
    "htrunc": lambda a: _h(np.trunc(_f(a))),
}.items()}
