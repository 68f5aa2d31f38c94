"""A kernel compiled for the simulator: `SimKernel`.

It reads and rewrites the kernel once (`compiler.KernelBuilder`), builds the compiled functions
when first launched, and remembers which argument types numba-cuda's typing accepted. It holds
no device state: launches are run by `gpukit.sim.launch`.
"""

from __future__ import annotations

import ast
import math
import types as pytypes
from typing import Any

import numba
from numba.cuda.core.compiler_lock import global_compiler_lock

from ..errors import UnsupportedKernelError
from . import cache, extensions, names, overloads
from .compiler import (
    MAX_RECURSIVE_FRAME,
    RUNTIME,
    KernelBuilder,
    driver_source,
    jit_options,
    runtime,
)
from .thread_indexed import thread_indexed
from .transform import NeedsArgumentDtypes, NeedsArgumentTypes, Unit
from .usage import param_usage


def python_function(kernel: Any) -> pytypes.FunctionType:
    """The Python function of a kernel given as a function or a numba(-cuda) dispatcher."""
    func = getattr(kernel, "py_func", kernel)
    if not isinstance(func, pytypes.FunctionType):
        raise TypeError(f"a kernel must be a Python function (optionally decorated with "
                        f"@cuda.jit), not {type(kernel).__name__}")
    if is_device_function(kernel):
        raise TypeError(f"'{func.__name__}' is a device function (cuda.jit(device=True)); "
                        "launch a kernel that calls it")
    return func


def is_device_function(kernel: Any) -> bool:
    """Whether `kernel` is a numba-cuda dispatcher made with cuda.jit(device=True)."""
    return bool(getattr(kernel, "targetoptions", {}).get("device"))


class SimKernel:
    """A Numba CUDA kernel, rewritten and compiled for the simulator."""

    def __init__(self, func: Any, signature: Any = None, debug: bool = False,
                 arg_dtypes: dict | None = None, argtypes: tuple | None = None):
        """`arg_dtypes`: the array arguments' dtypes by parameter name, for a kernel that
        declares shared or local arrays with an argument's dtype (`dtype=a.dtype`); without
        them (and without an eager signature, which gives them) such a kernel raises
        `NeedsArgumentDtypes`, and is made again for each launch's dtypes. `argtypes`: the
        same for a kernel that calls an `@overload` whose implementation uses CUDA (Numba's
        types of the arguments; else `NeedsArgumentTypes`)."""
        self.py_func = python_function(func)
        self.name = self.py_func.__name__
        if self.name == "<lambda>":
            raise UnsupportedKernelError(
                "kernel '<lambda>' is a lambda; write kernels with def (numba-cuda compiles "
                "lambdas only as device functions of other kernels)", kernel=self.name)
        self.signature = signature
        self.argtypes = eager_argtypes(signature)  # an eager signature's types, or None
        code = self.py_func.__code__
        self.param_names = code.co_varnames[:code.co_argcount]
        if arg_dtypes is None and self.argtypes is not None:
            arg_dtypes = _array_dtypes(self.param_names, self.argtypes)
        self.arg_dtypes = arg_dtypes
        self.debug = debug  # numba-cuda's debug=True: Python's error model
        self.pointers = _pointer_dtypes(self.param_names, self.argtypes or ())
        builder = KernelBuilder(self.py_func, debug, arg_dtypes, self.pointers,
                                argtypes or self.argtypes)
        self.unit = builder.kernel()
        self.units = builder.units()
        build = builder.build
        self.sites = build.sites
        self.slots = build.slots
        self.captured = build.captured  # (object, slot, table offset, words) per captured array
        self.static_shared_bytes = build.static_shared_bytes
        self.shared_align, self.local_align = build.shared_align, build.local_align
        self.dynamic_shared = build.dynamic_shared
        self.uses_fences = build.uses_fences
        self.cooperative = build.cooperative
        self.print_strings = build.print_strings
        self.prints = any(s.kind == "call" for s in self.sites.items)  # print() calls
        self.site_slots = build.site_slots
        self.shared_lines = [s.lineno for s in build.slots if s.kind == "shared"]
        self.local_slot = build.local_slot
        self.local_decls = build.local_decls
        self.unemitted = tuple(build.unemitted)
        self.generator = self.unit.generator
        self.local_kernel_bytes = self.unit.frame_bytes
        self.local_bytes = self.unit.frame_bytes + _call_depth(self.unit, ())
        tree = ast.parse(_original_source(self.unit))
        self.param_usage = param_usage(self.py_func, tree, self.param_names)
        # parameters indexed only by the thread's grid coordinates (race records elided by
        # launches whose shape and arguments keep each element to one thread)
        self.thread_indexed = thread_indexed(self.py_func, tree, self.param_names)
        self._driver: Any = None
        self._sources()
        self.checked_signatures: set = set()
        self.signatures: dict = {}  # launch values' type keys -> Numba types (launch._signature)
        self.ready: tuple = (None, {})  # (driver, {type key: Numba types} it is compiled for)
        self.counted: dict = {}  # (types, counters) -> what launch._stats made of them
        self.local_slots: dict = {}  # local memory's slot, made by launch._local
        self.plans: dict = {}  # launch bindings kept for launches that repeat them (launch._Plan)

    def _sources(self) -> None:
        self.regions = self.unit.region_vars is not None  # see gpukit.sim.regions
        self.driver_source = driver_source(list(self.param_names), self.generator,
                                           len(self.slots), self.regions, self.cooperative,
                                           self.uses_fences, len(self.units) > 1,
                                           self.unit.counters)
        # what the compiled code depends on (None: a global that cannot be fingerprinted)
        self.jit_options = jit_options()
        self.key = cache.content_key(self.units, self.driver_source,
                                     {**self.jit_options, "unemitted": self.unemitted})

    def without_regions(self) -> None:
        """Run as generators from now on: a value the kernel keeps across a barrier is not a
        number or a bool (found when Numba types the region-run kernel)."""
        self.unit.source = self.unit.generator_source
        self.unit.region_vars = None
        self._driver = None
        self._sources()

    # -- compiled code -----------------------------------------------------------------------
    @property
    def driver(self) -> Any:
        """The compiled function that runs a launch (built on first use, shared by every
        kernel with the same content; see gpukit.sim.cache)."""
        if self.key is None:
            if self._driver is None:
                self._driver = _compile(self)
            return self._driver
        driver = cache.COMPILED.get(self.key)
        if driver is None:
            driver = _compile(self)
            cache.COMPILED.put(self.key, driver)
        return driver

    def explain(self) -> str:
        """The Python the simulator compiles for this kernel and its device functions."""
        parts = [u.source for u in self.units]
        parts.append(self.driver_source)
        return "\n\n".join(parts)

    def __repr__(self) -> str:
        return f"<gpukit simulator kernel '{self.name}'>"


def eager_argtypes(signature: Any) -> tuple | None:
    """The argument types of an eager signature ("void(float32[:], int32)" or a Numba
    signature), or None for anything else (a lazy kernel)."""
    from numba.core import sigutils, types

    if isinstance(signature, str) or type(signature).__name__ == "Signature":
        args, ret = sigutils.normalize_signature(signature)
        if ret not in (None, types.none):
            raise UnsupportedKernelError(f"a kernel returns nothing: its signature must be "
                                         f"void(...), not {signature!r}")
        return tuple(args)
    return None


def _array_dtypes(names: tuple, argtypes: tuple) -> dict:
    """The dtypes of the array parameters among Numba argument types."""
    from numba.np.numpy_support import as_dtype

    return {name: as_dtype(t.dtype) for name, t in zip(names, argtypes)
            if isinstance(t, numba.types.Array)}


def _pointer_dtypes(names: tuple, argtypes: tuple) -> dict:
    """The dtypes raw pointer parameters (CPointer types) point to, by parameter name."""
    from numba.np.numpy_support import as_dtype

    return {name: as_dtype(t.dtype) for name, t in zip(names, argtypes)
            if isinstance(t, numba.types.CPointer)}


def _call_depth(unit: Unit, active: tuple) -> int:
    """Bytes of local memory the deepest chain of calls below `unit` needs."""
    deepest = 0
    for callee in unit.calls:
        if callee in active or callee is unit:
            return MAX_RECURSIVE_FRAME
        # a frame may start up to frame_align - 1 bytes on, to be aligned (push_frame)
        deepest = max(deepest, callee.frame_align + callee.frame_bytes +
                      _call_depth(callee, (*active, unit)))
    return min(deepest, MAX_RECURSIVE_FRAME)


@global_compiler_lock  # as numba-cuda compiles: the registries it mirrors are not thread-safe
def _compile(kernel: SimKernel) -> Any:
    overloads.mirror_cuda_overloads()
    extensions.mirror_cuda_extensions()
    compiled: dict[str, Any] = {}
    functions = []
    for k, unit in enumerate(kernel.units):
        namespace = cache.module_namespace(kernel.key, f"u{k}", runtime())
        for key, value in unit.namespace.items():
            namespace[key] = value
        namespace.setdefault("math", math)
        code = compile(unit.source, f"<gpukit {kernel.name}: {unit.py_func.__name__}>", "exec")
        exec(code, namespace)  # noqa: S102 - the rewritten kernel
        # called only from the driver's compiled code: no Python or C entry point to build
        options = dict(kernel.jit_options, no_cpython_wrapper=True, no_cfunc_wrapper=True)
        if unit.is_kernel and (not unit.generator or unit.region_vars is not None):
            options["inline"] = "always"
        compiled[unit.name] = numba.njit(**options)(namespace[unit.name])
        functions.append((unit, namespace))
    for unit, namespace in functions:  # units call each other by their generated names
        for key, value in list(namespace.items()):
            if isinstance(value, Unit):
                namespace[key] = compiled[value.name]
        namespace[unit.name] = compiled[unit.name]
    namespace = cache.module_namespace(kernel.key, "driver", dict(RUNTIME))
    namespace["_g_kernel"] = compiled[kernel.unit.name]
    code, on_disk = cache.driver_code(kernel.key, kernel.driver_source,
                                      f"<gpukit {kernel.name}: driver>")
    exec(code, namespace)  # noqa: S102 - the generated driver
    # forceinline: as the kernel's code is, now inside the driver, so is what it calls (Numba
    # passes the option on to the functions compiled while compiling it)
    return numba.njit(cache=on_disk, **{"forceinline": True, **kernel.jit_options})(
        namespace["_g_drive"])


def _original_source(unit: Unit) -> str:
    from .source import read_function
    return ast.unparse(read_function(unit.py_func).tree)


__all__ = ["NeedsArgumentDtypes", "NeedsArgumentTypes", "SimKernel", "UnsupportedKernelError",
           "names", "python_function"]
