"""Device arrays: shape, dtype and strides into one simulated allocation (`gpukit.sim.memory`).

A `DeviceArray` lives apart from host memory: `to_device` copies, and it refuses implicit
conversion to numpy (as CuPy does) so that host/device traffic stays visible. Besides gpukit's own
names it has the methods and keywords of numba-cuda's `DeviceNDArray` that do not touch the host
implicitly (`copy_to_host(ary, stream)`, `copy_to_device(ary, stream)`, `split`, `reshape`,
`ravel`, `squeeze`, `is_c_contiguous`, `flags`, `__cuda_array_interface__`), so code written for
numba-cuda runs on it; the simulation mode's arrays (`gpukit.simulate`) add numba's host-side
element access. It does not run kernels or model copy times (the memory's link model does).
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import (
    ArgumentTypeError,
    DeviceIndexError,
    HostAccessError,
    InvalidArgumentError,
    InvalidDeviceArrayError,
    TransferError,
)
from .stream_order import Access

if TYPE_CHECKING:
    from .memory import Allocation, DeviceMemory


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-ordered array (zero-size axes count as 1, as in numpy)."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...],
                expected: tuple[int, ...]) -> bool:
    return all(strides[i] == expected[i] for i, n in enumerate(shape) if n > 1)


def array_layout(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> str:
    """numba's layout letter for an array of these strides: "C", "F" or "A"."""
    c_strides = _c_strides(shape, itemsize)
    f_strides = tuple(reversed(_c_strides(tuple(reversed(shape)), itemsize)))
    relevant = [i for i, d in enumerate(shape) if d > 1]
    if all(strides[i] == c_strides[i] for i in relevant):
        return "C"
    if all(strides[i] == f_strides[i] for i in relevant):
        return "F"
    return "A"


def interface_view(memory: DeviceMemory, interface: dict, what: str) -> DeviceArray | None:
    """The device array over `memory` that a CUDA Array Interface describes (a view of the
    allocation holding its pointer), None for an empty array (a null pointer). TypeError, with
    `what` naming it, for memory this device does not hold, a dtype of another size than the
    allocation's, or a view past its end."""
    if interface.get("mask") is not None:
        raise NotImplementedError("Masked arrays are not supported")
    shape = tuple(int(n) for n in interface["shape"])
    dtype = np.dtype(interface["typestr"])
    address = int(interface["data"][0] or 0)
    if address == 0 or math.prod(shape) == 0:
        return None
    strides = interface.get("strides")
    strides = _c_strides(shape, dtype.itemsize) if strides is None else \
        tuple(int(s) for s in strides)
    alloc = memory.find(address)
    if alloc is None:
        raise TypeError(
            f"{what} lives in memory the simulated device does not hold (real GPU memory, or "
            "freed); copy it to the host and pass the numpy array (or cuda.to_device it) while "
            "gpukit's simulation mode is on")
    if dtype.itemsize != alloc.dtype.itemsize:
        raise TypeError(f"{what} reads the simulated device's {alloc.dtype} array as "
                        f"{dtype}; the simulator reads an array only as a dtype of the same size "
                        "(copy it to the host to reinterpret it)")
    offset = address - alloc.address
    low = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + dtype.itemsize
    if low < 0 or high > alloc.nbytes or offset % dtype.itemsize:
        raise TypeError(f"{what} describes bytes {low}..{high} of a {alloc.nbytes}-byte "
                        "simulated allocation: not a view of it")
    return DeviceArray(alloc, shape, strides, offset, dtype)


class Owner:
    """Shared by the arrays over an allocation that own it (the array made with it and its
    views); when the last of them is collected, the allocation is freed."""

    __slots__ = ("__weakref__",)


def owning_array(alloc: Allocation, shape: tuple[int, ...], strides: tuple[int, ...],
                 collect: Callable[[Allocation], None]) -> DeviceArray:
    """A new array over `alloc` that calls `collect(alloc)` when the array and all its views are
    collected (its backend frees it then, as CuPy frees: its pool reuses the memory at once);
    `backend.free(array)` frees it before."""
    owner = Owner()
    weakref.finalize(owner, collect, alloc).atexit = False
    return DeviceArray(alloc, shape, strides, owner=owner)


class DeviceArray:
    """An array in simulated device memory: shape, dtype, strides into one allocation.

    Slicing gives device views. Conversion to numpy must be explicit (`to_host` or
    `copy_to_host`), as with CuPy, so host/device traffic stays visible.
    """

    __array_priority__ = 1000  # make numpy defer binary operators to __array__'s refusal

    def __init__(self, alloc: Allocation, shape: tuple[int, ...], strides: tuple[int, ...],
                 offset_bytes: int = 0, dtype: Any = None, *, owner: Owner | None = None):
        self._alloc = alloc
        self._owner = owner  # keeps the allocation alive (None: its owner is elsewhere)
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)
        self.offset_bytes = int(offset_bytes)
        # another dtype of the allocation's element size, which reads its bytes as that (a
        # `view(dtype)`); None: the allocation's own
        self._dtype = None if dtype is None or np.dtype(dtype) == alloc.dtype else \
            np.dtype(dtype)

    # -- description -----------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self._alloc.dtype if self._dtype is None else self._dtype

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

    @functools.cached_property
    def layout(self) -> str:
        """"C", "F" (Fortran) or "A" (any other strides), as numba names array layouts."""
        return array_layout(self.shape, self.strides, self.itemsize)

    @property
    def allocation(self) -> Allocation:
        """The allocation behind this array; raises if it was freed."""
        if self._alloc.freed:
            raise InvalidDeviceArrayError(
                f"use after free: this device array {self.shape} {self.dtype} was freed; "
                "allocate a new one (or keep it until you are done with it)")
        return self._alloc

    @property
    def is_freed(self) -> bool:
        return self._alloc.freed

    @property
    def alloc(self) -> Allocation:
        """The allocation behind this array, even after it was freed (`allocation` raises)."""
        return self._alloc

    @property
    def device_memory(self) -> DeviceMemory:
        """The simulated device memory this array lives in (one per backend)."""
        return self._alloc.memory

    @property
    def is_view(self) -> bool:
        """Whether this array covers only part of its allocation (a slice of a larger one)."""
        return bool(self.offset_bytes) or self.size != self._alloc.count

    def __len__(self) -> int:
        if not self.shape:
            raise HostAccessError("len() of a 0-d device array")
        return self.shape[0]

    def __repr__(self) -> str:
        state = ", freed" if self._alloc.freed else ""
        return (f"<gpukit DeviceArray shape={self.shape} dtype={self.dtype} "
                f"on {self._alloc.memory.backend_name}{state}>")

    # -- host access is explicit -------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise HostAccessError(
            "a gpukit device array cannot be converted to numpy implicitly; copy it to the host "
            "with backend.to_host(array) (or array.copy_to_host())")

    def __bool__(self) -> bool:
        raise HostAccessError("the truth value of a device array is ambiguous on the host; copy it "
                        "with backend.to_host(array) first")

    def __iter__(self):
        raise HostAccessError("cannot iterate over a device array on the host; copy it with "
                        "backend.to_host(array) first")

    def _host_arithmetic(self, *other: Any) -> Any:
        raise HostAccessError("arithmetic on a device array does not run on the host; compute in a "
                        "kernel, or copy it with backend.to_host(array) first")

    # without these, `numpy_array + device_array` would fail with numpy's unrelated complaint
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _host_arithmetic
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _host_arithmetic
    __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _host_arithmetic
    __neg__ = __pos__ = __abs__ = _host_arithmetic

    def host_view(self) -> np.ndarray:
        """A numpy view of the device storage (the simulator's own access; not a copy)."""
        return self.allocation.view(self.shape, self.strides, self.offset_bytes, self._dtype)

    def element_offset(self) -> int:
        return self.offset_bytes // self.itemsize

    def copy_to_host(self, ary: np.ndarray | None = None, stream: Any = 0, *,
                     out: np.ndarray | None = None) -> np.ndarray:
        """A numpy copy (or a copy into `ary`, which must match shape and dtype); numba's
        keywords: `copy_to_host(ary=None, stream=0)` (`out=` is gpukit's name for `ary`)."""
        alloc = self.allocation
        out = ary if out is None else out
        nbytes = self.nbytes
        src = self.host_view()
        if out is None:
            out = np.array(src, order="K")
        else:
            if not isinstance(out, np.ndarray):
                raise TransferError(f"copy_to_host(out=...) needs a numpy array, not "
                                    f"{type(out).__name__}")
            _check_match(out, self, "copy_to_host(out=...)")
            out[...] = src
        alloc.memory.record_transfer("d2h", nbytes, pinned=_pinned(out), stream=stream or None,
                                     accesses=(Access(self, False),))
        return out

    def copy_to_device(self, ary: Any, stream: Any = 0) -> None:
        """Copy a host array (same shape and dtype) or another device array into this one."""
        alloc = self.allocation
        accesses = [Access(self, True)]
        if isinstance(ary, DeviceArray):
            _check_match(ary, self, "copy_to_device")
            self.host_view()[...] = ary.host_view()
            direction, pinned = "d2d", False
            accesses.append(Access(ary, False, "its source"))
        else:
            if not isinstance(ary, np.ndarray):
                raise TransferError(
                    f"copy_to_device needs a numpy array or a device array, not "
                    f"{type(ary).__name__}")
            _check_match(ary, self, "copy_to_device")
            self.host_view()[...] = ary
            direction, pinned = "h2d", _pinned(ary)
        self.mark_written()
        alloc.memory.record_transfer(direction, self.nbytes, pinned=pinned,
                                     stream=stream or None, accesses=tuple(accesses))

    def mark_written(self) -> None:
        """Record that every element of this array has been written (for the uninitialised-
        read check)."""
        alloc = self.allocation
        mask = alloc.init_mask()
        if mask is None:
            return
        if self.size == alloc.count:
            alloc.mark_all_initialized()
            return
        flat = np.ndarray(self.shape, bool, buffer=mask, offset=self.element_offset(),
                          strides=tuple(s // self.itemsize for s in self.strides))
        flat[...] = True

    # -- views -------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> DeviceArray:
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
        except (TypeError, ValueError) as exc:  # numpy's complaint about the key itself
            raise ArgumentTypeError(f"device array index {key!r}: {exc}") from None
        if not isinstance(view, np.ndarray):
            raise HostAccessError(
                "indexing a device array on the host gives device views only; to read "
                f"element {key!r}, copy it: backend.to_host(array)[{key!r}]")
        extra = (view.__array_interface__["data"][0]
                 - probe.__array_interface__["data"][0])
        return self._view(view.shape, view.strides, self.offset_bytes + extra)

    def _view(self, shape: tuple[int, ...], strides: tuple[int, ...],
              offset_bytes: int) -> DeviceArray:
        """Another array over the same allocation (subclasses carry their own state along)."""
        return DeviceArray(self._alloc, shape, strides, offset_bytes, self._dtype,
                           owner=self._owner)

    def reshape(self, *shape: Any, order: str = "C") -> DeviceArray:
        """A view with another shape (no copy on the device): of a C-contiguous array in C
        order, or of an F-contiguous one in F order, as numba-cuda allows."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if any(isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer))
               for n in shape):
            raise ArgumentTypeError(f"reshape needs sizes that are ints >= 0, got {shape!r}")
        shape = tuple(int(n) for n in shape)
        if shape.count(-1) == 1 and all(n >= 0 or n == -1 for n in shape):  # numpy's -1
            known = math.prod(n for n in shape if n != -1)
            if known and self.size % known == 0:
                shape = tuple(self.size // known if n == -1 else n for n in shape)
        if any(n < 0 for n in shape):
            raise ArgumentTypeError(f"reshape needs sizes that are ints >= 0, got {shape!r}")
        if order not in ("C", "F"):
            raise InvalidArgumentError(f"reshape: order must be 'C' or 'F', got {order!r}")
        contiguous = self.is_c_contiguous() if order == "C" else self.is_f_contiguous()
        if math.prod(shape) != self.size or not contiguous:
            in_order = "" if order == "C" else " in F order"
            raise InvalidArgumentError(
                f"cannot reshape a {self.shape} {self.layout}-order device array to "
                f"{shape}{in_order}: sizes must match and the array must be "
                f"{order}-contiguous")
        strides = _c_strides(shape, self.itemsize)
        if order == "F":
            strides = tuple(reversed(_c_strides(tuple(reversed(shape)), self.itemsize)))
        return self._view(shape, strides, self.offset_bytes)

    def ravel(self, order: str = "C", stream: Any = 0) -> DeviceArray:
        """A 1-D view of a contiguous array (numba-cuda's `ravel`; no copy)."""
        return self.reshape(self.size, order=order)

    def squeeze(self, axis: Any = None, stream: Any = 0) -> DeviceArray:
        """A view without the axes of length one (all, or those of `axis`)."""
        axes = range(self.ndim) if axis is None else (
            (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis))
        axes = {int(a) % max(self.ndim, 1) for a in axes}
        for a in axes:
            if axis is not None and self.shape[a] != 1:
                raise InvalidArgumentError(
                    f"squeeze: axis {a} has length {self.shape[a]}, not 1")
        keep = [i for i in range(self.ndim) if not (i in axes and self.shape[i] == 1)]
        return self._view(tuple(self.shape[i] for i in keep),
                          tuple(self.strides[i] for i in keep), self.offset_bytes)

    def split(self, section: int, stream: Any = 0) -> list[DeviceArray]:
        """Views of consecutive pieces of `section` elements of a 1-D, unit-stride array (the
        last one shorter), as numba-cuda's `split`."""
        if self.ndim != 1:
            raise InvalidArgumentError("split: only 1-D device arrays can be split")
        if self.strides[0] != self.itemsize:
            raise InvalidArgumentError("split: only unit-stride device arrays can be split")
        if isinstance(section, bool) or not isinstance(section, (int, np.integer)) or \
                section < 1:
            raise ArgumentTypeError(f"split needs a section length >= 1, got {section!r}")
        return [self._view((min(section, self.size - start),), self.strides,
                           self.offset_bytes + start * self.itemsize)
                for start in range(0, self.size, int(section))]

    def is_c_contiguous(self) -> bool:
        return _contiguous(self.shape, self.strides, _c_strides(self.shape, self.itemsize))

    def is_f_contiguous(self) -> bool:
        f_strides = tuple(reversed(_c_strides(tuple(reversed(self.shape)), self.itemsize)))
        return _contiguous(self.shape, self.strides, f_strides)

    @property
    def flags(self) -> dict[str, bool]:
        """numpy's contiguity flags, as numba-cuda's device arrays give them (a dict)."""
        return {"C_CONTIGUOUS": self.is_c_contiguous(), "F_CONTIGUOUS": self.is_f_contiguous(),
                "OWNDATA": not self.is_view, "WRITEABLE": True, "ALIGNED": True}

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA Array Interface (version 3). The simulated device's memory is host memory,
        so the pointer is a host address: only the simulator may dereference it."""
        data = self.allocation.buffer().ctypes.data + self.offset_bytes if self.size else 0
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "strides": None if self.is_c_contiguous() else self.strides,
                "data": (data, False), "stream": None}

    def __setitem__(self, key: Any, value: Any) -> None:
        raise HostAccessError("device arrays cannot be assigned on the host; use "
                        "array[...].copy_to_device(host_array) or a kernel")


def _pinned(array: Any) -> bool:
    """Whether a host array is pinned memory (`gpukit.sim.streams.pinned_array`)."""
    from .streams import is_pinned  # streams builds on memory, which re-exports this module
    return is_pinned(array)


def _native(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


def _check_match(a: Any, b: Any, what: str) -> None:
    """Same shape and dtype; a host array's byte order does not matter (copies convert it)."""
    if tuple(a.shape) != tuple(b.shape) or _native(a.dtype) != _native(b.dtype):
        raise TransferError(
            f"{what}: shape/dtype mismatch, source {tuple(a.shape)} {np.dtype(a.dtype)} vs "
            f"destination {tuple(b.shape)} {np.dtype(b.dtype)}; copies need equal shapes and dtypes")
