"""Simulated device memory: allocations counted against a device profile, and device arrays.

Device arrays live apart from host memory: `to_device` copies, and a device array refuses implicit
conversion to numpy. Storage is materialised on first touch, so a 10 GiB allocation on a simulated
A100 costs no host memory until a kernel or a copy uses it; a host-memory budget turns a simulation
that would exhaust the host into a clear error. Memory from `allocate` is uninitialised: each
allocation keeps a mask of written elements for the simulator's uninitialised-read check.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import (
    ArgumentTypeError,
    DeviceIndexError,
    HostAccessError,
    HostMemoryBudgetError,
    InvalidArgumentError,
    InvalidDeviceArrayError,
    OutOfMemoryError,
    TransferError,
)

ALLOC_ALIGN_BYTES = 256  # cudaMalloc hands out 256-byte aligned blocks
_ids = itertools.count(1)


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"


def aligned_bytes(nbytes: int) -> int:
    """The bytes an allocation of `nbytes` takes (rounded up to 256; at least 256)."""
    return max(ALLOC_ALIGN_BYTES, -(-nbytes // ALLOC_ALIGN_BYTES) * ALLOC_ALIGN_BYTES)


class HostBudget:
    """Host memory the simulator may materialise, shared by all allocations of one device."""

    def __init__(self, budget_bytes: int):
        self.budget_bytes = int(budget_bytes)
        self.used_bytes = 0

    def take(self, nbytes: int, what: str) -> None:
        if self.used_bytes + nbytes > self.budget_bytes:
            raise HostMemoryBudgetError(
                f"simulating this needs {_fmt_bytes(nbytes)} more host memory for {what}, but "
                f"{_fmt_bytes(self.used_bytes)} of the simulator's host budget of "
                f"{_fmt_bytes(self.budget_bytes)} is already in use; use smaller arrays, free "
                "arrays you no longer need, or raise it with CPUBackend(host_memory_budget_bytes=...)"
            )
        self.used_bytes += nbytes

    def give_back(self, nbytes: int) -> None:
        self.used_bytes -= nbytes


class Allocation:
    """One cudaMalloc: a flat typed buffer, materialised lazily, with its written-elements mask."""

    def __init__(self, memory: DeviceMemory, count: int, dtype: np.dtype, initialized: bool):
        self.memory = memory
        self.id = next(_ids)
        self.count = int(count)
        self.dtype = dtype
        self.nbytes = self.count * dtype.itemsize
        self.reserved_bytes = aligned_bytes(self.nbytes)
        self.freed = False
        self._buffer: np.ndarray | None = None
        # None: every element written. Otherwise a bool mask, also materialised lazily.
        self._all_initialized = initialized
        self._init_mask: np.ndarray | None = None
        self._writers: np.ndarray | None = None  # race records (see gpukit.sim.access)
        self._readers: np.ndarray | None = None

    def buffer(self) -> np.ndarray:
        """The flat storage, materialised (zero pages, committed by the OS on first write)."""
        if self._buffer is None:
            self.memory.host_budget.take(self.nbytes, f"a {self.nbytes:,}-byte device array")
            self._buffer = np.zeros(self.count, self.dtype)
        return self._buffer

    def init_mask(self) -> np.ndarray | None:
        """Mask of written elements, or None when all are written."""
        if self._all_initialized:
            return None
        if self._init_mask is None:
            self.memory.host_budget.take(self.count, "the uninitialised-memory check")
            self._init_mask = np.zeros(self.count, bool)
        return self._init_mask

    def race_records(self, with_readers: bool, label: str = "an array"
                     ) -> tuple[np.ndarray, np.ndarray | None]:
        """The writer (and, when asked, reader) records of the race check: 8 bytes per element
        each, kept for the allocation's life and invalidated by stamps, not by zeroing."""
        what = f"the race check's records of {label} (or pass checks={{'races': False}})"
        if self._writers is None:
            self.memory.host_budget.take(self.count * 8, what)
            self._writers = np.zeros(self.count, np.uint64)
        if with_readers and self._readers is None:
            self.memory.host_budget.take(self.count * 8, what)
            self._readers = np.zeros(self.count, np.uint64)
        return self._writers, self._readers

    def drop_race_records(self) -> None:
        """Give the race records' host memory back (a launch that made them failed)."""
        for records in (self._writers, self._readers):
            if records is not None:
                self.memory.host_budget.give_back(self.count * 8)
        self._writers = self._readers = None

    @property
    def has_race_records(self) -> bool:
        return self._writers is not None

    def clear_race_records(self) -> None:
        for records in (self._writers, self._readers):
            if records is not None:
                records[:] = 0

    def mark_all_initialized(self) -> None:
        if self._init_mask is not None:
            self.memory.host_budget.give_back(self.count)
        self._all_initialized, self._init_mask = True, None

    def release(self) -> None:
        if self._buffer is not None:
            self.memory.host_budget.give_back(self.nbytes)
        if self._init_mask is not None:
            self.memory.host_budget.give_back(self.count)
        for records in (self._writers, self._readers):
            if records is not None:
                self.memory.host_budget.give_back(self.count * 8)
        self._buffer = self._init_mask = self._writers = self._readers = None
        self.freed = True


@dataclass(frozen=True)
class TransferRecord:
    """One host/device copy: direction "h2d", "d2h" or "d2d", its size and modeled duration."""

    direction: str
    nbytes: int
    modeled_ms: float
    pinned: bool = False
    implicit: bool = False


class DeviceMemory:
    """The simulated device's memory: capacity, live allocations and the transfer log."""

    def __init__(self, total_bytes: int, host_budget_bytes: int, backend_name: str = "cpu",
                 link_ms: Any = None):
        self.total_bytes = int(total_bytes)
        # link_ms(direction, nbytes, pinned) -> modeled milliseconds of one copy
        self.link_ms = link_ms or (lambda direction, nbytes, pinned: 0.0)
        self.host_budget = HostBudget(host_budget_bytes)
        self.backend_name = backend_name
        self.live: dict[int, Allocation] = {}
        self.used_bytes = 0
        self.transfers: list[TransferRecord] = []
        self.race_stamp = 0  # the latest stamp of the race check's records (gpukit.sim.access)

    @property
    def free_bytes(self) -> int:
        return self.total_bytes - self.used_bytes

    def allocate(self, count: int, dtype: np.dtype, initialized: bool = False) -> Allocation:
        """Reserve `count` elements of `dtype`; raises OutOfMemoryError beyond the free memory.

        Sizes are Python ints (never numpy's fixed-width ones), so a huge request is refused
        as too large rather than wrapping around to a small one.
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InvalidArgumentError(f"an allocation needs an element count >= 0, got {count!r}")
        alloc = Allocation(self, count, np.dtype(dtype), initialized)
        if alloc.reserved_bytes > self.free_bytes:
            raise OutOfMemoryError(
                f"out of device memory: requested {_fmt_bytes(alloc.reserved_bytes)}, free "
                f"{_fmt_bytes(self.free_bytes)}, total {_fmt_bytes(self.total_bytes)}; free arrays "
                "you no longer need (backend.free(array)) or choose a device with more memory",
                requested_bytes=alloc.reserved_bytes, free_bytes=self.free_bytes,
                total_bytes=self.total_bytes)
        self.live[alloc.id] = alloc
        self.used_bytes += alloc.reserved_bytes
        return alloc

    def release(self, alloc: Allocation) -> None:
        if alloc.freed:
            raise InvalidDeviceArrayError(
                "double free: this device array was already freed; free each array once")
        del self.live[alloc.id]
        self.used_bytes -= alloc.reserved_bytes
        alloc.release()

    def record_transfer(self, direction: str, nbytes: int, pinned: bool = False,
                        implicit: bool = False) -> TransferRecord:
        record = TransferRecord(direction, int(nbytes), self.link_ms(direction, nbytes, pinned),
                                pinned, implicit)
        self.transfers.append(record)
        return record

    def release_all(self) -> None:
        for alloc in list(self.live.values()):
            self.release(alloc)


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-ordered array (zero-size axes count as 1, as in numpy)."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _layout(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> str:
    c_strides = _c_strides(shape, itemsize)
    f_strides = tuple(reversed(_c_strides(tuple(reversed(shape)), itemsize)))
    relevant = [i for i, d in enumerate(shape) if d > 1]
    if all(strides[i] == c_strides[i] for i in relevant):
        return "C"
    if all(strides[i] == f_strides[i] for i in relevant):
        return "F"
    return "A"


class DeviceArray:
    """An array in simulated device memory: shape, dtype, strides into one allocation.

    Slicing gives device views. Conversion to numpy must be explicit (`to_host` or
    `copy_to_host`), as with CuPy, so host/device traffic stays visible.
    """

    __array_priority__ = 1000  # make numpy defer binary operators to __array__'s refusal

    def __init__(self, alloc: Allocation, shape: tuple[int, ...], strides: tuple[int, ...],
                 offset_bytes: int = 0):
        self._alloc = alloc
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)
        self.offset_bytes = int(offset_bytes)

    # -- description -----------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self._alloc.dtype

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
        return _layout(self.shape, self.strides, self.itemsize)

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
        buf = self.allocation.buffer()
        return np.ndarray(self.shape, self.dtype, buffer=buf, offset=self.offset_bytes,
                          strides=self.strides)

    def element_offset(self) -> int:
        return self.offset_bytes // self.itemsize

    def copy_to_host(self, out: np.ndarray | None = None) -> np.ndarray:
        """A numpy copy (or a copy into `out`, which must match shape and dtype)."""
        alloc = self.allocation
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
        alloc.memory.record_transfer("d2h", nbytes)
        return out

    def copy_to_device(self, host: Any) -> None:
        """Copy a host array (same shape and dtype) or another device array into this one."""
        alloc = self.allocation
        if isinstance(host, DeviceArray):
            _check_match(host, self, "copy_to_device")
            self.host_view()[...] = host.host_view()
            direction = "d2d"
        else:
            if not isinstance(host, np.ndarray):
                raise TransferError(
                    f"copy_to_device needs a numpy array or a device array, not "
                    f"{type(host).__name__}")
            _check_match(host, self, "copy_to_device")
            self.host_view()[...] = host
            direction = "h2d"
        self.mark_written()
        alloc.memory.record_transfer(direction, self.nbytes)

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
        return DeviceArray(self._alloc, view.shape, view.strides, self.offset_bytes + extra)

    def reshape(self, *shape: Any) -> DeviceArray:
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
        return DeviceArray(self._alloc, shape, _c_strides(shape, self.itemsize),
                           self.offset_bytes)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise HostAccessError("device arrays cannot be assigned on the host; use "
                        "array[...].copy_to_device(host_array) or a kernel")


def _native(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


def _check_match(a: Any, b: Any, what: str) -> None:
    """Same shape and dtype; a host array's byte order does not matter (copies convert it)."""
    if tuple(a.shape) != tuple(b.shape) or _native(a.dtype) != _native(b.dtype):
        raise TransferError(
            f"{what}: shape/dtype mismatch, source {tuple(a.shape)} {np.dtype(a.dtype)} vs "
            f"destination {tuple(b.shape)} {np.dtype(b.dtype)}; copies need equal shapes and dtypes")
