"""numba.cuda's host API on the simulated device: what `gpukit.simulate` puts in its place.

Each function here has the name, parameters and defaults of its numba-cuda namesake and works on
the active simulation (`gpukit.simulate.session.current()`): device discovery (`is_available`,
`detect`, `list_devices`, `gpus`, `select_device`, `get_current_device`, `current_context`),
memory (`to_device`, `device_array(_like)`, `pinned_array(_like)`, `mapped_array(_like)`,
`managed_array`, `pinned`, `mapped`), streams and events (modeled times), `synchronize`.
Nothing here launches kernels (`gpukit.simulate.dispatch` does).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
from numba.cuda.cudadrv.devicearray import DeviceNDArrayBase

from ..errors import ArgumentTypeError, UnsupportedOperationError
from ..sim.device_array import DeviceArray
from ..sim.streams import SimStream
from .arrays import (
    MappedArray,
    SimNDArray,
    SimPointer,
    check_dtype,
    import_interface,
    mapped_host_array,
    new_array,
)
from .session import current


def _sim() -> Any:
    return current(required=True)


# -- devices and contexts --------------------------------------------------------------------
def is_available() -> bool:
    """True: the simulated GPU is always there."""
    return True


def cuda_error() -> None:
    return None


def is_supported_version() -> bool:
    return True


def detect() -> bool:
    """Print the simulated device, as numba-cuda prints real ones; True."""
    device = _sim().context.device
    print("Found 1 CUDA devices")
    print(f"id {device.id:d}    {device.name:>20s} {'[SUPPORTED]':>40s}")
    for key, value in [("Compute Capability", "{}.{}".format(*device.compute_capability)),
                       ("Simulated by", "gpukit (modeled times, checked kernels)"),
                       ("Multiprocessors", device.MULTIPROCESSOR_COUNT),
                       ("Memory", f"{_sim().profile.memory_bytes:,} bytes")]:
        print(f"{key:>40s}: {value}")
    print("Summary:\n\t1/1 devices are supported")
    return True


def list_devices() -> Any:
    return _sim().gpus


def select_device(device_id: int = 0) -> Any:
    """The simulated device (there is one: device 0)."""
    count = len(_sim().gpus)
    if isinstance(device_id, bool) or not isinstance(device_id, (int, np.integer)) or \
            not 0 <= device_id < count:
        raise ArgumentTypeError(f"select_device: the simulation has {count} device (id 0), "
                                f"got {device_id!r}")
    return _sim().context.device


def get_current_device() -> Any:
    return _sim().context.device


def driver_get_device(self: Any, devnum: int = 0) -> Any:
    """numba-cuda's `driver.get_device(devnum)` (its library kernels ask it): the simulated
    device."""
    return select_device(devnum)


def current_context(devnum: int | None = None) -> Any:
    return _sim().context


def close() -> None:
    """Like numba-cuda's close (destroying the context): every allocation is freed."""
    _sim().context.reset()


def synchronize() -> None:
    _sim().backend.synchronize()


@contextlib.contextmanager
def defer_cleanup() -> Iterator[None]:
    with _sim().context.deallocations.disable():
        yield


def profile_start() -> None:
    pass


def profile_stop() -> None:
    pass


@contextlib.contextmanager
def profiling() -> Iterator[None]:
    yield


# -- memory ----------------------------------------------------------------------------------
def _new(shape: Any, dtype: Any, strides: Any = None, order: str = "C", stream: Any = 0,
         initialized: bool = False) -> SimNDArray:
    sim = _sim()
    return new_array(sim.backend.memory, sim.context, shape, dtype, strides=strides,
                     order=order, initialized=initialized, stream=stream)


def device_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C",
                 stream: Any = 0) -> SimNDArray:
    """Uninitialised simulated device memory (kernels that read it before writing it stop with
    gpukit's UninitializedMemoryError)."""
    return _new(shape, dtype, strides, order, stream)


def _like(ary: Any) -> tuple[str, Any]:
    strides = None
    flags = ary.flags
    c, f = flags["C_CONTIGUOUS"], flags["F_CONTIGUOUS"]
    if not (c or f) and ary.ndim > 1:  # the same axis order, contiguous (as numba-cuda does)
        order = sorted(range(ary.ndim), key=lambda axis: ary.strides[axis])
        strides, step = [0] * ary.ndim, ary.dtype.itemsize
        for axis in order:
            strides[axis], step = step, step * ary.shape[axis]
    return ("F" if f and not c else "C"), strides and tuple(strides)


def device_array_like(ary: Any, stream: Any = 0) -> SimNDArray:
    order, strides = _like(ary)
    return device_array(ary.shape, ary.dtype, strides, order, stream)


def to_device(obj: Any, stream: Any = 0, copy: bool = True, to: Any = None) -> SimNDArray:
    """A simulated device copy of a host array (or `obj` copied into `to`)."""
    if to is not None:
        if copy:
            to.copy_to_device(obj, stream=stream)
        return to
    if isinstance(obj, SimNDArray):
        return obj
    if isinstance(obj, DeviceArray):
        raise ArgumentTypeError("to_device: this device array belongs to a gpukit backend, "
                                "not to the simulation; copy it to the host first")
    host = np.asanyarray(obj)
    _sentry_contiguous(host)
    order, strides = _like(host)
    device = _new(host.shape, host.dtype, strides, order, stream, initialized=copy)
    if copy:
        device.copy_to_device(host, stream=stream)
    return device


def _sentry_contiguous(host: np.ndarray) -> None:
    """numba-cuda copies one contiguous region: a strided view (`x[::2]`) is refused, axes of
    stride 0 (broadcasts) aside, with numba-cuda's ValueError."""
    core = host[tuple(0 if s == 0 else slice(None) for s in host.strides)] \
        if host.strides and host.size else host
    if not (core.flags.c_contiguous or core.flags.f_contiguous):
        from numba.cuda.cudadrv.devicearray import errmsg_contiguous_buffer
        raise ValueError(errmsg_contiguous_buffer)


def auto_device(obj: Any, stream: Any = 0, copy: bool = True,
                user_explicit: bool = False) -> tuple[Any, bool]:
    if isinstance(obj, SimNDArray):
        return obj, False
    return to_device(obj, stream=stream, copy=copy), True


def pinned_array(shape: Any, dtype: Any = np.float64, strides: Any = None,
                 order: str = "C") -> np.ndarray:
    """A host array that copies treat as pinned (faster, asynchronous on streams)."""
    from ..sim.streams import pinned_array as sim_pinned_array
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    array = sim_pinned_array(shape, check_dtype(dtype))
    return np.asfortranarray(array) if order == "F" and array.ndim > 1 else array


def _host_like(make: Any, ary: Any) -> np.ndarray:
    """A host array made by `make(shape, dtype, order=...)` laid out as `_like` lays out a
    device one: a strided view's copy keeps its axis order, contiguous."""
    order, strides = _like(ary)
    if strides is None:
        return make(ary.shape, ary.dtype, order=order)
    axes = sorted(range(ary.ndim), key=lambda axis: ary.strides[axis], reverse=True)
    return make(tuple(ary.shape[a] for a in axes), ary.dtype, order="C").transpose(
        np.argsort(axes))


def pinned_array_like(ary: Any) -> np.ndarray:
    return _host_like(pinned_array, ary)


def mapped_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C",
                 stream: Any = 0, portable: bool = False, wc: bool = False) -> np.ndarray:
    """A host array kernels may use directly (copied in and out of each launch, silently)."""
    return mapped_host_array(shape, dtype, strides, order, stream)


def mapped_array_like(ary: Any, stream: Any = 0, portable: bool = False,
                      wc: bool = False) -> np.ndarray:
    return _host_like(functools.partial(mapped_array, stream=stream), ary)


def managed_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C",
                  stream: Any = 0, attach_global: bool = True) -> np.ndarray:
    """Managed memory: on the simulator, a host array kernels may use (as mapped_array)."""
    return mapped_host_array(shape, dtype, strides, order, stream)


@contextlib.contextmanager
def pinned(*arylist: Any) -> Iterator[None]:
    """Pinning host arrays for a while: accepted; the simulator's copies do not need it."""
    yield


@contextlib.contextmanager
def mapped(*arylist: Any, **kws: Any) -> Iterator[Any]:
    """Host arrays mapped for kernels: views of them that kernels may use directly."""
    views = [np.asarray(a).view(MappedArray) for a in arylist]
    for view in views:
        view._gpukit_pinned_root = True
    yield views[0] if len(views) == 1 else views


def is_cuda_array(obj: Any) -> bool:
    return hasattr(obj, "__cuda_array_interface__")


def as_cuda_array(obj: Any, sync: bool = True) -> Any:
    """A simulated device array over the same memory as `obj`, any object with a CUDA Array
    Interface that points into the simulated device's memory (a wrapper of a device array,
    numba's `DeviceNDArray` built on a simulated array's `gpu_data`): a view, no copy."""
    if isinstance(obj, SimNDArray):
        return obj
    if not is_cuda_array(obj):
        raise TypeError("*obj* doesn't implement the cuda array interface.")
    if isinstance(obj, MappedArray):
        raise UnsupportedOperationError(
            "a device array view of mapped memory: on the simulator a mapped (or managed) "
            "array is host memory that kernels use as it is, so pass the array itself")
    desc = obj.__cuda_array_interface__
    if isinstance(obj, DeviceNDArrayBase):  # numba's own class: its strides as they are (its
        desc = {**desc, "strides": obj.strides}  # interface calls a broadcast contiguous)
    return from_cuda_array_interface(desc, owner=obj, sync=sync, what=f"a {type(obj).__name__}")


def _broadcast(name: str, where: str) -> Any:
    """numba's broadcasting method `where.name`, returning the simulated array's view (a
    view with stride-0 axes) rather than numba's DeviceNDArray over the same memory."""
    def method(self: Any, ary: Any, shape: Any) -> Any:
        from .patching import original
        return as_cuda_array(original(name, where)(self, ary, shape))
    method.__name__ = name
    return method


broadcast_device = _broadcast("broadcast_device", "CUDAUFuncMechanism")
_broadcast_scalar_input = _broadcast("_broadcast_scalar_input", "_CUDAGUFuncCallSteps")
_broadcast_add_axis = _broadcast("_broadcast_add_axis", "_CUDAGUFuncCallSteps")


def numba_array_init(self: Any, shape: Any, strides: Any, dtype: Any, stream: Any = 0,
                     gpu_data: Any = None) -> None:
    """numba's `DeviceNDArrayBase.__init__`: without `gpu_data` (numba-cuda would allocate GPU
    memory), the memory of a new simulated array of that layout."""
    from .patching import original
    if gpu_data is None:
        dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if math.prod(int(n) for n in dims):
            steps = (strides,) if isinstance(strides, (int, np.integer)) else tuple(strides)
            gpu_data = _new(dims, dtype, steps, stream=stream).gpu_data
    original("__init__", "DeviceNDArrayBase")(self, shape, strides, dtype, stream, gpu_data)


def _through_view(name: str, where: str) -> Any:
    """numba's DeviceNDArray method `where.name`, which on a GPU goes through the driver: on
    one over simulated memory, the simulated array it views does it."""
    def method(self: Any, *args: Any, **kws: Any) -> Any:
        if isinstance(self.gpu_data, SimPointer) and not isinstance(self, SimNDArray):
            return getattr(as_cuda_array(self), name)(*args, **kws)
        from .patching import original
        return original(name, where)(self, *args, **kws)
    method.__name__ = name
    return method


numba_array_copy_to_host = _through_view("copy_to_host", "DeviceNDArrayBase")
numba_array_copy_to_device = _through_view("copy_to_device", "DeviceNDArrayBase")
numba_array_index = _through_view("__getitem__", "DeviceNDArray")
numba_array_getitem = _through_view("getitem", "DeviceNDArray")
numba_array_assign = _through_view("__setitem__", "DeviceNDArray")
numba_array_setitem = _through_view("setitem", "DeviceNDArray")


def from_cuda_array_interface(desc: dict, owner: Any = None, sync: bool = True,
                              what: str = "the array") -> SimNDArray:
    """numba-cuda's `cuda.from_cuda_array_interface`: the simulated array `desc` describes.
    Its stream (a simulated stream's number) becomes the array's default stream, and with
    `sync` (and numba-cuda's CUDA_ARRAY_INTERFACE_SYNC) it is synchronized first, as
    numba-cuda does. `owner` is accepted as numba-cuda's: the view shares its allocation's
    owner, which keeps the memory alive."""
    from numba.cuda.core import config
    sim = _sim()
    handle = desc.get("stream")
    stream = sim.backend.modeled_timeline.external_stream(handle) if handle else 0
    if stream and sync and config.CUDA_ARRAY_INTERFACE_SYNC:
        stream.synchronize()
    array = import_interface(sim.backend.memory, desc, what, stream=stream)
    if array is None:  # empty: numba-cuda makes an array without memory
        array = _new(tuple(desc["shape"]), np.dtype(desc["typestr"]), stream=stream)
    return array


# -- streams and events (modeled times) ------------------------------------------------------
def stream() -> Any:
    return _sim().backend.stream()


def default_stream() -> Any:
    """The default stream as numba-cuda gives it: a stream object (its handle is 0)."""
    return SimStream(_sim().backend.modeled_timeline, 0)


legacy_default_stream = per_thread_default_stream = default_stream


def external_stream(ptr: int) -> Any:
    """A stream from a handle: a simulated stream's number gives that stream, marked external;
    any other handle a new simulated stream."""
    return _sim().backend.modeled_timeline.external_stream(ptr)


def event(timing: bool = True) -> Any:
    """A CUDA event on the modeled timeline (times are modeled, never measured)."""
    return _sim().context.create_event(timing)


def event_elapsed_time(evtstart: Any, evtend: Any) -> float:
    return evtstart.elapsed_time(evtend)
