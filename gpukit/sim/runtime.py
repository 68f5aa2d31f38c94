"""The rest of what rewritten kernels call: defined values, attributes, print, len, raise.

Defined values: a statement that reads memory first takes a mark (`mark`), the reads set UNDEF
when an element was never written, and `end` says whether everything read since was defined.
`use` checks a value where it flows on (stored, branched on, used as an index, passed to a call)
and reports the read that produced it. `print` records its values (thread, site, value) for the
host to print after the launch, formatted as numba-cuda's printf would.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError

from . import layout as L
from .access import NODESC, defer, fail, same_bits, touch
from .lowlevel import bits_of, overload, record_addr, register_jitable, store_i64


# -- defined values --------------------------------------------------------------------------
@register_jitable(forceinline=True)
def captured_at(c, offset):
    """The address of a captured device array's description (words `offset`... of the table
    `launch` writes at c[CAPTURED]), for `lowlevel.array_at`."""
    return c[L.CAPTURED] + offset * 8


@register_jitable(forceinline=True)
def mark(c):
    """Start following reads: the count of undefined reads so far."""
    return c[L.UNDEF]


@register_jitable(forceinline=True)
def end(c, mark):
    """Whether every read since `mark` was of written memory."""
    return c[L.UNDEF] == mark


def use(c, saved, value, defined, what, site):
    """`value`, checked to be defined where it flows on (reads since `mark`, and variables)."""


@overload(use, jit_options={'forceinline': True}, cached=True)
def _ol_use(c, saved, value, defined, what, site):
    def impl(c, saved, value, defined, what, site):
        if c[L.UNDEF] != saved or not defined:
            _undefined(c, what, site)
        return value
    return impl


def use_vars(c, value, defined, what, site):
    """`value`, checked to be defined (it reads no memory itself)."""


@overload(use_vars, jit_options={'forceinline': True}, cached=True)
def _ol_use_vars(c, value, defined, what, site):
    def impl(c, value, defined, what, site):
        if not defined:
            _undefined(c, what, site)
        return value
    return impl


@register_jitable
def _undefined(c, what, site):
    if c[L.CHECKS] & L.CHECK_UNINITIALIZED:
        defer(c, L.E_UNDEF_USE, site, what, c[L.UNDEF_SITE], c[L.UNDEF_SLOT], c[L.UNDEF_ELEM],
              c[L.UNDEF_LT])


# -- attributes (record fields are memory: checked like elements) ----------------------------
_ATTR_IMPLS: dict = {}


def getattr_(c, obj, name, site):
    """obj.name in a kernel."""


def setattr_(c, obj, name, value, site):
    """obj.name = value in a kernel."""


def _field_size(rec: types.Record, name: str) -> int:
    return rec.dtype.fields[name][0].itemsize


@overload(getattr_, jit_options={'forceinline': True})
def _ol_getattr(c, obj, name, site):
    attr = getattr(name, "literal_value", None)
    if attr is None:
        raise TypingError("gpukit: attribute names must be constants")
    if isinstance(obj, types.Record) and attr in obj.fields:
        if isinstance(obj.typeof(attr), types.NestedArray):
            return None  # an array field: the overload below
        offset, size = obj.offset(attr), _field_size(obj, attr)
        key = ("get", attr)
        if key not in _ATTR_IMPLS:
            ns = {"touch": touch, "record_addr": record_addr, "READ": L.KIND_READ, "NODESC": NODESC}
            exec(f"def impl(c, obj, name, site):\n"  # noqa: S102
                 f"    touch(c, site, NODESC, record_addr(obj) + {offset}, {size}, READ, False)\n"
                 f"    return obj.{attr}", ns)
            _ATTR_IMPLS[key] = ns["impl"]
        return _ATTR_IMPLS[key]
    key = ("plain", attr)
    if key not in _ATTR_IMPLS:
        ns: dict = {}
        exec(f"def impl(c, obj, name, site):\n    return obj.{attr}", ns)  # noqa: S102
        _ATTR_IMPLS[key] = ns["impl"]
    return _ATTR_IMPLS[key]


@overload(getattr_, jit_options={'forceinline': True, '_nrt': True})  # it returns an array
def _ol_getattr_array_field(c, obj, name, site):
    attr = getattr(name, "literal_value", None)
    if isinstance(obj, types.Record) and attr in obj.fields and \
            isinstance(obj.typeof(attr), types.NestedArray):
        key = ("array field", attr)
        if key not in _ATTR_IMPLS:  # a view of the record's memory: its elements are checked
            ns: dict = {}           # where they are read and written
            exec(f"def impl(c, obj, name, site):\n    return obj.{attr}", ns)  # noqa: S102
            _ATTR_IMPLS[key] = ns["impl"]
        return _ATTR_IMPLS[key]
    return None


@overload(setattr_, jit_options={'forceinline': True})
def _ol_setattr(c, obj, name, value, site):
    attr = getattr(name, "literal_value", None)
    if attr is None:
        raise TypingError("gpukit: attribute names must be constants")
    if isinstance(obj, types.Record) and attr in obj.fields:
        offset, size = obj.offset(attr), _field_size(obj, attr)
        key = ("set", attr)
        if key not in _ATTR_IMPLS:
            ns = {"touch": touch, "record_addr": record_addr, "WRITE": L.KIND_WRITE,
                  "same_bits": same_bits, "NODESC": NODESC}
            exec(f"def impl(c, obj, name, value, site):\n"  # noqa: S102
                 f"    old = obj.{attr}\n"
                 f"    obj.{attr} = value\n"
                 f"    touch(c, site, NODESC, record_addr(obj) + {offset}, {size}, WRITE, "
                 f"same_bits(old, obj.{attr}))", ns)
            _ATTR_IMPLS[key] = ns["impl"]
        return _ATTR_IMPLS[key]
    raise TypingError(f"gpukit: cannot assign attribute {attr!r} of {obj} in a kernel")


# -- len and raise ---------------------------------------------------------------------------
def len_(obj):
    """len() of an array (its first extent) or a tuple."""


@overload(len_, jit_options={'forceinline': True})
def _ol_len(obj):
    if isinstance(obj, types.Array):
        return lambda obj: obj.shape[0]
    return lambda obj: len(obj)


def view_(x, dtype):
    """`x.view(dtype)` in a kernel: an array's view, or a number's bits as another type."""


_VIEWS: dict = {}


@overload(view_, jit_options={'forceinline': True})
def _ol_view(x, dtype):
    if not isinstance(x, (types.Integer, types.Float)):
        return lambda x, dtype: x.view(dtype)
    # Numba's CPU compiler takes a number's view() only of what np.<type>(...) made (its IR
    # check), where numba-cuda takes any number's: made so here
    name = str(types.unliteral(x))
    if name not in _VIEWS:
        ns = {"np": np}
        exec(f"def impl(x, dtype):\n    return np.{name}(x).view(dtype)", ns)  # noqa: S102
        _VIEWS[name] = ns["impl"]
    return _VIEWS[name]


@register_jitable
def raise_(c, site):
    fail(c, L.E_RAISE, site, 0, 0, 0, 0, 0)


# -- print ---------------------------------------------------------------------------------
P_INT, P_UINT, P_FLOAT, P_BOOL, P_OPEN, P_CLOSE, P_END = 1, 2, 3, 4, 5, 6, 7


@register_jitable
def _emit(c, site, arg, code, bits):
    n = c[L.PRINT_N]
    c[L.PRINT_N] = n + 1
    if n >= c[L.PRINT_CAP]:
        return  # as a GPU's printf buffer: what does not fit is lost (the host says so)
    row = c[L.PRINT_BUF] + n * (L.PRINT_FIELDS * 8)
    store_i64(row, c[L.GT])
    store_i64(row + 8, site)
    store_i64(row + 16, arg * 16 + code)
    store_i64(row + 24, bits)


def print_value(c, site, arg, value):
    """Record one argument of a print call."""


@overload(print_value)
def _ol_print_value(c, site, arg, value):
    if isinstance(value, types.Boolean):
        return lambda c, site, arg, value: _emit(c, site, arg, P_BOOL, 1 if value else 0)
    if isinstance(value, types.Integer):
        code = P_UINT if not value.signed else P_INT
        return lambda c, site, arg, value: _emit(c, site, arg, code, np.int64(value))
    from numba.cuda.types.ext_types import Bfloat16
    if isinstance(value, (types.Float, Bfloat16)):  # (numba-cuda prints a bfloat16 as a float)
        return lambda c, site, arg, value: _emit(c, site, arg, P_FLOAT,
                                                 bits_of(np.float64(value)))
    if isinstance(value, types.BaseTuple):
        n = len(value)
        lines = ["def impl(c, site, arg, value):", f"    _emit(c, site, arg, P_OPEN, {n})"]
        lines += [f"    print_value(c, site, arg, value[{k}])" for k in range(n)]
        lines.append("    _emit(c, site, arg, P_CLOSE, 0)")
        ns = {"_emit": _emit, "print_value": print_value, "P_OPEN": P_OPEN, "P_CLOSE": P_CLOSE}
        exec("\n".join(lines), ns)  # noqa: S102
        return ns["impl"]
    raise TypingError(f"gpukit: printing values of type {value} is not supported in kernels "
                      "(numba-cuda prints numbers, booleans, tuples and string constants)")


@register_jitable
def print_end(c, site, nargs):
    _emit(c, site, nargs, P_END, 0)


@register_jitable(forceinline=True)
def count(c, site, space, n):
    """Add a static access site's executions to the launch's counters."""
    c[c[L.SITE_BASE] + site * L.SITE_FIELDS + space] += n


@register_jitable
def shared_static_bytes(c):
    return c[L.SHARED_STATIC]
