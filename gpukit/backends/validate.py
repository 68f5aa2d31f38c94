"""Input checks shared by every backend: shapes, dtypes, host arrays and launch configurations.

Both CPUBackend and CUDABackend call these so that one bad input gets one exact error, whichever
backend runs. Sizes are computed with Python ints, so no shape can overflow before it is checked.
Pure functions on numpy only; nothing here touches a device (options are `backends.options`).
"""

from __future__ import annotations

import itertools
import math
import operator
import sys
import warnings
from typing import Any

import numpy as np

from ..errors import GpukitError, ImplicitTransferWarning, LaunchConfigError, TransferError
from .base import Capabilities

try:  # numba-cuda's bfloat16 arrays have ml_dtypes' dtype (numba-cuda imports it too)
    import ml_dtypes

    BFLOAT16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    BFLOAT16 = None

# The most bytes one numpy array (so one host view of a device array) can span, and the most
# dimensions it can have (numpy's limit; kernels use 1 to 3).
MAX_ARRAY_BYTES = int(np.iinfo(np.intp).max)
MAX_NDIM = 32


class InvalidShapeError(GpukitError, ValueError):
    """An array shape has a negative size (or is otherwise not a valid shape)."""


class ShapeTypeError(InvalidShapeError, TypeError):
    """An array shape is not an int or a sequence of ints (floats, bools, strings, None, ...)."""


class UnsupportedDtypeError(GpukitError, TypeError):
    """A dtype that device arrays cannot hold (only bool and numeric dtypes can)."""


# The dtypes device arrays hold, in the order error messages list them.
SUPPORTED_DTYPES: tuple[np.dtype, ...] = tuple(np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
))
if BFLOAT16 is not None:  # where ml_dtypes is installed, as numba-cuda takes its bfloat16 too
    SUPPORTED_DTYPES += (BFLOAT16,)
_SUPPORTED_NAMES = ", ".join(dt.name for dt in SUPPORTED_DTYPES)


def _as_dimension(value: Any) -> int | None:
    """`value` as a Python int if it is an integer (numpy ints too, bools not), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def normalize_shape(shape: Any) -> tuple[int, ...]:
    """A shape as a tuple of non-negative ints; an int `n` means `(n,)`.

    Raises `ShapeTypeError` (a TypeError) for anything that is not an int or a sequence of ints,
    and `InvalidShapeError` (a ValueError) for a negative size. Both messages name the shape.
    """
    single = _as_dimension(shape)
    if single is not None:
        dims: tuple[Any, ...] = (single,)
    elif isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise ShapeTypeError(
            f"invalid shape {shape!r}: a shape is an int or a tuple of ints, "
            f"not {type(shape).__name__} (for example 1024 or (64, 64))")
    else:
        try:
            dims = tuple(itertools.islice(shape, MAX_NDIM + 1))
        except Exception:  # noqa: BLE001 - an iterable that fails to iterate is no shape
            raise ShapeTypeError(f"invalid shape {shape!r}: a shape is an int or a tuple of "
                                 "ints") from None
        if len(dims) > MAX_NDIM:
            raise InvalidShapeError(f"invalid shape {shape!r}: arrays have at most {MAX_NDIM} "
                                    "dimensions")
    result = []
    for axis, value in enumerate(dims):
        size = _as_dimension(value)
        if size is None:
            raise ShapeTypeError(
                f"invalid shape {shape!r}: size {value!r} of axis {axis} is "
                f"{type(value).__name__}, not an int; write sizes as ints, e.g. int(n)")
        if size < 0:
            raise InvalidShapeError(
                f"invalid shape {shape!r}: size {size} of axis {axis} is negative; "
                "sizes must be >= 0")
        result.append(size)
    return tuple(result)


def check_array_size(shape: tuple[int, ...], dtype: np.dtype, *,
                     operation: str = "allocate") -> int:
    """The bytes an array of `shape` and `dtype` holds; raises `InvalidShapeError` when numpy
    could not even describe it (more than MAX_ARRAY_BYTES, counting zero-size axes as 1)."""
    span = math.prod(max(n, 1) for n in shape) * dtype.itemsize
    if span > MAX_ARRAY_BYTES:
        raise InvalidShapeError(
            f"{operation}: shape {shape} of {dtype} is too large: it spans {span:,} bytes, more "
            f"than any array can address ({MAX_ARRAY_BYTES:,} bytes)")
    return math.prod(shape) * dtype.itemsize


def normalize_dtype(dtype: Any) -> np.dtype:
    """`dtype` as a native-byte-order numpy dtype, if it is bool or numeric.

    Accepts what numpy accepts ("float32", "f4", np.float32, float, np.dtype(...)), and records
    (structured dtypes) whose fields are all bool or numeric in native byte order. Anything
    else (object, strings, datetimes, None, unknown names) raises `UnsupportedDtypeError` naming
    the dtype and listing the accepted ones.
    """
    if dtype is None:
        raise UnsupportedDtypeError(
            f"dtype must be given, got None; accepted dtypes: {_SUPPORTED_NAMES}")
    try:
        resolved = np.dtype(dtype)
    except Exception:  # noqa: BLE001 - numpy raises TypeError, ValueError, OverflowError, ...
        raise UnsupportedDtypeError(
            f"unknown dtype {dtype!r}; accepted dtypes: {_SUPPORTED_NAMES}") from None
    if resolved.names is not None and _numeric_record(resolved):
        return resolved  # a record (numba-cuda reads fields as p.x and p["x"]): kept as laid out
    native = resolved.newbyteorder("=") if resolved.byteorder not in "=|" else resolved
    if native not in SUPPORTED_DTYPES:
        raise UnsupportedDtypeError(
            f"unsupported dtype {dtype!r} ({resolved}): device arrays hold bool and numeric data "
            f"only; accepted dtypes: {_SUPPORTED_NAMES}")
    return np.dtype(native.name)


def _numeric_record(dtype: np.dtype) -> bool:
    """Whether every field of a structured dtype (nested and sub-array fields included) is a
    supported scalar in native byte order."""
    for name in dtype.names:
        field = dtype.fields[name][0]
        base = field.base if field.subdtype is not None else field
        if base.names is not None:
            if not _numeric_record(base):
                return False
        elif base not in SUPPORTED_DTYPES or not base.isnative:
            return False
    return True


def check_host_array(array: Any, *, operation: str = "to_device") -> np.ndarray:
    """`array` as a C-contiguous numpy array of a supported dtype, ready to copy to a device.

    Only numpy arrays are host arrays: lists, scalars and device arrays raise `TransferError`
    (saying how to fix it); an unsupported dtype raises `UnsupportedDtypeError`.
    """
    if not isinstance(array, np.ndarray):
        if hasattr(array, "__cuda_array_interface__") or hasattr(array, "copy_to_host"):
            raise TransferError(f"{operation} expects a numpy array, got a device array that is "
                                "already on the device; pass it to kernels directly")
        raise TransferError(f"{operation} expects a numpy array, got {type(array).__name__}; "
                            "convert it first with numpy.asarray(...)")
    dtype = normalize_dtype(array.dtype)
    return np.ascontiguousarray(array, dtype=dtype)


def check_copy_target(host: np.ndarray, device_shape: tuple[int, ...], device_dtype: Any,
                      *, operation: str = "copy_to_device") -> None:
    """Raise `TransferError` unless a host array and a device array (either one the copy's
    source) have the same shape and dtype. The host array's byte order does not matter: copies
    convert it (a big-endian `out` receives big-endian values)."""
    if not isinstance(host, np.ndarray):
        raise TransferError(f"{operation}: the host array must be a numpy array, got "
                            f"{type(host).__name__}")
    device_shape, device_dtype = tuple(device_shape), np.dtype(device_dtype)
    host_dtype = host.dtype.newbyteorder("=") if host.dtype.byteorder not in "=|" else host.dtype
    if host.shape != device_shape or host_dtype != device_dtype:
        raise TransferError(
            f"{operation}: the host array is {host.shape} {host.dtype} but the device array is "
            f"{device_shape} {device_dtype}; copies need equal shapes and dtypes (reshape or "
            "astype the host array, or allocate a matching device array)")


def normalize_dim3(value: Any, what: str = "block") -> tuple[int, int, int]:
    """A grid or block given as an int or a 1-3 tuple of positive ints, as (x, y, z).

    Raises `LaunchConfigError` naming `what` and the value for anything else.
    """
    dims = (value,) if _as_dimension(value) is not None else value
    if not isinstance(dims, (tuple, list)) or not 1 <= len(dims) <= 3:
        raise LaunchConfigError(
            f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    sizes = [_as_dimension(v) for v in dims]
    if any(size is None or size < 1 for size in sizes):
        raise LaunchConfigError(
            f"{what} {value!r} is invalid: every dimension must be an int >= 1")
    x, y, z = (*sizes, 1, 1)[:3]
    return (x, y, z)


def check_launch(kernel_name: str, grid: Any, block: Any, dynamic_shared_bytes: Any,
                 capabilities: Capabilities, device: str = "the device"
                 ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, block) as (x, y, z) tuples, after checking them against a device's limits.

    Raises `LaunchConfigError` naming the kernel, the value and the limit: threads per block,
    block and grid dimensions, and dynamic shared memory (up to the opt-in maximum per block).
    `device` names the device in messages (e.g. "the simulated T4 (CC 7.5)").
    """
    where = f"kernel '{kernel_name}'"
    grid3 = normalize_dim3(grid, f"{where}: grid")
    block3 = normalize_dim3(block, f"{where}: block")
    threads = block3[0] * block3[1] * block3[2]
    if threads > capabilities.max_threads_per_block:
        raise LaunchConfigError(
            f"{where}: block {block!r} has {threads} threads; {device} allows at most "
            f"{capabilities.max_threads_per_block} threads per block")
    for what, dims, limits in (("block", block3, capabilities.max_block_dim),
                               ("grid", grid3, capabilities.max_grid_dim)):
        for axis, size, limit in zip("xyz", dims, limits):
            if size > limit:
                raise LaunchConfigError(
                    f"{where}: {what} dimension {axis} is {size}; {device} allows at most "
                    f"{limit}")
    check_dynamic_shared_bytes(kernel_name, dynamic_shared_bytes,
                               capabilities.shared_mem_per_block_optin, device)
    return grid3, block3


def normalize_launch_bounds(value: Any) -> tuple[int, ...]:
    """`cuda.jit(launch_bounds=...)` as a tuple (max threads per block, then optionally min
    blocks per SM and max blocks per cluster); numba-cuda's ValueError for more than three."""
    if value is None:
        return ()
    bounds = (value,) if isinstance(value, int) else tuple(value)
    if len(bounds) > 3:
        raise ValueError(  # numba-cuda's words (numba.cuda.cudadrv.nvvm.set_launch_bounds)
            f"Got {len(bounds)} launch bounds: {value}. A maximum of three are supported: "
            "(max_threads_per_block, min_blocks_per_sm, max_blocks_per_cluster)")
    return bounds


def check_launch_bounds(kernel_name: str, block: Any, value: Any) -> None:
    """A block with more threads than the kernel's launch bounds allow: a GPU refuses the
    launch (CUDA_ERROR_INVALID_VALUE), so the simulator does too (`LaunchConfigError`)."""
    bounds = normalize_launch_bounds(value)
    if not bounds:
        return
    x, y, z = normalize_dim3(block, f"kernel '{kernel_name}': block")
    if x * y * z > bounds[0]:
        raise LaunchConfigError(
            f"kernel '{kernel_name}': block {block!r} has {x * y * z} threads, more than the "
            f"{bounds[0]} its launch bounds allow (cuda.jit(launch_bounds={value!r})); a GPU "
            "refuses this launch with CUDA_ERROR_INVALID_VALUE")


def check_dynamic_shared_bytes(kernel_name: str, value: Any, limit: int | None = None,
                               device: str = "the device") -> int:
    """`value` as an int from 0 to `limit` (the device's shared memory per block; None: no
    upper limit, when launch limits are not checked). Raises `LaunchConfigError`."""
    shared = _as_dimension(value)
    if shared is None or shared < 0 or (limit is not None and shared > limit):
        allowed = (f"from 0 to {limit} ({device}'s shared memory per block)" if limit is not None
                   else ">= 0")
        raise LaunchConfigError(f"kernel '{kernel_name}': dynamic_shared_bytes must be an int "
                                f"{allowed}, got {value!r}")
    return shared


def warn_implicit_copies(kernel_name: str, names: list[str]) -> None:
    """The ImplicitTransferWarning for host arrays passed straight to a kernel, pointing at the
    first frame outside gpukit (the learner's launch line)."""
    warnings.warn(
        f"kernel '{kernel_name}': host arrays passed directly ({', '.join(names)}) are copied to "
        "the device before the launch and back after it; copy them once with backend.to_device "
        "to avoid these implicit transfers", ImplicitTransferWarning,
        stacklevel=_user_stacklevel())


def _user_stacklevel() -> int:
    """The warnings stacklevel of the first frame outside gpukit, for a warning issued by the
    caller of this function."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("gpukit"):
        frame, level = frame.f_back, level + 1
    return level - 1
