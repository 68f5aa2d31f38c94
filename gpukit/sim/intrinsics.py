"""The `numba.cuda` intrinsics that need no other thread: coordinates, bit tricks, memory spaces.

The transform replaces `cuda.threadIdx.x` with `tid_x(_g_c)`, `cuda.grid(2)` with `grid(_g_c, 2)`,
`cuda.shared.array(...)` with `shared_array(...)`, and so on; each returns what numba-cuda's
typing gives (`threadIdx.x` is an int32, `grid(1)` an int64, `ballot_sync` an int32). Barriers
and warp intrinsics, which need other threads, are in `gpukit.sim.sync`.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import carray, farray, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

from . import layout as L
from .access import fail, pointer_span
from .lowlevel import addr_of, overload, poll, register_jitable, store_u8

Dim3 = namedtuple("Dim3", ("x", "y", "z"))


# -- coordinates -------------------------------------------------------------------------------
def _coord(field: int):
    @register_jitable(forceinline=True)
    def get(c):
        return np.int32(c[field])
    return get


tid_x, tid_y, tid_z = _coord(L.TX), _coord(L.TY), _coord(L.TZ)
bid_x, bid_y, bid_z = _coord(L.BX), _coord(L.BY), _coord(L.BZ)
bdim_x, bdim_y, bdim_z = _coord(L.BDX), _coord(L.BDY), _coord(L.BDZ)
gdim_x, gdim_y, gdim_z = _coord(L.GDX), _coord(L.GDY), _coord(L.GDZ)


@register_jitable
def laneid(c):
    return np.int32(c[L.LT] % 32)


@register_jitable
def warpsize(c):
    return np.int32(32)


@register_jitable
def thread_idx(c):
    return Dim3(np.int32(c[L.TX]), np.int32(c[L.TY]), np.int32(c[L.TZ]))


@register_jitable
def block_idx(c):
    return Dim3(np.int32(c[L.BX]), np.int32(c[L.BY]), np.int32(c[L.BZ]))


@register_jitable
def block_dim(c):
    return Dim3(np.int32(c[L.BDX]), np.int32(c[L.BDY]), np.int32(c[L.BDZ]))


@register_jitable
def grid_dim(c):
    return Dim3(np.int32(c[L.GDX]), np.int32(c[L.GDY]), np.int32(c[L.GDZ]))


def grid(c, ndim):
    """cuda.grid(ndim): the thread's absolute position (int64, or a tuple of int64)."""


@overload(grid, jit_options={'forceinline': True}, cached=True)
def _ol_grid(c, ndim):
    n = getattr(ndim, "literal_value", None)
    if n == 1:
        return lambda c, ndim: np.int64(c[L.TX] + c[L.BX] * c[L.BDX])
    if n == 2:
        return lambda c, ndim: (np.int64(c[L.TX] + c[L.BX] * c[L.BDX]),
                                np.int64(c[L.TY] + c[L.BY] * c[L.BDY]))
    if n == 3:
        return lambda c, ndim: (np.int64(c[L.TX] + c[L.BX] * c[L.BDX]),
                                np.int64(c[L.TY] + c[L.BY] * c[L.BDY]),
                                np.int64(c[L.TZ] + c[L.BZ] * c[L.BDZ]))
    raise TypingError("cuda.grid(ndim): ndim must be the constant 1, 2 or 3")


def gridsize(c, ndim):
    """cuda.gridsize(ndim): threads in the grid along each axis."""


@overload(gridsize, jit_options={'forceinline': True}, cached=True)
def _ol_gridsize(c, ndim):
    n = getattr(ndim, "literal_value", None)
    if n == 1:
        return lambda c, ndim: np.int64(c[L.BDX] * c[L.GDX])
    if n == 2:
        return lambda c, ndim: (np.int64(c[L.BDX] * c[L.GDX]), np.int64(c[L.BDY] * c[L.GDY]))
    if n == 3:
        return lambda c, ndim: (np.int64(c[L.BDX] * c[L.GDX]), np.int64(c[L.BDY] * c[L.GDY]),
                                np.int64(c[L.BDZ] * c[L.GDZ]))
    raise TypingError("cuda.gridsize(ndim): ndim must be the constant 1, 2 or 3")


@register_jitable
def lanemask_lt(c):
    return np.uint32((np.int64(1) << (c[L.LT] % 32)) - 1)


# -- bit tricks (LLVM's own intrinsics, at the operand's width) ------------------------------
def _bit_intrinsic(name: str):
    @intrinsic
    def impl(typingctx, x):
        if not isinstance(x, types.Integer):
            return None
        width = x.bitwidth
        restype = types.uint32 if name == "ffs" else x

        def codegen(context, builder, signature, args):
            (v,) = args
            if name == "popc":
                out = builder.ctpop(v)
            elif name == "clz":
                out = builder.ctlz(v, ir.Constant(ir.IntType(1), 0))
            elif name == "brev":
                fn = builder.module.declare_intrinsic("llvm.bitreverse", [ir.IntType(width)])
                out = builder.call(fn, [v])
            else:  # ffs: 1 + index of the lowest set bit, 0 for 0
                tz = builder.cttz(v, ir.Constant(ir.IntType(1), 0))
                zero = builder.icmp_unsigned("==", v, ir.Constant(ir.IntType(width), 0))
                plus = builder.add(tz, ir.Constant(ir.IntType(width), 1))
                out = builder.select(zero, ir.Constant(ir.IntType(width), 0), plus)
                out = context.cast(builder, out, types.Integer(f"uint{width}"), types.uint32)
            return out
        return restype(x), codegen
    return impl


popc = _bit_intrinsic("popc")
clz = _bit_intrinsic("clz")
brev = _bit_intrinsic("brev")
ffs = _bit_intrinsic("ffs")


@intrinsic
def fma(typingctx, a, b, c):
    """Fused multiply-add, rounded once (as the GPU's fma instruction)."""
    if not (a == b == c and isinstance(a, types.Float)):
        return None

    def codegen(context, builder, signature, args):
        ty = context.get_value_type(a)
        fnty = ir.FunctionType(ty, [ty, ty, ty])  # spelled out: llvmlite's default is double
        fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.fma.f{a.bitwidth}")
        return builder.call(fn, args)
    return a(a, b, c), codegen


def cbrt(x):
    """Cube root."""


@overload(cbrt)
def _ol_cbrt(x):
    if isinstance(x, types.Float):
        return lambda x: np.cbrt(x)
    return None


def selp(test, a, b):
    """cuda.selp: a if test else b."""


@overload(selp)
def _ol_selp(test, a, b):
    return lambda test, a, b: a if test else b


@register_jitable
def nanosleep(c, ns):
    pass


# -- memory spaces -------------------------------------------------------------------------
@intrinsic
def _typed_ptr(typingctx, addr, dtype):
    if isinstance(dtype, types.NumberClass):
        elem = dtype.instance_type
    elif isinstance(dtype, types.DType):
        elem = dtype.dtype
    elif isinstance(dtype, types.TypeRef):
        elem = dtype.instance_type
    else:
        return None

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_data_type(elem).as_pointer())
    return types.CPointer(elem)(types.intp, dtype), codegen


@register_jitable(_nrt=True)
def shared_array(c, offset, dtype, shape):
    """A static shared array of the running block, at `offset` bytes into its shared memory."""
    return carray(_typed_ptr(c[L.SHARED_BASE] + offset, dtype), shape)


@register_jitable(_nrt=True)
def dynamic_shared_array(c, offset, dtype, itemsize):
    """The block's dynamic shared memory (all shape-0 declarations start at `offset`)."""
    n = c[L.DYN_SHARED] // itemsize
    return carray(_typed_ptr(c[L.SHARED_BASE] + offset, dtype), (n,))


@register_jitable(_nrt=True)
def pointer_carray(c, site, ptr, shape, dtype=None):
    """`carray(ptr, shape)` in a kernel: a C-ordered array over a raw pointer, which must lie
    in one allocation of the launch (its accesses then find it by address, as a view's do)."""
    a = carray(ptr, shape, dtype)
    pointer_span(c, site, addr_of(ptr), a.size, a.itemsize)
    return a


@register_jitable(_nrt=True)
def pointer_farray(c, site, ptr, shape, dtype=None):
    """`farray(ptr, shape)` in a kernel: a Fortran-ordered array over a raw pointer."""
    a = farray(ptr, shape, dtype)
    pointer_span(c, site, addr_of(ptr), a.size, a.itemsize)
    return a


@register_jitable(forceinline=True)
def thread_frame(c):
    """The running thread's local-memory frame: the kernel's own local arrays live here."""
    return c[L.LOCAL_BASE] + c[L.LT] * c[L.LOCAL_STRIDE]


@register_jitable(_nrt=True)
def local_array(c, frame, offset, nbytes, dtype, shape):
    """A local array at `offset` bytes into a frame; it starts unwritten, at every call."""
    addr = frame + offset
    if c[L.CHECKS] & L.CHECK_UNINITIALIZED:
        init = c[L.LOCAL_INIT] + (addr - c[L.LOCAL_BASE])
        for k in range(nbytes):
            store_u8(init + k, 0)
    return carray(_typed_ptr(addr, dtype), shape)


@register_jitable
def push_frame(c, nbytes, align):
    """Reserve a device function's local frame on the thread's stack, at an address that is a
    multiple of `align` (a power of 2: its local arrays' `alignment=`); returns the address."""
    sp = (c[L.LOCAL_SP] + align - 1) & -align
    if sp + nbytes > thread_frame(c) + c[L.LOCAL_SIZE]:
        fail(c, L.E_LOCAL_OVERFLOW, 0, nbytes, c[L.LOCAL_SIZE], 0, 0, 0)
    c[L.LOCAL_SP] = sp + nbytes
    return sp


@register_jitable
def pop_frame(c, sp):
    c[L.LOCAL_SP] = sp


def round_to(x, ndigits):
    """round(x, ndigits)."""


@register_jitable
def _round_int64(y):
    # round(y) of a float64 is an int64; the GPU's conversion saturates where the CPU's wraps
    if y >= 9.223372036854775807e18:
        return 9223372036854775807
    if y <= -9.223372036854775808e18:
        return -9223372036854775808
    return round(y)


@register_jitable
def _round_ndigits(x, ndigits):
    # numba-cuda's algorithm (cudaimpl.round_to_impl: CPython's fallback double_round), whose
    # products are float64 even for a float32 x; Numba's CPU target scales in x's own type
    if math.isinf(x) or math.isnan(x):
        return x
    if ndigits >= 0:
        if ndigits > 22:  # 10**ndigits in two factors, each safe from overflow
            pow1 = 10.0 ** (ndigits - 22)
            pow2 = 1e22
        else:
            pow1 = 10.0 ** ndigits
            pow2 = 1.0
        y = (x * pow1) * pow2
        if math.isinf(y):
            return x
    else:
        pow1 = 10.0 ** (-ndigits)
        pow2 = 1.0
        y = x / pow1
    z = _round_int64(y)
    if math.fabs(y - z) == 0.5:
        z = 2.0 * _round_int64(y / 2.0)  # halfway: round half to even
    if ndigits >= 0:
        return (z / pow2) / pow1
    return z * pow1


@overload(round_to, jit_options={'forceinline': True})
def _ol_round_to(x, ndigits):
    if isinstance(x, types.Float) and isinstance(ndigits, types.Integer):
        result = x
        return lambda x, ndigits: result(_round_ndigits(x, ndigits))
    return lambda x, ndigits: round(x, ndigits)


# -- the watchdog --------------------------------------------------------------------------
@register_jitable(forceinline=True)
def tick(c, ticks, site):
    """Called at every loop iteration with a counter of the function's own: every 1024th
    iteration polls the watchdog's stop flag."""
    ticks += 1
    if (ticks & 1023) == 0 and poll(c.ctypes.data + L.STOP * 8) != 0:
        fail(c, L.E_WATCHDOG, site, 0, 0, 0, 0, 0)
    return ticks


@register_jitable(forceinline=True)
def tick_ahead(c, ticks, n, site):
    """`tick` for all `n` iterations of a loop at once, before it starts: a loop over a range
    known when the kernel is compiled, short enough (transform.SHORT_LOOP) that polling before
    it is as good as polling in it. Its trips then carry no watchdog bookkeeping, which leaves
    Numba's optimiser a plain counted loop (a tile's `for j in range(TILE)`)."""
    after = ticks + n
    if (after >> 10) != (ticks >> 10) and poll(c.ctypes.data + L.STOP * 8) != 0:
        fail(c, L.E_WATCHDOG, site, 0, 0, 0, 0, 0)
    return after


@register_jitable
def check_step(c, step, site):
    if step == 0:
        fail(c, L.E_RANGE_STEP, site, 0, 0, 0, 0, 0)
    return step


@register_jitable
def assert_(c, ok, site):
    if not ok:
        fail(c, L.E_ASSERT, site, 0, 0, 0, 0, 0)
