"""CPUBackend: a simulated GPU on the CPU, with device memory and kernel launches.

It emulates one `DeviceProfile` (default T4): device memory apart from host memory, counted
against the profile's capacity; launches checked against its limits; kernels written for
numba-cuda run by the SIMT simulator in `gpukit.sim` with its checks on. Options are checked
here (`gpukit.backends.options`, `gpukit.backends.validate`) and the simulator receives plain
values. It does not model caches, clocks or instruction timing: times it reports are the
simulation's wall time, and modeled GPU times are labelled as such (see `gpukit.timing`).
"""

from __future__ import annotations

import functools
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..devices import DeviceProfile, UnknownDeviceError, get_profile
from ..errors import (
    ArgumentTypeError,
    HostMemoryError,
    InvalidDeviceArrayError,
    TransferError,
    UnsupportedKernelError,
)
from ..launches import LaunchRecord
from ..sim.device_array import DeviceArray, owning_array
from ..sim.half import supported as supported_half
from ..sim.kernel import python_function
from ..sim.launch import Workspace
from ..sim.log import RecordLog
from ..sim.stream_order import Access
from ..sim.streams import SimStream, Timeline, TimelineEvent, TimelineMemory, is_pinned
from ..sim.streams import pinned_array as sim_pinned_array
from ..timing.model import COPY_DIRECTIONS, modeled_copy_ms
from ..utils import as_choice, as_int, c_strides, f_strides
from ._cpu_kernel import CPUKernel
from ._cpu_launch import launch
from .base import Backend, BackendStatus, Capabilities, MemoryInfo
from .options import CHECKS, launch_options, simulator_options
from .validate import (
    check_array_size,
    check_copy_target,
    check_host_array,
    check_launch_bounds,
    normalize_dtype,
    normalize_shape,
)

__all__ = ["FEATURES", "KERNEL_CACHE_LIMIT", "CPUBackend", "modeled_copy_ms"]

KERNEL_CACHE_LIMIT = 256  # compiled kernels a backend keeps by function (least recent dropped)

FEATURES = frozenset({
    "shared_memory", "dynamic_shared_memory", "atomics", "syncthreads", "warp_shuffle", "warp_vote",
    "local_memory", "constant_memory", "device_functions", "float64", "simulated",
    "race_detection", "bounds_checking", "barrier_checking", "uninitialized_memory_checking",
    "streams", "events", "pinned_memory", "tracing",
})


def _default_host_budget() -> int:
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 8 << 30
    return int(physical * 0.5)


def _one_thread_at_a_time(method: Callable) -> Callable:
    """Host threads that launch, copy or allocate at once take turns, as a GPU context serialises
    the API calls of threads sharing it (numba-cuda lets several threads launch one kernel)."""
    @functools.wraps(method)
    def serialised(self: CPUBackend, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)
    return serialised


class CPUBackend(Backend):
    """A simulated GPU. `CPUBackend(device="A100", checks=..., schedule="shuffle", seed=0)`.

    checks: True (all, the default), False, a dict {name: bool}, or a list of names to enable,
    among "launch_limits", "bounds", "races", "barriers", "uninitialized", "division_by_zero",
    "wraparound".
    schedule: "ordered" (deterministic) or "shuffle" (seeded block and write order).
    seed: the shuffle's seed (an int >= 0, or None for a fresh one).
    watchdog_s: stop kernels that run longer than this many seconds (None: never).
    host_memory_budget_bytes: host memory the simulation may use (default: half of RAM).
    num_threads: host threads that run a large launch's blocks side by side (None, the default:
    one per core this process may use; 1: one after another). A launch is split only where
    that cannot change what it computes or reports (see gpukit.sim.parallel);
    `launches[-1].extra` has `host_threads` (how many ran it), `host_blocks` (how many blocks
    each ran) and `host_cores` (the cores' worth of CPU time they got: under 1.3, the default
    runs launches on one thread, looking again every half second; gpukit.sim.parallel).
    use_numba: accepted for the seed interface; the simulator always compiles with Numba.
    """

    version = "0.1.0"
    event_kind = "modeled"

    def __init__(self, device: str | DeviceProfile | None = None, *, checks: Any = True,
                 schedule: str = "ordered", seed: int | None = 0, watchdog_s: float | None = 30.0,
                 host_memory_budget_bytes: int | None = None, num_threads: int | None = None,
                 use_numba: bool | None = None):
        self.profile = get_profile(device)
        self.options = simulator_options(
            checks=checks, schedule=schedule, seed=seed, watchdog_s=watchdog_s,
            host_memory_budget_bytes=host_memory_budget_bytes, num_threads=num_threads,
            use_numba=use_numba)
        # the options of a launch that gives none (launch_kernel's common case), and the
        # device's limits: both fixed for the backend's life
        self.default_launch = launch_options({}, self.options)
        half = {"float16"} if supported_half() and self.profile.compute_capability >= (5, 3) \
            else set()  # as a GPU of compute capability 5.3 or later, where this CPU can
        self._capabilities = Capabilities.from_profile(self.profile, FEATURES | half)
        budget = self.options.host_memory_budget_bytes or _default_host_budget()
        # the modeled schedule copies and kernels are placed on (gpukit.sim.streams.Timeline)
        self.modeled_timeline = Timeline(self.profile)
        self.modeled_timeline.check_races = self.options.checks["races"]  # (copies' races)
        self.memory = TimelineMemory(
            self.profile.memory_bytes, budget, backend_name=f"cpu ({self.profile.name})",
            link_ms=lambda direction, nbytes, pinned: modeled_copy_ms(
                self.profile, direction, nbytes, pinned), timeline=self.modeled_timeline)
        # compiled kernels by (function, signature), the latest KERNEL_CACHE_LIMIT kept: a
        # notebook cell run again makes a new function (its compiled code is shared by content,
        # gpukit.sim.cache), and the old one must not be kept alive with its globals
        self._kernels: OrderedDict[Any, CPUKernel] = OrderedDict()
        self.workspace = Workspace()  # the simulator's scratch memory, reused by every launch
        self._last_error: str | None = None
        self._initialized = True
        self._lock = threading.RLock()  # see _one_thread_at_a_time

    # the constructor's options, as the simulator uses them
    checks = property(lambda self: dict(self.options.checks))
    schedule = property(lambda self: self.options.schedule)
    seed = property(lambda self: self.options.seed)
    watchdog_s = property(lambda self: self.options.watchdog_s)
    num_threads = property(lambda self: self.options.num_threads)
    use_numba = property(lambda self: self.options.use_numba)

    # -- identity --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return "cpu"

    @property
    def is_available(self) -> bool:
        return True

    @property
    def is_simulated(self) -> bool:
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
        return self._capabilities

    # -- memory ----------------------------------------------------------------------------
    def allocate(self, shape: Any, dtype: Any = "float32") -> DeviceArray:
        """Uninitialised device memory (reading it before writing is an error in kernels)."""
        shape = normalize_shape(shape)
        return self._new_array(shape, normalize_dtype(dtype), initialized=False)

    @_one_thread_at_a_time
    def _new_array(self, shape: tuple[int, ...], dtype: np.dtype, initialized: bool,
                   fortran: bool = False) -> DeviceArray:
        check_array_size(shape, dtype)
        alloc = self.memory.allocate(math.prod(shape), dtype, initialized=initialized)
        strides = (f_strides if fortran else c_strides)(shape, dtype.itemsize)
        return owning_array(alloc, shape, strides, self._collect)

    @_one_thread_at_a_time
    def _collect(self, alloc: Any) -> None:
        """Free an allocation whose arrays were all collected (in turn with other host threads:
        the last reference may go in any of them)."""
        self.memory.collect(alloc)

    @_one_thread_at_a_time
    def to_device(self, array: Any, *, stream: Any = None, implicit: bool = False) -> DeviceArray:
        """A device copy of a numpy array (C or Fortran order is kept; any byte order).

        `stream` (from `stream()`) makes the copy asynchronous on the modeled timeline when
        `array` is pinned (`pinned_array`); the data is on the device at once either way.
        `implicit` marks the copy in the transfer log as one the caller did not ask for.
        """
        self.modeled_timeline.stream_id(stream)
        if not isinstance(array, np.ndarray):
            check_host_array(array)  # raises TransferError saying how to fix it
        dtype = normalize_dtype(array.dtype)
        fortran = array.flags.f_contiguous and not array.flags.c_contiguous
        dev = self._new_array(array.shape, dtype, initialized=True, fortran=fortran)
        try:
            dev.host_view()[...] = array  # materialises: may exceed the host budget
        except BaseException:
            self.free(dev)  # leave nothing allocated behind
            raise
        self.memory.record_transfer("h2d", array.nbytes, pinned=is_pinned(array),
                                    implicit=implicit, stream=stream,
                                    accesses=(Access(dev, True),))
        return dev

    @_one_thread_at_a_time
    def to_host(self, array: Any, out: np.ndarray | None = None, *, stream: Any = None,
                implicit: bool = False) -> np.ndarray:
        """A numpy copy of a device array (or a copy into `out`, of any byte order; pinned `out`
        + `stream`: asynchronous on the modeled timeline)."""
        dev = self._own(array, "to_host")
        self.modeled_timeline.stream_id(stream)
        if out is not None:
            check_copy_target(out, dev.shape, dev.dtype, operation="to_host")
        src = dev.host_view()
        if out is None:
            out = np.array(src, order="K")
        else:
            out[...] = src
        self.memory.record_transfer("d2h", dev.nbytes, pinned=is_pinned(out),
                                    implicit=implicit, stream=stream,
                                    accesses=(Access(dev, False),))
        return out

    @_one_thread_at_a_time
    def copy_to_device(self, host: np.ndarray, target: DeviceArray, *,
                       stream: Any = None) -> DeviceArray:
        """Copy a numpy array into an existing device array of the same shape and dtype."""
        dev = self._own(target, "copy_to_device")
        self.modeled_timeline.stream_id(stream)
        pinned = is_pinned(host)
        host = check_host_array(host, operation="copy_to_device")
        check_copy_target(host, dev.shape, dev.dtype, operation="copy_to_device")
        dev.host_view()[...] = host
        dev.mark_written()
        self.memory.record_transfer("h2d", dev.nbytes, pinned=pinned, stream=stream,
                                    accesses=(Access(dev, True),))
        return dev

    @_one_thread_at_a_time
    def free(self, array: Any) -> None:
        dev = self._own(array, "free", allow_freed=True)
        if not dev.is_freed and dev.is_view:
            raise InvalidDeviceArrayError(
                f"free: this device array {dev.shape} is a view (a slice) of a larger one; free "
                "the array it was sliced from (freeing a view would free all of it)")
        self.memory.release(dev.alloc)

    def owns(self, array: Any) -> bool:
        return isinstance(array, DeviceArray) and array.device_memory is self.memory

    def _own(self, array: Any, operation: str, allow_freed: bool = False) -> DeviceArray:
        if not isinstance(array, DeviceArray):
            raise TransferError(f"{operation} expects a device array of this backend, got "
                                f"{type(array).__name__}")
        if not self.owns(array):
            raise InvalidDeviceArrayError(
                f"{operation}: this device array belongs to another backend's device")
        if not allow_freed:
            _ = array.allocation  # raises InvalidDeviceArrayError after free
        return array

    def memory_info(self) -> MemoryInfo:
        return MemoryInfo(free_bytes=self.memory.free_bytes, total_bytes=self.memory.total_bytes)

    @property
    def transfers(self) -> RecordLog:
        """The latest host/device copies (10,000; `transfers.limit` changes it), with their
        modeled durations; `transfers.total` counts them all."""
        return self.memory.transfers

    def time_copies(self, direction: str, nbytes: int, pinned: bool,
                    repeat: int) -> tuple[str, list[float]]:
        """Wall-clock times of real copies through this backend (kind "wall": this CPU's
        memcpy, not PCIe), after one warm-up copy that takes the first-touch page faults."""
        as_choice("direction", direction, COPY_DIRECTIONS)
        nbytes, repeat = as_int("nbytes", nbytes, 1), as_int("repeat", repeat, 1)
        samples = [self._copy_ms(direction, nbytes, pinned) for _ in range(repeat + 1)]
        return "wall", samples[1:]

    def _copy_ms(self, direction: str, nbytes: int, pinned: bool) -> float:
        """The wall time of one copy (allocations not timed)."""
        device = self.to_device(np.ones(nbytes, np.uint8))
        try:
            if direction == "d2d":
                target = self.allocate(nbytes, "uint8")
                try:
                    start = time.perf_counter()
                    target.copy_to_device(device)
                    return (time.perf_counter() - start) * 1e3
                finally:
                    self.free(target)
            host = self.pinned_array(nbytes, "uint8") if pinned else np.ones(nbytes, np.uint8)
            start = time.perf_counter()
            if direction == "h2d":
                self.copy_to_device(host, device)
            else:
                self.to_host(device, out=host)
            return (time.perf_counter() - start) * 1e3
        finally:
            self.free(device)

    # -- kernels ---------------------------------------------------------------------------
    @_one_thread_at_a_time
    def compile_kernel(self, func: Callable, signature: Any = None) -> CPUKernel:
        """A simulator kernel from a Numba CUDA kernel (plain function or @cuda.jit)."""
        if isinstance(func, CPUKernel):
            return func
        try:
            py_func = python_function(func)
        except TypeError as exc:
            raise ArgumentTypeError(str(exc)) from None
        # numba-cuda's debug=True (Python's error model) makes another kernel
        debug = bool(getattr(func, "targetoptions", {}).get("debug"))
        key = (py_func, None if signature is None else str(signature), debug)  # eager != lazy
        kernel = self._kernels.get(key)
        if kernel is not None:
            self._kernels.move_to_end(key)
        else:
            try:
                kernel = CPUKernel(py_func, self, signature, debug)
            except SyntaxError as exc:  # source that parses only in context (a lambda, ...)
                name = py_func.__name__
                raise UnsupportedKernelError(
                    f"kernel '{name}': its source cannot be read on its own ({exc.msg}); the "
                    "simulator needs kernels defined with def in a file or a notebook cell",
                    kernel=name) from None
            self._kernels[key] = kernel
            while len(self._kernels) > KERNEL_CACHE_LIMIT:
                self._kernels.popitem(last=False)
        return kernel

    @_one_thread_at_a_time
    def launch_kernel(self, kernel: Any, grid: Any, block: Any, *args: Any,
                      **options: Any) -> LaunchRecord:
        """Launch; options: stream, dynamic_shared_bytes, checks, schedule, seed, watchdog_s,
        flops (the kernel's floating-point operations, for the modeled time) and trace."""
        try:
            compiled = self.compile_kernel(kernel)
            options_of_dispatcher = getattr(kernel, "targetoptions", None)
            if options_of_dispatcher:  # @cuda.jit(launch_bounds=...)
                check_launch_bounds(compiled.name, block,
                                    options_of_dispatcher.get("launch_bounds"))
            record = launch(self, compiled, grid, block, args, options)
        except Exception as exc:
            self._last_error = f"{type(exc).__name__}: {exc}"
            raise
        self.launches.append(record)
        return record

    def synchronize(self) -> None:
        """Launches on the simulator complete before they return; this only moves the modeled
        timeline's host clock to the end of all issued work."""
        self.modeled_timeline.synchronize()

    # -- streams, events, pinned memory and the modeled timeline (gpukit.sim.streams) --------
    def stream(self) -> SimStream:
        """A new simulated stream for `stream=` arguments and `kernel[grid, block, stream]`."""
        return self.modeled_timeline.new_stream()

    def stream_label(self, stream: Any) -> int:
        return self.modeled_timeline.stream_id(stream)

    def record_event(self, stream: Any = None) -> Any:
        """A point on the modeled timeline (a `SimEvent`) at the end of `stream`'s work."""
        return self.modeled_timeline.record_event(self.modeled_timeline.stream_id(stream))

    def pinned_array(self, shape: Any, dtype: Any = "float32") -> np.ndarray:
        """A zeroed host array that copies treat as pinned (faster, and asynchronous on streams)."""
        shape, dtype = normalize_shape(shape), normalize_dtype(dtype)
        check_array_size(shape, dtype, operation="pinned_array")
        try:
            return sim_pinned_array(shape, dtype)
        except MemoryError as exc:
            raise HostMemoryError(f"pinned_array: the host cannot hold {shape} {dtype}: "
                                  f"{exc}") from None

    def timeline(self) -> list[TimelineEvent]:
        """The modeled schedule of every copy and kernel so far (labelled "modeled")."""
        return self.modeled_timeline.listed()

    def reset_timeline(self) -> None:
        """Clear the modeled timeline and restart its clock at 0."""
        self.modeled_timeline.reset()

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
            memory_in_use_bytes=self.memory.used_bytes, kernels_launched=self.launches.total,
            last_error=self._last_error,
            extra={"checks": [c for c in CHECKS if self.checks[c]], "schedule": self.schedule,
                   "host_memory_used_bytes": self.memory.host_budget.used_bytes,
                   "host_memory_budget_bytes": self.memory.host_budget.budget_bytes,
                   "num_threads": self.num_threads, "use_numba": self.use_numba})
