"""Calls inside simulated kernels: intrinsics, device functions, math and casts, per lane.

`call` is what the transform turns every call into. Intrinsics (the `cuda` namespace) and device
functions receive the mask of active lanes; `math` functions and builtins map to numpy functions
that work on scalars and lane vectors alike, with Numba's result types (math.floor gives an int);
numpy and numba scalar types cast; `print` prints once per active lane.
"""

from __future__ import annotations

import builtins
import math
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .context import current
from .runtime import _is_int, _vec


class Intrinsic:
    """A numba.cuda function as the simulator runs it: fn(mask, site, *args)."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Callable[..., Any], name: str):
        self.fn = fn
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"cuda.{self.name} can only be called inside a kernel")

    def __repr__(self) -> str:
        return f"<simulated cuda.{self.name}>"


def _to_int(x: Any) -> Any:
    if _vec(x):
        return (np.trunc(x) if x.dtype.kind in "fc" else x).astype(np.int64)
    return int(x)


def _floor_int(x: Any) -> Any:
    return _to_int(np.floor(x)) if not _is_int(x) else x


def _ceil_int(x: Any) -> Any:
    return _to_int(np.ceil(x)) if not _is_int(x) else x


def _reduce2(np_fn: Callable, py_fn: Callable) -> Callable:
    def apply(*args: Any) -> Any:
        if len(args) == 1:
            return py_fn(*args)
        if not any(_vec(a) for a in args):
            return py_fn(*args)
        out = args[0]
        for a in args[1:]:
            out = np_fn(out, a)
        return out
    return apply


def _abs(x: Any) -> Any:
    return np.abs(x) if _vec(x) else abs(x)


def _float(x: Any) -> Any:
    return x.astype(np.float64) if _vec(x) else float(x)


def _bool(x: Any) -> Any:
    return x.astype(bool) if _vec(x) else bool(x)


def _round(x: Any, ndigits: Any = None) -> Any:
    if ndigits is None:
        return np.rint(x).astype(np.int64) if _vec(x) else round(x)
    return np.round(x, ndigits) if _vec(x) else round(x, ndigits)


def _log(x: Any, base: Any = None) -> Any:
    return np.log(x) if base is None else np.log(x) / np.log(base)


def _frompy(fn: Callable) -> Callable:
    ufunc = np.frompyfunc(fn, 1, 1)
    return lambda x: ufunc(x).astype(np.float64) if _vec(x) else fn(x)


def _build_table() -> dict[Any, Callable]:
    table: dict[Any, Callable] = {
        builtins.min: _reduce2(np.minimum, builtins.min),
        builtins.max: _reduce2(np.maximum, builtins.max),
        builtins.abs: _abs, builtins.int: _to_int, builtins.float: _float, builtins.bool: _bool,
        builtins.round: _round, builtins.len: len,
        math.floor: _floor_int, math.ceil: _ceil_int, math.trunc: _to_int, math.log: _log,
        math.pow: np.power, math.fabs: np.fabs, math.atan2: np.arctan2,
        math.erf: _frompy(math.erf), math.erfc: _frompy(math.erfc),
        math.gamma: _frompy(math.gamma), math.lgamma: _frompy(math.lgamma),
    }
    same = ("sqrt", "exp", "expm1", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh",
            "cosh", "tanh", "isnan", "isinf", "isfinite", "copysign", "fmod", "hypot", "degrees",
            "radians", "ldexp", "cbrt", "exp2")
    renamed = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
               "acosh": "arccosh", "atanh": "arctanh"}
    for name in same:
        if hasattr(math, name) and hasattr(np, name):
            table[getattr(math, name)] = getattr(np, name)
    for name, np_name in renamed.items():
        table[getattr(math, name)] = getattr(np, np_name)
    return table


_TABLE = _build_table()


def _cast(dtype: np.dtype) -> Callable:
    def cast(x: Any = 0) -> Any:
        with np.errstate(all="ignore"):
            return x.astype(dtype) if _vec(x) else dtype.type(x)
    return cast


def _numba_dtype(f: Any) -> np.dtype | None:
    """The numpy dtype of a numba scalar type used as a cast (numba.float32(x)), else None."""
    if not (type(f).__module__ or "").startswith("numba"):
        return None
    from numba.core import types
    from numba.np.numpy_support import as_dtype
    if not isinstance(f, types.Number | types.Boolean):
        return None
    return as_dtype(f)


def _print(m: Any, *args: Any) -> None:
    g = current()
    lanes = range(g.size) if m is True else np.flatnonzero(m)
    for lane in lanes:
        parts = [a[lane] if _vec(a) else a for a in args]
        print(*parts)
    sys.stdout.flush()


def call(f: Any, m: Any, site: int, *args: Any, **kwargs: Any) -> Any:
    """Call `f` as a thread would: intrinsics and device functions get the mask."""
    if type(f) is Intrinsic:
        return f.fn(m, site, *args, **kwargs)
    try:
        handler = _TABLE.get(f)
    except TypeError:  # unhashable callable
        handler = None
    if handler is not None:
        with np.errstate(all="ignore"):
            return handler(*args, **kwargs)
    if f is builtins.print:
        return _print(m, *args)
    if isinstance(f, type) and issubclass(f, np.generic):
        return _cast(np.dtype(f))(*args)
    py_func = _device_python_function(f)
    if py_func is not None:
        from .kernel import device_function
        return device_function(py_func)(m, *args, **kwargs)
    dtype = _numba_dtype(f)
    if dtype is not None:
        return _cast(dtype)(*args)
    with np.errstate(all="ignore"):
        return f(*args, **kwargs)


def _device_python_function(f: Any) -> types.FunctionType | None:
    """The Python function behind a device function (a numba dispatcher or a plain def)."""
    py_func = getattr(f, "py_func", None)
    if isinstance(py_func, types.FunctionType):
        return py_func
    if isinstance(f, types.FunctionType):
        module = f.__module__ or ""
        if not module.startswith(("numpy", "math", "gpukit.sim")):
            return f
    return None
