"""Device arrays of the CUDA backend: CuPy or Numba arrays behind gpukit's device-array interface.

`CUDADeviceArray` wraps the array the backend allocated (a CuPy array where CuPy works, else a
Numba device array; under Numba's CUDA simulator its stand-in) and offers what the simulator's
`DeviceArray` offers: shape, dtype, strides, layout, views by slicing, reshape, ravel, split,
copy_to_host / copy_to_device (with stream=), `__cuda_array_interface__`, and the same refusals
(implicit conversion to numpy, host arithmetic, use after free). CuPy and Numba arrays made
elsewhere are accepted too (`adopt`): gpukit then uses them without owning their memory.

`release` frees an array the backend owns *now*: a CuPy block goes back to CuPy's pool (which
`memory_info` counts as free), a Numba allocation is freed through its memory manager's pending
queue. Nothing here decides where copies go; `_cuda_copies` does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import (
    ArgumentTypeError,
    DeviceIndexError,
    HostAccessError,
    InvalidArgumentError,
    InvalidDeviceArrayError,
)
from ..utils import c_strides, f_strides


def _pointer(raw: Any) -> int:
    """The device address of a CuPy or Numba array (the host address under Numba's simulator)."""
    interface = getattr(raw, "__cuda_array_interface__", None)
    if interface is None:
        interface = raw._ary.__array_interface__  # Numba's simulator: a numpy array
    return int(interface["data"][0] or 0)


def array_library(raw: Any) -> str:
    """"cupy" for a CuPy array, else "numba" (Numba device arrays and the simulator's)."""
    return "cupy" if type(raw).__module__.partition(".")[0] == "cupy" else "numba"


class CUDADeviceArray:
    """A device array of a CUDABackend; `raw` is the CuPy or Numba array behind it.

    Slicing gives views (`is_view`); freeing the array a view came from makes the view unusable.
    Conversion to numpy is explicit: `backend.to_host(array)` or `array.copy_to_host()`.
    """

    __array_priority__ = 1000  # numpy defers binary operators, which then refuse

    def __init__(self, backend: Any, raw: Any, root: CUDADeviceArray | None = None, *,
                 adopted: bool = False):
        self.backend = backend
        self._raw = raw
        self._root = self if root is None else root
        self._numba: Any = None  # the Numba view kernels receive (made once, see numba_view)
        if root is None:
            self._freed = False
            self._adopted = adopted
            self._partial = False
        else:  # a view: of part of the root's memory, or of all of it (a reshape)
            self._partial = (_pointer(raw) != _pointer(root._raw)
                             or math.prod(raw.shape) != math.prod(root._raw.shape))

    # -- description -----------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self._alive().shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._alive().dtype)

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self._alive().strides)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def layout(self) -> str:
        """"C", "F" (Fortran) or "A" (any other strides), as numba names array layouts."""
        shape, strides, itemsize = self.shape, self.strides, self.itemsize
        relevant = [i for i, n in enumerate(shape) if n > 1]
        for name, expected in (("C", c_strides(shape, itemsize)), ("F", f_strides(shape, itemsize))):
            if all(strides[i] == expected[i] for i in relevant):
                return name
        return "A"

    @property
    def is_view(self) -> bool:
        """Whether this array covers only part of the memory it was sliced from."""
        return self._partial

    @property
    def is_freed(self) -> bool:
        return self._root._freed

    @property
    def is_adopted(self) -> bool:
        """Whether the memory belongs to another library (an array gpukit did not allocate)."""
        return self._root._adopted

    @property
    def library(self) -> str:
        """"cupy" or "numba": whose array `raw` is."""
        return array_library(self._alive())

    @property
    def raw(self) -> Any:
        """The CuPy or Numba array behind this one (raises after free)."""
        return self._alive()

    @property
    def root(self) -> CUDADeviceArray:
        """The array this one is a view of (itself if it is not a view)."""
        return self._root

    def _alive(self) -> Any:
        if self._root._freed:
            raise InvalidDeviceArrayError(
                f"use after free: this device array {tuple(self._raw_shape)} "
                f"{np.dtype(self._raw_dtype)} was freed; allocate a new one (or keep it until "
                "you are done with it)")
        return self._raw

    @property
    def _raw_shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self._raw.shape) if self._raw is not None else ()

    @property
    def _raw_dtype(self) -> Any:
        return self._raw.dtype if self._raw is not None else np.uint8

    def __len__(self) -> int:
        if not self.shape:
            raise HostAccessError("len() of a 0-d device array")
        return self.shape[0]

    def __repr__(self) -> str:
        state = ", freed" if self.is_freed else ""
        try:
            device = f"cuda ({self.backend.device_name})"
        except Exception:  # noqa: BLE001 - a repr never raises
            device = "cuda"
        return (f"<gpukit DeviceArray shape={self._raw_shape} dtype={np.dtype(self._raw_dtype)} "
                f"on {device}{state}>")

    # -- interoperability ----------------------------------------------------------------
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        raw = self._alive()
        interface = getattr(raw, "__cuda_array_interface__", None)
        if interface is not None:
            return interface
        host = raw._ary  # Numba's simulator: its arrays are numpy arrays in host memory
        return {**host.__array_interface__, "version": 3, "stream": None}

    def numba_view(self) -> Any:
        """The Numba device array kernels receive: the array itself, or a view of a CuPy array
        made once with sync=False, so that launches do not make Numba wait for CuPy's stream
        (numba-cuda synchronises the stream of every __cuda_array_interface__ argument)."""
        raw = self._alive()
        if self._numba is None:
            if array_library(raw) == "cupy":
                self._numba = self.backend.require_cuda().as_cuda_array(raw, sync=False)
            else:
                self._numba = raw
        return self._numba

    # -- copies (the backend does them, so they are checked and logged) -----------------------
    def copy_to_host(self, ary: np.ndarray | None = None, stream: Any = 0) -> np.ndarray:
        """A numpy copy (or a copy into `ary`); with `stream`, enqueued on it."""
        return self.backend.to_host(self, out=ary, stream=stream or None)

    def copy_to_device(self, ary: Any, stream: Any = 0) -> None:
        """Copy a numpy array or another device array (same shape and dtype) into this one."""
        self.backend.copy_to_device(ary, self, stream=stream or None)

    # -- views -------------------------------------------------------------------------------
    def _view(self, raw: Any) -> CUDADeviceArray:
        return CUDADeviceArray(self.backend, raw, self._root)

    def __getitem__(self, key: Any) -> CUDADeviceArray:
        raw = self._alive()
        parts = key if isinstance(key, tuple) else (key,)
        for part in parts:  # basic indexing only: anything else makes numpy copy, not view
            if not (part is None or part is Ellipsis or isinstance(part, slice)
                    or (isinstance(part, (int, np.integer))
                        and not isinstance(part, (bool, np.bool_)))):
                raise ArgumentTypeError(
                    f"device array index {key!r}: device arrays take ints, slices, ... and None "
                    f"(views of device memory), not {type(part).__name__}; to pick elements by "
                    "a list or a mask, copy the array to the host first")
        probe = np.lib.stride_tricks.as_strided(
            np.empty(0, np.uint8), shape=self.shape, strides=self.strides, writeable=False)
        try:
            view = probe[key]
        except (IndexError, OverflowError) as exc:
            raise DeviceIndexError(f"device array index {key!r}: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise ArgumentTypeError(f"device array index {key!r}: {exc}") from None
        if not isinstance(view, np.ndarray):
            raise HostAccessError(
                "indexing a device array on the host gives device views only; to read "
                f"element {key!r}, copy it: backend.to_host(array)[{key!r}]")
        return self._view(raw[key])

    def reshape(self, *shape: Any) -> CUDADeviceArray:
        """A view with another shape of a C-contiguous array (no copy on the device)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if any(isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer))
               or n < 0 for n in shape):
            raise ArgumentTypeError(f"reshape needs sizes that are ints >= 0, got {shape!r}")
        shape = tuple(int(n) for n in shape)
        if math.prod(shape) != self.size or self.layout != "C":
            raise InvalidArgumentError(
                f"cannot reshape a {self.shape} {self.layout}-order device array to {shape}: "
                "sizes must match and the array must be C-contiguous")
        return self._view(self._alive().reshape(shape))

    def ravel(self) -> CUDADeviceArray:
        """A 1-D view of a C-contiguous array."""
        return self.reshape(self.size)

    def split(self, section: int, stream: Any = 0) -> list[CUDADeviceArray]:
        """Views of consecutive `section`-element pieces of a 1-D array (the last may be
        shorter), as numba's DeviceNDArray.split."""
        if self.ndim != 1:
            raise InvalidArgumentError(f"split needs a 1-D device array, got shape {self.shape}")
        if isinstance(section, bool) or not isinstance(section, (int, np.integer)) or section < 1:
            raise ArgumentTypeError(f"split needs a section size that is an int >= 1, got "
                                    f"{section!r}")
        return [self[i:i + int(section)] for i in range(0, len(self), int(section))]

    # -- host access is explicit ---------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise HostAccessError(
            "a gpukit device array cannot be converted to numpy implicitly; copy it to the host "
            "with backend.to_host(array) (or array.copy_to_host())")

    def __bool__(self) -> bool:
        raise HostAccessError("the truth value of a device array is ambiguous on the host; copy "
                              "it with backend.to_host(array) first")

    def __iter__(self) -> Any:
        raise HostAccessError("cannot iterate over a device array on the host; copy it with "
                              "backend.to_host(array) first")

    def __setitem__(self, key: Any, value: Any) -> None:
        raise HostAccessError("device arrays cannot be assigned on the host; use "
                              "array[...].copy_to_device(host_array) or a kernel")

    def _host_arithmetic(self, *other: Any) -> Any:
        raise HostAccessError("arithmetic on a device array does not run on the host; compute in "
                              "a kernel, or copy it with backend.to_host(array) first")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _host_arithmetic
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _host_arithmetic
    __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _host_arithmetic
    __neg__ = __pos__ = __abs__ = _host_arithmetic


# -- freeing ---------------------------------------------------------------------------------
def release(array: CUDADeviceArray, context: Any) -> None:
    """Free `array` (a root this backend owns) now; `context` is numba's current context, or
    None under Numba's simulator. Raises InvalidDeviceArrayError for views, adopted arrays and
    arrays already freed, with the simulator's messages."""
    if array.is_freed:
        raise InvalidDeviceArrayError(
            "double free: this device array was already freed; free each array once")
    if array.is_view:  # a reshape of all of an array frees that array, as on the simulator
        raise InvalidDeviceArrayError(
            f"free: this device array {array.shape} is a view (a slice) of a larger one; free "
            "the array it was sliced from (freeing a view would free all of it)")
    if array.is_adopted:
        raise InvalidDeviceArrayError(
            f"free: this {array.library} array was not allocated by gpukit, so its memory "
            f"belongs to {'CuPy' if array.library == 'cupy' else 'Numba'}: drop your references "
            "to it and that library frees it")
    array = array.root
    raw = array.raw
    if array_library(raw) == "cupy":
        free_cupy_memory(raw)
    elif context is not None:
        free_numba_memory(raw, context)
    array._freed = True  # `_raw` stays, for the shape and dtype in later error messages
    array._numba = None


def free_cupy_memory(raw: Any) -> None:
    """Give a CuPy array's block back to CuPy's memory pool now (PooledMemory.free), instead of
    when the last reference to it goes; `memory_info` counts the pool's free blocks as free."""
    free = getattr(getattr(raw.data, "mem", None), "free", None)
    if callable(free):
        free()


def free_numba_memory(raw: Any, context: Any) -> None:
    """Free a Numba device array's allocation now. Its finalizer only queues cuMemFree on the
    *memory manager's* pending deallocations (numba-cuda flushes that queue after ten frees or
    an out-of-memory retry), so that queue is flushed here; the context's own queue holds
    modules, streams and events, not memory."""
    raw.gpu_data.free()
    flush_pending_frees(context)


def flush_pending_frees(context: Any) -> None:
    """Run the pending cuMemFree calls of numba's memory manager (and the context's queue)."""
    for queue in (getattr(getattr(context, "memory_manager", None), "deallocations", None),
                  getattr(context, "deallocations", None)):
        clear = getattr(queue, "clear", None)
        if callable(clear):
            clear()
