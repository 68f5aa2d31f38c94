"""Allocations and host/device copies of the CUDA backend, with the simulator's semantics.

Functions of a `CUDABackend`: `allocate`, `to_device`, `to_host`, `copy_to_device` and `adopt`
(CuPy and Numba arrays made elsewhere, used without copying). Copies keep C or Fortran order,
convert byte order, work on strided views (through the span of the array they view), accept
`stream=` (asynchronous where CUDA can be: pinned host memory), and are logged in
`backend.transfers` as the simulator's `TransferRecord`s (`modeled_ms` from the device's
profile). Every array goes through Numba's view of it, so CuPy and Numba arrays copy alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidDeviceArrayError, OutOfMemoryError, TransferError
from ..sim.memory import DeviceArray as SimDeviceArray
from . import _cuda_env as env
from ._cuda_arrays import CUDADeviceArray, flush_pending_frees
from .base import MemoryInfo
from .validate import check_array_size, check_copy_target, check_host_array


def allocate(backend: Any, shape: tuple[int, ...], dtype: np.dtype,
             order: str = "C") -> CUDADeviceArray:
    """Uninitialised device memory: a CuPy array where CuPy works, else a Numba one."""
    nbytes = check_array_size(shape, dtype)
    cuda = backend.require_cuda()
    with backend.device_call():
        try:
            if env.cupy_usable() and env.cupy_holds(dtype):
                import cupy  # lazy: CuPy loads only on a GPU machine that has it
                raw = cupy.empty(shape, dtype, order=order)
            else:
                raw = cuda.device_array(shape, dtype, order=order)
        except Exception as exc:
            backend.raise_if_out_of_memory(exc, nbytes)
            raise
    array = CUDADeviceArray(backend, raw)
    backend.register(array, nbytes)
    return array


def host_array(array: Any, operation: str) -> np.ndarray:
    """`array` as a numpy array of a native dtype, C- or Fortran-contiguous (the order kept)."""
    host = check_host_array(array, operation=operation)  # raises for what is not a host array
    if array.flags.f_contiguous and not array.flags.c_contiguous:
        return np.asfortranarray(array, dtype=host.dtype)
    return host


def to_device(backend: Any, array: Any, stream: Any, implicit: bool) -> CUDADeviceArray:
    host = host_array(array, "to_device")
    order = "F" if host.flags.f_contiguous and not host.flags.c_contiguous else "C"
    device = allocate(backend, host.shape, host.dtype, order)
    try:
        with backend.device_call():
            device.numba_view().copy_to_device(host, stream=backend.numba_stream(stream))
    except BaseException:
        backend.free(device)  # leave nothing allocated behind
        raise
    backend.log_transfer("h2d", host.nbytes, backend.is_pinned(array), implicit, stream)
    return device


def _pointer(array: CUDADeviceArray) -> int:
    return int(array.__cuda_array_interface__["data"][0] or 0)


def _root_to_host(device: CUDADeviceArray) -> tuple[np.ndarray, np.ndarray]:
    """(the root as a host array, a host view of `device` in it) for strided views."""
    root = device.root
    if root.layout == "A":
        raise TransferError(
            f"cannot copy this strided view of a strided {root.library} array; make a "
            "contiguous copy of it first")
    whole = np.empty(root.shape, root.dtype, order="F" if root.layout == "F" else "C")
    root.numba_view().copy_to_host(whole)
    flat = whole.reshape(-1, order="F" if root.layout == "F" else "C").view(np.uint8)
    view = np.ndarray(device.shape, device.dtype, buffer=flat,
                      offset=_pointer(device) - _pointer(root), strides=device.strides)
    return whole, view


def to_host(backend: Any, array: Any, out: np.ndarray | None, stream: Any,
            implicit: bool) -> np.ndarray:
    device = backend.own(array, "to_host")
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TransferError(f"to_host's out must be a numpy array, got {type(out).__name__}")
        check_copy_target(out, device.shape, device.dtype, operation="to_host")
    in_place = out is not None and out.dtype.isnative and out.strides == device.strides
    if stream is not None and ((out is not None and not in_place) or device.layout == "A"):
        raise TransferError(
            f"to_host(..., stream=...): an asynchronous copy lands in place, so out must have "
            f"the device array's layout (strides {device.strides}) in native byte order, and the "
            "device array must be contiguous; copy without stream=, which converts")
    with backend.device_call():
        if device.layout == "A":
            host = np.array(_root_to_host(device)[1], order="K")
        else:
            host = out if in_place else np.empty(device.shape, device.dtype,
                                                 order="F" if device.layout == "F" else "C")
            device.numba_view().copy_to_host(host, stream=backend.numba_stream(stream))
    if out is not None and host is not out:
        out[...] = host
        host = out
    backend.log_transfer("d2h", device.nbytes, backend.is_pinned(out), implicit, stream)
    return host


def copy_to_device(backend: Any, source: Any, target: Any, stream: Any) -> CUDADeviceArray:
    device = backend.own(target, "copy_to_device")
    if not isinstance(source, np.ndarray) and env.device_kind(source) is not None:
        return _device_to_device(backend, backend.own(source, "copy_to_device"), device, stream)
    host = check_host_array(source, operation="copy_to_device")
    check_copy_target(host, device.shape, device.dtype, operation="copy_to_device")
    with backend.device_call():
        if device.layout == "A":
            if stream is not None:
                raise TransferError("copy_to_device(..., stream=...) needs a contiguous target; "
                                    "this one is a strided view: copy without stream=")
            whole, view = _root_to_host(device)
            view[...] = host
            device.root.numba_view().copy_to_device(whole)
        else:
            host = np.asarray(host, order="F" if device.layout == "F" else "C")
            device.numba_view().copy_to_device(host, stream=backend.numba_stream(stream))
    backend.log_transfer("h2d", device.nbytes, backend.is_pinned(source), False, stream)
    return device


def _device_to_device(backend: Any, source: CUDADeviceArray, target: CUDADeviceArray,
                      stream: Any) -> CUDADeviceArray:
    if source.shape != target.shape or source.dtype != target.dtype:
        raise TransferError(
            f"copy_to_device: the source device array is {source.shape} {source.dtype} but the "
            f"target is {target.shape} {target.dtype}; copies need equal shapes and dtypes")
    if source.layout != target.layout or target.layout == "A":
        raise TransferError("copy_to_device between device arrays needs two contiguous arrays "
                            "of the same order (C or Fortran)")
    with backend.device_call():
        target.numba_view().copy_to_device(source.numba_view(),
                                           stream=backend.numba_stream(stream))
    backend.log_transfer("d2d", target.nbytes, False, False, stream)
    return target


def adopt(backend: Any, obj: Any, operation: str) -> CUDADeviceArray:
    """`obj` as a device array of `backend`: its own arrays as they are, CuPy and Numba arrays
    (and other __cuda_array_interface__ objects) wrapped without copying."""
    if isinstance(obj, CUDADeviceArray):
        if obj.backend is not backend:
            raise InvalidDeviceArrayError(
                f"{operation}: this device array belongs to another backend's device")
        return obj
    known = backend.wrapper_of(obj)
    if known is not None:
        return known
    if isinstance(obj, SimDeviceArray):
        raise InvalidDeviceArrayError(
            f"{operation}: this is a device array of gpukit's CPU simulator, in host memory; "
            "copy it to the host (to_host) and then to this backend (to_device)")
    kind = env.device_kind(obj)
    if kind is None:
        raise TransferError(f"{operation} expects a device array of this backend, got "
                            f"{type(obj).__name__}")
    raw = obj if kind in ("cupy", "numba") else backend.require_cuda().as_cuda_array(
        obj, sync=False)
    return CUDADeviceArray(backend, raw, adopted=True)


def raise_if_out_of_memory(backend: Any, exc: Exception, requested_bytes: int) -> None:
    """Raise OutOfMemoryError (with requested, free and total bytes) if `exc` is CUDA's or
    CuPy's out-of-memory error; else return."""
    text = f"{type(exc).__name__} {exc}".upper()
    if not any(word in text for word in ("OUTOFMEMORY", "OUT_OF_MEMORY", "OUT OF MEMORY")):
        return
    try:
        free_bytes, total_bytes = backend.get_memory_info()
    except Exception:  # noqa: BLE001 - report the out-of-memory error even so
        free_bytes = total_bytes = 0
    raise OutOfMemoryError(
        f"out of device memory: requested {requested_bytes:,} bytes, free {free_bytes:,} bytes, "
        f"total {total_bytes:,} bytes; free arrays you no longer need (backend.free(array)) or "
        "use smaller sizes", requested_bytes, free_bytes, total_bytes) from exc


def memory_info(backend: Any) -> MemoryInfo:
    """The driver's free and total memory of `backend`'s GPU; CuPy's pool's unused blocks count
    as free (any allocation reuses them, and CuPy gives them back when memory runs out), and
    numba's pending frees are run first. Numba's simulator has no device memory: host RAM."""
    cuda = backend.require_cuda()
    if backend.simulator:
        return MemoryInfo(*env.host_memory())
    with backend.device_call():
        context = cuda.current_context()
        flush_pending_frees(context)
        free_bytes, total_bytes = context.get_memory_info()
        if env.cupy_usable():
            import cupy  # lazy: only where CuPy works
            free_bytes += cupy.get_default_memory_pool().free_bytes()
    return MemoryInfo(int(min(free_bytes, total_bytes)), int(total_bytes))
