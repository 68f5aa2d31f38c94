"""Small helpers written once for all of gpukit: integer ceilings, byte sizes in words, strides,
the checks of plain numeric arguments (counts, sizes, seconds), and the items of nested tuples.

Pure functions on Python ints; nothing here knows about GPUs (device facts live in
`gpukit.devices`). The simulator package (`gpukit.sim`) keeps its own copies, so that it imports
nothing from the rest of gpukit.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

from .errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["BYTE_UNITS", "as_choice", "as_int", "as_number", "c_strides", "ceil_div",
           "f_strides", "format_bytes", "map_tuple", "round_up", "size_text", "tuple_items"]

# Binary units, largest first: what byte counts are written in.
BYTE_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, for ints (b > 0): how many blocks of b cover a items."""
    return -(-a // b)


def round_up(a: int, multiple: int) -> int:
    """The smallest multiple of `multiple` that is >= a."""
    return ceil_div(a, multiple) * multiple


def format_bytes(n: int) -> str:
    """A byte count for messages, with the exact number: "1.50 KiB (1,536 bytes)"."""
    for unit, size in BYTE_UNITS:
        if n >= size:
            return f"{n / size:.2f} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"


def size_text(n: float) -> str:
    """A byte count for plots and summaries, short: "1.5 KiB", "64 MiB", "512 B"."""
    for unit, size in BYTE_UNITS:
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:g} B"


def c_strides(shape: Iterable[int], itemsize: int = 1) -> tuple[int, ...]:
    """The strides of a C-ordered (row-major) array of `shape`, in units of `itemsize` (bytes
    when `itemsize` is the dtype's; elements when 1). Zero-size axes count as 1, as in numpy."""
    strides, step = [], itemsize
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def f_strides(shape: Iterable[int], itemsize: int = 1) -> tuple[int, ...]:
    """The strides of a Fortran-ordered (column-major) array of `shape` (see `c_strides`)."""
    strides, step = [], itemsize
    for n in shape:
        strides.append(step)
        step *= max(n, 1)
    return tuple(strides)


def as_int(name: str, value: Any, minimum: int | None = 0, maximum: int | None = None) -> int:
    """`value` (a Python or numpy int, not a bool) as an int in [minimum, maximum].

    Raises `ArgumentTypeError` for other types and `InvalidArgumentError` out of range, both
    naming `name`, the value and what is allowed.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(f"{name} must be an int{_range(minimum, maximum)}, got "
                                f"{type(value).__name__} {value!r}")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise InvalidArgumentError(f"{name} must be an int{_range(minimum, maximum)}, got "
                                   f"{value}")
    return value


def as_number(name: str, value: Any, minimum: float | None = 0.0, *,
              positive: bool = False) -> float:
    """`value` (an int or a float, numpy's too, not a bool) as a finite float >= `minimum`
    (> 0 if `positive`). NaN and infinities are refused, like every other impossible value."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a number{_bound(minimum, positive)}, got "
                                f"{type(value).__name__} {value!r}")
    number = float(value)
    if (not math.isfinite(number) or (minimum is not None and number < minimum)
            or (positive and number <= 0)):
        raise InvalidArgumentError(f"{name} must be a finite number{_bound(minimum, positive)}, "
                                   f"got {value!r}")
    return number


def as_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """`value` if it is one of the strings `choices`, else an InvalidArgumentError listing them."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise InvalidArgumentError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _range(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum} to {maximum}"
    if minimum is not None:
        return f" >= {minimum}"
    return "" if maximum is None else f" <= {maximum}"


def _bound(minimum: float | None, positive: bool) -> str:
    if positive:
        return " > 0"
    return "" if minimum is None else f" >= {minimum:g}"


def tuple_items(label: str, value: Any) -> list[tuple[str, Any]]:
    """(label, item) for the items of a (nested) tuple, labelled as `x[1][0]`; anything else is
    its own single item. Kernel arguments may be such tuples (of arrays and numbers)."""
    if isinstance(value, tuple):
        return [item for i, v in enumerate(value) for item in tuple_items(f"{label}[{i}]", v)]
    return [(label, value)]


def map_tuple(label: str, value: Any, fn: Any) -> Any:
    """`value` with each item (see tuple_items) replaced by fn(label, item); a namedtuple stays
    of its class."""
    if not isinstance(value, tuple):
        return fn(label, value)
    items = [map_tuple(f"{label}[{i}]", v, fn) for i, v in enumerate(value)]
    return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
