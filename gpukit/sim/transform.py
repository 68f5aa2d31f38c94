"""Rewrite a kernel (or device function) into Python that Numba compiles for the simulator.

The rewritten function keeps the learner's code: Numba types and computes it exactly as for the
GPU. What changes:

- every function takes the launch context `_g_c` first;
- `numba.cuda` intrinsics become calls of the simulator's (`gpukit.sim.intrinsics`, `atomics`),
  array subscripts become checked `_g_ld`/`_g_st` (`gpukit.sim.access`), integer `//`, `%` and
  `divmod` check for zero, loops poll the watchdog, `print` records what it prints;
- values read from memory carry a defined-flag: a variable `x` gets `x__d`, and a value that was
  never written is reported where it is stored, branched on, used as an index or passed on
  (reading it and throwing it away is no error, as on a GPU);
- in kernels with sync points (barriers, warp intrinsics), each sync call becomes: leave the
  operands (`_g_put`), `yield` the site, read the result. Calls of device functions that contain
  sync points are inlined, so only the kernel itself is a generator.
Shared, local and constant arrays are laid out here, at compile time, as on a GPU.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import enum
import inspect
import types as pytypes
import warnings
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from ..errors import GpukitWarning, UnsupportedKernelError, typing_error_as
from . import access, bfloat16, eager, extensions, names, vectors
from . import layout as L
from . import nodes as N
from .device_array import array_layout
from .overloads import cuda_code_in_overload, cuda_method_overload
from .source import FunctionSource, Site, Sites, read_function

P = "_g_"
CTX = P + "c"
_UNKNOWN = object()  # UnitRewriter.compile_time_value of what has no value until the launch
# a loop over a range no longer than this, known when the kernel is compiled, polls the
# watchdog once before it starts (intrinsics.tick_ahead) rather than at every iteration
SHORT_LOOP = 256
_ARRAY_ATTRS = {"shape", "size", "ndim", "dtype", "strides", "T", "flat", "real", "imag",
                "itemsize", "nbytes", "x", "y", "z"}


def _and(*values: ast.expr) -> ast.expr:
    values = [v for v in values if not (isinstance(v, ast.Constant) and v.value is True)]
    if not values:
        return N.const(True)
    if len(values) == 1:
        return values[0]
    return ast.BoolOp(op=ast.And(), values=list(values))


# -- what a kernel's compilation collects -------------------------------------------------------
@dataclass
class SlotSpec:
    """A memory slot known at compile time (see layout's slot table)."""

    kind: str  # "param", "shared", "dynamic_shared", "local", "captured"
    label: str
    param: int = -1  # for "param": the argument's position
    offset: int = 0  # for shared: bytes into the block's shared memory
    shape: tuple[int, ...] = ()
    dtype: Any = None
    nbytes: int = 0
    lineno: int = 0  # where a shared array is declared


@dataclass
class Unit:
    """One compiled function of a kernel: the kernel itself or a device function."""

    py_func: pytypes.FunctionType
    name: str  # its name in the generated code
    is_kernel: bool
    source: str = ""
    namespace: dict = field(default_factory=dict)
    frame_bytes: int = 0  # its own local arrays
    frame_align: int = 16  # the alignment its frame needs (the largest of its local arrays')
    generator: bool = False
    calls: list[Unit] = field(default_factory=list)
    region_vars: tuple[str, ...] | None = None  # run region by region: what threads keep
    generator_source: str = ""  # then: its source as a generator, should regions not compile
    # a kernel without sync points returns its site counters, (site, space) each, which the
    # driver sums over threads (compiler.driver_source)
    counters: tuple[tuple[int, int], ...] = ()


def with_receiver(call: ast.Call) -> ast.Call:
    """`x.method(a, b)` as the call `method(x, a, b)` of a method's implementation."""
    assert isinstance(call.func, ast.Attribute)
    return ast.copy_location(ast.Call(func=call.func, args=[call.func.value, *call.args],
                                      keywords=call.keywords), call)


class NeedsArgumentDtypes(Exception):
    """A shared or local array takes its dtype from a kernel argument (`dtype=a.dtype`): the
    kernel is rewritten for each launch's argument dtypes (`Build.arg_dtypes`)."""


class NeedsArgumentTypes(NeedsArgumentDtypes):
    """The kernel calls an `@overload` whose implementation uses CUDA, which the simulator
    rewrites as a device function: which implementation that is depends on the argument types,
    so the kernel is rewritten for each launch's argument types (`Build.argtypes`)."""


@dataclass
class Build:
    """Everything collected while rewriting one kernel and the functions it calls."""

    sites: Sites = field(default_factory=Sites)
    slots: list[SlotSpec] = field(default_factory=list)
    units: dict = field(default_factory=dict)  # py_func -> Unit
    static_shared_bytes: int = 0
    shared_align: int = 16  # the alignment shared memory needs (`alignment=` may raise it)
    local_align: int = 16  # the same for every local frame
    dynamic_shared: bool = False
    uses_fences: bool = False
    cooperative: bool = False  # calls grid.sync(): blocks take turns (sync.grid_barrier)
    python_errors: bool = False  # compiled with debug=True: a zero divisor raises, as in Python
    print_strings: dict = field(default_factory=dict)  # (site, arg) -> literal text
    local_slot: int = -1  # the slot of the local-memory arena
    site_slots: dict = field(default_factory=dict)  # site -> slot, where the transform knows it
    local_decls: list = field(default_factory=list)  # the kernel's own local arrays
    # what the rewrite read but the generated code does not show (`alignment=` values): numba-
    # cuda's typing of the original function sees them, so the cache key must too
    unemitted: list = field(default_factory=list)
    # the kernel's array arguments' dtypes by parameter name, for `dtype=a.dtype` in a shared or
    # local array declaration; None: not known (the kernel is laid out for each launch's types)
    arg_dtypes: dict | None = None
    # the kernel's argument types (Numba's), where known: for `@overload`s using CUDA
    argtypes: tuple | None = None
    kernel_func: Any = None
    _overload_impls: dict | None = None
    counter: int = 0
    outlined: dict = field(default_factory=dict)  # access site -> checked out of line or not
    # device arrays the kernel and its functions capture as globals or closure variables, as
    # numba-cuda captures them (by pointer, when first compiled): (the object, its slot, its
    # words' offset in the launch's table of their descriptions, the words' count)
    captured: list = field(default_factory=list)

    def implementations(self, func: Any) -> list:
        """Every implementation numba-cuda picks for calls of `func` (an overloaded function,
        or ("method", name)) in the kernel (`overload_impls`)."""
        return [impl for (_, _, key), found in self.overload_impls().items() if key == func
                for impl in found]

    def overload_impls(self) -> dict:
        """The implementations numba-cuda picks for the kernel's calls of CUDA-using
        overloads at `argtypes` (`gpukit.sim.overload_impls`), found on first use."""
        if self.argtypes is None:
            raise NeedsArgumentTypes()
        if self._overload_impls is None:
            from .overload_impls import overload_impls  # it types with gpukit.sim.compiler
            self._overload_impls = overload_impls(self.kernel_func, self.argtypes)
        return self._overload_impls

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{P}{base}{self.counter}"

    def slot(self, spec: SlotSpec) -> int:
        self.slots.append(spec)
        return len(self.slots) - 1

    def capture(self, obj: Any, label: str) -> tuple[int, np.ndarray, str]:
        """A captured device array (any object with a CUDA Array Interface): its table offset,
        an empty array of its dtype and rank, and its layout ("C", "F" or "A")."""
        interface = obj.__cuda_array_interface__
        shape = tuple(interface["shape"])
        dtype = np.dtype(getattr(obj, "dtype", interface["typestr"]))  # records keep fields
        strides = interface.get("strides")
        layout = "C" if strides is None else array_layout(shape, tuple(strides), dtype.itemsize)
        template = np.zeros((0,) * len(shape), dtype)
        for held, _, offset, _ in self.captured:
            if held is obj:
                return offset, template, layout
        offset = sum(words for *_, words in self.captured)
        slot = self.slot(SlotSpec("captured", label, shape=shape, dtype=dtype))
        self.captured.append((obj, slot, offset, 1 + 2 * len(shape)))
        return offset, template, layout


# -- static evaluation of names ---------------------------------------------------------------
class _Static:
    """An attribute chain or name that resolved, at compile time, to `obj`."""

    def __init__(self, obj: Any, path: str):
        self.obj = obj
        self.path = path


def bind_parameters(func: pytypes.FunctionType, statics: list[_Static | None] | None
                    ) -> dict[str, _Static]:
    """The parameters of device function `func` that a call binds at compile time, as Numba
    specialises on them: those given a function (an intrinsic such as cuda.atomic.add, or a
    device function) and those given a constant that the callee uses to declare an array (a
    shape or dtype of cuda.shared.array / cuda.local.array, which must be constants)."""
    if not statics or all(s is None for s in statics):
        return {}
    params = func.__code__.co_varnames[:func.__code__.co_argcount]
    declaring = _array_declaration_names(read_function(func).tree)
    bound = {}
    for name, static in zip(params, statics):  # (statics stop at a *starred argument)
        if static is None:
            continue
        spec = names.intrinsic(static.obj)
        if (spec is not None and spec.category not in ("coord", "value")
                or names.device_function(static.obj) is not None or name in declaring):
            bound[name] = static
    return bound


def unbound_args(func: pytypes.FunctionType, args: list[ast.expr], bound: dict) -> list[ast.expr]:
    """The arguments of a call to `func` left to pass at run time (see `bind_parameters`)."""
    params = func.__code__.co_varnames[:func.__code__.co_argcount]
    left = [a for name, a in zip(params, args) if name not in bound]
    if func.__code__.co_flags & inspect.CO_VARARGS or any(
            isinstance(a, ast.Starred) for a in args):
        left += args[len(params):]  # into the callee's *args, or a *starred tuple's items
    return left


def _array_declaration_names(tree: ast.AST) -> set[str]:
    """Names used in the arguments of `<...>.array(...)` calls (shared, local, const arrays)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "array":
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                found |= {n.id for n in ast.walk(arg) if isinstance(n, ast.Name)}
    return found


def _has_sync_call(node: ast.AST, resolve) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            obj = resolve(sub.func)
            if obj is not None:
                spec = names.intrinsic(obj.obj)
                if spec is not None and spec.category == "sync":
                    return True
    return False


class UnitRewriter:
    """Rewrites one function's body. `prefix` is set when inlining it into a caller."""

    def __init__(self, build: Build, func: pytypes.FunctionType, *, is_kernel: bool,
                 param_slots: dict[str, int] | None = None, prefix: str = "",
                 generator: bool = False, frame: str | None = None,
                 bound: dict[str, _Static] | None = None):
        self.build = build
        self.func = func
        self.src: FunctionSource = read_function(func)
        self.fn = self.src.tree
        self.is_kernel = is_kernel
        self.prefix = prefix
        self.generator = generator
        self.frame = frame  # the expression naming this function's local frame
        self.namespace: dict[str, Any] = {}
        self.frame_bytes = 0
        self.frame_align = 16
        self.calls: list[Unit] = []
        args = self.fn.args
        if args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self._unsupported(self.fn, "**kwargs and keyword-only parameters")
        if args.vararg and (is_kernel or prefix):
            raise self._unsupported(self.fn, "*args in a kernel or in a device function that "
                                             "synchronizes")
        self.vararg = args.vararg.arg if args.vararg else None  # a tuple, as Numba passes it
        # parameters bound at compile time to a function (an intrinsic such as cuda.atomic.add,
        # or a device function) the caller passed: Numba specialises on them, and so do we
        self.bound = bound or {}
        assigned = _assigned_names(self.fn)
        for name in self.bound:
            if name in assigned:
                raise self._unsupported(self.fn, f"assigning to parameter '{name}', which "
                                                 "holds a function")
        self.params = [a.arg for a in args.args if a.arg not in self.bound]
        passed = set(self.params) | ({self.vararg} if self.vararg else set())
        self.locals = passed | assigned
        # names that are surely tuples: a function's *args, never assigned (its subscripts are
        # tuple indexing, not memory reads: no context is needed, so such an inner function
        # may escape to another function as Numba allows)
        self.tuples = {self.vararg} - assigned - {None}
        assigned_once = _assigned_once(self.fn)
        self.hints: dict[str, int] = {}
        self.counters: list[tuple[int, int, str]] = []  # (site, space, variable)
        self._counts: list[list[str]] = []  # per statement being rewritten: counters to bump
        for name, slot in (param_slots or {}).items():
            if name not in assigned_once and name not in _assigned_names(self.fn):
                self.hints[name] = slot
        self.tracked = sorted(_maybe_undefined(self.fn, passed, self.locals))
        self._assigned_once = assigned_once
        self._resolved: dict[str, Any] = {}
        # the sites of the loops around the code being rewritten that poll at every trip
        self._polling_loops: list[ast.expr] = []

    # -- names ----------------------------------------------------------------------------
    def single_value(self, name: str) -> ast.expr | None:
        """The value of local `name` where one plain `name = value` statement is its only
        assignment (so `N = 100; cuda.shared.array(N, ...)` has a constant shape, as Numba
        infers it), else None."""
        if name not in self._assigned_once or name in self.params:
            return None
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name) and node.targets[0].id == name:
                return node.value
        return None

    def local(self, name: str) -> str:
        return self.prefix + name if self.prefix else name

    def dname(self, name: str) -> str:
        return self.local(name) + "__d"

    def resolve(self, node: ast.expr) -> _Static | None:
        """Statically evaluate a name or attribute chain rooted at a non-local name."""
        if isinstance(node, ast.Name):
            if node.id in self.bound:
                return self.bound[node.id]
            if node.id in self.locals:
                return None
            if node.id not in self._resolved:
                self._resolved[node.id] = names.lookup(self.func, node.id)
            obj = self._resolved[node.id]
            if names.missing(obj):
                return None
            return _Static(obj, node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is None:
                return None
            spec = names.intrinsic(base.obj)
            if spec is not None and spec.category == "coord":
                return _Static((spec, node.attr), f"{base.path}.{node.attr}")
            obj = names.attribute(base.obj, node.attr)
            if names.missing(obj):
                if isinstance(base.obj, pytypes.ModuleType):  # cuda.syncthread(): a typo
                    raise self._no_attribute(node, base.obj)
                return None
            if isinstance(base.obj, np.ndarray) and callable(obj):
                return None  # a method of a global array (val.copy()): Numba calls it
            return _Static(obj, f"{base.path}.{node.attr}")
        return None

    def function_args(self, args: list[ast.expr]) -> list[_Static | None]:
        """Per argument of a device function call, what it is at compile time where it may
        specialise the callee (see `bind_parameters`): a function (an intrinsic that is not a
        value, or a device function) or a constant (a number, a tuple of them, a dtype)."""
        out: list[_Static | None] = []
        for arg in args:
            if isinstance(arg, ast.Starred):  # positions after it are known only when typed
                break
            static = None
            if isinstance(arg, ast.Constant):
                static = _Static(arg.value, repr(arg.value))
            elif isinstance(arg, ast.Tuple) and all(isinstance(e, ast.Constant)
                                                    for e in arg.elts):
                value = tuple(e.value for e in arg.elts)
                static = _Static(value, repr(value))
            elif isinstance(arg, (ast.Name, ast.Attribute)):
                static = self.resolve(arg)
            out.append(static)
        return out

    def constant(self, obj: Any, hint: str = "k") -> ast.Name:
        """A namespace entry holding `obj` (Numba freezes globals at compile time)."""
        for key, value in self.namespace.items():
            if value is obj and key.startswith(P):
                return N.name(key)
        key = self.build.fresh(hint)
        self.namespace[key] = obj
        return N.name(key)

    # -- errors and sites --------------------------------------------------------------------
    def _unsupported(self, node: ast.AST, what: str) -> UnsupportedKernelError:
        """The error for what the simulator does not run, naming the kernel (also where the
        code is a function it calls) and the line."""
        return UnsupportedKernelError(
            f"{what} is not supported in kernels by gpukit's simulator",
            kernel=(self.build.kernel_func or self.func).__name__,
            lineno=getattr(node, "lineno", None), filename=self.src.filename)

    def _no_attribute(self, node: ast.Attribute, module: pytypes.ModuleType) -> Exception:
        """numba-cuda's error for a module attribute that does not exist (its AttributeError)."""
        return self._rejected(node, AttributeError(
            f"module '{module.__name__}' has no attribute '{node.attr}'"))

    def _rejected(self, node: ast.AST, reason: Exception) -> Exception:
        """The error for what numba-cuda's typing rejects, for `reason`."""
        return typing_error_as(reason, f"numba-cuda would not compile kernel "
                               f"'{self.func.__name__}' for a GPU: {reason}",
                               kernel=self.func.__name__, lineno=node.lineno,
                               filename=self.src.filename)

    def site(self, node: ast.AST, kind: str = "expr", label: str | None = None,
             text: str | None = None) -> int:
        return self.build.sites.add(Site(
            getattr(node, "lineno", self.src.firstlineno),
            text if text is not None else self.src.segment(node), self.src.filename,
            self.func.__name__, kind, label))

    # -- expressions -----------------------------------------------------------------------
    def expr(self, node: ast.expr) -> ast.expr:
        return _ExprRewriter(self).visit(copy.deepcopy(node))

    def may_be_undefined(self, node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if _reads_memory(sub):
                return True
            if isinstance(sub, ast.Name) and sub.id in self.tracked:
                return True
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) \
                    and sub.value.id in self.locals and sub.attr not in _ARRAY_ATTRS:
                return True
        return False

    def var_defs(self, node: ast.AST) -> ast.expr:
        used = sorted({sub.id for sub in ast.walk(node)
                       if isinstance(sub, ast.Name) and sub.id in self.tracked
                       and isinstance(sub.ctx, ast.Load)})
        return _and(*[N.name(self.dname(n)) for n in used])

    def has_loads(self, node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if _reads_memory(sub):
                return True
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) \
                    and sub.value.id in self.locals and sub.attr not in _ARRAY_ATTRS:
                return True
        return False

    def used(self, node: ast.expr, what: int, site_node: ast.AST | None = None) -> ast.expr:
        """`node` rewritten, checked to be defined where its value flows on (`what`)."""
        value = self.expr(node)
        if not self.may_be_undefined(node):
            return value
        site = self.site(site_node or node, "expr")
        if self.has_loads(node):
            return N.call(P + "use", N.name(CTX), N.call(P + "mark", N.name(CTX)), value,
                          self.var_defs(node), N.const(what), N.const(site))
        return N.call(P + "use_vars", N.name(CTX), value, self.var_defs(node), N.const(what),
                      N.const(site))

    # -- statements --------------------------------------------------------------------------
    def body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            self._counts.append([])
            try:
                pre, new = self.hoist(stmt)
                compiled = []
                for node in new:
                    compiled += [ast.copy_location(n, stmt) for n in self.stmt(node)]
            finally:
                counts = self._counts.pop()
            # the statement's static accesses run once each time it runs: count them here
            out += [ast.copy_location(ast.AugAssign(target=N.store(name), op=ast.Add(),
                                                    value=N.const(1)), stmt) for name in counts]
            out += pre + compiled
        return out

    def stmt(self, node: ast.stmt) -> list[ast.stmt]:
        method = getattr(self, "s_" + type(node).__name__, None)
        if method is None:
            return [node]  # left to Numba (which accepts or rejects it as for the GPU)
        return method(node)

    def s_Expr(self, node: ast.Expr) -> list[ast.stmt]:
        if isinstance(node.value, ast.Constant):
            return []
        return [ast.Expr(self.expr(node.value))]

    def s_Pass(self, node: ast.Pass) -> list[ast.stmt]:
        return [node]

    def s_Break(self, node: ast.Break) -> list[ast.stmt]:
        return [node]

    def s_Continue(self, node: ast.Continue) -> list[ast.stmt]:
        return [node]

    def s_Global(self, node: ast.stmt) -> list[ast.stmt]:
        raise self._unsupported(node, "global and nonlocal")

    s_Nonlocal = s_Global

    def s_Assign(self, node: ast.Assign) -> list[ast.stmt]:
        if len(node.targets) == 1:
            return self.assign(node.targets[0], node.value)
        tmp = self.build.fresh("t")
        out = self.assign(ast.Name(id=tmp, ctx=ast.Store()), node.value, plain_tmp=True)
        for target in node.targets:
            out += self.assign(target, N.name(tmp), value_is_tmp=True)
        return out

    def s_AnnAssign(self, node: ast.AnnAssign) -> list[ast.stmt]:
        if node.value is None:
            return []
        return self.assign(node.target, node.value)

    def assign(self, target: ast.expr, value: ast.expr, plain_tmp: bool = False,
               value_is_tmp: bool = False) -> list[ast.stmt]:
        if isinstance(target, ast.Name):
            name = target.id if plain_tmp else self.local(target.id)
            tracked = not plain_tmp and target.id in self.tracked
            label = self._array_label(value, target.id)
            if value_is_tmp:
                new_value = value
                defined: ast.expr = N.name(self.dname(value.id)) if False else N.const(True)
            else:
                new_value = self.expr_labelled(value, label)
                defined = self.var_defs(value)
            out: list[ast.stmt] = []
            if tracked and not value_is_tmp and self.has_loads(value):
                mark = self.build.fresh("m")
                out.append(N.assign(mark, N.call(P + "mark", N.name(CTX))))
                out.append(ast.Assign(targets=[N.store(name)], value=new_value))
                out.append(N.assign(self.dname(target.id),
                                    _and(N.call(P + "end", N.name(CTX), N.name(mark)), defined)))
                return out
            out.append(ast.Assign(targets=[N.store(name)], value=new_value))
            if tracked:
                out.append(N.assign(self.dname(target.id), defined))
            return out
        if isinstance(target, ast.Subscript):  # the value first: its sites come first
            val = value if value_is_tmp else self.used(value, L.UNDEF_STORE, target)
            site = self.site(target, "write", label=_root_name(target))
            return [ast.Expr(N.call(P + "st", N.name(CTX), self.expr(target.value),
                                    self.index(target), val,
                                    *self.access(site, target.value)))]
        if isinstance(target, ast.Attribute):
            val = value if value_is_tmp else self.used(value, L.UNDEF_STORE, target)
            site = self.site(target, "write", label=_root_name(target))
            return [ast.Expr(N.call(P + "setattr", N.name(CTX), self.expr(target.value),
                                    N.const(target.attr), val, N.const(site)))]
        if isinstance(target, (ast.Tuple, ast.List)):
            tmp = self.build.fresh("t")
            out = [ast.Assign(targets=[N.store(tmp)],
                              value=value if value_is_tmp else self.expr(value))]
            defined = N.const(True) if value_is_tmp else self.var_defs(value)
            loads = not value_is_tmp and self.has_loads(value)
            if loads:
                mark = self.build.fresh("m")
                out.insert(0, N.assign(mark, N.call(P + "mark", N.name(CTX))))
                dtmp = self.build.fresh("d")
                out.append(N.assign(dtmp, _and(N.call(P + "end", N.name(CTX), N.name(mark)),
                                               defined)))
                defined = N.name(dtmp)
            for k, elt in enumerate(target.elts):
                item = ast.Subscript(value=N.name(tmp), slice=N.const(k), ctx=ast.Load())
                if isinstance(elt, ast.Name):
                    out.append(ast.Assign(targets=[N.store(self.local(elt.id))], value=item))
                    if elt.id in self.tracked:
                        out.append(N.assign(self.dname(elt.id), defined))
                else:
                    helper = self.build.fresh("t")
                    out.append(N.assign(helper, item))
                    out += self.assign(elt, N.name(helper), value_is_tmp=True)
            return out
        if isinstance(target, ast.Starred):
            raise self._unsupported(target, "starred assignment")
        raise self._unsupported(target, f"assigning to {type(target).__name__}")

    def _array_label(self, value: ast.expr, name: str) -> str | None:
        if isinstance(value, ast.Call):
            obj = self.resolve(value.func)
            spec = names.intrinsic(obj.obj) if obj is not None else None
            if spec is not None and spec.category in ("shared", "local"):
                return name
        return None

    def expr_labelled(self, value: ast.expr, label: str | None) -> ast.expr:
        self._label = label
        try:
            return self.expr(value)
        finally:
            self._label = None

    _label: str | None = None

    def s_AugAssign(self, node: ast.AugAssign) -> list[ast.stmt]:
        target = node.target
        if isinstance(target, ast.Name):
            load = ast.Name(id=target.id, ctx=ast.Load())
            binop = ast.copy_location(ast.BinOp(left=load, op=node.op, right=node.value), node)
            return self.assign(ast.Name(id=target.id, ctx=ast.Store()), binop)
        if isinstance(target, ast.Subscript):
            arr, idx = self.build.fresh("a"), self.build.fresh("i")
            label = _root_name(target)
            read_site = self.site(target, "read", label=label)
            write_site = self.site(target, "write", label=label)
            load = N.call(P + "ld", N.name(CTX), N.name(arr), N.name(idx),
                          *self.access(read_site, target.value))
            rhs = self.used(node.value, L.UNDEF_STORE, target)
            new = self._binop(node.op, load, rhs, node)
            out = [N.assign(arr, self.expr(target.value)), N.assign(idx, self.index(target))]
            value: ast.expr = new
            if self.site_checks_undef:
                mark = self.build.fresh("m")
                out.append(N.assign(mark, N.call(P + "mark", N.name(CTX))))
                tmp = self.build.fresh("v")
                out.append(N.assign(tmp, new))
                value = N.call(P + "use", N.name(CTX), N.name(mark), N.name(tmp), N.const(True),
                               N.const(L.UNDEF_STORE), N.const(write_site))
            out.append(ast.Expr(N.call(P + "st", N.name(CTX), N.name(arr), N.name(idx), value,
                                       *self.access(write_site, target.value))))
            return out
        if isinstance(target, ast.Attribute):
            obj = self.build.fresh("o")
            site = self.site(target, "write", label=_root_name(target))
            read = N.call(P + "getattr", N.name(CTX), N.name(obj), N.const(target.attr),
                          N.const(site))
            new = self._binop(node.op, read, self.used(node.value, L.UNDEF_STORE, target), node)
            return [N.assign(obj, self.expr(target.value)),
                    ast.Expr(N.call(P + "setattr", N.name(CTX), N.name(obj), N.const(target.attr),
                                    new, N.const(site)))]
        raise self._unsupported(target, "this augmented assignment")

    site_checks_undef = True

    def _binop(self, op: ast.operator, left: ast.expr, right: ast.expr, node: ast.AST):
        shift = {ast.LShift: "shl", ast.RShift: "shr"}.get(type(op))
        if shift is not None:  # counts past the width as a GPU shifts them (sim.arith)
            return N.call(P + shift, left, right)
        helper = {ast.FloorDiv: "floordiv", ast.Mod: "mod"}.get(type(op))
        if self.build.python_errors:  # numba-cuda's debug=True: Python's error model
            helper = {ast.Div: "py_truediv", ast.FloorDiv: "py_floordiv",
                      ast.Mod: "py_mod"}.get(type(op))
        if helper is None:
            return ast.BinOp(left=left, op=op, right=right)
        return N.call(P + helper, N.name(CTX), left, right, N.const(self.site(node, "expr")))

    def index(self, node: ast.Subscript) -> ast.expr:
        return self.used(_index_expr(node), L.UNDEF_INDEX, node)

    def access(self, site: int, value: ast.expr) -> list[ast.expr]:
        """The trailing arguments of an access: its site, its slot's descriptor (when the
        transform knows the slot) and `outlining`'s flag."""
        hint = self._hint(value)
        if hint < 0 or self.conditional or not self._counts:
            return [N.const(site), N.name(P + "NODESC"), self.outlining(site)]
        self.build.site_slots[site] = hint
        owner = self.frame_owner or self
        space = {"param": L.SPACE_GLOBAL, "local": L.SPACE_LOCAL}.get(
            self.build.slots[hint].kind, L.SPACE_SHARED)
        counter = f"{P}n{site}"
        owner.counters.append((site, space, counter))
        self._counts[-1].append(counter)
        desc = ast.Subscript(value=N.name(P + "D"), slice=N.const(hint), ctx=ast.Load())
        return [N.const(site), desc, self.outlining(site)]

    def outlining(self, site: int) -> ast.expr:
        """An access's last argument: 0, or False (a bool) for the accesses past the first
        OUTLINE_ACCESSES (source sites, in the order rewritten) of the kernel and its device
        functions: their checks are compiled once and called, not copied into each access
        (`access.touch_outlined`)."""
        outlined = self.build.outlined
        if site not in outlined:
            outlined[site] = len(outlined) >= access.OUTLINE_ACCESSES
        return N.const(False if outlined[site] else 0)

    conditional = 0  # > 0 while rewriting code that may run other than once per statement

    def prologue(self) -> list[ast.stmt]:
        """Start-of-function state: defined-flags, site counters, the watchdog's tick."""
        out = [N.assign(self.dname(n), N.const(True)) for n in self.tracked]
        out += [N.assign(counter, N.const(0)) for _, _, counter in self.counters]
        out.append(N.assign(P + "ticks", N.const(0)))
        return out

    def flush(self) -> list[ast.stmt]:
        """Add the site counters to the launch's before leaving the function."""
        return [ast.Expr(N.call(P + "count", N.name(CTX), N.const(site), N.const(space),
                                N.name(counter))) for site, space, counter in self.counters]

    def returned_counters(self) -> list[ast.stmt]:
        """Leave the function returning the site counters (a kernel the driver runs thread
        after thread sums them in registers instead of adding them to memory per thread)."""
        return [ast.Return(value=ast.Tuple(
            elts=[N.name(counter) for _, _, counter in self.counters], ctx=ast.Load()))]

    def _hint(self, value: ast.expr) -> int:
        if isinstance(value, ast.Name):
            return self.hints.get(value.id, -1)
        return -1

    def s_If(self, node: ast.If) -> list[ast.stmt]:
        static = self.resolve(node.test) if isinstance(node.test, (ast.Name, ast.Attribute)) \
            else None
        if static is not None and isinstance(static.obj, (bool, int, float, type(None))):
            # a frozen global or closure constant: Numba prunes the branch not taken (so a
            # barrier under `if False:` is no barrier at all), and so do we
            return self.body(node.body if static.obj else node.orelse)
        test = self.used(node.test, L.UNDEF_BRANCH)
        return [ast.If(test=test, body=self.body(node.body) or [ast.Pass()],
                       orelse=self.body(node.orelse))]

    def _tick(self, node: ast.stmt, text: str) -> ast.stmt:
        site = self.site(node, "loop", text=text)
        return N.assign(P + "ticks", N.call(P + "tick", N.name(CTX), N.name(P + "ticks"),
                                            N.const(site)))

    def _loop_body(self, tick: ast.stmt, body: list[ast.stmt]) -> list[ast.stmt]:
        """`body`, rewritten as the body of a loop that polls at every trip with `tick`."""
        self._polling_loops.append(tick.value.args[2])
        try:
            return self.body(body)
        finally:
            self._polling_loops.pop()

    def _tick_ahead(self, tick: ast.stmt, count: int) -> ast.stmt:
        """`tick` for all `count` trips of a short loop, polled before it starts; a watchdog
        stop there is reported at the loop around it that polls at every trip, if any (the
        loop that never ends), else at this one."""
        site = self._polling_loops[-1] if self._polling_loops else tick.value.args[2]
        return N.assign(P + "ticks", N.call(P + "tick_ahead", N.name(CTX),
                                            N.name(P + "ticks"), N.const(count), site))

    def compile_time_value(self, node: ast.expr, seen: frozenset = frozenset()) -> Any:
        """The value of `node` when the kernel is compiled (a literal, a frozen global or
        constant argument, a local assigned once from one, tuples and arithmetic of those),
        as Numba finds shared arrays' shapes; _UNKNOWN when it has none then."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List)):
            items = tuple(self.compile_time_value(e, seen) for e in node.elts)
            return _UNKNOWN if any(i is _UNKNOWN for i in items) else items
        static = self.resolve(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if static is not None:
            return static.obj
        value = self.single_value(node.id) if isinstance(node, ast.Name) else None
        if value is not None and node.id not in seen:  # `n = m; m = n` is no constant
            return self.compile_time_value(value, seen | {node.id})
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            code = compile(ast.Expression(body=_ConstFolder(self).visit(copy.deepcopy(node))),
                           "<constant>", "eval")
            with contextlib.suppress(ArithmeticError, TypeError, ValueError, NameError):
                return eval(code, {"__builtins__": {}}, {})  # constants only
        return _UNKNOWN

    def _short_range(self, args: list[ast.expr]) -> int | None:
        """len(range(*args)) when every argument is an integer known when the kernel is
        compiled (`compile_time_value`) and the loop is no longer than SHORT_LOOP
        iterations; otherwise None."""
        values = [self.compile_time_value(a) for a in args]
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                   for v in values) or (len(values) == 3 and values[2] == 0):
            return None
        count = len(range(*(int(v) for v in values)))
        return count if count <= SHORT_LOOP else None

    def s_While(self, node: ast.While) -> list[ast.stmt]:
        if node.orelse:
            raise self._unsupported(node, "an else clause on a loop")
        text = f"while {self.src.segment(node.test)}:"
        tick = self._tick(node, text)
        pre, test = self.hoist_expr(node.test)
        if pre:  # a sync call in the condition runs again before every test
            self.conditional += 1
            try:
                check = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=self.used(
                    test, L.UNDEF_BRANCH, node.test)), body=[ast.Break()], orelse=[])
            finally:
                self.conditional -= 1
            return [ast.While(test=N.const(True), orelse=[],
                              body=[tick, *pre, check, *self._loop_body(tick, node.body)])]
        self.conditional += 1  # the test runs once per iteration, and once more
        try:
            test = self.used(node.test, L.UNDEF_BRANCH)
        finally:
            self.conditional -= 1
        return [ast.While(test=test, body=[tick, *self._loop_body(tick, node.body)], orelse=[])]

    def s_For(self, node: ast.For) -> list[ast.stmt]:
        if node.orelse:
            raise self._unsupported(node, "an else clause on a loop")
        text = f"for {self.src.segment(node.target)} in {self.src.segment(node.iter)}:"
        tick = self._tick(node, text)
        it = node.iter
        func = self.resolve(it.func) if isinstance(it, ast.Call) else None
        if func is not None and func.obj is range and not it.keywords:
            args = [self.used(a, L.UNDEF_BRANCH, it) for a in it.args]
            if len(args) == 3 and not (isinstance(it.args[2], ast.Constant)
                                       and it.args[2].value != 0):
                args[2] = N.call(P + "check_step", N.name(CTX), args[2],
                                 N.const(self.site(it, "loop")))
            new_iter = ast.Call(func=N.name("range"), args=args, keywords=[])
            target_defs = self._target_defs(node.target)
            count = self._short_range(it.args)
            body = self.body(node.body) if count is not None else \
                self._loop_body(tick, node.body)
            if count is None or has_yield(body):  # (a sync point: each trip is the threads')
                return [ast.For(target=self._target(node.target), iter=new_iter,
                                body=[tick, *target_defs, *body], orelse=[])]
            return [self._tick_ahead(tick, count),
                    ast.For(target=self._target(node.target), iter=new_iter,
                            body=[*target_defs, *body], orelse=[])]
        if func is not None and func.obj in (enumerate, zip) and not it.keywords:
            return self._indexed_loop(node, tick)
        unroll = (names.numba_equivalent(func.obj) or func.obj) if func is not None else None
        if unroll is numba.literal_unroll and len(it.args) == 1 and not it.keywords:
            # Numba compiles the body once per item type: the loop stays as written
            new_iter = N.call(self.constant(unroll, "literal_unroll").id, self.expr(it.args[0]))
            return [ast.For(target=self._target(node.target), iter=new_iter, orelse=[],
                            body=[tick, *self._target_defs(node.target),
                                  *self._loop_body(tick, node.body)])]
        # iterating over an array or a tuple: index it, so reads are checked
        seq = self.build.fresh("s")
        k = self.build.fresh("k")
        site = self.site(node.iter, "read", label=_root_name(node.iter))
        item = N.call(P + "ld", N.name(CTX), N.name(seq), N.name(k), N.const(site),
                      N.name(P + "NODESC"), self.outlining(site))
        body = self._bind_target(node.target, item)
        return [N.assign(seq, self.expr(node.iter)),
                ast.For(target=N.store(k), iter=N.call("range", N.call(P + "len", N.name(seq))),
                        body=[tick, *body, *self._loop_body(tick, node.body)], orelse=[])]

    def _indexed_loop(self, node: ast.For, tick: ast.stmt) -> list[ast.stmt]:
        k = self.build.fresh("k")
        out: list[ast.stmt] = []
        length, value = self._indexed_items(node.iter, k, out)
        body = self._bind_target(node.target, value)
        out.append(ast.For(target=N.store(k), iter=N.call("range", length),
                           body=[tick, *body, *self._loop_body(tick, node.body)], orelse=[]))
        return out

    def _indexed_items(self, it: ast.expr, k: str,
                       out: list[ast.stmt]) -> tuple[ast.expr, ast.expr]:
        """(length, item k) of what a loop iterates: enumerate and zip, nested in each other
        as deep as they are, over arrays and tuples indexed (so reads are checked); the
        sequences are evaluated once, into `out`."""
        func = self.resolve(it.func) if isinstance(it, ast.Call) else None
        kind = func.obj if func is not None and not it.keywords else None
        if kind is enumerate and len(it.args) in (1, 2):
            length, item = self._indexed_items(it.args[0], k, out)
            index: ast.expr = N.name(k)
            if len(it.args) == 2:
                index = ast.BinOp(left=index, op=ast.Add(), right=self.expr(it.args[1]))
            return length, ast.Tuple(elts=[index, item], ctx=ast.Load())
        if kind is zip and it.args:
            parts = [self._indexed_items(a, k, out) for a in it.args]
            length = parts[0][0]
            for other, _ in parts[1:]:
                length = N.call("min", length, other)
            return length, ast.Tuple(elts=[item for _, item in parts], ctx=ast.Load())
        name = self.build.fresh("s")
        out.append(N.assign(name, self.expr(it)))
        site = self.site(it, "read", label=_root_name(it))
        return (N.call(P + "len", N.name(name)),
                N.call(P + "ld", N.name(CTX), N.name(name), N.name(k), N.const(site),
                       N.name(P + "NODESC"), self.outlining(site)))

    def _bind_target(self, target: ast.expr, value: ast.expr) -> list[ast.stmt]:
        """Assign an already rewritten value (loads marked) to a loop target."""
        tmp = self.build.fresh("v")
        mark = self.build.fresh("m")
        dflag = self.build.fresh("d")
        out: list[ast.stmt] = [N.assign(mark, N.call(P + "mark", N.name(CTX))),
                               N.assign(tmp, value),
                               N.assign(dflag, N.call(P + "end", N.name(CTX), N.name(mark)))]
        self._pending_def = dflag
        try:
            out += self._assign_done(target, tmp, dflag)
        finally:
            self._pending_def = None
        return out

    _pending_def: str | None = None

    def _assign_done(self, target: ast.expr, tmp: str, dflag: str) -> list[ast.stmt]:
        if isinstance(target, ast.Name):
            out: list[ast.stmt] = [N.assign(self.local(target.id), N.name(tmp))]
            if target.id in self.tracked:
                out.append(N.assign(self.dname(target.id), N.name(dflag)))
            return out
        if isinstance(target, (ast.Tuple, ast.List)):
            out = []
            for k, elt in enumerate(target.elts):
                sub = self.build.fresh("v")
                out.append(N.assign(sub, ast.Subscript(value=N.name(tmp), slice=N.const(k),
                                                       ctx=ast.Load())))
                out += self._assign_done(elt, sub, dflag)
            return out
        return self.assign(target, N.name(tmp), value_is_tmp=True)

    def _target(self, target: ast.expr) -> ast.expr:
        if isinstance(target, ast.Name):
            return N.store(self.local(target.id))
        if isinstance(target, (ast.Tuple, ast.List)):
            return ast.Tuple(elts=[self._target(e) for e in target.elts], ctx=ast.Store())
        raise self._unsupported(target, "this loop target")

    def _target_defs(self, target: ast.expr) -> list[ast.stmt]:
        return [N.assign(self.dname(n.id), N.const(True)) for n in ast.walk(target)
                if isinstance(n, ast.Name) and n.id in self.tracked]

    def s_Return(self, node: ast.Return) -> list[ast.stmt]:
        if self.is_kernel:
            if node.value is not None and not (isinstance(node.value, ast.Constant)
                                               and node.value.value is None):
                raise self._unsupported(node, "returning a value from a kernel (kernels "
                                              "return None)")
            out = [_FLUSH_MARK(), ast.Return(value=None)]
            if self.generator:
                out.insert(0, ast.Expr(N.call(P + "returned", N.name(CTX))))
            return out
        out: list[ast.stmt] = []
        value = self.used(node.value, L.UNDEF_RETURN) if node.value is not None else None
        if self.inline_exit is not None:
            done, result = self.inline_exit
            if value is not None:
                self.returns_value = True
            # a bare `return` returns None, which the caller may test for (`if r is None`)
            out.append(N.assign(result, value if value is not None else N.const(None)))
            return out + [N.assign(done, N.const(True)), ast.Break()]
        if self.frame_var:
            rv = self.build.fresh("rv")
            if value is not None:
                out.append(N.assign(rv, value))
            out.append(_FLUSH_MARK())
            out.append(ast.Expr(N.call(P + "pop_frame", N.name(CTX), N.name(self.frame_var))))
            out.append(ast.Return(value=N.name(rv) if value is not None else None))
            return out
        return [ast.Return(value=value)]

    frame_var: str | None = None

    def s_Assert(self, node: ast.Assert) -> list[ast.stmt]:
        site = self.site(node, "expr")
        return [ast.Expr(N.call(P + "assert_", N.name(CTX), self.expr(node.test),
                                N.const(site)))]

    def s_Raise(self, node: ast.Raise) -> list[ast.stmt]:
        site = self.build.sites.add(Site(node.lineno, self.src.segment(node), self.src.filename,
                                         self.func.__name__, "expr",
                                         raises=self._raised(node.exc)))
        return [ast.Expr(N.call(P + "raise_", N.name(CTX), N.const(site)))]

    def _raised(self, exc: ast.expr | None) -> tuple | None:
        """(class, arguments) of `raise E` or `raise E(constants...)`, as numba-cuda raises it
        on the host (for kernels compiled with debug=True); None when not known statically."""
        call = exc if isinstance(exc, ast.Call) and not exc.keywords else None
        target = call.func if call is not None else exc
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return None
        static = self.resolve(target)
        if static is None or not (isinstance(static.obj, type)
                                  and issubclass(static.obj, BaseException)):
            return None
        args = call.args if call is not None else []
        if not all(isinstance(a, ast.Constant) for a in args):
            return None
        return static.obj, tuple(a.value for a in args)

    def s_FunctionDef(self, node: ast.FunctionDef) -> list[ast.stmt]:
        inner = copy.deepcopy(node)
        saved_tracked = self.tracked
        self.tracked = []  # inner functions' own variables are not followed
        inner_locals = {a.arg for a in node.args.args} | _assigned_names(node)
        vararg = node.args.vararg.arg if node.args.vararg else None
        added = (inner_locals | {vararg}) - self.locals - {None}
        self.locals |= added
        saved_tuples = self.tuples
        self.tuples = (self.tuples - inner_locals) | ({vararg} - inner_locals - {None})
        # an inner function returns to its caller, not from the kernel or an inlined function
        saved = self.is_kernel, self.inline_exit, self.frame_var
        self.is_kernel, self.inline_exit, self.frame_var = False, None, None
        try:
            inner.body = self.body(node.body) or [ast.Pass()]
            args = inner.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                        args.kwarg]:
                if arg is not None:  # (inlined, its body's names carry the inlining's prefix)
                    arg.arg = self.local(arg.arg)
        finally:
            self.tracked = saved_tracked
            self.tuples = saved_tuples
            self.locals -= added
            self.is_kernel, self.inline_exit, self.frame_var = saved
        escape = _escape(self.fn, node.name)
        if escape is not None and any(isinstance(n, ast.Name) and n.id == CTX
                                      for n in ast.walk(inner)):
            raise self._unsupported(escape, (
                f"passing inner function '{node.name}' on as a value when it reads memory, "
                "loops or calls what the simulator checks (Numba lets a function that escapes "
                "capture only constants, and the simulator's checks need the launch); call it "
                "directly, or define it at module level with @cuda.jit(device=True)"))
        return [inner]

    # -- sync points -------------------------------------------------------------------------
    def hoist(self, stmt: ast.stmt) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """Move sync calls (and calls of functions with sync points) out of `stmt`."""
        if isinstance(stmt, (ast.If, ast.While, ast.For, ast.FunctionDef)):
            if isinstance(stmt, ast.If):
                pre, test = self.hoist_expr(stmt.test)
                stmt = copy.copy(stmt)
                stmt.test = test
                return pre, [stmt]
            if isinstance(stmt, ast.For):
                pre, it = self.hoist_expr(stmt.iter)
                stmt = copy.copy(stmt)
                stmt.iter = it
                return pre, [stmt]
            return [], [stmt]
        if not self._contains_hoistable(stmt):
            return [], [stmt]
        hoister = _Hoister(self)
        new = hoister.visit(copy.deepcopy(stmt))
        if isinstance(new, ast.Expr) and isinstance(new.value, ast.Name) \
                and new.value.id.startswith(P):
            return hoister.pre, []
        return hoister.pre, [new]

    def hoist_expr(self, node: ast.expr) -> tuple[list[ast.stmt], ast.expr]:
        if not self._contains_hoistable(node):
            return [], node
        hoister = _Hoister(self)
        new = hoister.visit(copy.deepcopy(node))
        return hoister.pre, new

    def _contains_hoistable(self, node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and self._hoistable(sub):
                return True
        return False

    def grid_sync(self, call: ast.Call) -> bool:
        """Whether `call` is `g.sync()` of a grid group: `cuda.cg.this_grid().sync()`, or `g`
        a local variable whose only assignment is `g = cuda.cg.this_grid()`."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "sync"):
            return False
        group = func.value
        if isinstance(group, ast.Name) and group.id in self.locals:
            group = self.single_value(group.id)
        if not isinstance(group, ast.Call):
            return False
        static = self.resolve(group.func)
        spec = names.intrinsic(static.obj) if static is not None else None
        return spec is not None and spec.category == "grid"

    def _hoistable(self, call: ast.Call) -> bool:
        if self.grid_sync(call):
            return True
        obj = self.resolve(call.func)
        if obj is None:
            impl = self.method_impl(call)
            return impl is not None and self.builder.has_sync(impl)
        spec = names.intrinsic(obj.obj)
        if spec is not None:
            return spec.category == "sync"
        py_func = self.called_function(obj.obj, call)
        return py_func is not None and self.builder.has_sync(py_func)

    def called_function(self, obj: Any, node: ast.Call) -> pytypes.FunctionType | None:
        """The Python function a call of `obj` runs, rewritten as a device function: a device
        function's, or the implementation numba-cuda picks for this call of an `@overload`
        whose implementation uses CUDA (its Numba CPU compile cannot run CUDA); else None
        (also for such a call in a branch numba-cuda prunes, which it never types)."""
        if not isinstance(obj, pytypes.FunctionType) or cuda_code_in_overload(obj) is None:
            return names.device_function(obj)
        return self.overload_impl(node, obj, obj.__name__)

    def method_impl(self, node: ast.Call) -> pytypes.FunctionType | None:
        """The implementation numba-cuda picks for the call `node` of an `overload_method`
        whose implementation uses CUDA (`x.method(...)`), or None."""
        if isinstance(node.func, ast.Attribute) and cuda_method_overload(node.func.attr):
            return self.overload_impl(node, ("method", node.func.attr), node.func.attr)
        return None

    def overload_impl(self, node: ast.Call, key: Any, name: str) -> pytypes.FunctionType | None:
        """The implementation numba-cuda picks for the call `node` of a CUDA-using overload
        (`key`: the overloaded function, or ("method", its name)), or None where it types
        no such call (a branch it prunes)."""
        impls = [impl for (filename, line, k), found in self.build.overload_impls().items()
                 if k == key and filename == self.src.filename
                 and node.lineno <= line <= (node.end_lineno or node.lineno) for impl in found]
        if len(impls) <= 1:
            return impls[0] if impls else None
        raise self._unsupported(node, (
            f"calling {name}, an @overload whose implementation uses CUDA and depends on "
            "the argument types, from a device function called with arguments of "
            f"different types ({len(impls)} implementations; the simulator rewrites a "
            "device function once per kernel),"))

    builder: Any = None  # the KernelBuilder (set by it)
    frame_owner: UnitRewriter | None = None  # when inlined: whose frame holds our locals
    inline_exit: tuple[str, str] | None = None  # when inlined: (done flag, result variable)
    returns_value = False

    def frame_expr(self) -> ast.expr:
        raise NotImplementedError  # set by the KernelBuilder

    def frame_alloc(self, nbytes: int, align: int) -> tuple[ast.expr, int]:
        """Room for a local array in this function's frame (the caller's when inlined)."""
        owner = self.frame_owner or self
        offset = -(-owner.frame_bytes // align) * align
        owner.frame_bytes = offset + nbytes
        owner.frame_align = max(owner.frame_align, align)
        self.build.local_align = max(self.build.local_align, align)
        return owner.frame_expr(), offset

    def sync_call(self, call: ast.Call, spec: names.Intrinsic) -> tuple[list[ast.stmt], ast.expr]:
        """The statements of one sync call, and the expression of its result."""
        if not self.generator:
            raise self._unsupported(call, "a sync call here")
        if call.keywords:
            raise self._unsupported(call, f"keyword arguments to cuda.{spec.name}")
        if spec is names.GRID_SYNC:
            kind_name, result = "K_GRID", "i32"  # numba-cuda's grid sync returns an int32
            self.build.cooperative = True
        else:
            kind_name, result = names.SYNCS[spec.name]
        kind = getattr(L, kind_name)
        site = self.site(call, "sync")
        args = [self.used(a, L.UNDEF_SYNC, call) for a in call.args]
        pre: list[ast.stmt] = []
        operands = []
        for a in args:
            tmp = self.build.fresh("x")
            pre.append(N.assign(tmp, a))
            operands.append(N.name(tmp))
        mask: ast.expr = N.const(0xFFFFFFFF)
        value: ast.expr = N.const(0)
        arg: ast.expr = N.const(0)
        n = spec.name
        if n in ("syncthreads_count", "syncthreads_and", "syncthreads_or"):
            value = operands[0]
        elif n == "syncwarp":
            mask = operands[0] if operands else N.const(0xFFFFFFFF)
        elif n.startswith("shfl"):
            mask, value, arg = operands[0], operands[1], operands[2]
        elif n in ("all_sync", "any_sync", "eq_sync", "ballot_sync", "match_any_sync",
                   "match_all_sync"):
            mask, value = operands[0], operands[1]
        pre.append(ast.Expr(N.call(P + "put", N.name(CTX), N.const(kind), N.const(site), mask,
                                   value, arg)))
        pre.append(ast.Expr(ast.Yield(value=N.const(site))))
        out = self.build.fresh("r")
        if result is None:
            return pre, N.const(None)
        if result == "value":
            pre.append(N.assign(out, N.call(P + "value", N.name(CTX), value)))
        elif result == "pair":
            pre.append(N.assign(out, ast.Tuple(elts=[N.call(P + "result_i32", N.name(CTX)),
                                                     N.call(P + "result2_bool", N.name(CTX))],
                                               ctx=ast.Load())))
        else:
            pre.append(N.assign(out, N.call(P + "result_" + result, N.name(CTX))))
        return pre, N.name(out)


class _Hoister(ast.NodeTransformer):
    """Replaces sync calls and calls of sync device functions by variables, collecting the
    statements that compute them (innermost first, left to right)."""

    def __init__(self, rw: UnitRewriter):
        self.rw = rw
        self.pre: list[ast.stmt] = []

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        if any(self.rw._contains_hoistable(v) for v in node.values[1:]):
            raise self.rw._unsupported(node, "a warp or block intrinsic inside `and`/`or` "
                                             "(assign its result to a variable first)")
        return self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        if self.rw._contains_hoistable(node.body) or self.rw._contains_hoistable(node.orelse):
            raise self.rw._unsupported(node, "a warp or block intrinsic inside a conditional "
                                             "expression (assign its result first)")
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)
        if not self.rw._hoistable(node):
            return node
        obj = self.rw.resolve(node.func)
        method = self.rw.method_impl(node) if obj is None else None
        if method is not None:  # an overload_method's implementation with sync points
            pre, result = self.rw.builder.inline(self.rw, method, with_receiver(node))
            self.pre += pre
            return result
        spec = names.GRID_SYNC if obj is None else names.intrinsic(obj.obj)
        if spec is not None:
            pre, result = self.rw.sync_call(node, spec)
        else:
            pre, result = self.rw.builder.inline(self.rw, self.rw.called_function(obj.obj, node),
                                                 node)
        self.pre += pre
        return result


class _ExprRewriter(ast.NodeTransformer):
    """Rewrites one expression (see the module docstring)."""

    def __init__(self, rw: UnitRewriter):
        self.rw = rw

    def _conditional(self, node: ast.AST) -> ast.AST:
        self.rw.conditional += 1
        try:
            return self.visit(node)
        finally:
            self.rw.conditional -= 1

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        first, *rest = node.values
        node.values = [self.visit(first)] + [self._conditional(v) for v in rest]
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        node.test = self.visit(node.test)
        node.body = self._conditional(node.body)
        node.orelse = self._conditional(node.orelse)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        node.body = self._conditional(node.body)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        node.left = self.visit(node.left)
        first, *rest = node.comparators
        node.comparators = [self.visit(first)] + [self._conditional(v) for v in rest]
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.rw.locals:
            return ast.Name(id=self.rw.local(node.id), ctx=node.ctx)
        static = self.rw.resolve(node)
        if static is None:
            return node
        return self._static(static, node)

    def _static(self, static: _Static, node: ast.AST) -> ast.expr:
        obj = static.obj
        if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], names.Intrinsic):
            spec, attr = obj
            if attr not in ("x", "y", "z"):
                raise self.rw._unsupported(node, f"cuda.{spec.name}.{attr}")
            helper = {"threadIdx": "tid", "blockIdx": "bid", "blockDim": "bdim",
                      "gridDim": "gdim"}[spec.name]
            return N.call(f"{P}{helper}_{attr}", N.name(CTX))
        spec = names.intrinsic(obj)
        if spec is not None:
            if spec.category == "coord":
                return N.call(P + spec.helper, N.name(CTX))
            if spec.category == "value":
                return N.call(P + spec.helper, N.name(CTX))
            raise self.rw._unsupported(node, f"using cuda.{spec.name} as a value")
        py_func = names.device_function(obj)
        if py_func is not None:
            unit = self.rw.builder.unit(py_func)
            self.rw.namespace[unit.name] = unit
            return N.name(unit.name)
        vtype = vectors.vector_type(obj)
        if vtype is not None:
            return self.rw.constant(vectors.builder(vtype), vtype.name)
        if names.is_device_array(obj):  # by pointer, as numba-cuda captures it
            offset, template, layout = self.rw.build.capture(obj, static.path)
            return N.call(P + "array_at", N.call(P + "captured_at", N.name(CTX), N.const(offset)),
                          self.rw.constant(template, "captured"), N.const(layout))
        obj = names.numba_equivalent(obj) or extensions.cpu_intrinsic(obj) or obj
        module = getattr(obj, "__module__", None) or ""
        simulated = bfloat16.supported(obj)
        if simulated is False:
            raise self.rw._unsupported(node, f"bfloat16 pairs and raw bfloat16 storage "
                                             f"(numba-cuda's {static.path})")
        if callable(obj) and module.startswith("numba.cuda") and not simulated and \
                not module.startswith("numba.cuda.tests") and \
                not (isinstance(obj, type) and issubclass(obj, enum.Enum)):
            what = "cooperative groups (grid-wide sync)" if ".cg" in obj.__module__ else \
                f"{static.path}"
            raise self.rw._unsupported(node, f"{what}: numba-cuda's {static.path}")
        if isinstance(node, ast.Name) and not self.rw.prefix:
            self.rw.namespace[node.id] = obj
            return node
        return self.rw.constant(obj)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.ctx, ast.Load):
            static = self.rw.resolve(node)
            if static is not None:
                return self._static(static, node)
        value = self.visit(node.value)
        if isinstance(node.ctx, ast.Load) and node.attr not in _ARRAY_ATTRS \
                and self._local_root(node.value):
            site = self.rw.site(node, "read", label=_root_name(node))
            return N.call(P + "getattr", N.name(CTX), value, N.const(node.attr), N.const(site))
        node.value = value
        return node

    def _local_root(self, node: ast.expr) -> bool:
        root = node
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        return isinstance(root, ast.Name) and root.id in self.rw.locals

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if not isinstance(node.ctx, ast.Load):
            raise self.rw._unsupported(node, "this subscript")
        if not _reads_memory(node) or (isinstance(node.value, ast.Name)
                                       and node.value.id in self.rw.tuples):
            return self.generic_visit(node)
        static = self.rw.resolve(node.value) if isinstance(node.value, (ast.Name, ast.Attribute)) \
            else None
        if static is not None and isinstance(static.obj, type):  # Color["red"]: no memory
            return self.generic_visit(node)
        site = self.rw.site(node, "read", label=_root_name(node))
        index = self.rw.used(_index_expr(node), L.UNDEF_INDEX, node)
        return N.call(P + "ld", N.name(CTX), self.visit(node.value), index,
                      *self.rw.access(site, node.value))

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        left, right = self.visit(node.left), self.visit(node.right)
        return self.rw._binop(node.op, left, right, node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.USub) and not isinstance(node.operand, ast.Constant):
            return N.call(P + "neg", operand)  # an int16 is negated as a GPU does (sim.arith)
        node.operand = operand
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        static = self.rw.resolve(node.func)
        if static is not None:
            return self._static_call(static, node)
        impl = self.rw.method_impl(node)
        if impl is not None:  # an overload_method whose implementation uses CUDA
            return self._device_call(impl, node, with_receiver(node).args)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "view" and \
                len(node.args) == 1 and not node.keywords:  # also a number's (bits as int64)
            return N.call(P + "view_", self.visit(node.func.value), self.visit(node.args[0]))
        if isinstance(node.func, ast.Attribute):  # a method (a.max(), x.conjugate()): no
            node.func.value = self.visit(node.func.value)  # memory read of its own, so not
        else:                                               # through getattr_ (record fields)
            node.func = self.visit(node.func)
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [ast.keyword(arg=k.arg, value=self.visit(k.value))
                         for k in node.keywords]
        return node

    def _device_call(self, py_func: pytypes.FunctionType, node: ast.Call, arg_nodes: list,
                     declared: Any = None, obj: Any = None) -> ast.expr:
        """The call `node` of a device function (or an overload's implementation rewritten as
        one) `py_func` with the arguments `arg_nodes`; `declared`: its eager signatures."""
        rw = self.rw
        if node.keywords:
            raise rw._unsupported(node, "keyword arguments to a device function (or to an "
                                        "overload whose implementation uses CUDA)")
        bound = bind_parameters(py_func, rw.function_args(arg_nodes))
        unit = rw.builder.unit(py_func, bound)
        rw.namespace[unit.name] = unit
        rw.calls.append(unit)
        args = [ast.Starred(value=rw.used(a.value, L.UNDEF_CALL, node), ctx=ast.Load())
                if isinstance(a, ast.Starred) else rw.used(a, L.UNDEF_CALL, node)
                for a in unbound_args(py_func, arg_nodes, bound)]
        if declared is not None and not bound:  # converted as numba-cuda's call converts
            convert = rw.constant(eager.converter(obj, declared), "convert")
            args = [ast.Starred(value=ast.Call(func=convert, args=args, keywords=[]),
                                ctx=ast.Load())]
        return N.call(unit.name, N.name(CTX), N.name(P + "D"), *args)

    def _args(self, node: ast.Call, what: int | None = None) -> list[ast.expr]:
        if what is None:
            return [self.visit(a) for a in node.args]
        return [self.rw.used(a, what, node) for a in node.args]

    def _static_call(self, static: _Static, node: ast.Call) -> ast.expr:
        obj = static.obj
        spec = names.intrinsic(obj)
        rw = self.rw
        if spec is not None:
            cat = spec.category
            if cat == "call":
                return N.call(P + spec.helper, N.name(CTX), *self._args(node))
            if cat == "pure":
                return N.call(P + spec.helper, *self._args(node))
            if cat == "libdevice":
                if node.keywords:  # numba-cuda's typing asserts there are none
                    raise rw._rejected(node, TypeError(
                        f"{spec.name}: keyword arguments are not supported, yet"))
                from . import libdevice  # its functions register on first use (18 ms)
                return ast.Call(func=rw.constant(libdevice.stub(spec.helper), "libdevice"),
                                args=self._args(node), keywords=[])
            if cat == "fence":
                rw.build.uses_fences = True
                return N.call(P + "fence", N.name(CTX))
            if cat == "atomic":
                return self._atomic(spec, node)
            if cat == "shared":
                return self._shared(node)
            if cat == "local":
                return self._local(node)
            if cat == "const":
                return self._const_array(node)
            if cat == "pointer_array":  # checked to lie in one allocation when made
                first = node.args[0] if node.args else None
                site = rw.site(node, "expr", label=first.id if isinstance(first, ast.Name)
                               else None)
                return ast.Call(func=N.name(P + spec.helper),
                                args=[N.name(CTX), N.const(site), *self._args(node)],
                                keywords=[ast.keyword(arg=k.arg, value=self.visit(k.value))
                                          for k in node.keywords])
            if cat == "sync":
                raise rw._unsupported(node, f"cuda.{spec.name} in this position")
            if cat == "grid":  # the grid group: only its sync() means anything (a sync point)
                return N.const(0)
            raise rw._unsupported(node, f"calling cuda.{spec.name}")
        if names.is_declared_device(obj):
            raise rw._unsupported(node, f"calling {static.path}, which cuda.declare_device "
                                        "declares from linked CUDA C/C++ or PTX code,")
        py_func = rw.called_function(obj, node)
        if py_func is not None:
            return self._device_call(py_func, node, node.args, eager.declared_signatures(obj),
                                     obj)
        if obj is print:
            return self._print(node)
        if obj is breakpoint:  # numba-cuda's brkpt, where cuda-gdb stops a kernel on a GPU
            warnings.warn(GpukitWarning(
                f"breakpoint() in kernel '{rw.func.__name__}' ({rw.src.filename}, line "
                f"{node.lineno}) is passed over: the simulator runs compiled code, which no "
                "debugger stops in; print() the values to look at, or launch with trace=True"),
                stacklevel=2)
            return N.const(None)
        if obj is divmod and len(node.args) == 2:
            a, b = self._args(node)
            helper = "py_divmod" if rw.build.python_errors else "divmod_"  # debug=True
            return N.call(P + helper, N.name(CTX), a, b, N.const(rw.site(node, "expr")))
        if (obj is min or obj is max) and len(node.args) == 2 and not node.keywords \
                and not any(isinstance(a, ast.Starred) for a in node.args):
            return N.call(P + obj.__name__ + "_", *self._args(node))  # libdevice's fmin/fmax
        if obj is round and len(node.args) == 2 and not node.keywords:
            return N.call(P + "round_to", *self._args(node))  # numba-cuda's rounding of floats
        if obj is abs and len(node.args) == 1 and not node.keywords:
            return N.call(P + "abs_", *self._args(node))  # an int16 as a GPU does (sim.arith)
        if obj is round and len(node.args) == 1 and not node.keywords:
            return N.call(P + "round_int", *self._args(node))  # converted as a GPU converts
        func = self._static(static, node.func) if not isinstance(node.func, ast.Name) \
            else self.visit_Name(node.func)
        return ast.Call(func=func, args=self._args(node),
                        keywords=[ast.keyword(arg=k.arg, value=self.visit(k.value))
                                  for k in node.keywords])

    def _atomic(self, spec: names.Intrinsic, node: ast.Call) -> ast.expr:
        rw = self.rw
        if node.keywords:
            raise rw._unsupported(node, "keyword arguments to cuda.atomic functions")
        site = rw.site(node, "atomic", label=_root_name(node.args[0]) if node.args else None)
        target = node.args[0]
        tail = rw.access(site, target)
        args = [self.visit(target)] + [rw.used(a, L.UNDEF_STORE, node) for a in node.args[1:]]
        name = spec.name
        if name == "compare_and_swap":
            return N.call(P + "atomic_cas", N.name(CTX), args[0], N.const(0), args[1], args[2],
                          *tail)
        return N.call(P + "atomic_" + name, N.name(CTX), *args, *tail)

    def _static_value(self, node: ast.expr, what: str) -> Any:
        """Evaluate a shape or dtype argument at compile time (numba-cuda needs constants)."""
        value = self.rw.compile_time_value(node)
        if value is not _UNKNOWN:
            return value
        if what == "dtype" and self._argument(node) is not None:
            return self._argument_dtype(node, self._argument(node))
        if what == "dtype":
            raise self.rw._unsupported(node, (
                "a dtype that is neither a constant nor `a.dtype` of an array parameter the "
                "kernel does not reassign (numba-cuda needs one of these too)"))
        raise self.rw._unsupported(node, f"a {what} that is not a compile-time constant "
                                         "(numba-cuda needs constants here too)")

    def _argument(self, node: ast.expr) -> str | None:
        """The kernel parameter `node` takes the dtype of (`a.dtype`, `a` a parameter the kernel
        never assigns), or None."""
        rw = self.rw
        if rw.is_kernel and isinstance(node, ast.Attribute) and node.attr == "dtype" and \
                isinstance(node.value, ast.Name) and node.value.id in rw.params and \
                node.value.id not in _assigned_names(rw.fn):
            return node.value.id
        return None

    def _argument_dtype(self, node: ast.expr, name: str) -> Any:
        dtypes = self.rw.build.arg_dtypes
        if dtypes is None:
            raise NeedsArgumentDtypes(name)
        dtype = dtypes.get(name)
        if dtype is None:
            raise self.rw._unsupported(node, (
                f"'{name}.dtype' where argument '{name}' is not an array (numba-cuda's typing "
                "refuses it too)"))
        return numba.from_dtype(dtype)

    def _array_args(self, node: ast.Call) -> tuple[Any, Any, int]:
        """(shape, dtype, the alignment its first element needs) of an array declaration."""
        args = list(node.args)
        kw = {k.arg: k.value for k in node.keywords}
        shape_node = args[0] if args else kw.get("shape")
        dtype_node = args[1] if len(args) > 1 else kw.get("dtype")
        if shape_node is None or dtype_node is None:
            raise self.rw._unsupported(node, "an array declaration without shape and dtype")
        shape = self._static_value(shape_node, "shape")
        dtype = self._static_value(dtype_node, "dtype")
        try:
            known = _np_dtype(dtype)
        except ValueError as exc:  # an extension type aligned past 8 bytes
            raise self.rw._unsupported(node, str(exc)) from None
        if known is None:
            raise self.rw._unsupported(node, (
                f"an array of {dtype}, a type with neither a numpy dtype nor a data model "
                "(numba-cuda refuses it too)"))
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        align_node = args[2] if len(args) > 2 else kw.get("alignment")
        asked = None if align_node is None else self._static_value(align_node, "alignment")
        self.rw.build.unemitted.append(repr(asked))
        align = max(_np_dtype(dtype).alignment, 8, _valid_alignment(asked) or 0)
        return tuple(int(s) for s in shape), dtype, align

    def _shared(self, node: ast.Call) -> ast.expr:
        rw = self.rw
        shape, dtype, align = self._array_args(node)
        np_dtype = _np_dtype(dtype)
        label = rw._label or "shared"
        dt = rw.constant(dtype, "dt")
        if shape in ((0,), ()):
            rw.build.dynamic_shared = True
            for spec in rw.build.slots:
                if spec.kind == "dynamic_shared":
                    break
            else:
                rw.build.slot(SlotSpec("dynamic_shared", label, dtype=np_dtype))
            return N.call(P + "dynamic_shared_array", N.name(CTX),
                          N.call(P + "shared_static_bytes", N.name(CTX)), dt,
                          N.const(np_dtype.itemsize))
        nbytes = int(np.prod(shape)) * np_dtype.itemsize
        offset = -(-rw.build.static_shared_bytes // align) * align
        rw.build.static_shared_bytes = offset + nbytes
        rw.build.shared_align = max(rw.build.shared_align, align)
        slot = rw.build.slot(SlotSpec("shared", label, offset=offset, shape=shape,
                                      dtype=np_dtype, nbytes=nbytes, lineno=node.lineno))
        if rw._label:
            rw.hints[rw._label] = slot if rw._label in rw._assigned_once else -1
        return N.call(P + "shared_array", N.name(CTX), N.const(offset), dt, N.const(shape))

    def _local(self, node: ast.Call) -> ast.expr:
        rw = self.rw
        shape, dtype, align = self._array_args(node)
        np_dtype = _np_dtype(dtype)
        nbytes = int(np.prod(shape)) * np_dtype.itemsize
        frame, offset = rw.frame_alloc(nbytes, align)
        if rw._label and rw._label in rw._assigned_once:
            rw.hints[rw._label] = rw.build.local_slot
        if (rw.frame_owner or rw).is_kernel:  # kernel frames are at fixed offsets: name them
            rw.build.local_decls.append(SlotSpec("local", rw._label or "local", offset=offset,
                                                 shape=shape, dtype=np_dtype, nbytes=nbytes,
                                                 lineno=node.lineno))
        return N.call(P + "local_array", N.name(CTX), frame, N.const(offset), N.const(nbytes),
                      rw.constant(dtype, "dt"), N.const(shape))

    def _const_array(self, node: ast.Call) -> ast.expr:
        if len(node.args) != 1:
            raise self.rw._unsupported(node, "cuda.const.array_like without one array")
        value = self.rw.compile_time_value(node.args[0])
        if value is _UNKNOWN:  # an array the kernel is given: numba-cuda passes it through
            return self._args(node)[0]
        if not isinstance(value, np.ndarray):
            raise self.rw._unsupported(node, "cuda.const.array_like of something other than a "
                                             "host numpy array")
        frozen = value.copy()
        frozen.flags.writeable = False
        return self.rw.constant(frozen, "const")

    def _print(self, node: ast.Call) -> ast.expr:
        rw = self.rw
        if node.keywords:
            raise rw._unsupported(node, "keyword arguments to print")
        site = rw.site(node, "call")
        if len(node.args) > L.MAX_PRINT_ITEMS:  # numba-cuda's warning, as it compiles the call
            from numba.core.errors import NumbaWarning
            warnings.warn(NumbaWarning(
                f"CUDA print() cannot print more than {L.MAX_PRINT_ITEMS} items. The raw format "
                "string will be emitted by the kernel instead."), stacklevel=2)
        calls: list[ast.expr] = []
        for k, arg in enumerate(node.args):
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                rw.build.print_strings[(site, k)] = arg.value
                continue
            calls.append(N.call(P + "print_value", N.name(CTX), N.const(site), N.const(k),
                                rw.used(arg, L.UNDEF_CALL, node)))
        calls.append(N.call(P + "print_end", N.name(CTX), N.const(site), N.const(len(node.args))))
        return ast.Tuple(elts=calls, ctx=ast.Load())


class _ConstFolder(ast.NodeTransformer):
    """Replace resolvable names in a shape expression by their values."""

    def __init__(self, rw: UnitRewriter):
        self.rw = rw

    def visit_Name(self, node: ast.Name) -> ast.AST:
        static = self.rw.resolve(node)
        if static is not None and isinstance(static.obj, (int, float, np.integer)):
            return ast.copy_location(N.const(int(static.obj)), node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        static = self.rw.resolve(node)
        if static is not None and isinstance(static.obj, (int, float, np.integer)):
            return ast.copy_location(N.const(int(static.obj)), node)
        return node


def _valid_alignment(value: Any) -> int | None:
    """`alignment=` of a shared or local array, checked as numba-cuda checks it when it compiles
    the declaration (same ValueErrors). Not an int: numba-cuda's typing rejects it (a
    TypingError from the kernel's typing, which gpukit runs), so it is left to that."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return None
    value = int(value)
    if value <= 0:
        raise ValueError("Alignment must be positive")
    if value & (value - 1):
        raise ValueError("Alignment must be a power of 2")
    if value % 8:  # numba-cuda: a multiple of the size of a pointer
        raise ValueError("Alignment must be a multiple of 8")
    return value


def _np_dtype(dtype: Any) -> np.dtype | None:
    """The numpy dtype of an array declaration's `dtype`; for a type made with Numba's
    extension API (no numpy dtype), raw bytes laid out as its data model lays them out
    (`extensions.layout`); None for neither."""
    if bfloat16.names_bfloat16(dtype):  # numba-cuda's or ml_dtypes': 16 bits
        bfloat16.register()
        return np.dtype(np.uint16) if bfloat16.ARRAY_DTYPE is None else bfloat16.ARRAY_DTYPE
    if isinstance(dtype, numba.types.Type):
        from numba.np.numpy_support import as_dtype
        try:
            return as_dtype(dtype)
        except numba.core.errors.NumbaNotImplementedError:
            return extensions.layout(dtype)
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def _FLUSH_MARK() -> ast.stmt:
    """A placeholder the compiler replaces with the function's counter flush (the counters are
    known only once the whole function is rewritten)."""
    return ast.Expr(N.call(P + "FLUSH"))


def replace_flush(stmts: list[ast.stmt], flush: list[ast.stmt]) -> list[ast.stmt]:
    """Replace every flush placeholder (at any depth) with the statements `flush`."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == P + "FLUSH":
            out += copy.deepcopy(flush)
            continue
        for attr in ("body", "orelse"):
            if hasattr(stmt, attr) and isinstance(getattr(stmt, attr), list):
                setattr(stmt, attr, replace_flush(getattr(stmt, attr), flush))
        out.append(stmt)
    return out


def _reads_memory(node: ast.AST) -> bool:
    """Whether a subscript may read array memory (`x.shape[0]` and the like do not)."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
        return False
    value = node.value
    return not (isinstance(value, ast.Attribute) and value.attr in ("shape", "strides"))


def _slice_expr(node: ast.expr) -> ast.expr:
    """An index as an ordinary expression (slices become slice(...) calls)."""
    if isinstance(node, ast.Slice):
        parts = [node.lower, node.upper, node.step]
        return N.call("slice", *[p if p is not None else N.const(None) for p in parts])
    if isinstance(node, ast.Tuple):
        return ast.Tuple(elts=[_slice_expr(e) for e in node.elts], ctx=ast.Load())
    return node


def _index_expr(node: ast.Subscript) -> ast.expr:
    """The index of `node`, a literal negative component (`a[-1]`, `m[i, -2]`) written as
    `a.shape[axis] - 1`: Numba counts such indices from the end, as Python does, and the
    bounds check then reports only computed indices that go negative (the classic `i - 1`)."""
    index = _slice_expr(node.slice)
    if not isinstance(node.value, ast.Name):
        return index
    elts = index.elts if isinstance(index, ast.Tuple) else [index]
    if any(isinstance(e, ast.Constant) and e.value in (None, Ellipsis) for e in elts):
        return index  # axes no longer follow positions
    wrapped = []
    for axis, e in enumerate(elts):
        negative = _negative_literal(e)
        if negative is not None:
            shape = ast.Attribute(value=ast.Name(id=node.value.id, ctx=ast.Load()), attr="shape",
                                  ctx=ast.Load())
            e = ast.BinOp(left=ast.Subscript(value=shape, slice=N.const(axis), ctx=ast.Load()),
                          op=ast.Add(), right=N.const(negative))
            ast.copy_location(e, node)
        wrapped.append(e)
    return ast.Tuple(elts=wrapped, ctx=ast.Load()) if isinstance(index, ast.Tuple) \
        else wrapped[0]


def _negative_literal(e: ast.expr) -> int | None:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) \
            and isinstance(e.operand, ast.Constant) and type(e.operand.value) is int:
        return -e.operand.value if e.operand.value > 0 else None
    if isinstance(e, ast.Constant) and type(e.value) is int and e.value < 0:
        return e.value
    return None


def has_yield(stmts: list[ast.stmt]) -> bool:
    """Whether rewritten statements hold a sync point (the rewrite makes each a `yield`)."""
    return any(isinstance(n, ast.Yield) for s in stmts for n in ast.walk(s))


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _escape(fn: ast.AST, name: str) -> ast.Name | None:
    """Where `name` is used other than called (passed, stored or returned), or None."""
    called = {id(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
    return next((n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name
                 and isinstance(n.ctx, ast.Load) and id(n) not in called), None)


def _assigned_names(fn: ast.AST) -> set[str]:
    """Names a function assigns (not counting nested functions' own variables)."""
    found: set[str] = set()

    def walk(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.Lambda)) and not top:
                if isinstance(child, ast.FunctionDef):
                    found.add(child.name)
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                found.add(child.id)
            walk(child, False)

    walk(fn, True)
    return found


def _maybe_undefined(fn: ast.FunctionDef, params: set[str], local: set[str]) -> set[str]:
    """Variables that may hold a value read from memory never written: those assigned from an
    expression that reads memory, or from such variables (a fixpoint). Others are always
    defined and need no flag."""
    flows: list[tuple[list[str], ast.AST | None, bool]] = []  # (targets, value, reads memory)

    def names_in(target: ast.AST) -> list[str]:  # the names a target binds (not a[i]'s a, i)
        return [n.id for n in ast.walk(target)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]

    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            targets = [n for t in node.targets for n in names_in(t)]
            flows.append((targets, node.value, _has_reads(node.value, local)))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = names_in(node.target)
            flows.append((targets, node.value, _has_reads(node.value, local)))
        elif isinstance(node, ast.For):
            it = node.iter
            is_range = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) \
                and it.func.id == "range"
            flows.append((names_in(node.target), it, not is_range))
        elif isinstance(node, ast.NamedExpr):
            flows.append((names_in(node.target), node.value, _has_reads(node.value, local)))
    undefined: set[str] = set()
    changed = True
    while changed:
        changed = False
        for targets, value, reads in flows:
            used = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} \
                if value is not None else set()
            if reads or used & undefined:
                for t in targets:
                    if t not in undefined and t not in params:
                        undefined.add(t)
                        changed = True
    return undefined


def _has_reads(node: ast.AST, local: set[str]) -> bool:
    """Whether an expression may read memory: a subscript, or a field of a local record."""
    return any(_reads_memory(sub) or (isinstance(sub, ast.Attribute)
                                      and isinstance(sub.value, ast.Name)
                                      and sub.value.id in local
                                      and sub.attr not in _ARRAY_ATTRS)
               for sub in ast.walk(node))


def _assigned_once(fn: ast.FunctionDef) -> set[str]:
    counts: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            counts[node.target.id] = counts.get(node.target.id, 0) + 2
    return {n for n, k in counts.items() if k == 1}
