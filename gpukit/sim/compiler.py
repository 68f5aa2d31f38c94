"""Compile a kernel for the simulator: check it with numba-cuda's typing, rewrite it, build it.

1. numba-cuda types the kernel as it would for a GPU (no GPU and no NVVM needed); a kernel it
   rejects is rejected here with numba-cuda's own message.
2. `transform` rewrites the kernel and every device function it calls (once per kernel, so their
   source sites are the kernel's); device functions with sync points are inlined.
3. Numba's CPU compiler builds each function and a driver that runs the launch's blocks and
   threads (`gpukit.sim.sync`). Numba specialises the driver per argument types, as numba-cuda
   specialises a kernel.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import itertools
import os
import types as pytypes
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import KernelTypingError, typing_error_as
from . import (
    access,
    arith,
    atomics,
    conversions,
    cudamath,
    half,
    intrinsics,
    lowlevel,
    names,
    regions,
    runtime,
    sync,
)
from . import layout as L
from . import nodes as N
from .hoist import hoisted
from .overloads import cuda_code_in_overload, cuda_method_overload
from .transform import (
    CTX,
    Build,
    P,
    SlotSpec,
    Unit,
    UnitRewriter,
    bind_parameters,
    has_yield,
    replace_flush,
    unbound_args,
)

_JIT = {"error_model": "numpy", "nogil": True}


def jit_options() -> dict[str, Any]:
    """Numba's options for the simulator's compiled code. Numba's runtime (arrays allocated in
    a kernel: `np.zeros`, `a.copy()`, reductions over views) is on exactly when numba-cuda's
    is (`numba.cuda.config.CUDA_ENABLE_NRT`), as kernels that allocate need it on a GPU too."""
    from numba.cuda import config
    return {**_JIT, "_nrt": bool(config.CUDA_ENABLE_NRT)}


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while Numba compiles a driver. A compile makes
    hundreds of thousands of objects (Numba's IR and types, llvmlite's IR), enough to start
    several full collections, each of which walks every object in the process; what the compile
    leaves behind is collected after it, as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


MAX_RECURSIVE_FRAME = 64 * 1024  # local memory per thread when device functions recurse

# what rewritten kernels call, by name (P + the key): the keys are plain strings so that ruff
# (F601) refuses one given twice, which a dict silently resolves to the last (a bug once)
RUNTIME: dict[str, Any] = {P + name: value for name, value in {
    "ld": access.ld, "ld_unraced": access.ld_unraced, "ld_bare": access.ld_bare,
    "ld_free": access.ld_free, "ld_inb": access.ld_inb, "st_inb": access.st_inb,
    "extent": access.extent, "bounds_only": access.bounds_only, "st": access.st,
    "getattr": runtime.getattr_, "setattr": runtime.setattr_, "mark": runtime.mark,
    "end": runtime.end, "use": runtime.use,
    "use_vars": runtime.use_vars, "len": runtime.len_, "view_": runtime.view_,
    "raise_": runtime.raise_,
    "print_value": runtime.print_value, "print_end": runtime.print_end,
    "shared_static_bytes": runtime.shared_static_bytes, "tick": intrinsics.tick,
    "tick_ahead": intrinsics.tick_ahead,
    "check_step": intrinsics.check_step, "assert_": intrinsics.assert_, "floordiv": arith.floordiv,
    "mod": arith.mod, "divmod_": arith.divmod_, "min_": arith.min_, "max_": arith.max_,
    "py_truediv": arith.py_truediv, "py_floordiv": arith.py_floordiv, "py_mod": arith.py_mod,
    "py_divmod": arith.py_divmod, "round_to": intrinsics.round_to,
    "round_int": conversions.round_int, "shl": arith.shl, "shr": arith.shr, "neg": arith.neg,
    "abs_": arith.abs_, "captured_at": runtime.captured_at, "array_at": lowlevel.array_at,
    "typed_ptr": lowlevel.typed_ptr, "carray": intrinsics.pointer_carray,
    "farray": intrinsics.pointer_farray,
    "shared_array": intrinsics.shared_array,
    "dynamic_shared_array": intrinsics.dynamic_shared_array, "local_array": intrinsics.local_array,
    "thread_frame": intrinsics.thread_frame, "push_frame": intrinsics.push_frame,
    "pop_frame": intrinsics.pop_frame, "grid": intrinsics.grid, "gridsize": intrinsics.gridsize,
    "lanemask_lt": intrinsics.lanemask_lt, "nanosleep": intrinsics.nanosleep,
    "laneid": intrinsics.laneid, "warpsize": intrinsics.warpsize,
    "thread_idx": intrinsics.thread_idx, "block_idx": intrinsics.block_idx,
    "block_dim": intrinsics.block_dim, "grid_dim": intrinsics.grid_dim, "popc": intrinsics.popc,
    "brev": intrinsics.brev, "clz": intrinsics.clz, "ffs": intrinsics.ffs, "fma": intrinsics.fma,
    "cbrt": intrinsics.cbrt, "selp": intrinsics.selp, "fence": sync.fence, "put": sync.put,
    "value": sync.value, "result_i32": sync.result_i32, "result_u32": sync.result_u32,
    "result_bool": sync.result_bool, "result2_bool": sync.result2_bool, "bare": lowlevel.bare,
    "begin_launch": sync.begin_launch, "begin_block": sync.begin_block,
    "begin_thread": sync.begin_thread, "begin_thread_in": sync.begin_thread_in,
    "is_row": sync.is_row, "first_thread": sync.first_thread,
    "begin_generators": sync.begin_generators, "restore_thread": sync.restore_thread,
    "save_thread": sync.save_thread, "pause_thread": sync.pause_thread, "keep": sync.keep,
    "reload": sync.reload, "runnable": sync.runnable, "end_launch": sync.end_launch,
    "returned": sync.returned, "thread_at": sync.thread_at, "resolve": sync.resolve,
    "barrier": sync.barrier, "suspend_block": sync.suspend_block,
    "resume_block": sync.resume_block, "grid_barrier": sync.grid_barrier,
    "gen_sizeof": lowlevel.gen_sizeof, "gen_put": lowlevel.gen_put,
    "gen_resume": lowlevel.gen_resume, "NODESC": access.NODESC, "desc": access.desc,
    "unraced": access.unraced, "count": runtime.count,
    "thread_span": sync.thread_span, "alive_beyond": sync.alive_beyond,
    "block_threads": sync.block_threads, "nth_runnable": sync.nth_runnable,
}.items()}
RUNTIME["np"] = np


def _add(name: str, value: Any) -> None:
    if name in RUNTIME:
        raise RuntimeError(f"{name!r} is in the simulator's runtime table twice")
    RUNTIME[name] = value


for _axis in "xyz":
    for _what in ("tid", "bid", "bdim", "gdim"):
        _add(f"{P}{_what}_{_axis}", getattr(intrinsics, f"{_what}_{_axis}"))
for _op, _fn in atomics.ATOMICS.items():
    _add(f"{P}atomic_{_op}", _fn)
for _fp16, _fn in half.FP16.items():
    _add(f"{P}fp16_{_fp16}", _fn)


@functools.cache
def _with_math() -> dict[str, Any]:
    return {**RUNTIME, **{f"{P}math_{name}": stub for name, stub in cudamath.stubs().items()}}


def runtime() -> dict[str, Any]:
    """What rewritten kernels call: RUNTIME and the `math` functions with numba-cuda's types
    (gpukit.sim.cudamath, made on first use). A fresh dict each time."""
    return dict(_with_math())


class KernelBuilder:
    """Rewrites one kernel and everything it calls into compilable units."""

    def __init__(self, func: pytypes.FunctionType, debug: bool = False,
                 arg_dtypes: dict | None = None, pointers: dict | None = None,
                 argtypes: tuple | None = None):
        self.func = func
        self.pointers = pointers or {}  # raw pointer parameters (an eager signature's
        #                                 CPointer types): name -> the dtype they point to
        self.build = Build(python_errors=debug, arg_dtypes=arg_dtypes, argtypes=argtypes,
                           kernel_func=func)
        self._sync: dict[Any, bool] = {}
        self._units: dict[Any, Unit] = {}
        self._ids = itertools.count(1)
        self._inlines = itertools.count(1)

    # -- which functions have sync points ----------------------------------------------------
    def has_sync(self, func: pytypes.FunctionType, _active: tuple = ()) -> bool:
        if func in self._sync:
            return self._sync[func]
        if func in _active:
            return False
        from .source import read_function
        tree = read_function(func).tree
        found = False
        local = _local_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            obj = _static(func, node.func, local)
            if obj is None:  # x.method(...): an overload_method using CUDA, if any
                method = isinstance(node.func, ast.Attribute) and \
                    cuda_method_overload(node.func.attr)
                callees = self.build.implementations(("method", node.func.attr)) \
                    if method else []
            else:
                spec = names.intrinsic(obj)
                if spec is not None and spec.category in ("sync", "grid"):  # grid: g.sync()
                    found = True
                    break
                callees = [names.device_function(obj)]
                if isinstance(obj, pytypes.FunctionType) and cuda_code_in_overload(obj):
                    callees = self.build.implementations(obj)  # an @overload using CUDA
            if any(callee is not None and self.has_sync(callee, (*_active, func))
                   for callee in callees):
                found = True
                break
        self._sync[func] = found
        return found

    # -- units -----------------------------------------------------------------------------
    def kernel(self) -> Unit:
        func = self.func
        generator = self.has_sync(func)
        params = [a for a in func.__code__.co_varnames[:func.__code__.co_argcount]]
        for k, name in enumerate(params):
            self.build.slot(SlotSpec("param", name, param=k))
        self.build.local_slot = self.build.slot(SlotSpec("local", "local"))
        rw = UnitRewriter(self.build, func, is_kernel=True,
                          param_slots={n: k for k, n in enumerate(params)}, generator=generator)
        rw.builder = self
        rw.frame_expr = lambda: N.call(P + "thread_frame", N.name(CTX))
        body = rw.body(rw.fn.body)
        if generator and not has_yield(body):
            generator = False
        unit = Unit(func, f"{P}kernel", True, generator=generator)
        if generator:
            flush = rw.flush()
        else:
            flush = rw.returned_counters()
            unit.counters = tuple((site, space) for site, space, _ in rw.counters)
        # a raw pointer comes in as its address: typed here, as numba-cuda types the parameter
        pointers = [N.assign(name, N.call(P + "typed_ptr", N.name(name),
                                          rw.constant(np.zeros(0, dtype), "pointee")))
                    for name, dtype in self.pointers.items()]
        body = pointers + rw.prologue() + replace_flush(body + [ast.Expr(N.call(P + "FLUSH"))],
                                                        flush)
        unit.source = _function_source(unit.name, rw.params, hoisted(body))
        frames = bool(self._units)  # device functions (this kernel's unit comes last)
        split = regions.split(body, self.build.uses_fences, frames) if generator else None
        if split is not None:
            unit.generator_source = unit.source
            unit.source = _function_source(unit.name, rw.params, hoisted(split[0]))
            unit.region_vars = split[1]
        unit.namespace = rw.namespace
        unit.frame_bytes = rw.frame_bytes
        unit.calls = rw.calls
        self._units[(func, ())] = unit
        return unit

    def unit(self, func: pytypes.FunctionType, bound: dict | None = None) -> Unit:
        """The unit of a device function without sync points (rewritten on first use), one per
        set of parameters its callers bind (`transform.bind_parameters`)."""
        bound = bound or {}
        key = (func, tuple((name, type(s.obj), _hashable(s.obj)) for name, s in bound.items()))
        unit = self._units.get(key)
        if unit is not None:
            return unit
        ident = "".join(c if c.isalnum() else "_" for c in func.__name__)  # <lambda>
        unit = Unit(func, f"{P}fn{next(self._ids)}_{ident}", False)
        self._units[key] = unit
        rw = UnitRewriter(self.build, func, is_kernel=False, bound=bound)
        rw.builder = self
        rw.frame_var = P + "fp"
        rw.frame_expr = lambda: N.name(P + "fp")
        body = rw.body(rw.fn.body)
        prologue = rw.prologue()
        prologue.insert(0, N.assign(P + "fp", N.call(P + "push_frame", N.name(CTX),
                                                     N.const(rw.frame_bytes),
                                                     N.const(rw.frame_align))))
        epilogue = [ast.Expr(N.call(P + "FLUSH")),
                    ast.Expr(N.call(P + "pop_frame", N.name(CTX), N.name(P + "fp")))]
        if body and isinstance(body[-1], ast.Return):
            epilogue = []
        body = replace_flush(body + epilogue, rw.flush())
        unit.source = _function_source(unit.name, rw.params, hoisted(prologue + body),
                                       rw.vararg)
        unit.namespace = rw.namespace
        unit.frame_bytes, unit.frame_align = rw.frame_bytes, rw.frame_align
        unit.calls = rw.calls
        return unit

    def inline(self, caller: UnitRewriter, func: pytypes.FunctionType,
               call: ast.Call) -> tuple[list[ast.stmt], ast.expr]:
        """A device function with sync points, inlined at a call: (statements, result)."""
        if call.keywords:
            raise caller._unsupported(call, "keyword arguments to a device function")
        prefix = f"{P}i{next(self._inlines)}_"
        bound = bind_parameters(func, caller.function_args(call.args))
        rw = UnitRewriter(self.build, func, is_kernel=False, prefix=prefix,
                          generator=caller.generator, bound=bound)
        rw.builder = self
        rw.frame_expr = caller.frame_expr
        rw.frame_owner = caller.frame_owner or caller  # whose frame and counters these are
        args = unbound_args(func, call.args, bound)
        if len(call.args) != len(rw.params) + len(rw.bound):
            raise caller._unsupported(call, f"calling {func.__name__} with {len(call.args)} "
                                            f"arguments instead of "
                                            f"{len(rw.params) + len(rw.bound)}")
        done, result = prefix + "done", prefix + "rv"
        rw.inline_exit = (done, result)
        pre: list[ast.stmt] = []
        for name, arg in zip(rw.params, args):
            pre.append(N.assign(rw.local(name), caller.used(arg, L.UNDEF_CALL, call)))
        pre.append(N.assign(done, N.const(False)))
        pre += [N.assign(rw.dname(n), N.const(True)) for n in rw.tracked]
        body = rw.body(rw.fn.body)
        body = _exit_after_loops(body, done)
        if not _always_returns(rw.fn.body):  # falling off the end returns None
            body.append(N.assign(result, N.const(None)))
        pre.append(ast.While(test=N.const(True), body=body + [ast.Break()], orelse=[]))
        caller.namespace.update(rw.namespace)
        caller.calls += rw.calls
        caller.frame_bytes = max(caller.frame_bytes, rw.frame_bytes)
        return pre, N.name(result) if rw.returns_value else N.const(None)

    # -- compiling ---------------------------------------------------------------------------
    def units(self) -> list[Unit]:
        return list(self._units.values())


def _hashable(obj: Any) -> Any:
    try:
        hash(obj)
    except TypeError:
        return id(obj)
    return obj


def _local_names(tree: ast.FunctionDef) -> set[str]:
    found = {a.arg for a in tree.args.args}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
    return found


def _static(func: pytypes.FunctionType, node: ast.expr, local: set[str]) -> Any:
    if isinstance(node, ast.Name):
        if node.id in local:
            return None
        obj = names.lookup(func, node.id)
        return None if names.missing(obj) else obj
    if isinstance(node, ast.Attribute):
        base = _static(func, node.value, local)
        if base is None:
            return None
        obj = names.attribute(base, node.attr)
        return None if names.missing(obj) else obj
    return None


def _always_returns(stmts: list[ast.stmt]) -> bool:
    """Whether a function body ends in a return (or raise) on every path."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def _exit_after_loops(stmts: list[ast.stmt], done: str) -> list[ast.stmt]:
    """Inlined bodies leave through `break`: after each loop, leave too if the callee returned."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, (ast.For, ast.While)):
            stmt.body = _exit_after_loops(stmt.body, done)
            out.append(stmt)
            out.append(ast.If(test=N.name(done), body=[ast.Break()], orelse=[]))
            continue
        if isinstance(stmt, ast.If):
            stmt.body = _exit_after_loops(stmt.body, done)
            stmt.orelse = _exit_after_loops(stmt.orelse, done)
        out.append(stmt)
    return out


def _function_source(name: str, params: list[str], body: list[ast.stmt],
                     vararg: str | None = None) -> str:
    fn = ast.FunctionDef(
        name=name,
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=CTX), ast.arg(arg=P + "D")]
                           + [ast.arg(arg=p) for p in params],
                           vararg=ast.arg(arg=vararg) if vararg else None,
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body or [ast.Pass()], decorator_list=[], returns=None, type_params=[])
    module = ast.Module(body=[fn], type_ignores=[])
    ast.fix_missing_locations(module)
    return ast.unparse(module)


def driver_source(params: list[str], generator: bool, nslots: int, regions: bool = False,
                  cooperative: bool = False, fences: bool = True, frames: bool = True,
                  counters: tuple[tuple[int, int], ...] = ()) -> str:
    """The function that runs a launch: every block, every thread. Its own names all start
    with _g_, so that no kernel parameter is shadowed. A kernel run region by region
    (gpukit.sim.regions) runs a whole block per call; a kernel that calls grid.sync() keeps the
    generators of every thread of the grid, and its blocks take turns (sync.grid_barrier).
    `fences`, `frames`: the kernel calls threadfence, device functions (`sync.begin_thread`).
    `counters`: the (site, space) of each site counter a kernel without sync points returns;
    the driver sums them over the launch's threads and adds them to the context once."""
    args = ", ".join(params)
    call = f"{P}kernel({CTX}, {P}D{', ' if params else ''}{args})"
    lines = [f"def {P}drive({CTX}{', ' if params else ''}{args}):"]
    descs = ", ".join(f"{P}desc({CTX}, {k})" for k in range(nslots))
    lines.append(f"    {P}D = ({descs},)")
    lines.append(f"    _g_tpb = {CTX}[{L.TPB}]")
    if not generator:
        sums = range(len(counters))
        lines += [f"    _g_sum{j} = 0" for j in sums]
        lines.append(f"    _g_row = {P}is_row({CTX})")
        lines += [f"    {P}begin_launch({CTX})",
                  f"    for _g_run in range({CTX}[{L.NBLOCKS}]):",
                  f"        if not {P}begin_block({CTX}, _g_run):",
                  "            break",
                  f"        _g_first = {P}first_thread({CTX})",
                  "        for _g_k in range(_g_tpb):",
                  (f"            {P}begin_thread_in({CTX}, {P}thread_at({CTX}, _g_k), _g_row, "
                   f"_g_first, {fences}, {frames})"),
                  f"            _g_counts = {call}"]
        lines += [f"            _g_sum{j} += _g_counts[{j}]" for j in sums]
        lines += [f"    {P}count({CTX}, {site}, {space}, _g_sum{j})"
                  for j, (site, space) in enumerate(counters)]
        lines += [f"    {P}end_launch({CTX})", "    return 0"]
        return "\n".join(lines)
    if regions:
        lines += [f"    {P}begin_launch({CTX})",
                  f"    for _g_run in range({CTX}[{L.NBLOCKS}]):",
                  f"        if not {P}begin_block({CTX}, _g_run):",
                  "            break",
                  f"        {P}begin_generators({CTX})",
                  f"        {call}",
                  f"    {P}end_launch({CTX})",
                  "    return 0"]
        return "\n".join(lines)
    if cooperative:
        return "\n".join(lines + _cooperative_driver(call))
    lines += [f"    _g_proto = {call}",
              f"    _g_size = {P}gen_sizeof(_g_proto)",
              f"    if _g_tpb * _g_size > {CTX}[{L.GENBUF_BYTES}]:",
              "        return _g_tpb * _g_size  # the host makes the buffer this big and calls again",
              f"    _g_base = {CTX}[{L.GENBUF}]",
              f"    for _g_run in range({CTX}[{L.NBLOCKS}]):",
              f"        {P}begin_block({CTX}, _g_run)",
              f"        {P}begin_generators({CTX})",
              "        for _g_lt in range(_g_tpb):",
              f"            {P}gen_put(_g_base + _g_lt * _g_size, {call})",
              "        while True:",
              "            for _g_k in range(_g_tpb):",
              f"                _g_lt = {P}thread_at({CTX}, _g_k)",
              f"                if {P}runnable({CTX}, _g_lt):",
              f"                    {P}restore_thread({CTX}, _g_lt)",
              f"                    _g_code = {P}gen_resume(_g_base + _g_lt * _g_size, _g_proto)",
              f"                    {P}save_thread({CTX}, _g_code)",
              f"                    {CTX}[{L.GEN_RESUMES}] += 1",
              f"            if {P}resolve({CTX}) == 0:",
              "                break",
              f"    {P}end_launch({CTX})",
              "    return 0"]
    return "\n".join(lines)


def _cooperative_driver(call: str) -> list[str]:
    """The body of the driver of a kernel that calls grid.sync() (see driver_source)."""
    return [f"    _g_proto = {call}",
            f"    _g_size = {P}gen_sizeof(_g_proto)",
            f"    _g_all = {CTX}[{L.NBLOCKS}] * _g_tpb * _g_size",
            f"    if _g_all > {CTX}[{L.GENBUF_BYTES}]:",
            "        return _g_all  # the host makes the buffer this big and calls again",
            "    _g_first = True",
            "    while True:",
            f"        for _g_run in range({CTX}[{L.NBLOCKS}]):",
            f"            _g_at = {CTX}[{L.GENBUF}] + _g_run * _g_tpb * _g_size",
            "            if _g_first:",
            f"                {P}begin_block({CTX}, _g_run)",
            f"                {P}begin_generators({CTX})",
            "                for _g_lt in range(_g_tpb):",
            f"                    {P}gen_put(_g_at + _g_lt * _g_size, {call})",
            f"            elif not {P}resume_block({CTX}, _g_run):",
            "                continue",
            "            while True:",
            "                for _g_k in range(_g_tpb):",
            f"                    _g_lt = {P}thread_at({CTX}, _g_k)",
            f"                    if {P}runnable({CTX}, _g_lt):",
            f"                        {P}restore_thread({CTX}, _g_lt)",
            f"                        _g_code = {P}gen_resume(_g_at + _g_lt * _g_size, _g_proto)",
            f"                        {P}save_thread({CTX}, _g_code)",
            f"                        {CTX}[{L.GEN_RESUMES}] += 1",
            f"                _g_left = {P}resolve({CTX})",
            "                if _g_left <= 0:",
            "                    break",
            f"            {P}suspend_block({CTX}, _g_run, _g_left)",
            "        _g_first = False",
            f"        if not {P}grid_barrier({CTX}):",
            "            break",
            f"    {P}end_launch({CTX})",
            "    return 0"]


# -- numba-cuda's typing, the judge of what a kernel may do --------------------------------------
_TYPING_PIPELINES: dict[bool, Any] = {}


def _typing_pipeline(rewrites: bool = False) -> Any:
    """A numba-cuda compiler that stops after type inference (no NVVM, no GPU); with
    `rewrites`, numba-cuda's after-inference IR rewrites run after it (for what they do to the
    compilation: the simulator runs the kernel from its source, not from the rewritten IR)."""
    if rewrites in _TYPING_PIPELINES:
        return _TYPING_PIPELINES[rewrites]
    from numba.cuda.compiler import CUDACompiler, CUDATranslateBytecode, DefaultPassBuilder
    from numba.cuda.core.compiler_machinery import FunctionPass, PassManager, register_pass
    from numba.cuda.core.typed_passes import NopythonRewrites, NopythonTypeInference
    from numba.cuda.core.untyped_passes import TranslateByteCode

    @register_pass(mutates_CFG=False, analysis_only=True)
    class GpukitTypingDone(FunctionPass):
        _name = "gpukit_typing_done"

        def __init__(self) -> None:
            FunctionPass.__init__(self)

        def run_pass(self, state: Any) -> bool:
            _sentry_record_alignment(state.func_ir, state.typemap)
            # before any rewrite: the types, and what `cuda_typed` gives
            state.cr = (dict(state.typemap), state.func_ir, dict(state.calltypes))
            return False

    class TypingOnly(CUDACompiler):
        def define_pipelines(self) -> list:
            pm = PassManager("gpukit-typing")
            for impl, what in DefaultPassBuilder.define_untyped_pipeline(self.state).passes:
                pm.add_pass(CUDATranslateBytecode if impl is TranslateByteCode else impl, what)
            pm.add_pass(NopythonTypeInference, "nopython frontend")
            pm.add_pass(GpukitTypingDone, "done")
            if rewrites:
                pm.add_pass(NopythonRewrites, "nopython rewrites")
            pm.finalize()
            return [pm]

    _TYPING_PIPELINES[rewrites] = TypingOnly
    return TypingOnly


def _sentry_record_alignment(func_ir: Any, typemap: dict) -> None:
    """numba-cuda's lowering refuses a record field that is not aligned for its type (a GPU
    faults on a misaligned load): its error, for each field the kernel reads or writes."""
    from numba.cuda import types
    from numba.cuda.core import ir  # numba-cuda's own IR classes
    from numba.cuda.core.errors import NumbaError
    from numba.cuda.descriptor import cuda_target

    def check(record: ir.Var, attr: Any, loc: Any) -> None:
        rectyp = typemap.get(record.name)
        if isinstance(rectyp, types.Record) and isinstance(attr, str):
            try:
                cuda_target.target_context.sentry_record_alignment(rectyp, attr)
            except NumbaError as exc:  # at the line that uses the field
                raise type(exc)(str(exc), loc=loc) from None

    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.SetAttr):
                check(stmt.target, stmt.attr, stmt.loc)
            elif isinstance(stmt, ir.StaticSetItem):
                check(stmt.target, stmt.index, stmt.loc)
            elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
                if stmt.value.op == "getattr":
                    check(stmt.value.value, stmt.value.attr, stmt.loc)
                elif stmt.value.op == "static_getitem":
                    check(stmt.value.value, stmt.value.index, stmt.loc)


def cuda_typecheck(func: pytypes.FunctionType, argtypes: tuple, rewrites: bool = False) -> dict:
    """Type `func` as numba-cuda would for a GPU; raise its error as the kernel's own. Returns
    numba-cuda's types of the kernel's variables (SSA versions of `x` are `x`, `x.1`, ...).
    `rewrites`: numba-cuda's after-inference rewrites run too (`_typing_pipeline`)."""
    return cuda_typed(func, argtypes, rewrites)[0]


def cuda_typed(func: pytypes.FunctionType, argtypes: tuple, rewrites: bool = False) -> tuple:
    """`cuda_typecheck`'s types, with numba-cuda's IR of `func` and the signature it typed each
    call with (its `calltypes`, by IR expression): (typemap, func_ir, calltypes)."""
    from numba.cuda import utils
    from numba.cuda.core.compiler_lock import global_compiler_lock
    from numba.cuda.descriptor import cuda_target
    from numba.cuda.flags import CUDAFlags

    flags = CUDAFlags()
    flags.no_compile = True
    flags.no_cpython_wrapper = True
    flags.no_cfunc_wrapper = True
    flags.error_model = "numpy"
    try:
        # numba-cuda's typing (its pass registry, its typing context's refresh) is not safe
        # from two threads at once: numba-cuda compiles under its global lock, and so does gpukit
        with global_compiler_lock, utils.numba_target_override(), _device_for_typing():
            pipeline = _typing_pipeline(rewrites)
            return pipeline(cuda_target.typing_context, cuda_target.target_context,
                            None, argtypes, None, flags, {}).compile_extra(func)
    except Exception as exc:  # numba-cuda rejects the kernel: say why, in its words
        from numba.core.errors import NumbaError
        if not isinstance(exc, NumbaError) and type(exc).__module__.split(".")[0] != "numba":
            raise
        raise _typing_error(func, exc) from None


def _line_naming(func: pytypes.FunctionType, text: str) -> int | None:
    """Where the kernel uses what numba-cuda's message names (when it gives no line): an
    undefined name, a function it found no implementation of, an unknown attribute."""
    import re

    from .source import read_function
    patterns = (r"name '(\w+)' is not defined", r"Function\(<[\w\- ]*?(\w+)>\)",
                r"Function\(<function (\w+)", r"Unknown attribute '(\w+)'",
                r"Invalid use of .*?(\w+)>?\)? with")
    tree = read_function(func).tree
    for pattern in patterns:
        hit = re.search(pattern, text)
        if not hit:
            continue
        name = hit.group(1)
        for node in ast.walk(tree):
            used = (node.id if isinstance(node, ast.Name) else
                    node.attr if isinstance(node, ast.Attribute) else None)
            if used == name:
                return node.lineno
    return None


class _TypingDevice:
    """What numba-cuda asks of the current device while typing calls of device functions."""

    compute_capability = (7, 5)


@contextlib.contextmanager
def _device_for_typing():
    """numba-cuda types a call of a device function by compiling it for the current device's
    compute capability; without a GPU there is none, so while typing, a stand-in answers (with
    a GPU present, nothing is replaced)."""
    from numba.cuda import dispatcher
    real = dispatcher.get_current_device
    try:
        real()
        present = True
    except Exception:  # noqa: BLE001 - no driver or no device: type as for a CC 7.5 GPU
        present = False  # (the result is the same for every CC numba-cuda supports)
    if present:
        yield
        return
    dispatcher.get_current_device = _TypingDevice
    try:
        yield
    finally:
        dispatcher.get_current_device = real


def _typing_error(func: pytypes.FunctionType, exc: Exception) -> KernelTypingError:
    """numba-cuda's typing error as the kernel's: its message, at the kernel's line."""
    import re
    text = str(exc)
    filename = func.__code__.co_filename
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    lineno = None
    for ln in lines:  # "During: typing of call at /path/file.py (259)" names the user's line
        hit = re.search(r" at (.+) \((\d+)\)\s*$", ln)
        if hit and os.path.abspath(hit.group(1)) == filename:
            lineno = int(hit.group(2))
            break
    if lineno is None:
        found = [int(n) for f, n in re.findall(r'File "([^"]+)", line (\d+)', text)
                 if os.path.abspath(f) == filename]  # numba names it relative to the cwd
        lineno = found[-1] if found else getattr(getattr(exc, "loc", None), "line", None)
    if lineno is None:
        lineno = _line_naming(func, text)
    detail = "\n".join(ln for ln in text.splitlines()  # numba-cuda's lines, verbatim, its
                       if not ln.startswith(("Failed in", "During: Pass ")) and "<source" not in
                       ln).strip()  # with its "During:" chain: which call it was typing
    detail = re.sub(r"\n{3,}", "\n\n", detail)
    return typing_error_as(exc, f"numba-cuda would not compile kernel '{func.__name__}' "
                           f"for a GPU (the simulator runs what numba-cuda compiles): {detail}",
                           kernel=func.__name__, lineno=lineno, filename=filename)
