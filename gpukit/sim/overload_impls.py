"""The implementations numba-cuda picks for a kernel's calls of CUDA code in `@overload`s.

An `@overload(f, target="cuda")` (or an `overload_method`) whose implementation uses CUDA
(`cuda.local.array`, `cuda.threadIdx`, a device function) cannot be compiled by Numba's CPU
compiler, through which the simulator runs other overloads (`gpukit.sim.overloads`). The simulator rewrites such an
implementation as it rewrites a device function instead; which implementation that is depends
on the argument types of the call, which only typing knows. `overload_impls` types the kernel
with numba-cuda's own pipeline for a launch's argument types, and follows each call into the
device functions and implementations it reaches (each at the types of its call), collecting the
implementation of every call of such an overload, by where the call is written.
"""

from __future__ import annotations

import types as pytypes
from typing import Any

from .compiler import cuda_typed
from .overloads import cuda_code_in_overload, cuda_code_used


def overload_impls(func: pytypes.FunctionType, argtypes: tuple) -> dict:
    """{(file name, line, overloaded function or ("method", name)): [implementation, ...]}
    for the calls of CUDA-using overloads that `func` (a kernel typed at `argtypes`) makes or
    reaches: one implementation each, or several where a device function is called with
    arguments of different types and the implementation depends on them."""
    found: dict = {}
    _collect(func, tuple(argtypes), found, set())
    return found


def _collect(func: pytypes.FunctionType, argtypes: tuple, found: dict, seen: set) -> None:
    if (func, argtypes) in seen:
        return
    seen.add((func, argtypes))
    from numba.cuda.core import ir

    typemap, func_ir, calltypes = cuda_typed(func, argtypes)
    for block in func_ir.blocks.values():
        for stmt in block.body:
            expr = getattr(stmt, "value", None)
            if not isinstance(expr, ir.Expr) or expr.op != "call" or expr not in calltypes:
                continue
            callee, sig = typemap.get(expr.func.name), calltypes[expr]
            dispatcher = getattr(callee, "dispatcher", None)  # a device function
            if dispatcher is not None and isinstance(getattr(dispatcher, "py_func", None),
                                                     pytypes.FunctionType):
                _collect(dispatcher.py_func, tuple(sig.args), found, seen)
                continue
            args = tuple(sig.args)
            key = getattr(callee, "typing_key", None)
            method = getattr(getattr(callee, "template", None), "_overload_func", None)
            if isinstance(key, tuple) and len(key) == 2 and method is not None and \
                    sig.recvr is not None and cuda_code_used(method) is not None:
                args = (sig.recvr, *args)  # an overload_method's: the receiver comes first
                impl = method(*args)
                key = ("method", key[1])
            elif isinstance(key, pytypes.FunctionType) and cuda_code_in_overload(key):
                impl = _implementation(callee, args)
            else:
                continue
            if isinstance(impl, tuple):  # (a signature, the implementation)
                impl = impl[1]
            if not isinstance(impl, pytypes.FunctionType):
                continue
            impls = found.setdefault((stmt.loc.filename, stmt.loc.line, key), [])
            if not any(_same(impl, other) for other in impls):
                impls.append(impl)
            _collect(impl, args, found, seen)


def _implementation(callee: Any, args: tuple) -> Any:
    """The Python implementation numba-cuda's overload template gave for `args` while typing
    (kept in the template's cache of implementations; else asked of the overload again, as
    where typing asked with literal types)."""
    templates = [t for t in getattr(callee, "templates", ()) if hasattr(t, "_overload_func")]
    for template in templates:
        for key, (disp, _) in list(getattr(template, "_impl_cache", {}).items()):
            if disp is not None and key[1] == args:
                return disp.py_func
    for template in templates:
        if cuda_code_used(template._overload_func) is not None:
            impl = template._overload_func(*args)
            if impl is not None:
                return impl
    return None


def _same(a: pytypes.FunctionType, b: pytypes.FunctionType) -> bool:
    """Whether two implementations are the same code over the same captured values (an
    overload makes a new closure each time it is asked)."""
    if a is b:
        return True
    if a.__code__ is not b.__code__:
        return False
    try:
        return all(x.cell_contents is y.cell_contents
                   for x, y in zip(a.__closure__ or (), b.__closure__ or ()))
    except ValueError:  # an empty cell
        return False
