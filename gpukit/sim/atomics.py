"""`cuda.atomic.*` in compiled kernels, with numba-cuda's semantics and the simulator's checks.

Threads of a block run one at a time between sync points, so a read-modify-write is atomic by
construction; what matters is doing exactly what numba-cuda's implementation does (float `max`
and `min` leave the element alone when either value is NaN; `nanmax` and `nanmin` ignore a NaN
operand and replace a NaN element; `inc` and `dec` wrap as CUDA's atomicInc/atomicDec) and
recording each access as atomic for the race check.
"""

from __future__ import annotations

import numpy as np
from numba import types

from . import engine_cache
from . import layout as L
from .access import bounds_fail, touch
from .lowlevel import addr_of, index_int, overload

# new value of the element from `old` and `v` (and `cmp` for cas); `old` is returned
_UPDATE = {
    "add": "old + v",
    "sub": "old - v",
    "and_": "old & v",
    "or_": "old | v",
    "xor": "old ^ v",
    "exch": "v",
    "inc": "DT(0) if old >= v else DT(old + DT(1))",
    "dec": "v if (old == 0 or old > v) else DT(old - DT(1))",
    "cas": "v if old == cmp else old",
}
_FLOAT_MINMAX = {
    "max": "old if (old != old or v != v or not old < v) else v",
    "min": "old if (old != old or v != v or not old > v) else v",
    "nanmax": "old if v != v else (v if (old != old or old < v) else old)",
    "nanmin": "old if v != v else (v if (old != old or old > v) else old)",
}
_INT_MINMAX = {"max": "max(old, v)", "min": "min(old, v)",
               "nanmax": "max(old, v)", "nanmin": "min(old, v)"}
OPS = tuple(_UPDATE) + tuple(_FLOAT_MINMAX)

_CACHE: dict = {}


def _source(op: str, ndim: int, tuple_index: bool, is_float: bool) -> str:
    args = ("c, obj, idx, cmp, val, site, d, n" if op == "cas"
            else "c, obj, idx, val, site, d, n")
    lines = [f"def impl({args}):",
             "    bc = d[8] & CHECK_BOUNDS if d[0] >= 0 else c[CHECKS] & CHECK_BOUNDS",
             "    addr = addr_of(obj)"]
    for k in range(ndim):
        src = f"idx[{k}]" if tuple_index else "idx"
        lines += [f"    i{k} = index_int({src})",
                  f"    if i{k} < 0 or i{k} >= obj.shape[{k}]:",
                  "        if bc:",
                  f"            bounds_fail(c, site, {k}, i{k}, obj)",
                  f"        if i{k} < 0:",
                  f"            i{k} += obj.shape[{k}]",
                  f"    addr += i{k} * obj.strides[{k}]"]
    index = ", ".join(f"i{k}" for k in range(ndim))
    if op in _FLOAT_MINMAX:
        update = (_FLOAT_MINMAX if is_float else _INT_MINMAX)[op]
    else:
        update = _UPDATE[op]
    lines += ["    touch(c, site, d, addr, obj.itemsize, KIND_ATOMIC, False)",
              "    c[ATOMIC_SEQ] += 1",
              "    c[ACQUIRE_SEQ] = c[ATOMIC_SEQ]",
              "    if c[FENCE_STAMP] != 0:",
              "        release(c)",
              "    v = DT(val)"]
    if op == "cas":
        lines.append("    cmp = DT(cmp)")
    lines += [f"    old = obj[{index}]",
              f"    obj[{index}] = {update}",
              "    return old"]
    return "\n".join(lines)


def _impl(op: str, ary: types.Array, idx) -> object:
    tuple_index = isinstance(idx, types.BaseTuple)
    ndim = len(idx.types) if tuple_index else 1
    is_float = isinstance(ary.dtype, types.Float)
    key = (op, ndim, tuple_index, ary.dtype)
    if key not in _CACHE:
        from .sync import release
        namespace = {"__name__": __name__,  # (Numba's cache finds its globals again by it)
                     "np": np, "addr_of": addr_of, "index_int": index_int,
                     "bounds_fail": bounds_fail, "touch": touch, "release": release,
                     "DT": ary.dtype, "CHECKS": L.CHECKS,
                     "CHECK_BOUNDS": L.CHECK_BOUNDS, "KIND_ATOMIC": L.KIND_ATOMIC,
                     "ATOMIC_SEQ": L.ATOMIC_SEQ, "ACQUIRE_SEQ": L.ACQUIRE_SEQ,
                     "FENCE_STAMP": L.FENCE_STAMP}
        source = _source(op, ndim, tuple_index, is_float)
        exec(compile(source, f"<gpukit atomic.{op}>", "exec"), namespace)  # noqa: S102
        _CACHE[key] = impl = namespace["impl"]
        # its source and globals are the key's: the key names it for the cache on disk
        engine_cache.enroll(impl, "-".join(str(k) for k in key))
    return _CACHE[key]


def _make(op: str):
    if op == "cas":
        def stub(c, obj, idx, cmp, val, site, d, n):
            """cuda.atomic.cas in a kernel."""

        @overload(stub, jit_options={'forceinline': True}, cached=True)
        def _ol(c, obj, idx, cmp, val, site, d, n):
            if isinstance(obj, types.Array):
                return _impl(op, obj, idx)
            return None
    else:
        def stub(c, obj, idx, val, site, d, n):
            """cuda.atomic.<op> in a kernel."""

        @overload(stub, jit_options={'forceinline': True}, cached=True)
        def _ol(c, obj, idx, val, site, d, n):
            if isinstance(obj, types.Array):
                return _impl(op, obj, idx)
            return None
    stub.__name__ = stub.__qualname__ = f"atomic_{op}"
    return stub


ATOMICS = {op: _make(op) for op in OPS}
