"""CPUBackend: a simulated GPU on the CPU, with device memory and kernel launches.

It emulates one `DeviceProfile` (default T4): device memory apart from host memory, counted
against the profile's capacity; launches checked against its limits; kernels written for
numba-cuda run by the SIMT simulator in `gpukit.sim` with its checks on. It does not model
caches, clocks or instruction timing: times it reports are the simulation's wall time, and
modeled GPU times are labelled as such (see `gpukit.timing`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..devices import PCIE_LATENCY_US, DeviceProfile, UnknownDeviceError, get_profile
from ..errors import InvalidDeviceArrayError, TransferError
from ..sim.context import CHECKS
from ..sim.engine import LaunchRecord, normalize_checks, run_launch
from ..sim.kernel import SimKernel, python_function
from ..sim.memory import DeviceArray, TransferRecord
from ..sim.streams import (
    SimStream,
    Timeline,
    TimelineEvent,
    TimelineMemory,
    is_pinned,
    model_launch,
    pinned_array,
)
from ._validate import check_copy_target, check_host_array, normalize_dtype, normalize_shape
from .base import Backend, BackendStatus, Capabilities, MemoryInfo

FEATURES = frozenset({
    "shared_memory", "dynamic_shared_memory", "atomics", "syncthreads", "warp_shuffle", "warp_vote",
    "local_memory", "constant_memory", "device_functions", "float64", "simulated",
    "race_detection", "bounds_checking", "barrier_checking", "uninitialized_memory_checking",
})

# Effective fraction of the PCIe link a copy achieves: pinned buffers stream at close to the
# link rate; pageable ones go through a staging copy first (roughly half, as bandwidthTest shows).
PINNED_EFFICIENCY = 0.80
PAGEABLE_EFFICIENCY = 0.45
DEVICE_COPY_EFFICIENCY = 0.80  # device-to-device copies read and write device memory


def _default_host_budget() -> int:
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 8 << 30
    return int(physical * 0.5)


def modeled_copy_ms(profile: DeviceProfile, direction: str, nbytes: int, pinned: bool) -> float:
    """A copy's modeled duration: link latency plus size over effective bandwidth."""
    if direction == "d2d":
        return nbytes * 2 / (profile.memory_bandwidth_gb_s * DEVICE_COPY_EFFICIENCY * 1e9) * 1e3
    efficiency = PINNED_EFFICIENCY if pinned else PAGEABLE_EFFICIENCY
    seconds = nbytes / (profile.host_link_gb_s * efficiency * 1e9)
    return PCIE_LATENCY_US * 1e-3 + seconds * 1e3


class CPUBackend(Backend):
    """A simulated GPU. `CPUBackend(device="A100", checks=..., schedule="shuffle", seed=0)`.

    checks: True (all, the default), False, a dict {name: bool}, or a list of names to enable,
    among "launch_limits", "bounds", "races", "barriers", "uninitialized", "division_by_zero".
    schedule: "ordered" (deterministic) or "shuffle" (seeded block and write order).
    watchdog_s: stop kernels that run longer than this (None: never).
    host_memory_budget_bytes: host memory the simulation may use (default: half of RAM).
    num_threads, use_numba: accepted for the seed interface; the simulator vectorises with numpy
    in one host thread, so they do not change how kernels run.
    """

    version = "0.1.0"

    def __init__(self, device: str | DeviceProfile | None = None, *, checks: Any = True,
                 schedule: str = "ordered", seed: int | None = 0, watchdog_s: float | None = 30.0,
                 host_memory_budget_bytes: int | None = None, num_threads: int | None = None,
                 use_numba: bool | None = None):
        self.profile = get_profile(device)
        self.checks = normalize_checks(checks)
        if schedule not in ("ordered", "shuffle"):
            raise ValueError(f"schedule must be 'ordered' or 'shuffle', got {schedule!r}")
        self.schedule = schedule
        self.seed = seed
        if watchdog_s is not None and not watchdog_s > 0:
            raise ValueError(f"watchdog_s must be a positive number of seconds or None, "
                             f"got {watchdog_s!r}")
        self.watchdog_s = watchdog_s
        self.num_threads = num_threads
        self.use_numba = use_numba
        budget = host_memory_budget_bytes or _default_host_budget()
        self._timeline = Timeline(self.profile)
        self.memory = TimelineMemory(
            self.profile.memory_bytes, budget, backend_name=f"cpu ({self.profile.name})",
            link_ms=lambda direction, nbytes, pinned: modeled_copy_ms(
                self.profile, direction, nbytes, pinned), timeline=self._timeline)
        self.launches: list[LaunchRecord] = []
        self._kernels: dict[Any, SimKernel] = {}
        self._last_error: str | None = None
        self._initialized = True

    # -- identity --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return "cpu"

    @property
    def is_available(self) -> bool:
        return True

    @property
    def device_name(self) -> str:
        return f"simulated {self.profile.name}"

    @property
    def compute_capability(self) -> tuple[int, int]:
        return self.profile.compute_capability

    def supports_device(self, device: Any) -> bool:
        try:
            get_profile(device)
        except (UnknownDeviceError, TypeError):
            return False
        return True

    def capabilities(self) -> Capabilities:
        return Capabilities.from_profile(self.profile, FEATURES)

    # -- memory ----------------------------------------------------------------------------
    def allocate(self, shape: Any, dtype: Any = "float32") -> DeviceArray:
        """Uninitialised device memory (reading it before writing is an error in kernels)."""
        shape = normalize_shape(shape)
        dt = normalize_dtype(dtype)
        return self._new_array(shape, dt, initialized=False)

    def _new_array(self, shape: tuple[int, ...], dtype: np.dtype, initialized: bool,
                   fortran: bool = False) -> DeviceArray:
        count = int(np.prod(shape, dtype=np.int64))
        alloc = self.memory.allocate(count, dtype, initialized=initialized)
        strides, acc = [], dtype.itemsize
        for n in (shape if fortran else reversed(shape)):
            strides.append(acc)
            acc *= max(n, 1)
        return DeviceArray(alloc, shape, tuple(strides if fortran else reversed(strides)))

    def to_device(self, array: Any, *, stream: Any = None, _implicit: bool = False) -> DeviceArray:
        """A device copy of a numpy array (C or Fortran order is kept).

        `stream` (from `stream()`) makes the copy asynchronous on the modeled timeline when
        `array` is pinned (`pinned_array`); the data is on the device at once either way.
        """
        self._timeline.stream_id(stream)
        if not isinstance(array, np.ndarray):
            check_host_array(array)  # raises TransferError saying how to fix it
        dtype = normalize_dtype(array.dtype)
        fortran = array.flags.f_contiguous and not array.flags.c_contiguous
        dev = self._new_array(array.shape, dtype, initialized=True, fortran=fortran)
        dev.host_view()[...] = array
        self.memory.record_transfer("h2d", array.nbytes, pinned=is_pinned(array),
                                    implicit=_implicit, stream=stream)
        return dev

    def to_host(self, array: Any, out: np.ndarray | None = None, *, stream: Any = None,
                _implicit: bool = False) -> np.ndarray:
        """A numpy copy of a device array (or a copy into `out`; pinned `out` + `stream`:
        asynchronous on the modeled timeline)."""
        dev = self._own(array, "to_host")
        self._timeline.stream_id(stream)
        src = dev.host_view()
        if out is None:
            out = np.array(src, order="K")
        else:
            check_copy_target(out, dev.shape, dev.dtype, operation="to_host")
            out[...] = src
        self.memory.record_transfer("d2h", dev.nbytes, pinned=is_pinned(out),
                                    implicit=_implicit, stream=stream)
        return out

    def copy_to_device(self, host: np.ndarray, target: DeviceArray, *,
                       stream: Any = None) -> DeviceArray:
        """Copy a numpy array into an existing device array of the same shape and dtype."""
        dev = self._own(target, "copy_to_device")
        self._timeline.stream_id(stream)
        pinned = is_pinned(host)
        host = check_host_array(host, operation="copy_to_device")
        check_copy_target(host, dev.shape, dev.dtype, operation="copy_to_device")
        dev.host_view()[...] = host
        dev._mark_written()
        self.memory.record_transfer("h2d", dev.nbytes, pinned=pinned, stream=stream)
        return dev

    def free(self, array: Any) -> None:
        dev = self._own(array, "free", allow_freed=True)
        if not dev.is_freed and (dev.offset_bytes or dev.size != dev._alloc.count):
            raise InvalidDeviceArrayError(
                f"free: this device array {dev.shape} is a view (a slice) of a larger one; free "
                "the array it was sliced from (freeing a view would free all of it)")
        self.memory.release(dev._alloc)

    def _own(self, array: Any, operation: str, allow_freed: bool = False) -> DeviceArray:
        if not isinstance(array, DeviceArray):
            raise TransferError(f"{operation} expects a device array of this backend, got "
                                f"{type(array).__name__}")
        if array._alloc.memory is not self.memory:
            raise InvalidDeviceArrayError(
                f"{operation}: this device array belongs to another backend's device")
        if not allow_freed:
            _ = array.allocation  # raises InvalidDeviceArrayError after free
        return array

    def memory_info(self) -> MemoryInfo:
        return MemoryInfo(free_bytes=self.memory.free_bytes, total_bytes=self.memory.total_bytes)

    @property
    def transfers(self) -> list[TransferRecord]:
        """Every host/device copy so far, with its modeled duration."""
        return self.memory.transfers

    # -- kernels ---------------------------------------------------------------------------
    def compile_kernel(self, func: Callable, signature: Any = None) -> SimKernel:
        """A simulator kernel from a Numba CUDA kernel (plain function or @cuda.jit)."""
        if isinstance(func, SimKernel):
            return func
        py_func = python_function(func)
        kernel = self._kernels.get(py_func)
        if kernel is None or signature is not None:
            kernel = SimKernel(py_func, self, signature)
            self._kernels[py_func] = kernel
        return kernel

    def launch_kernel(self, kernel: Any, grid: Any, block: Any, *args: Any,
                      **options: Any) -> LaunchRecord:
        """Launch; options: stream, dynamic_shared_bytes, checks, schedule, seed, watchdog_s,
        flops (the kernel's floating-point operations, for the modeled time)."""
        kernel = self.compile_kernel(kernel)
        flops = options.pop("flops", None)
        self._timeline.stream_id(options.get("stream"))
        try:
            with self._timeline.launching():
                record = run_launch(self, kernel, grid, block, args, **options)
                if flops is not None:
                    record.extra["flops"] = flops
                self._timeline.kernel(record.kernel, record.stream,
                                      model_launch(self.profile, record).ms)
        except Exception as exc:
            self._last_error = f"{type(exc).__name__}: {exc}"
            raise
        self.launches.append(record)
        return record

    def synchronize(self) -> None:
        """Launches on the simulator complete before they return; this only moves the modeled
        timeline's host clock to the end of all issued work."""
        self._timeline.synchronize()

    # -- streams, pinned memory and the modeled timeline (see gpukit.sim.streams) -------------
    def stream(self) -> SimStream:
        """A new simulated stream for `stream=` arguments and `kernel[grid, block, stream]`."""
        return self._timeline.new_stream()

    def pinned_array(self, shape: Any, dtype: Any = "float32") -> np.ndarray:
        """A zeroed host array that copies treat as pinned (faster, and asynchronous on streams)."""
        return pinned_array(normalize_shape(shape), normalize_dtype(dtype))

    def timeline(self) -> list[TimelineEvent]:
        """The modeled schedule of every copy and kernel so far (labelled "modeled")."""
        return list(self._timeline.events)

    def reset_timeline(self) -> None:
        """Clear the modeled timeline and restart its clock at 0."""
        self._timeline.reset()

    # -- lifecycle and status ----------------------------------------------------------------
    def shutdown(self) -> None:
        self.memory.release_all()
        self._initialized = False

    def initialize(self) -> CPUBackend:
        self._initialized = True
        return self

    def status(self) -> BackendStatus:
        return BackendStatus(
            name=self.name, initialized=self.initialized, device=self.device_name,
            memory_in_use_bytes=self.memory.used_bytes, kernels_launched=len(self.launches),
            last_error=self._last_error,
            extra={"checks": [c for c in CHECKS if self.checks[c]], "schedule": self.schedule,
                   "host_memory_used_bytes": self.memory.host_budget.used_bytes,
                   "host_memory_budget_bytes": self.memory.host_budget.budget_bytes,
                   "num_threads": self.num_threads, "use_numba": self.use_numba})
