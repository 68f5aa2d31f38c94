"""What kind of device array a value is, whichever backend made it, and whether two may overlap.

gpukit's simulated device arrays, CuPy arrays and Numba device arrays are told apart here, so
that ops and messages can say "a CuPy array in GPU memory" without knowing each backend's types.
A backend says which arrays are its own with `Backend.owns`. Nothing here copies or allocates.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..sim.memory import DeviceArray
from ._cuda_arrays import CUDADeviceArray
from ._cuda_env import device_kind

__all__ = ["describe_device_array", "device_array_kind", "is_c_contiguous", "is_freed",
           "may_share_memory"]


def device_array_kind(value: Any) -> str | None:
    """"simulator" (gpukit's CPU simulator), "cuda" (gpukit's CUDA backend), "cupy", "numba",
    "cai" (another array with __cuda_array_interface__) or None when `value` is no device
    array."""
    if isinstance(value, DeviceArray):
        return "simulator"
    kind = device_kind(value)
    return "cuda" if kind == "gpukit" else kind


def describe_device_array(value: Any) -> str:
    """A few words for messages: "a device array of gpukit's CPU simulator", "a CuPy array in
    GPU memory", ..."""
    return {"simulator": "a device array of gpukit's CPU simulator",
            "cuda": "a device array of gpukit's CUDA backend",
            "cupy": "a CuPy array in GPU memory",
            "numba": "a Numba device array in GPU memory"}.get(
        device_array_kind(value), f"a GPU array ({type(value).__name__}) in GPU memory")


def is_freed(value: Any) -> bool:
    """Whether `value` is a gpukit device array (of either backend) that was freed."""
    return isinstance(value, (DeviceArray, CUDADeviceArray)) and value.is_freed


def is_c_contiguous(value: Any) -> bool:
    """Whether a device array (of any kind) is C-contiguous."""
    if isinstance(value, (DeviceArray, CUDADeviceArray)):
        return value.layout == "C"
    check = getattr(value, "is_c_contiguous", None)  # Numba device arrays
    if callable(check):
        return bool(check())
    flags = getattr(value, "flags", None)  # CuPy arrays
    return bool(getattr(flags, "c_contiguous", True))


def may_share_memory(x: Any, y: Any) -> bool:
    """Whether two device arrays may overlap (conservative: same allocation on the simulator,
    overlapping address ranges on a GPU)."""
    if isinstance(x, DeviceArray) and isinstance(y, DeviceArray):
        return x.alloc is y.alloc
    try:
        ix, iy = x.__cuda_array_interface__, y.__cuda_array_interface__
    except AttributeError:
        return x is y
    start_x, start_y = ix["data"][0], iy["data"][0]
    end_x = start_x + math.prod(ix["shape"]) * np.dtype(ix["typestr"]).itemsize
    end_y = start_y + math.prod(iy["shape"]) * np.dtype(iy["typestr"]).itemsize
    return start_x < end_y and start_y < end_x
