"""Low-level building blocks for compiled kernels: raw memory, array views, generators in place.

These are Numba intrinsics (a few lines of LLVM each) that the rest of the simulator's compiled
code uses: loads and stores at addresses (the launch context keeps addresses, not objects),
array views over memory the simulator owns, arrays without reference counting (so that passing an
array to a thread costs nothing), and generators kept in a buffer and resumed where they lie.
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Callable
from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.extending import overload as numba_overload

from . import engine_cache

# Numba compiles each overload's implementation, for each set of argument types, as a function
# of its own, with a CPython wrapper and a C wrapper unless told not to. The engine's are only
# called from compiled code (and most are inlined there): without the wrappers a process's
# first compile of a vector add took about a sixth less time (11.6-12.1 s -> 9.7-10.2 s).
_COMPILED_CALLERS_ONLY = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}


def overload(func: Any, jit_options: dict | None = None, cached: bool = False,
             **kwargs: Any) -> Any:
    """Numba's `overload` for the engine's own functions: their implementations are called
    only from compiled code, so they are compiled without Python or C entry points. `cached`:
    the implementations it returns are kept on disk between processes (`engine_cache`; one
    built with `exec` must have been enrolled there with a tag naming its source)."""
    options = {**_COMPILED_CALLERS_ONLY, **(jit_options or {})}
    if not cached:
        return numba_overload(func, jit_options=options, **kwargs)

    def decorate(typer: Callable) -> Callable:
        @functools.wraps(typer)  # its signature is typer's (Numba binds the call's types to it)
        def enrolling(*types_: Any, **kw_types: Any) -> Any:
            impl = typer(*types_, **kw_types)
            if impl is not None:
                engine_cache.enroll(impl)
                engine_cache.expect(impl, (types_, kw_types))
            return impl
        numba_overload(func, jit_options={"cache": engine_cache.CACHING, **options},
                       **kwargs)(enrolling)
        return typer
    return decorate


def register_jitable(*args: Any, **options: Any) -> Any:
    """Numba's `register_jitable` (a Python function that compiled code may call), whose
    overload declares the function's own parameters. Numba's declares `(*args, **kwargs)`, which
    numba-cuda's check of its typing registry (`test_signatures_match_overloaded_api`) counts
    as a mismatch for each of the simulator's functions registered in the process."""
    def wrap(fn: Callable) -> Callable:
        # compiled code kept on disk between processes (engine_cache says where and for how long)
        engine_cache.enroll(fn)

        @overload(fn, jit_options=options, cached=True, inline="never", strict=False)
        @functools.wraps(fn)  # its signature is fn's (Numba binds the call's types to it)
        def typer(*types_: Any, **kw_types: Any) -> Callable:
            return fn
        return fn

    if len(args) == 1 and not options and callable(args[0]):  # @register_jitable
        return wrap(args[0])
    return wrap


class Trap(Exception):
    """Raised by compiled code after it wrote an error into the launch context."""


@register_jitable
def trap() -> None:
    raise Trap()


def out_of_line(func: Callable) -> Any:
    """`func` (a Python function for Numba's CPU target that returns nothing) as an intrinsic
    that calls it as one function of its own, which LLVM may not inline (`noinline` on each
    call). Numba lets LLVM inline what it likes, and LLVM copies a big function into each place
    that calls it: a kernel with many accesses then takes long to compile (see
    `access.touch_outlined`). Literal arguments are passed as their plain types, so that one
    compiled function serves every call."""
    @intrinsic
    def call(typingctx, *args):
        plain = tuple(types.unliteral(t) for t in args)

        def codegen(context, builder, signature, packed):
            given = signature.args[0].types  # the arguments come as one tuple
            values = [context.cast(builder, v, t, p) for v, t, p in zip(
                cgutils.unpack_tuple(builder, packed[0], len(given)), given, plain)]
            fndesc = context.compile_subroutine(builder, func, types.none(*plain)).fndesc
            fn = context.declare_function(builder.module, fndesc)
            status, _ = context.call_conv.call_function(builder, fn, types.none, plain, values)
            for instr in reversed(builder.block.instructions):
                if isinstance(instr, ir.CallInstr) and instr.callee is fn:
                    instr.attributes.add("noinline")
                    break
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return context.get_dummy_value()
        return types.none(types.StarArgTuple.from_types(args)), codegen
    functools.update_wrapper(call, func, updated=())
    return call


def _int_ptr(builder, addr, bits):
    return builder.inttoptr(addr, ir.PointerType(ir.IntType(bits)))


def _loader(bits: int, nbtype):
    @intrinsic
    def load(typingctx, addr):
        def codegen(context, builder, signature, args):
            return builder.load(_int_ptr(builder, args[0], bits))
        return nbtype(types.intp), codegen
    return load


def _storer(bits: int, nbtype):
    @intrinsic
    def store(typingctx, addr, value):
        def codegen(context, builder, signature, args):
            value = context.cast(builder, args[1], signature.args[1], nbtype)
            builder.store(value, _int_ptr(builder, args[0], bits))
            return context.get_dummy_value()
        return types.void(types.intp, value), codegen
    return store


load_u8 = _loader(8, types.uint8)
load_u64 = _loader(64, types.uint64)
load_i64 = _loader(64, types.int64)
store_u8 = _storer(8, types.uint8)
store_u64 = _storer(64, types.uint64)
store_i64 = _storer(64, types.int64)


@intrinsic
def index_int(typingctx, x):
    """An atomic's index component as int64, cast as numba-cuda's lowering casts it to intp
    (its typing passes a multi-dimensional atomic's index tuple through as it is): an integer,
    a boolean, or a float (truncated: a uint64 component unified with an int64 one, on
    another path, is float64 in Numba's typing). An optional one (a variable that is None on
    some other path, or what a function that may return None gave) is cast as Numba casts it:
    None there raises Numba's TypeError."""
    inner = x.type if isinstance(x, types.Optional) else x
    if not isinstance(inner, (types.Integer, types.Float, types.Boolean)):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], x, inner) if inner is not x else args[0]
        return context.cast(builder, value, inner, types.int64)
    return types.int64(x), codegen


@intrinsic
def poll(typingctx, addr):
    """A volatile int64 load (the watchdog's stop flag, written by another thread)."""
    def codegen(context, builder, signature, args):
        inst = builder.load(_int_ptr(builder, args[0], 64))
        inst.volatile = True
        return inst
    return types.int64(types.intp), codegen


@intrinsic
def relax(typingctx):
    """A spin-wait hint (x86 `pause`, Arm `yield`): a loop that watches a flag leaves the
    core's resources to other work while it waits. Nothing elsewhere."""
    def codegen(context, builder, signature, args):
        machine = platform.machine().lower()
        if machine in ("x86_64", "amd64"):
            fn = builder.module.declare_intrinsic(
                "llvm.x86.sse2.pause", fnty=ir.FunctionType(ir.VoidType(), []))
            builder.call(fn, [])
        elif machine in ("aarch64", "arm64"):
            fn = builder.module.declare_intrinsic(
                "llvm.aarch64.hint", fnty=ir.FunctionType(ir.VoidType(), [ir.IntType(32)]))
            builder.call(fn, [ir.Constant(ir.IntType(32), 1)])  # 1: yield
        return context.get_dummy_value()
    return types.void(), codegen


@intrinsic
def signal(typingctx, addr, value):
    """A volatile int64 store (a flag another thread watches with `poll`)."""
    def codegen(context, builder, signature, args):
        inst = builder.store(args[1], _int_ptr(builder, args[0], 64))
        inst.volatile = True
        return context.get_dummy_value()
    return types.void(types.intp, types.int64), codegen


@intrinsic
def fetch_add(typingctx, addr, value):
    """An atomic int64 add at `addr`, a word several host threads update: the value before."""
    def codegen(context, builder, signature, args):
        return builder.atomic_rmw("add", _int_ptr(builder, args[0], 64), args[1], "seq_cst")
    return types.int64(types.intp, types.int64), codegen


@intrinsic
def compare_exchange(typingctx, addr, expected, new):
    """Atomically: if the int64 at `addr` is `expected`, make it `new`; whether it was."""
    def codegen(context, builder, signature, args):
        pair = builder.cmpxchg(_int_ptr(builder, args[0], 64), args[1], args[2], "seq_cst",
                               "seq_cst")
        return builder.extract_value(pair, 1)
    return types.boolean(types.intp, types.int64, types.int64), codegen


@intrinsic
def addr_of(typingctx, arr):
    """The address of an array's first element (or a pointer's value)."""
    if isinstance(arr, types.CPointer):
        return types.intp(arr), lambda context, builder, signature, args: builder.ptrtoint(
            args[0], ir.IntType(64))
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.ptrtoint(ary.data, ir.IntType(64))
    return types.intp(arr), codegen


@intrinsic
def array_at(typingctx, addr, template, layout):
    """The array described at address `addr`, in int64 words: its data pointer, its shape, then
    its strides in bytes; of the dtype and rank of the array `template`, in `layout` (a literal
    "C", "F" or "A"). No reference count: the host keeps the memory alive."""
    if not isinstance(template, types.Array) or not isinstance(layout, types.StringLiteral):
        return None
    arrty = types.Array(template.dtype, template.ndim, layout.literal_value)

    def codegen(context, builder, signature, args):
        from numba.np.arrayobj import populate_array
        words = builder.inttoptr(args[0], ir.IntType(64).as_pointer())

        def word(k: int) -> ir.Value:
            return builder.load(builder.gep(words, [ir.Constant(ir.IntType(64), k)]))
        n = arrty.ndim
        llty = context.get_data_type(arrty.dtype)
        out = context.make_array(arrty)(context, builder)
        populate_array(out, data=builder.inttoptr(word(0), llty.as_pointer()),
                       shape=[word(1 + k) for k in range(n)],
                       strides=[word(1 + n + k) for k in range(n)],
                       itemsize=context.get_constant(types.intp, context.get_abi_sizeof(llty)),
                       meminfo=None)
        return out._getvalue()
    return arrty(types.intp, template, layout), codegen


@intrinsic
def record_addr(typingctx, rec):
    """The address of a record (a structured element, passed around by reference)."""
    if not isinstance(rec, types.Record):
        return None

    def codegen(context, builder, signature, args):
        return builder.ptrtoint(args[0], ir.IntType(64))
    return types.intp(rec), codegen


@intrinsic
def _bare_array(typingctx, arr):
    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        out = context.make_array(signature.return_type)(context, builder)
        for name in ("data", "shape", "strides", "itemsize", "nitems", "parent"):
            setattr(out, name, getattr(ary, name))
        out.meminfo = context.get_constant_null(types.MemInfoPointer(types.voidptr))
        return out._getvalue()
    return arr(arr), codegen


def bare(x):
    """The same array without a reference count (the host keeps it alive), or `x` itself."""


@overload(bare)
def _ol_bare(x):
    if isinstance(x, types.Array):
        return lambda x: _bare_array(x)
    return lambda x: x


@intrinsic
def typed_ptr(typingctx, addr, proto):
    """A typed pointer to address `addr`, of the element type of the array `proto`."""
    dtype = proto.dtype

    def codegen(context, builder, signature, args):
        llty = context.get_data_type(dtype)
        return builder.inttoptr(args[0], llty.as_pointer())
    return types.CPointer(dtype)(types.intp, proto), codegen


@intrinsic
def gen_sizeof(typingctx, gen):
    """Bytes one generator of this type takes when stored."""
    def codegen(context, builder, signature, args):
        data = context.data_model_manager[signature.args[0]].get_data_type()
        return context.get_constant(types.intp, context.get_abi_sizeof(data))
    return types.intp(gen), codegen


@intrinsic
def gen_put(typingctx, addr, gen):
    """Store a new generator at `addr` (a buffer of gen_sizeof bytes)."""
    def codegen(context, builder, signature, args):
        data = context.data_model_manager[signature.args[1]].get_data_type()
        builder.store(builder.load(args[1]), builder.inttoptr(args[0], data.as_pointer()))
        return context.get_dummy_value()
    return types.void(types.intp, gen), codegen


@intrinsic
def gen_resume(typingctx, addr, proto):
    """Resume the generator stored at `addr` (of the type of `proto`) where it lies.

    Returns the int64 it yields, or -2 once it is exhausted; its exceptions propagate.
    """
    gen_type = proto

    def codegen(context, builder, signature, args):
        data = context.data_model_manager[gen_type].get_data_type()
        ptr = builder.inttoptr(args[0], data.as_pointer())
        impl = context.get_generator_impl(gen_type)
        status, value = impl(context, builder, types.int64(gen_type), [ptr])
        context.add_linking_libs(getattr(impl, "libs", ()))
        out = cgutils.alloca_once_value(builder, context.get_constant(types.int64, -2))
        with cgutils.if_likely(builder, status.is_ok):
            builder.store(context.cast(builder, value, gen_type.yield_type, types.int64), out)
        failed = builder.and_(status.is_error, builder.not_(status.is_stop_iteration))
        with cgutils.if_unlikely(builder, failed):
            context.call_conv.return_status_propagate(builder, status)
        return builder.load(out)
    return types.int64(types.intp, proto), codegen


@intrinsic
def bits_of(typingctx, value):
    """The bits of a number as int64 (floats reinterpreted, narrower ints sign/zero-extended)."""
    if isinstance(value, types.Float):
        width = value.bitwidth

        def codegen(context, builder, signature, args):
            as_int = builder.bitcast(args[0], ir.IntType(width))
            return builder.sext(as_int, ir.IntType(64)) if width < 64 else as_int
        return types.int64(value), codegen
    if isinstance(value, (types.Integer, types.Boolean)):
        def codegen(context, builder, signature, args):
            return context.cast(builder, args[0], signature.args[0], types.int64)
        return types.int64(value), codegen
    return None


@intrinsic
def from_bits(typingctx, bits, proto):
    """The inverse of bits_of: an int64 reinterpreted as the type of `proto`."""
    target = proto

    def codegen(context, builder, signature, args):
        if isinstance(target, types.Float):
            width = target.bitwidth
            raw = builder.trunc(args[0], ir.IntType(width)) if width < 64 else args[0]
            return builder.bitcast(raw, context.get_value_type(target))
        return context.cast(builder, args[0], types.int64, target)
    return target(types.int64, proto), codegen


@intrinsic
def load_at(typingctx, addr, proto):
    """The element of the array `proto`'s type stored at address `addr`."""
    dtype = proto.dtype

    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], context.get_data_type(dtype).as_pointer())
        return context.unpack_value(builder, dtype, ptr)
    return dtype(types.intp, proto), codegen


@intrinsic
def store_at(typingctx, addr, value, proto):
    """Store `value` (converted to the element type of `proto`) at address `addr`."""
    dtype = proto.dtype

    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], context.get_data_type(dtype).as_pointer())
        converted = context.cast(builder, args[1], signature.args[1], dtype)
        context.pack_value(builder, dtype, converted, ptr)
        return context.get_dummy_value()
    return types.void(types.intp, value, proto), codegen
