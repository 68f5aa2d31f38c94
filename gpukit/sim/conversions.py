"""Floats converted to integers as a GPU converts them, in the simulator's compiled code.

LLVM leaves a conversion of NaN or of a value outside the integer type's range undefined
(`fptosi`/`fptoui` make poison); each target then does what its instructions do. x86's give the
"integer indefinite" (INT_MIN) or wrap, so Numba's CPU code gives `np.int32(1e10) == -2**31` and
`np.uint8(-1.0) == 255`. NVVM lowers the same conversion to PTX `cvt.rzi`, which saturates:
measured on an H200 (benchmarks/gpu_semantics.py, tests/data/h200_semantics.npz), for a float32
or float64 `x` and every integer type:

- a value out of range becomes the nearest end of the range (`np.int32(1e10) == 2**31 - 1`,
  `np.uint32(-2.5) == 0`), except that an 8-bit result is the 16-bit result cut to its low
  byte (`np.int8(1e10) == -1`, 32767's low byte; `np.uint8(300.0) == 44`, 300's);
- NaN becomes 0 from a float32 into 8, 16 and 32 bits, and otherwise the 16-, 32- or 64-bit
  pattern with only its top bit set (`np.int64(nan) == -2**63`, `np.uint32(float64 nan) ==
  2**31`), again cut to 8 bits for an 8-bit result (0).

Every conversion of a float32 or float64 to an integer type goes through Numba's `context.cast`
(constructors such as `np.int32(x)` and `int(x)`, stores into integer arrays, `math.floor` and
`math.ceil`), whose implementation for these pairs is registered here: the GPU's rule while the
simulator compiles a kernel (`overloads.compiling_kernel()`), Numba's own otherwise, so that
`numba.njit` code keeps the CPU's. `round(x)`, which Numba converts without `context.cast`, goes
through `round_int` (the transform's rewrite of a one-argument `round` of a float).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.imputils import lower_cast

from .lowlevel import overload
from .overloads import kernel_compiling


def _float_to_int(context, builder, fromty, toty, val):
    lty = context.get_value_type(toty)
    if not kernel_compiling():  # Numba's own lowering (numba.cpython.numbers.float_to_integer)
        return builder.fptosi(val, lty) if toty.signed else builder.fptoui(val, lty)
    width = max(toty.bitwidth, 16)  # the GPU converts to at least 16 bits, then cuts
    wide = ir.IntType(width)
    kind = "s" if toty.signed else "u"
    name = f"llvm.fpto{kind}i.sat.i{width}.f{fromty.bitwidth}"
    saturated = builder.call(
        cgutils.get_or_insert_function(builder.module, ir.FunctionType(wide, [val.type]), name),
        [val])
    nan_bits = 0 if fromty.bitwidth == 32 and width <= 32 else 1 << (width - 1)
    is_nan = builder.fcmp_unordered("uno", val, val)
    result = builder.select(is_nan, ir.Constant(wide, nan_bits), saturated)
    return builder.trunc(result, lty) if width > toty.bitwidth else result


for _from in (types.float32, types.float64):
    for _to in types.integer_domain:
        lower_cast(_from, _to)(_float_to_int)


def round_int(x):
    """round(x) with one argument, in a kernel."""


@overload(round_int, jit_options={"forceinline": True})
def _ol_round_int(x):
    if isinstance(x, types.Float) and x.bitwidth in (32, 64):
        return lambda x: np.int64(np.rint(x))  # Numba's round(): rint, then to int64
    return lambda x: round(x)
