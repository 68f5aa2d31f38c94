"""What every op shares: the input error, operand checks, implicit copies, views and launches.

An op checks all of its operands first (kind, backend, dtype, rank, shape, layout) and only then
copies host arrays to the device, so a bad call costs no transfer. Launches go through the
backend (`compile_kernel` + `launch_kernel`) and each launch's record gets the op's name and flop
count in `record.extra`. Nothing here computes anything on the device.
"""

from __future__ import annotations

import enum
import inspect
import math
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends import current_backend
from ..backends._cuda_env import device_kind
from ..errors import GpukitError, ImplicitTransferWarning, InvalidDeviceArrayError
from ..sim.memory import DeviceArray

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_OPS_DIR = os.path.dirname(os.path.abspath(__file__))


class OpInputError(GpukitError, ValueError):
    """An op was given operands it cannot compute on: wrong kind, backend, dtype, rank, shape,
    layout, or an unknown variant or operation. Raised before anything runs on the device."""


@dataclass
class Operand:
    """One checked operand: its name in the op's signature, the value, and what it is."""

    name: str
    value: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    host: bool  # a numpy array that still has to be copied to the device


def resolve_backend(backend: Any) -> Any:
    """`backend`, or the current backend (`gpukit.current_backend()`) when it is None."""
    return current_backend() if backend is None else backend


def _backend_label(backend: Any) -> str:
    return f"the {getattr(backend, 'name', type(backend).__name__)!s} backend"


def _foreign_reason(backend: Any, value: Any) -> str | None:
    """Why `value` is not a device array of `backend`, or None if it is one."""
    if isinstance(value, DeviceArray):
        memory = getattr(backend, "memory", None)
        if memory is None:
            return "a device array of gpukit's CPU simulator"
        if value._alloc.memory is not memory:
            return "a device array of another CPU simulator backend"
        return None
    kind = device_kind(value)
    if kind is None or getattr(backend, "name", None) != "cpu":
        return None
    what = {"cupy": "a CuPy array", "numba": "a Numba device array"}.get(
        kind, f"a GPU array ({type(value).__name__})")
    return f"{what} in GPU memory"


def _is_c_contiguous(value: Any) -> bool:
    layout = getattr(value, "layout", None)
    if isinstance(layout, str):
        return layout == "C"
    check = getattr(value, "is_c_contiguous", None)
    if callable(check):
        return bool(check())
    flags = getattr(value, "flags", None)
    return bool(getattr(flags, "c_contiguous", True))


def operand(backend: Any, op: str, name: str, value: Any) -> Operand:
    """Check that `value` is a float32/float64 C-contiguous array this op can use on `backend`."""
    where = f"{op}: {name}"
    if isinstance(value, np.ndarray):
        host = True
    elif isinstance(value, DeviceArray) or device_kind(value) is not None:
        reason = _foreign_reason(backend, value)
        if reason is not None:
            raise OpInputError(
                f"{where} is {reason}, but this call runs on {_backend_label(backend)}; copy it "
                "to the host and then to this backend (backend.to_host, backend.to_device), or "
                "pass backend= the backend it belongs to")
        if isinstance(value, DeviceArray) and value.is_freed:
            raise InvalidDeviceArrayError(
                f"{where} is a device array that was freed (use after free); allocate a new one "
                "with backend.to_device or backend.allocate")
        host = False
    else:
        raise OpInputError(
            f"{where} must be a device array of {_backend_label(backend)} or a numpy array, got "
            f"{type(value).__name__}")
    dtype = np.dtype(value.dtype)
    if dtype not in FLOAT_DTYPES:
        raise OpInputError(
            f"{where} has dtype {dtype}; ops compute in float32 or float64 (convert it first, "
            "e.g. numpy.asarray(x, dtype=numpy.float32))")
    shape = tuple(int(s) for s in value.shape)
    if not host and not _is_c_contiguous(value):
        raise OpInputError(
            f"{where} is not C-contiguous (shape {shape}, strides {tuple(value.strides)}): a "
            "strided view or Fortran order; ops read C-contiguous arrays, so pass a contiguous "
            "copy")
    return Operand(name, value, shape, dtype, host)


def check_rank(op: str, x: Operand, ndim: int, axes: str) -> None:
    """Raise unless `x` has `ndim` dimensions; `axes` names them, e.g. "(rows, cols)"."""
    if len(x.shape) != ndim:
        raise OpInputError(f"{op}: {x.name} must be {ndim}-D {axes}, got shape {x.shape}")


def check_nonempty(op: str, *operands: Operand) -> None:
    for x in operands:
        if any(s == 0 for s in x.shape):
            raise OpInputError(
                f"{op}: {x.name} has shape {x.shape}, with a zero-size dimension; every "
                "dimension must be at least 1")


def common_dtype(op: str, *operands: Operand) -> np.dtype:
    """The one dtype all operands share; mixed dtypes raise (no silent conversion)."""
    dtypes = {x.dtype for x in operands}
    if len(dtypes) > 1:
        listed = ", ".join(f"{x.name} is {x.dtype}" for x in operands)
        raise OpInputError(f"{op}: mixed dtypes ({listed}); convert them to one dtype first")
    return operands[0].dtype


def check_variant(op: str, variant: Any, variants: tuple[str, ...]) -> str:
    if variant not in variants:
        raise OpInputError(f"{op}: unknown variant {variant!r}; choose one of "
                           f"{', '.join(repr(v) for v in variants)}")
    return variant


def parse_enum(op: str, enum_type: type[enum.Enum], value: Any) -> Any:
    """An enum member from a member or its name ("sum", "SUM"); anything else raises."""
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str) and value.upper() in enum_type.__members__:
        return enum_type[value.upper()]
    names = ", ".join(enum_type.__members__)
    raise OpInputError(f"{op}: unknown operation {value!r}; choose a {enum_type.__name__} "
                       f"({names}) or its name as a string")


def _user_stacklevel() -> int:
    """The warnings stacklevel of the first frame outside gpukit/ops (the user's call)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(
            frame.f_code.co_filename)) == _OPS_DIR:
        frame, level = frame.f_back, level + 1
    return level


def to_device(backend: Any, op: str, operands: list[Operand]) -> list[Any]:
    """The device arrays of `operands`; host ones are copied now, with one warning per call.

    The simulator's transfer log marks these copies as implicit.
    """
    copied = [x for x in operands if x.host]
    if copied:
        names = ", ".join(x.name for x in copied)
        warnings.warn(
            f"{op}: host arrays passed directly ({names}) are copied to the device (implicit "
            "transfers); the result stays on the device. Copy inputs once with "
            "backend.to_device to avoid repeated copies",
            ImplicitTransferWarning, stacklevel=_user_stacklevel())
    marks_implicit = "_implicit" in inspect.signature(backend.to_device).parameters
    result = []
    for x in operands:
        if not x.host:
            result.append(x.value)
            continue
        array = np.ascontiguousarray(x.value)
        result.append(backend.to_device(array, _implicit=True) if marks_implicit
                      else backend.to_device(array))
    return result


def view(array: Any, shape: tuple[int, ...]) -> Any:
    """A C-order view of a C-contiguous device array with another shape (no copy)."""
    return array.reshape(shape)


def shares_memory(x: Any, y: Any) -> bool:
    """Whether two device arrays may overlap (conservative: same allocation on the simulator)."""
    if isinstance(x, DeviceArray) and isinstance(y, DeviceArray):
        return x._alloc is y._alloc
    try:
        ix, iy = x.__cuda_array_interface__, y.__cuda_array_interface__
    except AttributeError:
        return x is y
    start_x, start_y = ix["data"][0], iy["data"][0]
    end_x = start_x + math.prod(ix["shape"]) * np.dtype(ix["typestr"]).itemsize
    end_y = start_y + math.prod(iy["shape"]) * np.dtype(iy["typestr"]).itemsize
    return start_x < end_y and start_y < end_x


def blocks(n: int, per_block: int) -> int:
    """How many blocks of `per_block` cover `n` items (the last one may be partly idle)."""
    return (n + per_block - 1) // per_block


def launch(backend: Any, kernel: Callable, grid: Any, block: Any, *args: Any, op: str,
           flops: int) -> Any:
    """Compile (cached by the backend) and launch `kernel`; tag its launch record.

    Backends whose `launch_kernel` returns a record with an `extra` dict (the simulator's
    LaunchRecord) get `extra["op"]` and `extra["flops"]`, the floating-point operations this
    launch performs, for the timing model.
    """
    compiled = backend.compile_kernel(kernel)
    # flops go in with the launch so the modeled timeline already sees them
    record = backend.launch_kernel(compiled, grid, block, *args, flops=int(flops))
    extra = getattr(record, "extra", None)
    if isinstance(extra, dict):
        extra["op"] = op
    return record
