"""What every op shares: the input error, argument checks, staged copies, views and launches.

An op checks all of its arguments first (operands: kind, backend, dtype, rank, shape, layout;
scalars and flags: type and range) and only then copies host arrays to the device, so a bad call
costs no transfer. Its device copies of host arrays and its scratch arrays live in a `Staging`
that frees them when the op returns or raises, so simulated memory is exactly as before a call
(but for the result). Launches go through the backend (`compile_kernel` + `launch_kernel`) and
each launch's record gets the op's name and flop count in `record.extra`. Nothing here computes
anything on the device.
"""

from __future__ import annotations

import enum
import math
import numbers
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends import current_backend
from ..backends.arrays import (
    describe_device_array,
    device_array_kind,
    is_c_contiguous,
    is_freed,
    may_share_memory,
)
from ..backends.base import Backend
from ..errors import GpukitError, ImplicitTransferWarning, InvalidDeviceArrayError
from ..launches import LaunchRecord
from ..utils import ceil_div

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


def resolve_backend(backend: Any, op: str) -> Backend:
    """`backend`, or the current backend (`gpukit.current_backend()`) when it is None."""
    backend = current_backend() if backend is None else backend
    if not isinstance(backend, Backend):
        raise OpInputError(f"{op}: backend must be a gpukit backend (gpukit.get_backend()) or None, "
                           f"got {type(backend).__name__}")
    return backend


def _backend_label(backend: Backend) -> str:
    return f"the {backend.name} backend"


def _native(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


def operand(backend: Backend, op: str, name: str, value: Any) -> Operand:
    """Check that `value` is a float32/float64 C-contiguous array this op can use on `backend`.

    Host (numpy) arrays of either byte order are accepted: they are copied, and converted, on
    the way to the device."""
    where = f"{op}: {name}"
    if isinstance(value, np.ndarray):
        host = True
    elif backend.owns(value) or (device_array_kind(value) in ("cupy", "numba", "cai")
                                 and backend.accepts(value)):
        value = backend.as_device_array(value)  # CuPy and Numba arrays, on the CUDA backend
        if is_freed(value):
            raise InvalidDeviceArrayError(
                f"{where} is a device array that was freed (use after free); allocate a new one "
                "with backend.to_device or backend.allocate")
        host = False
    elif device_array_kind(value) is not None:
        what = ("a device array of another CPU simulator backend"
                if backend.is_simulated and device_array_kind(value) == "simulator"
                else describe_device_array(value))
        raise OpInputError(
            f"{where} is {what}, but this call runs on "
            f"{_backend_label(backend)}; copy it to the host and then to this backend "
            "(backend.to_host, backend.to_device), or pass backend= the backend it belongs to")
    else:
        raise OpInputError(
            f"{where} must be a device array of {_backend_label(backend)} or a numpy array, got "
            f"{type(value).__name__}")
    dtype = _native(value.dtype)
    if dtype not in FLOAT_DTYPES:
        raise OpInputError(
            f"{where} has dtype {dtype}; ops compute in float32 or float64 (convert it first, "
            "e.g. numpy.asarray(x, dtype=numpy.float32))")
    shape = tuple(int(s) for s in value.shape)
    if not host and not is_c_contiguous(value):
        raise OpInputError(
            f"{where} is not C-contiguous (shape {shape}, strides {tuple(value.strides)}): a "
            "strided view or Fortran order; ops read C-contiguous arrays, so pass a contiguous "
            "copy")
    return Operand(name, value, shape, dtype, host)


def check_flag(op: str, name: str, value: Any) -> bool:
    """`value` as a bool; only True and False (numpy's too) are flags."""
    if not isinstance(value, (bool, np.bool_)):
        raise OpInputError(f"{op}: {name} must be True or False, got {type(value).__name__} "
                           f"{value!r}")
    return bool(value)


def check_scalar(op: str, name: str, value: Any) -> float:
    """`value` as a finite float (an int or a float, numpy's too; not a bool, None or NaN)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise OpInputError(f"{op}: {name} must be a number, got {type(value).__name__} "
                           f"{value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise OpInputError(f"{op}: {name} must be a finite number, got {value!r}")
    return number


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
    if not isinstance(variant, str) or variant not in variants:
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


class Staging:
    """The device arrays one op call makes: copies of host operands and scratch arrays are
    temporaries, freed when the call ends; results are kept, unless the call raises."""

    def __init__(self, backend: Backend, op: str):
        self.backend, self.op = backend, op
        self.temporaries: list[Any] = []
        self.results: list[Any] = []

    def inputs(self, operands: list[Operand], results: tuple[str, ...] = ()) -> list[Any]:
        """The device arrays of `operands`; host ones are copied now, with one warning per call
        (the simulator's transfer log marks these copies as implicit). The copies of operands
        named in `results` are what the op returns, so they are kept."""
        copied = [x for x in operands if x.host]
        if copied:
            names = ", ".join(x.name for x in copied)
            warnings.warn(
                f"{self.op}: host arrays passed directly ({names}) are copied to the device "
                "(implicit transfers); the result stays on the device. Copy inputs once with "
                "backend.to_device to avoid repeated copies",
                ImplicitTransferWarning, stacklevel=_user_stacklevel())
        arrays = []
        for x in operands:
            if not x.host:
                arrays.append(x.value)
                continue
            host = np.ascontiguousarray(x.value)
            device = self.backend.to_device(host, implicit=True)  # logged as nobody's ask
            (self.results if x.name in results else self.temporaries).append(device)
            arrays.append(device)
        return arrays

    def allocate(self, shape: tuple[int, ...], dtype: np.dtype, *, result: bool) -> Any:
        """A new device array: the op's result (`result`), or scratch memory freed at the end."""
        array = self.backend.allocate(shape, dtype)
        (self.results if result else self.temporaries).append(array)
        return array

    def release(self, failed: bool) -> None:
        arrays = self.temporaries + (self.results if failed else [])
        self.temporaries, self.results = [], [] if failed else self.results
        for array in arrays:
            self.backend.free(array)


@contextmanager
def staging(backend: Backend, op: str) -> Iterator[Staging]:
    """`with staging(backend, op) as stage:` the device arrays of one op call (see Staging)."""
    stage = Staging(backend, op)
    try:
        yield stage
    except BaseException:
        stage.release(failed=True)
        raise
    stage.release(failed=False)


def view(array: Any, shape: tuple[int, ...]) -> Any:
    """A C-order view of a C-contiguous device array with another shape (no copy)."""
    return array.reshape(shape)


def shares_memory(x: Any, y: Any) -> bool:
    """Whether two device arrays may overlap (conservative: same allocation on the simulator)."""
    return may_share_memory(x, y)


def blocks(n: int, per_block: int) -> int:
    """How many blocks of `per_block` cover `n` items (the last one may be partly idle)."""
    return ceil_div(n, per_block)


def launch(backend: Any, kernel: Callable, grid: Any, block: Any, *args: Any, op: str,
           flops: int) -> Any:
    """Compile (cached by the backend) and launch `kernel`; tag its launch record.

    The launch declares `flops`, the floating-point operations it performs (the simulator's
    timing model uses them); its `LaunchRecord` gets `extra["op"]` as well.
    """
    compiled = backend.compile_kernel(kernel)
    # flops go in with the launch so the modeled timeline already sees them
    record = backend.launch_kernel(compiled, grid, block, *args, flops=int(flops))
    if isinstance(record, LaunchRecord):
        record.extra["op"] = op
    return record
