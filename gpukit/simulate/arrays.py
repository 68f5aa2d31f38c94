"""Device arrays of the simulation mode: gpukit's DeviceArray with numba-cuda's host semantics.

`SimNDArray` is a `gpukit.sim.device_array.DeviceArray` (so kernels, checks and memory accounting
are the simulator's) that is also a numba-cuda `DeviceNDArray` to `isinstance`, and behaves as one
on the host: `d[i]` copies one element to the host, `d[a:b] = value` copies into the device,
`np.asarray(d)` copies to the host, `bind(stream)`, `T`. Its memory is freed when the last array
over it is collected, as numba-cuda frees it (deferred by `cuda.defer_cleanup()`). Host arrays made
by `mapped_array`/`managed_array` are numpy arrays a kernel may use without a warning.
"""

from __future__ import annotations

import ctypes
import math
import weakref
from typing import Any

import numpy as np
from numba.cuda.cudadrv.devicearray import DeviceNDArray

from ..errors import ArgumentTypeError, OutOfMemoryError, UnsupportedOperationError
from ..sim.device_array import DeviceArray, Owner, interface_view
from ..sim.stream_order import Access
from ..sim.streams import PinnedArray, is_pinned

# each allocation's owner while an array over it lives (by allocation id), so that an array
# imported by its address (`import_interface`) keeps the same memory alive
_OWNERS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class SimPointer:
    """numba-cuda's `MemoryPointer` for simulated memory (a device array's `gpu_data`): the
    address of the array's first element, which `cuda.as_cuda_array`, kernel arguments and
    numba's own `DeviceNDArray(..., gpu_data=...)` turn back into the simulated array. It keeps
    the memory alive while it lives."""

    def __init__(self, address: int, size: int, owner: Owner):
        self.device_pointer_value = self.handle = self.device_pointer = int(address)
        self.size, self.owner = int(size), owner

    @property
    def device_ctypes_pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.device_pointer or None)

    def view(self, start: int, stop: int | None = None) -> SimPointer:
        stop = self.size if stop is None else stop
        return SimPointer(self.device_pointer + start, stop - start, self.owner)

    def __int__(self) -> int:
        return self.device_pointer

    def __eq__(self, other: object) -> bool:  # the same bytes: views of one array compare equal
        return isinstance(other, SimPointer) and (self.device_pointer, self.size) == \
            (other.device_pointer, other.size)

    def __hash__(self) -> int:
        return hash((self.device_pointer, self.size))


class SimNDArray(DeviceArray, DeviceNDArray):
    """A numba-cuda device array on the simulated device (what `cuda.to_device` returns while
    simulation mode is on)."""

    __cuda_memory__ = True
    __cuda_ndarray__ = True

    def __init__(self, alloc: Any, shape: tuple[int, ...], strides: tuple[int, ...],
                 offset_bytes: int = 0, *, owner: Owner, stream: Any = 0, dtype: Any = None):
        DeviceArray.__init__(self, alloc, shape, strides, offset_bytes, dtype, owner=owner)
        self.stream = stream

    def _view(self, shape: tuple[int, ...], strides: tuple[int, ...],
              offset_bytes: int) -> SimNDArray:
        return SimNDArray(self._alloc, shape, strides, offset_bytes, owner=self._owner,
                          stream=self.stream, dtype=self._dtype)

    # -- numba-cuda's description of the array --------------------------------------------------
    @property
    def _numba_type_(self) -> Any:
        from numba.core import types
        from numba.np.numpy_support import from_dtype
        layout = "C" if self.is_c_contiguous() else "F" if self.is_f_contiguous() else "A"
        return types.Array(from_dtype(self.dtype), self.ndim, layout)

    @property
    def alloc_size(self) -> int:
        return self._alloc.nbytes

    @property
    def device_ctypes_pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.__cuda_array_interface__["data"][0] or None)

    @property
    def gpu_data(self) -> SimPointer:
        address = self.__cuda_array_interface__["data"][0]
        return SimPointer(address, self.alloc_size - self.offset_bytes if address else 0,
                          self._owner)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        interface = DeviceArray.__cuda_array_interface__.fget(self)
        interface["stream"] = int(self.stream) if self.stream else None
        return interface

    def bind(self, stream: Any = 0) -> SimNDArray:
        """The same array with `stream` as the default stream of its copies."""
        view = self._view(self.shape, self.strides, self.offset_bytes)
        view.stream = stream
        return view

    def _default_stream(self, stream: Any) -> Any:
        return stream or self.stream

    def copy_to_host(self, ary: np.ndarray | None = None, stream: Any = 0, *,
                     out: np.ndarray | None = None) -> np.ndarray:
        if any(s < 0 for s in self.strides):  # numba-cuda's error: its driver copies bytes
            raise NotImplementedError(
                f"D->H copy not implemented for negative strides: {self.strides}")
        return DeviceArray.copy_to_host(self, ary, self._default_stream(stream), out=out)

    def copy_to_device(self, ary: Any, stream: Any = 0) -> None:
        if not isinstance(ary, (DeviceArray, np.ndarray)):
            ary = np.asarray(ary, dtype=self.dtype)
        if ary.size == 0 and self.size == 0:
            return
        DeviceArray.copy_to_device(self, ary, self._default_stream(stream))

    # -- host-side element access, as numba-cuda allows it --------------------------------------
    def _region(self, key: Any) -> SimNDArray:
        """The device view `key` selects, 0-d for a single element."""
        parts = key if isinstance(key, tuple) else (key,)
        if not any(p is Ellipsis for p in parts):
            parts = (*parts, Ellipsis)  # keeps a single element a (0-d) view
        return DeviceArray.__getitem__(self, parts)

    def __getitem__(self, key: Any) -> Any:
        return self.getitem(key)

    def getitem(self, key: Any, stream: Any = 0) -> Any:
        """A device view, or for a single element its value copied to the host."""
        view = self._region(key)
        parts = key if isinstance(key, tuple) else (key,)
        single = len(parts) == self.ndim and all(
            isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_))
            for p in parts)
        if not single:
            return view
        value = view.host_view()[()]
        self._alloc.memory.record_transfer("d2h", self.itemsize,
                                           stream=self._default_stream(stream) or None,
                                           accesses=(Access(view, False),))
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        self.setitem(key, value)

    def setitem(self, key: Any, value: Any, stream: Any = 0) -> None:
        """Copy a scalar or an array (host or device) into the elements `key` selects."""
        target = self._region(key)
        device = isinstance(value, DeviceArray)
        source = value.host_view() if device else np.asarray(value)
        if source.ndim > target.ndim:
            raise ValueError(f"Can't assign {source.ndim}-D array to {target.ndim}-D self")
        for axis, (want, have) in enumerate(zip(target.shape[target.ndim - source.ndim:],
                                                source.shape)):
            if have not in (1, want):
                raise ValueError(f"Can't copy sequence with size {have} to array axis "
                                 f"{axis + target.ndim - source.ndim} with dimension {want}")
        target.host_view()[...] = source
        target.mark_written()
        nbytes = source.size * source.dtype.itemsize
        accesses = [Access(target, True)]
        if device:
            accesses.append(Access(value, False, "its source"))
        self._alloc.memory.record_transfer("d2d" if device else "h2d", nbytes,
                                           stream=self._default_stream(stream) or None,
                                           accesses=tuple(accesses))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy is False:
            raise ValueError("`copy=False` is not supported. A copy is always created.")
        host = self.copy_to_host()
        return host if dtype is None else host.astype(dtype)

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def __bool__(self) -> bool:
        return len(self) != 0

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    @property
    def T(self) -> SimNDArray:
        return self.transpose()

    def transpose(self, axes: Any = None) -> SimNDArray:
        """A transposed copy on the device (numba-cuda runs a kernel for it; 2-D only)."""
        if axes is not None and tuple(axes) == tuple(range(self.ndim)):
            return self
        if self.ndim != 2:
            raise NotImplementedError("transposing a non-2D DeviceNDArray isn't supported")
        host = np.ascontiguousarray(self.host_view().T)
        result = new_array(self._alloc.memory, self._owner_context, host.shape, host.dtype,
                           initialized=True)
        result.host_view()[...] = host
        self._alloc.memory.record_transfer(
            "d2d", self.nbytes, accesses=(Access(result, True),
                                          Access(self, False, "its source")))
        return result

    def ravel(self, order: str = "C", stream: Any = 0) -> SimNDArray:
        """A 1-D view; numba-cuda's NotImplementedError for an array not contiguous in
        `order` (numba's ufuncs then copy it through the host, as they do on a GPU)."""
        if not (self.is_c_contiguous() if order == "C" else self.is_f_contiguous()):
            raise NotImplementedError("ravel on non-contiguous array")
        return DeviceArray.ravel(self, order, stream)

    def view(self, dtype: Any) -> SimNDArray:
        """The same memory read as another dtype of the same size (`datetime64` as `int64`),
        as numba-cuda's `view`. A dtype of another size would split or join the elements the
        simulator's checks track, so it is refused."""
        dtype = np.dtype(dtype)
        if dtype.itemsize != self.dtype.itemsize:
            raise UnsupportedOperationError(
                f"view({dtype}) of a simulated {self.dtype} array: the simulator views an array "
                f"only as a dtype of the same size ({self.dtype.itemsize} bytes), as its checks "
                "track whole elements; copy it to the host and use numpy's view, then copy the "
                "result to the device")
        return SimNDArray(self._alloc, self.shape, self.strides, self.offset_bytes,
                          owner=self._owner, stream=self.stream, dtype=dtype)

    def get_ipc_handle(self) -> Any:
        raise UnsupportedOperationError("IPC handles are not simulated (one process, one "
                                        "simulated device)")

    @property
    def _owner_context(self) -> Any:
        return _CONTEXTS.get(self._alloc.memory)

    def __repr__(self) -> str:
        state = ", freed" if self._alloc.freed else ""
        return (f"<gpukit SimNDArray shape={self.shape} dtype={self.dtype} "
                f"on {self._alloc.memory.backend_name}{state}>")


# the deallocations of each simulated device's context, by memory (for finalizers and copies)
_CONTEXTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def register_context(memory: Any, context: Any) -> None:
    """Tell new arrays of `memory` which context defers their deallocation."""
    _CONTEXTS[memory] = context


def _extent(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> int:
    """Elements an allocation needs to hold an array of these strides (all >= 0)."""
    if not shape or 0 not in shape:
        return (sum((n - 1) * s for n, s in zip(shape, strides)) // itemsize + 1) if shape \
            else 1
    return 0


def strides_for(shape: tuple[int, ...], itemsize: int, order: str = "C",
                strides: Any = None) -> tuple[int, ...]:
    if strides is not None:
        strides = (strides,) if isinstance(strides, (int, np.integer)) else tuple(strides)
        if len(strides) != len(shape) or any(int(s) < 0 for s in strides):
            raise ValueError("strides not match ndim")
        return tuple(int(s) for s in strides)
    step, result = itemsize, []
    axes = reversed(range(len(shape))) if order == "C" else range(len(shape))
    for axis in axes:
        result.append((axis, step))
        step *= max(shape[axis], 1)
    return tuple(s for _, s in sorted(result))


def check_dtype(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise ArgumentTypeError(f"device arrays cannot hold Python objects (dtype {dtype})")
    return dtype


def new_array(memory: Any, context: Any, shape: Any, dtype: Any, *, strides: Any = None,
              order: str = "C", initialized: bool = False, stream: Any = 0) -> SimNDArray:
    """A new array in simulated device memory; freed when no array over it is left."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"shape elements must be integers, got {type(n).__name__}")
    shape = tuple(int(n) for n in shape)
    dtype = check_dtype(dtype)
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', got {order!r}")
    strides = strides_for(shape, dtype.itemsize, order, strides)
    count = _extent(shape, strides, dtype.itemsize) if math.prod(shape) else 0
    deallocations = context.deallocations if context is not None else None
    try:
        alloc = memory.allocate(count, dtype, initialized=initialized)
    except OutOfMemoryError:
        if not deallocations:  # none pending (or none deferred): out of memory indeed
            raise
        deallocations.clear()  # numba-cuda frees what is pending and tries again
        alloc = memory.allocate(count, dtype, initialized=initialized)
    owner = _OWNERS[alloc.id] = Owner()
    finalizer = weakref.finalize(owner, _collect, deallocations, memory, alloc)
    finalizer.atexit = False
    return SimNDArray(alloc, shape, strides, owner=owner, stream=stream)


def import_interface(memory: Any, interface: dict, what: str,
                     stream: Any = 0) -> SimNDArray | None:
    """The simulated array a CUDA Array Interface describes (`what` names its maker in
    errors): a view of the allocation that holds its pointer, sharing that memory's owner; None
    for an empty array (see `gpukit.sim.device_array.interface_view` for what is refused)."""
    view = interface_view(memory, interface, what)
    if view is None:
        return None
    owner = _OWNERS.get(view.allocation.id)
    if owner is None:  # collected, its free deferred: as good as freed
        raise TypeError(f"{what} lives in memory the simulated device does not hold (real GPU "
                        "memory, or freed)")
    return SimNDArray(view.allocation, view.shape, view.strides, view.offset_bytes, owner=owner,
                      stream=stream, dtype=view.dtype)


def _collect(deallocations: Any, memory: Any, alloc: Any) -> None:
    if deallocations is None:
        memory.collect(alloc)
    else:
        deallocations.add_item(memory.collect, alloc, size=alloc.reserved_bytes)


class MappedArray(PinnedArray):
    """A host array that kernels may use directly (numba-cuda's mapped and managed memory):
    launches copy it in and out without a warning, and copies treat it as pinned."""

    _gpukit_stream: Any = 0  # on the array mapped_array made; its views ask that one

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """numba-cuda's interface of mapped memory: the host address (with unified addressing,
        a GPU maps it at the same address) and the stream the array was made with."""
        root = self
        while isinstance(root, MappedArray) and not root._gpukit_pinned_root:
            root = root.base
        if not isinstance(root, MappedArray):  # a view not made by mapped_array: host memory
            raise AttributeError("'MappedArray' object has no attribute "  # noqa: TRY004
                                 "'__cuda_array_interface__'")
        stream = root._gpukit_stream
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "strides": None if self.flags["C_CONTIGUOUS"] else self.strides,
                "data": (self.ctypes.data if self.size else 0, False),
                "stream": int(stream) if stream else None}


def mapped_host_array(shape: Any, dtype: Any, strides: Any = None, order: str = "C",
                      stream: Any = 0) -> MappedArray:
    """A zeroed mapped (or managed) host array; `stream`: the stream its interface names."""
    dtype = check_dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    array = np.zeros(shape, dtype, order=order)
    if strides is not None:
        array = np.lib.stride_tricks.as_strided(array, shape, strides)
    mapped = array.view(MappedArray)
    mapped._gpukit_pinned_root = True
    mapped._gpukit_stream = stream
    return mapped


def is_mapped(array: Any) -> bool:
    return isinstance(array, MappedArray) and is_pinned(array)
