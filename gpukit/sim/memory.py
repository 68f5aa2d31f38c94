"""Simulated device memory: allocations counted against a device profile, and the transfer log.

Storage is materialised on first touch, so a 10 GiB allocation on a simulated A100 costs no host
memory until a kernel or a copy uses it; a host-memory budget turns a simulation that would
exhaust the host into a clear error. Memory from `allocate` is uninitialised: each allocation
keeps a mask of written elements for the simulator's uninitialised-read check. The arrays that
view allocations are in `gpukit.sim.device_array` (re-exported here).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import (
    HostMemoryBudgetError,
    InvalidArgumentError,
    InvalidDeviceArrayError,
    OutOfMemoryError,
)
from .log import RecordLog

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
        # where those arrays live, for the compiled code (asking numpy costs microseconds)
        self.address = self.init_mask_address = self.writers_address = self.readers_address = 0
        self._views: dict[tuple, np.ndarray] = {}  # numpy views of the buffer, made once each

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int,
             dtype: np.dtype | None = None) -> np.ndarray:
        """A numpy view of the storage (kept: a loop of launches asks for the same ones; they
        go when the allocation is released); `dtype`: another of the same size, else its own."""
        key = (shape, strides, offset, dtype)
        found = self._views.get(key)
        if found is None:
            found = np.ndarray(shape, self.dtype if dtype is None else dtype,
                               buffer=self.buffer(), offset=offset, strides=strides)
            if len(self._views) < 64:
                self._views[key] = found
        return found

    def buffer(self) -> np.ndarray:
        """The flat storage, materialised (zero pages, committed by the OS on first write)."""
        if self._buffer is None:
            self.memory.host_budget.take(self.nbytes, f"a {self.nbytes:,}-byte device array")
            self._buffer = np.zeros(self.count, self.dtype)
            self.address = self._buffer.ctypes.data
        return self._buffer

    def init_mask(self) -> np.ndarray | None:
        """Mask of written elements, or None when all are written."""
        if self._all_initialized:
            return None
        if self._init_mask is None:
            self.memory.host_budget.take(self.count, "the uninitialised-memory check")
            self._init_mask = np.zeros(self.count, bool)
            self.init_mask_address = self._init_mask.ctypes.data
        return self._init_mask

    def race_records(self, with_readers: bool, name: str = "") -> None:
        """Make the writer (and, when asked, reader) records of the race check (at
        `writers_address`, `readers_address`) of the argument called `name`: 8 bytes per
        element each, kept for the allocation's life and invalidated by stamps, not by zeroing."""
        if self._writers is not None and (self._readers is not None or not with_readers):
            return  # made by an earlier launch (a loop of launches comes here every time)
        label = f"'{name}'" if name else "an array"
        what = f"the race check's records of {label} (or pass checks={{'races': False}})"
        if self._writers is None:
            self.memory.host_budget.take(self.count * 8, what)
            self._writers = np.zeros(self.count, np.uint64)
            self.writers_address = self._writers.ctypes.data
        if with_readers and self._readers is None:
            self.memory.host_budget.take(self.count * 8, what)
            self._readers = np.zeros(self.count, np.uint64)
            self.readers_address = self._readers.ctypes.data

    def drop_race_records(self) -> None:
        """Give the race records' host memory back (a launch that made them failed)."""
        for records in (self._writers, self._readers):
            if records is not None:
                self.memory.host_budget.give_back(self.count * 8)
        self._writers = self._readers = None
        self.writers_address = self.readers_address = 0

    @property
    def binding_key(self) -> tuple:
        """What binding this allocation to a launch depends on (gpukit.sim.launch's plans):
        its storage, written-elements mask and race records, by address."""
        return (self.id, self.address, self._all_initialized, self.init_mask_address,
                self.writers_address, self.readers_address)

    @property
    def has_race_records(self) -> bool:
        return self._writers is not None

    def clear_race_records(self) -> None:
        for records in (self._writers, self._readers):
            if records is not None:
                records[:] = 0

    def settle_init_mask(self) -> None:
        """Drop the written-elements mask once every element has been written."""
        if self._init_mask is not None and self._init_mask.all():
            self.mark_all_initialized()

    def mark_all_initialized(self) -> None:
        if self._init_mask is not None:
            self.memory.host_budget.give_back(self.count)
        self._all_initialized, self._init_mask, self.init_mask_address = True, None, 0

    def release(self) -> None:
        if self._buffer is not None:
            self.memory.host_budget.give_back(self.nbytes)
        if self._init_mask is not None:
            self.memory.host_budget.give_back(self.count)
        for records in (self._writers, self._readers):
            if records is not None:
                self.memory.host_budget.give_back(self.count * 8)
        self._buffer = self._init_mask = self._writers = self._readers = None
        self._views.clear()
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
        self.transfers = RecordLog()  # the latest copies (gpukit.sim.log)
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

    def collect(self, alloc: Allocation) -> None:
        """Release `alloc` unless it was freed already: its arrays were collected."""
        if not alloc.freed:
            self.release(alloc)

    def find(self, address: int) -> Allocation | None:
        """The live allocation whose storage holds byte `address` (a pointer handed out by a
        device array's `__cuda_array_interface__`), or None."""
        for alloc in list(self.live.values()):  # (a collected array may free one meanwhile)
            if alloc.address and alloc.address <= address < alloc.address + alloc.nbytes:
                return alloc
        return None

    def record_transfer(self, direction: str, nbytes: int, pinned: bool = False,
                        implicit: bool = False, stream: Any = None,
                        accesses: tuple = ()) -> TransferRecord:
        """Log one copy (`stream` and `accesses`, the device arrays it touched, place it on a
        timeline in `TimelineMemory`; unused here)."""
        record = TransferRecord(direction, int(nbytes), self.link_ms(direction, nbytes, pinned),
                                pinned, implicit)
        self.transfers.append(record)
        return record

    def release_all(self) -> None:
        for alloc in list(self.live.values()):
            self.release(alloc)


from .device_array import DeviceArray  # re-exported: its old home

__all__ = ["ALLOC_ALIGN_BYTES", "Allocation", "DeviceArray", "DeviceMemory", "HostBudget",
           "TransferRecord", "aligned_bytes"]
