"""The helpers that transformed kernels call: masks, masked loads and stores, division, loops.

A mask is True (every lane active), False (none) or a bool vector. Values are Python or numpy
scalars while every lane agrees and numpy vectors (one element per lane) once they differ. The
transform (`gpukit.sim.transform`) names these helpers with the `_g_` prefix; calls go through
`gpukit.sim.calls`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import KernelArithmeticError, KernelError, UnsupportedKernelError
from .arrays import SimArray, _first, constant_view
from .context import current


class _Undefined:
    """The value of a local variable before the kernel assigns it."""

    def __repr__(self) -> str:
        return "<unassigned>"

    def _fail(self, *args: Any) -> Any:
        raise TypeError("a variable was used before the kernel assigned it (for these threads)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __bool__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __index__ = __int__ = __float__ = _fail


U = _Undefined()


def _vec(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.ndim > 0


def normalize(m: Any) -> Any:
    """A vector mask that is all true becomes True, all false becomes False."""
    if isinstance(m, np.ndarray):
        if not m.any():
            return False
        if m.all():
            return True
    return m


# -- masks -----------------------------------------------------------------------------------
def entry_mask() -> Any:
    return True


def any_(m: Any) -> bool:
    if m is True:
        return True
    if m is False:
        return False
    return bool(m.any())


def and_(m: Any, c: Any) -> Any:
    if m is False:
        return False
    if _vec(c):
        return normalize(c if m is True else m & c)
    return m if c else False


def andnot(m: Any, c: Any) -> Any:
    if m is False:
        return False
    if _vec(c):
        return normalize(~c if m is True else m & ~c)
    return False if c else m


def retire(acc: Any, m: Any) -> Any:
    """acc | m: lanes that returned, broke or continued so far."""
    if m is False or acc is True:
        return acc
    if acc is False or m is True:
        return m
    return acc | m


def exit_(acc: Any, m: Any) -> Any:
    """A kernel-level `return`: the lanes leave the kernel (they no longer count at barriers)."""
    acc = retire(acc, m)
    g = current()
    g.exited = np.ones(g.size, bool) if acc is True else acc
    return acc


def restore(saved: Any, *retired: Any) -> Any:
    """saved & ~r for every retired set r."""
    m = saved
    for r in retired:
        if r is False:
            continue
        if r is True or m is False:
            return False
        m = ~r if m is True else m & ~r
    return normalize(m)


def cond(value: Any, m: Any, site: int) -> Any:
    """A condition as a bool vector or a Python bool."""
    if _vec(value):
        return value if value.dtype == bool else value.astype(bool)
    if value is U:
        g = current()
        raise g.error(KernelError, f"'{g.launch.site(site).text}' uses a variable before the "
                      "kernel assigned it", _first(m), site)
    return bool(value)


def merge(m: Any, new: Any, old: Any) -> Any:
    """The value of a variable after an assignment made by the lanes in `m` only."""
    if m is True or old is U or new is old:
        return new
    if m is False:
        return old
    if isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old):
        return tuple(merge(m, a, b) for a, b in zip(new, old))
    if isinstance(new, (SimArray, tuple)) or isinstance(old, (SimArray, tuple)):
        raise UnsupportedKernelError(
            "assigning an array or a tuple to a variable in only some threads is not simulated; "
            "assign it before the branch")
    return np.where(m, new, old)


def unpack(value: Any, n: int) -> Any:
    if isinstance(value, (tuple, list)) and len(value) == n:
        return value
    raise UnsupportedKernelError(f"cannot unpack {type(value).__name__} into {n} names")


def land(m: Any, x: Any, rest: Callable[[Any], Any]) -> Any:
    """`x and rest`: `rest` runs only for lanes where x holds (as Python would per thread)."""
    if not _vec(x):
        return rest(m) if x else x
    cx = x.astype(bool, copy=False)
    inner = and_(m, cx)
    if not any_(inner):
        return cx
    y = rest(inner)
    return cx & (y.astype(bool, copy=False) if _vec(y) else bool(y))


def lor(m: Any, x: Any, rest: Callable[[Any], Any]) -> Any:
    if not _vec(x):
        return x if x else rest(m)
    cx = x.astype(bool, copy=False)
    inner = andnot(m, cx)
    if not any_(inner):
        return cx
    y = rest(inner)
    return cx | (y.astype(bool, copy=False) if _vec(y) else bool(y))


def not_(x: Any) -> Any:
    if _vec(x):
        return ~x.astype(bool, copy=False)
    return not x


def ifexp(m: Any, c: Any, body: Callable[[Any], Any], orelse: Callable[[Any], Any]) -> Any:
    if not _vec(c):
        return body(m) if c else orelse(m)
    c = c.astype(bool, copy=False)
    m_yes, m_no = and_(m, c), andnot(m, c)
    yes = body(m_yes) if any_(m_yes) else 0
    no = orelse(m_no) if any_(m_no) else 0
    return np.where(c, yes, no)


# -- arithmetic ------------------------------------------------------------------------------
def _is_int(x: Any) -> bool:
    if _vec(x):
        return x.dtype.kind in "iub"
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_zero(a: Any, b: Any, m: Any, site: int, op: str) -> Any:
    """Integer division by zero: an error (checked) or b replaced by 1 as a GPU's garbage."""
    if not (_is_int(a) and _is_int(b)):
        return b
    zero = b == 0
    if _vec(zero):
        active = zero if m is True else zero & m if _vec(m) else (zero if m else False)
        if active is False or not np.any(active):
            return np.where(zero, 1, b) if zero.any() else b
        lane = int(np.argmax(active))
    elif zero and m is not False:
        lane = _first(m) or 0
    else:
        return b
    g = current()
    if g.launch.checks["division_by_zero"]:
        raise g.error(KernelArithmeticError,
                      f"integer {op} by zero in '{g.launch.site(site).text}' (a GPU returns a "
                      "meaningless value without any error); guard the divisor", lane, site)
    return np.where(zero, 1, b) if _vec(zero) else 1


def floordiv(a: Any, b: Any, m: Any, site: int) -> Any:
    b = _check_zero(a, b, m, site, "division")
    with np.errstate(all="ignore"):
        if not _vec(a) and not _vec(b) and isinstance(a, int) and isinstance(b, int):
            return a // b
        return np.floor_divide(a, b)


def mod(a: Any, b: Any, m: Any, site: int) -> Any:
    b = _check_zero(a, b, m, site, "modulo")
    with np.errstate(all="ignore"):
        if not _vec(a) and not _vec(b) and isinstance(a, int) and isinstance(b, int):
            return a % b
        return np.remainder(a, b)


def truediv(a: Any, b: Any, m: Any, site: int) -> Any:
    with np.errstate(all="ignore"):
        if not _vec(a) and not _vec(b) and not isinstance(a, np.generic) \
                and not isinstance(b, np.generic):
            return float(np.float64(a) / np.float64(b))  # inf/nan instead of ZeroDivisionError
        return np.true_divide(a, b)


def pow_(a: Any, b: Any, m: Any, site: int) -> Any:
    with np.errstate(all="ignore"):
        if _vec(b) and _is_int(b) and _is_int(a):
            return np.power(a, b)
        if _is_int(b) and not _vec(b) and b < 0 and _is_int(a):
            return np.power(np.float64(a) if not _vec(a) else a.astype(np.float64), b)
        return a ** b


# -- memory ----------------------------------------------------------------------------------
def _widen(value: Any) -> Any:
    """Integers narrower than 64 bits as int64: numba computes integer arithmetic in 64 bits
    (uint8 + uint8, int32 * int32 do not overflow there), and stores truncate as numpy's do."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype.kind in "iu" and dtype.itemsize < 8:
        return value.astype(np.int64)
    return value


def ld(arr: Any, idx: Any, m: Any, site: int) -> Any:
    if isinstance(arr, SimArray):
        return _widen(arr.load(current(), idx, m, site))
    if isinstance(arr, np.ndarray):  # a global numpy array: constant memory, as in Numba
        g = current()
        label = g.launch.site(site).text.split("[", 1)[0]
        return _widen(constant_view(g, arr, label).load(g, idx, m, site))
    if _vec(idx) or (isinstance(idx, tuple) and any(_vec(i) for i in idx)):
        g = current()
        raise g.error(UnsupportedKernelError, f"'{g.launch.site(site).text}': only arrays can be "
                      "indexed with per-thread values", _first(m), site)
    return arr[idx]


def st(arr: Any, idx: Any, value: Any, m: Any, site: int) -> None:
    if m is False:
        return
    if isinstance(arr, SimArray):
        arr.store(current(), idx, value, m, site)
        return
    g = current()
    text = g.launch.site(site).text
    if isinstance(arr, np.ndarray):
        raise g.error(KernelError, f"'{text}' writes a global numpy array, which kernels see as "
                      "constant memory (read-only, as Numba compiles it); pass the array as a "
                      "kernel argument to write it", _first(m), site)
    raise g.error(UnsupportedKernelError, f"'{text}': kernels can only assign to array "
                  f"elements, not into a {type(arr).__name__}", _first(m), site)


# -- loops and checks ------------------------------------------------------------------------
def tick(site: int) -> None:
    current().tick(site)


def step(s: Any, m: Any, site: int) -> Any:
    if (np.any(s == 0) if _vec(s) else s == 0):
        g = current()
        raise g.error(KernelError, f"'{g.launch.site(site).text}': range() step must not be zero",
                      _first(m), site)
    return s


def in_range(i: Any, stop: Any, s: Any) -> Any:
    if _vec(s):
        return np.where(s > 0, i < stop, i > stop)
    return i < stop if s > 0 else i > stop


def assert_(m: Any, test: Any, msg: Any, site: int) -> None:
    failed = ~test.astype(bool) if _vec(test) else not test
    if _vec(failed):
        failed = failed & m if _vec(m) else (failed if m else False)
        if failed is False or not failed.any():
            return
        lane = int(np.argmax(failed))
    elif failed and m is not False:
        lane = _first(m)
    else:
        return
    g = current()
    detail = f": {msg}" if msg is not None else ""
    raise g.error(KernelError, f"assertion failed: '{g.launch.site(site).text}'{detail}", lane,
                  site)


# The names generated code uses for these helpers (`_g_call` comes from gpukit.sim.calls).
HELPERS = {
    "_g_U": U, "_g_entry_mask": entry_mask, "_g_any": any_, "_g_and": and_,
    "_g_andnot": andnot, "_g_retire": retire, "_g_exit": exit_, "_g_restore": restore,
    "_g_cond": cond, "_g_merge": merge, "_g_unpack": unpack, "_g_land": land, "_g_lor": lor,
    "_g_not": not_, "_g_ifexp": ifexp, "_g_floordiv": floordiv, "_g_mod": mod,
    "_g_truediv": truediv, "_g_pow": pow_, "_g_ld": ld, "_g_st": st, "_g_tick": tick,
    "_g_step": step, "_g_in_range": in_range, "_g_assert": assert_,
}
