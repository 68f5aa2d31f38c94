"""What the names in a kernel refer to: numba.cuda intrinsics, device functions, constants.

A kernel refers to `numba.cuda` by whatever name it likes (`cuda`, `nb.cuda`, a factory's
parameter, `from numba.cuda import threadIdx`). The transform resolves every name the kernel does
not assign itself, and every attribute chain rooted at one, against the function's closure,
globals and builtins when the kernel is compiled (as Numba does), and asks `classify` what the
object is. Intrinsics are recognised by identity with numba-cuda's own objects, or by name for
objects from a `numba.cuda` module that is not the one imported here (Numba's CUDA simulator).
"""

from __future__ import annotations

import builtins
import functools
import sys
import types as pytypes
from dataclasses import dataclass
from typing import Any

import numpy as np

_MISSING = object()

# intrinsic name -> (category, helper or sync kind)
#   coord: cuda.threadIdx etc. (attribute x/y/z), value: a value needing the context,
#   call: a call taking the context first, pure: a call that needs nothing else,
#   sync: a sync point (block or warp), atomic, shared, local, const, fence, pointer_array,
#   libdevice: a function of numba.cuda.libdevice (helper: its name there)
_DIM3 = {"threadIdx": "thread_idx", "blockIdx": "block_idx", "blockDim": "block_dim",
         "gridDim": "grid_dim"}
_VALUES = {"laneid": "laneid", "warpsize": "warpsize"}
_CALLS = {"grid": "grid", "gridsize": "gridsize", "lanemask_lt": "lanemask_lt",
          "nanosleep": "nanosleep"}
_PURE = {"popc": "popc", "brev": "brev", "clz": "clz", "ffs": "ffs", "fma": "fma",
         "cbrt": "cbrt", "selp": "selp"}
_FENCES = ("threadfence", "threadfence_block", "threadfence_system")
# sync intrinsics: name -> (kind constant name in layout, result accessor)
SYNCS = {
    "syncthreads": ("K_BARRIER", None),
    "syncthreads_count": ("K_SYNC_COUNT", "i32"),
    "syncthreads_and": ("K_SYNC_AND", "i32"),
    "syncthreads_or": ("K_SYNC_OR", "i32"),
    "syncwarp": ("K_SYNCWARP", None),
    "shfl_sync": ("K_SHFL_IDX", "value"),
    "shfl_up_sync": ("K_SHFL_UP", "value"),
    "shfl_down_sync": ("K_SHFL_DOWN", "value"),
    "shfl_xor_sync": ("K_SHFL_XOR", "value"),
    "all_sync": ("K_ALL", "bool"),
    "any_sync": ("K_ANY", "bool"),
    "eq_sync": ("K_EQ", "bool"),
    "ballot_sync": ("K_BALLOT", "i32"),
    "match_any_sync": ("K_MATCH_ANY", "i32"),
    "match_all_sync": ("K_MATCH_ALL", "pair"),
    "activemask": ("K_ACTIVEMASK", "u32"),
}
# an array's attributes that describe it without giving access to its elements
ARRAY_METADATA = frozenset({"shape", "size", "ndim", "strides", "dtype", "itemsize", "nbytes"})
ATOMIC_NAMES = ("add", "sub", "and_", "or_", "xor", "exch", "inc", "dec", "max", "min",
                "nanmax", "nanmin", "cas", "compare_and_swap")


@dataclass(frozen=True)
class Intrinsic:
    """A numba.cuda object a kernel uses: its category and what implements it."""

    category: str
    name: str
    helper: str | None = None


# `g.sync()` of a grid group `g = cuda.cg.this_grid()` (found by the transform, not by name)
GRID_SYNC = Intrinsic("sync", "cg.this_grid().sync")

_TABLE: dict[int, Intrinsic] | None = None
_HAS_FP16 = False  # whether _TABLE has cuda.fp16's functions (see _add_fp16)
_KEEP: list[Any] = []  # the objects whose ids key _TABLE (so the ids stay theirs)


def _build() -> dict[int, Intrinsic]:
    from numba import cuda

    table: dict[int, Intrinsic] = {}
    add = functools.partial(_add, table)

    add(cuda, Intrinsic("module", "cuda"))
    for name, helper in _DIM3.items():
        add(getattr(cuda, name), Intrinsic("coord", name, helper))
    for name, helper in _VALUES.items():
        add(getattr(cuda, name), Intrinsic("value", name, helper))
    for name, helper in _CALLS.items():
        add(getattr(cuda, name), Intrinsic("call", name, helper))
    for name, helper in _PURE.items():
        add(getattr(cuda, name), Intrinsic("pure", name, helper))
    for name in _FENCES:
        add(getattr(cuda, name), Intrinsic("fence", name, "fence"))
    for name in SYNCS:
        add(getattr(cuda, name), Intrinsic("sync", name))
    add(cuda.atomic, Intrinsic("namespace", "atomic"))
    for name in ATOMIC_NAMES:
        add(getattr(cuda.atomic, name), Intrinsic("atomic", name))
    add(cuda.shared, Intrinsic("namespace", "shared"))
    add(cuda.shared.array, Intrinsic("shared", "shared.array"))
    add(cuda.local, Intrinsic("namespace", "local"))
    add(cuda.local.array, Intrinsic("local", "local.array"))
    add(cuda.const, Intrinsic("namespace", "const"))
    add(cuda.const.array_like, Intrinsic("const", "const.array_like"))
    from numba.cuda import cg
    add(cg.this_grid, Intrinsic("grid", "cg.this_grid"))
    from .cudamath import templates  # math functions, typed as numba-cuda types them
    for name, (func, _) in templates().items():
        add(func, Intrinsic("pure", f"math.{name}", f"math_{name}"))
    from numba.cuda import libdevice, libdevicefuncs  # computed by gpukit.sim.libdevice
    add(libdevice, Intrinsic("namespace", "libdevice"))
    for nv_name in libdevicefuncs.functions:
        name = nv_name.removeprefix("__nv_")
        add(getattr(libdevice, name), Intrinsic("libdevice", f"libdevice.{name}", name))
    from numba.cuda.np import numpy_support  # arrays over a raw pointer
    add(numpy_support.carray, Intrinsic("pointer_array", "carray", "carray"))
    add(numpy_support.farray, Intrinsic("pointer_array", "farray", "farray"))
    return table


def _add_fp16(table: dict[int, Intrinsic]) -> None:
    """cuda.fp16's functions. numba-cuda loads that module (and its bfloat16 bindings, a
    quarter of a second) only when a program imports it, and a kernel can name its functions
    only after that, so they join the table then rather than slowing every first launch."""
    fp16 = sys.modules["numba.cuda.fp16"]

    from .half import FP16
    _add(table, fp16, Intrinsic("namespace", "fp16"))
    for name in FP16:
        _add(table, getattr(fp16, name), Intrinsic("pure", f"fp16.{name}", f"fp16_{name}"))


def _add(table: dict[int, Intrinsic], obj: Any, spec: Intrinsic) -> None:
    _KEEP.append(obj)
    table[id(obj)] = spec


def _table() -> dict[int, Intrinsic]:
    global _TABLE, _HAS_FP16
    if _TABLE is None:
        _TABLE = _build()
    if not _HAS_FP16 and "numba.cuda.fp16" in sys.modules:
        _add_fp16(_TABLE)
        _HAS_FP16 = True
    return _TABLE


_BY_NAME = {**{n: Intrinsic("coord", n, h) for n, h in _DIM3.items()},
            **{n: Intrinsic("value", n, h) for n, h in _VALUES.items()},
            **{n: Intrinsic("call", n, h) for n, h in _CALLS.items()},
            **{n: Intrinsic("pure", n, h) for n, h in _PURE.items()},
            **{n: Intrinsic("fence", n, "fence") for n in _FENCES},
            **{n: Intrinsic("sync", n) for n in SYNCS}}


def intrinsic(obj: Any) -> Intrinsic | None:
    """The intrinsic `obj` is, or None."""
    spec = _table().get(id(obj))
    if spec is not None:
        return spec
    module = getattr(obj, "__module__", None) or ""
    if isinstance(obj, pytypes.ModuleType):
        if obj.__name__ == "numba.cuda":
            return Intrinsic("module", "cuda")
        return None
    if module.startswith("numba.cuda") and not hasattr(obj, "py_func"):
        name = getattr(obj, "__name__", None) or type(obj).__name__
        return _BY_NAME.get(name)
    return None


def device_function(obj: Any) -> pytypes.FunctionType | None:
    """The Python function of a device function (a numba-cuda or numba dispatcher), or None."""
    py_func = getattr(obj, "py_func", None)
    if isinstance(py_func, pytypes.FunctionType) and hasattr(obj, "targetoptions"):
        return py_func
    return None


def numba_equivalent(obj: Any) -> Any:
    """Numba's own object for numba-cuda's copy of one of its compile-time helpers
    (`numba.cuda.misc.special.literal_unroll`, `literally`), which the simulator's CPU compile
    understands; None for anything else."""
    name = getattr(obj, "__name__", None)
    if getattr(obj, "__module__", None) == "numba.cuda.misc.special" and \
            name in ("literal_unroll", "literally"):
        import numba
        return getattr(numba, name)
    return None


def is_device_array(obj: Any) -> bool:
    """A device array captured by a kernel as a global (gpukit's or numba-cuda's; a mapped
    array is host memory on the simulator, a numpy array captured as numpy arrays are)."""
    return (hasattr(obj, "__cuda_array_interface__") and not isinstance(obj, np.ndarray)) or \
        type(obj).__name__ == "DeviceArray"


def lookup(func: pytypes.FunctionType, name: str) -> Any:
    """The object a free name of `func` refers to (closure, then globals, then builtins)."""
    code = func.__code__
    if name in code.co_freevars and func.__closure__:
        cell = func.__closure__[code.co_freevars.index(name)]
        try:
            return cell.cell_contents
        except ValueError:  # an empty cell
            return _MISSING
    if name in func.__globals__:
        return func.__globals__[name]
    return getattr(builtins, name, _MISSING)


def missing(obj: Any) -> bool:
    return obj is _MISSING


def attribute(obj: Any, name: str) -> Any:
    """`obj.name` as numba-cuda's typing finds it, or _MISSING. numba-cuda loads modules of its
    own (cuda.fp16, cuda.bf16, cuda.libdevice ...) when it types a kernel, so a kernel may name
    them without importing them: an attribute of numba.cuda not there yet is looked for again
    after the same loading (under numba-cuda's lock, as its compiles do)."""
    found = getattr(obj, name, _MISSING)
    if missing(found) and isinstance(obj, pytypes.ModuleType) and obj.__name__ == "numba.cuda":
        from numba.cuda.core.compiler_lock import global_compiler_lock
        from numba.cuda.descriptor import cuda_target
        with global_compiler_lock:
            cuda_target.typing_context.refresh()
        found = getattr(obj, name, _MISSING)
    return found


def is_constant_array(obj: Any) -> bool:
    """A host numpy array a kernel reads as a global: Numba freezes it as a constant."""
    return isinstance(obj, np.ndarray)


def is_declared_device(obj: Any) -> bool:
    """Whether `obj` is a function from cuda.declare_device (foreign code linked into kernels,
    which the simulator has no Python source for)."""
    kind = type(obj)
    return kind.__name__ == "ExternFunction" and kind.__module__.startswith("numba.cuda")
