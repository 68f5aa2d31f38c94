"""Element-wise unary and binary operations: one thread per element over a flat view.

`unary(op, x)` applies RELU, SIGMOID, TANH, EXP, LOG, SQRT, ABS or NEG; `binary(op, a, b)`
applies ADD, SUB, MUL, DIV, MAX or MIN to operands of the same shape. There is no broadcasting:
shapes must match exactly (a scalar operand is not accepted either). Values outside an
operation's domain give what numpy gives (LOG(-1) is NaN, DIV by 0 is inf) without warnings.
"""

from __future__ import annotations

import enum
import functools
import math
from typing import Any

import numpy as np
from numba import cuda

from ._common import (
    OpInputError,
    blocks,
    check_nonempty,
    common_dtype,
    launch,
    operand,
    parse_enum,
    resolve_backend,
    staging,
    view,
)

THREADS = 256  # threads per block


class UnaryOp(enum.IntEnum):
    RELU = 0
    SIGMOID = 1
    TANH = 2
    EXP = 3
    LOG = 4
    SQRT = 5
    ABS = 6
    NEG = 7


class BinaryOp(enum.IntEnum):
    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    MAX = 4
    MIN = 5


@functools.cache
def unary_kernel(dtype: type) -> Any:
    """The unary kernel for `dtype`: one thread per element of the flat arrays."""
    zero, one = dtype(0), dtype(1)  # constants of x's type: a float64 literal would promote

    @cuda.jit(device=True)
    def apply_unary(op, x):
        if op == 0:  # RELU; NaN stays NaN, as numpy.maximum(x, 0) gives
            return x if (x > zero or math.isnan(x)) else zero
        if op == 1:  # SIGMOID, written so that exp only ever sees a non-positive number
            if x >= zero:
                return one / (one + math.exp(-x))
            e = math.exp(x)
            return e / (one + e)
        if op == 2:
            return math.tanh(x)
        if op == 3:
            return math.exp(x)
        if op == 4:
            return math.log(x)
        if op == 5:
            return math.sqrt(x)
        if op == 6:
            return abs(x)
        return -x  # NEG

    def unary_elementwise(x, y, op, n):
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if i < n:  # the last block overhangs the array unless n is a multiple of the block size
            y[i] = apply_unary(op, x[i])

    return unary_elementwise


@cuda.jit(device=True)
def apply_binary(op, x, y):
    if op == 0:
        return x + y
    if op == 1:
        return x - y
    if op == 2:
        return x * y
    if op == 3:
        return x / y
    if op == 4:  # MAX and MIN return NaN if either side is NaN, as numpy.maximum does
        return x if (x > y or math.isnan(x)) else y
    return x if (x < y or math.isnan(x)) else y


def binary_elementwise(a, b, y, op, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        y[i] = apply_binary(op, a[i], b[i])


def unary(op: UnaryOp | str, x: Any, *, backend: Any = None) -> Any:
    """op(x) element by element; a new device array of x's shape and dtype on `backend`."""
    backend = resolve_backend(backend, "unary")
    uop = parse_enum("unary", UnaryOp, op)
    xo = operand(backend, "unary", "x", x)
    check_nonempty("unary", xo)
    n = math.prod(xo.shape)
    with staging(backend, "unary") as stage:
        (x_dev,) = stage.inputs([xo])
        y = stage.allocate(xo.shape, xo.dtype, result=True)
        launch(backend, unary_kernel(xo.dtype.type), blocks(n, THREADS), THREADS,
               view(x_dev, (n,)), view(y, (n,)), int(uop), n, op="unary", flops=n)
        return y


def binary(op: BinaryOp | str, a: Any, b: Any, *, backend: Any = None) -> Any:
    """a (op) b element by element for a and b of the same shape and dtype (no broadcasting)."""
    backend = resolve_backend(backend, "binary")
    bop = parse_enum("binary", BinaryOp, op)
    ao, bo = operand(backend, "binary", "a", a), operand(backend, "binary", "b", b)
    if ao.shape != bo.shape:
        raise OpInputError(f"binary: a has shape {ao.shape} but b has shape {bo.shape}; binary "
                           "ops need equal shapes (no broadcasting)")
    check_nonempty("binary", ao)
    dtype = common_dtype("binary", ao, bo)
    n = math.prod(ao.shape)
    with staging(backend, "binary") as stage:
        a_dev, b_dev = stage.inputs([ao, bo])
        y = stage.allocate(ao.shape, dtype, result=True)
        launch(backend, binary_elementwise, blocks(n, THREADS), THREADS, view(a_dev, (n,)),
               view(b_dev, (n,)), view(y, (n,)), int(bop), n, op="binary", flops=n)
        return y


_UNARY_NUMPY = {
    UnaryOp.RELU: lambda x: np.maximum(x, 0),
    UnaryOp.SIGMOID: lambda x: 1 / (1 + np.exp(-x)),
    UnaryOp.TANH: np.tanh, UnaryOp.EXP: np.exp, UnaryOp.LOG: np.log, UnaryOp.SQRT: np.sqrt,
    UnaryOp.ABS: np.abs, UnaryOp.NEG: np.negative,
}
_BINARY_NUMPY = {BinaryOp.ADD: np.add, BinaryOp.SUB: np.subtract, BinaryOp.MUL: np.multiply,
                 BinaryOp.DIV: np.divide, BinaryOp.MAX: np.maximum, BinaryOp.MIN: np.minimum}


def unary_reference(op: UnaryOp | str, x: np.ndarray) -> np.ndarray:
    """The numpy result `unary` computes, for checking."""
    with np.errstate(all="ignore"):
        return np.asarray(_UNARY_NUMPY[parse_enum("unary", UnaryOp, op)](x), dtype=x.dtype)


def binary_reference(op: BinaryOp | str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The numpy result `binary` computes, for checking."""
    with np.errstate(all="ignore"):
        return np.asarray(_BINARY_NUMPY[parse_enum("binary", BinaryOp, op)](a, b), dtype=a.dtype)
