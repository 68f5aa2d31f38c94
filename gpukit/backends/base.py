"""The backend contract every gpukit backend implements, with the same types, errors and semantics.

`Backend` keeps the seed interface's names and signatures (name, is_available, compile_kernel,
allocate, to_device, to_host, synchronize; launch_kernel, get_memory_info, supports_feature with
defaults) and adds free, capabilities, status, version, initialize/shutdown (also as a context
manager), supports_device and memory_info. Everything notebooks, timing, tracing, widgets and ops
use is here too, with defaults a backend overrides where it can do more: the device's facts
(`device_name`, `compute_capability`, `device_label`, `profile`, `is_simulated`), copies into
existing arrays (`copy_to_device`), arrays made elsewhere (`as_device_array`, `accepts`, `owns`),
launch and copy logs (`launches`, `transfers`), streams and events (`stream`, `stream_label`,
`record_event`, `event_kind`), the modeled timeline (`timeline`, `reset_timeline`), pinned host
memory (`pinned_array`), timed copies and launches (`time_copies`, `time_launches`) and why it
cannot run (`unavailable_reason`). FEATURES names every feature a backend may report;
DEVICE_ARRAY_MEMBERS what every backend's device arrays have. It holds no device logic.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..devices import DeviceProfile
from ..errors import ArgumentTypeError, TransferError, UnsupportedOperationError
from ..launches import LaunchRecord
from ..sim.log import RecordLog

# Pressure levels of `MemoryInfo`: low < 70% used <= medium < 85% <= high < 95% <= critical.
PRESSURE_LEVELS = (("low", 0.70), ("medium", 0.85), ("high", 0.95), ("critical", float("inf")))

# The feature names `Capabilities.features` and `supports_feature` use, on every backend.
FEATURES: dict[str, str] = {
    "shared_memory": "cuda.shared.array", "dynamic_shared_memory": "cuda.shared.array(0, ...)",
    "atomics": "cuda.atomic.*", "syncthreads": "cuda.syncthreads and its variants",
    "warp_shuffle": "cuda.shfl_*_sync", "warp_vote": "cuda.all_sync, any_sync, ballot_sync",
    "local_memory": "cuda.local.array", "constant_memory": "cuda.const.array_like",
    "device_functions": "cuda.jit(device=True)", "float64": "double precision arithmetic",
    "streams": "backend.stream()", "events": "backend.record_event()",
    "pinned_memory": "backend.pinned_array()",
    # the simulator's own
    "simulated": "gpukit's simulator", "tracing": "launch_kernel(..., trace=True)",
    "race_detection": "checks: races", "bounds_checking": "checks: bounds",
    "barrier_checking": "checks: barriers", "uninitialized_memory_checking": "checks: uninitialized",
    # a real GPU's
    "float16": "half precision", "float64_atomics": "cuda.atomic.add on float64",
    "bfloat16": "bfloat16 arithmetic", "tensor_cores": "tensor core instructions",
    "cooperative_launch": "grid-wide synchronisation", "cupy": "device arrays are CuPy's",
    "cublas": "cuBLAS (ops.gemm variant='library')",
    "numba_simulator": "Numba's CUDA simulator stands in for the GPU",
}
# What every backend that runs kernels supports: lessons may use these anywhere.
KERNEL_FEATURES = frozenset({
    "shared_memory", "dynamic_shared_memory", "atomics", "syncthreads", "warp_shuffle",
    "warp_vote", "local_memory", "constant_memory", "device_functions", "float64", "streams",
    "events"})
# The members a device array has on every backend (gpukit.sim.memory.DeviceArray on the
# simulator, gpukit.backends._cuda_arrays.CUDADeviceArray on CUDA).
DEVICE_ARRAY_MEMBERS = (
    "shape", "dtype", "strides", "ndim", "size", "itemsize", "nbytes", "layout", "is_view",
    "is_freed", "copy_to_host", "copy_to_device", "reshape", "__getitem__", "__len__")


@dataclass(frozen=True)
class Capabilities:
    """What a backend's device can do: launch limits and feature names."""

    warp_size: int
    max_threads_per_block: int
    max_block_dim: tuple[int, int, int]
    max_grid_dim: tuple[int, int, int]
    shared_mem_per_block: int
    shared_mem_per_block_optin: int
    compute_capability: tuple[int, int]
    sm_count: int
    total_memory_bytes: int
    features: frozenset[str] = frozenset()

    @classmethod
    def from_profile(cls, profile: Any, features: frozenset[str] = frozenset()) -> Capabilities:
        """The capabilities of a `gpukit.devices.DeviceProfile` (its compute capability's limits)."""
        cc = profile.cc
        return cls(
            warp_size=cc.warp_size, max_threads_per_block=cc.max_threads_per_block,
            max_block_dim=cc.max_block_dim, max_grid_dim=cc.max_grid_dim,
            shared_mem_per_block=cc.shared_mem_per_block,
            shared_mem_per_block_optin=cc.shared_mem_per_block_optin,
            compute_capability=profile.compute_capability, sm_count=profile.sm_count,
            total_memory_bytes=profile.memory_bytes, features=features)


@dataclass(frozen=True)
class MemoryInfo:
    """Device memory in bytes, with a pressure level derived from the fraction used."""

    free_bytes: int
    total_bytes: int

    @property
    def used_bytes(self) -> int:
        return self.total_bytes - self.free_bytes

    @property
    def used_fraction(self) -> float:
        return self.used_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def pressure(self) -> str:
        """"low", "medium", "high" or "critical" (thresholds 70%, 85%, 95% used)."""
        used = self.used_fraction
        return next(level for level, limit in PRESSURE_LEVELS if used < limit)

    def __str__(self) -> str:
        gib = 1024**3
        return (f"{self.used_bytes / gib:.2f} GiB used of {self.total_bytes / gib:.2f} GiB "
                f"({self.used_fraction:.1%}, pressure {self.pressure})")


@dataclass
class BackendStatus:
    """A snapshot of a backend's state for `gpukit info`, widgets and notebooks."""

    name: str
    initialized: bool
    device: str
    memory_in_use_bytes: int
    kernels_launched: int
    last_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


_B = TypeVar("_B", bound="Backend")


class HostEvent:
    """A point in host time, taken after waiting for the device: the default `record_event`.

    Like every backend's events it has `kind` (what `elapsed_ms` measures), `note` (a few words
    on it), `elapsed_ms(other)` and `synchronize()`.
    """

    kind = "wall"
    note = ""

    def __init__(self) -> None:
        self.time_ms = time.perf_counter() * 1e3

    def elapsed_ms(self, other: HostEvent) -> float:
        """Milliseconds of host time from this event to `other`."""
        if not isinstance(other, HostEvent):
            raise ArgumentTypeError(f"elapsed_ms needs another HostEvent, got "
                                    f"{type(other).__name__}")
        return other.time_ms - self.time_ms

    elapsed_time = elapsed_ms  # numba's name

    def synchronize(self) -> None:
        """Nothing to wait for: the device was synchronised when the event was taken."""

    def query(self) -> bool:
        return True


class Backend(ABC):
    """Base class of every backend. Subclasses implement the abstract methods; the members with
    defaults describe a backend that simulates nothing, logs nothing and has no streams."""

    version: str = "0"
    # The DeviceProfile a simulator emulates (its limits, bandwidths and modeled times); None for
    # a real device, whose facts come from `capabilities()`.
    profile: DeviceProfile | None = None
    # The Timing kind of the time between two `record_event`s: "cuda-events" (GPU time),
    # "wall" (the host's clock) or "modeled" (a simulator's timeline).
    event_kind: str = "wall"
    # Why `is_available` is False, in words a learner can act on (None when it is available).
    unavailable_reason: str | None = None

    # -- the seed interface ------------------------------------------------------------------
    @property
    @abstractmethod
    def name(self) -> str:
        """The backend's registry name, such as "cpu" or "cuda"."""

    @property
    @abstractmethod
    def is_available(self) -> bool:
        """Whether the backend can be used here. Never raises."""

    @abstractmethod
    def compile_kernel(self, func: Callable, signature: Any = None) -> Any:
        """A launchable kernel from a Numba CUDA kernel function."""

    @abstractmethod
    def allocate(self, shape: Any, dtype: Any = "float32") -> Any:
        """An uninitialised device array."""

    @abstractmethod
    def to_device(self, array: Any) -> Any:
        """A device copy of a host array."""

    @abstractmethod
    def to_host(self, array: Any) -> Any:
        """A numpy copy of a device array."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait for all work on the device to finish."""

    def launch_kernel(self, kernel: Any, grid: Any, block: Any, *args: Any) -> Any:
        """Launch `kernel` over `grid` blocks of `block` threads. gpukit's backends also take
        options (stream, dynamic_shared_bytes, flops, ...) and return the `LaunchRecord`."""
        kernel[grid, block](*args)

    def get_memory_info(self) -> tuple[int, int]:
        """(free_bytes, total_bytes) of device memory."""
        info = self.memory_info()
        return info.free_bytes, info.total_bytes

    def supports_feature(self, name: str) -> bool:
        """Whether `name` is one of `capabilities().features`."""
        return isinstance(name, str) and name in self.capabilities().features

    # -- additions ---------------------------------------------------------------------------
    @abstractmethod
    def free(self, array: Any) -> None:
        """Release a device array now; using it afterwards raises InvalidDeviceArrayError."""

    @abstractmethod
    def capabilities(self) -> Capabilities:
        """The device's launch limits and feature names."""

    @abstractmethod
    def memory_info(self) -> MemoryInfo:
        """Device memory with its pressure level."""

    @abstractmethod
    def status(self) -> BackendStatus:
        """Initialised, device, memory in use, kernels launched, last error."""

    def supports_device(self, device: Any) -> bool:
        """Whether this backend can run as `device` (a profile name or a device id)."""
        return False

    def copy_to_device(self, host: Any, target: Any, *, stream: Any = None) -> Any:
        """Copy a numpy array (or a device array) into the device array `target` of the same
        shape and dtype; returns `target`. With `stream`, enqueued on it."""
        target.copy_to_device(host)
        return target

    def as_device_array(self, obj: Any) -> Any:
        """`obj` as a device array of this backend, without copying: its own arrays as they
        are (the CUDA backend also takes CuPy and Numba arrays). Raises TransferError for what
        is no device array, InvalidDeviceArrayError for another backend's."""
        if self.owns(obj):
            return obj
        raise TransferError(f"expected a device array of backend {self.name!r}, got "
                            f"{type(obj).__name__}")

    def accepts(self, obj: Any) -> bool:
        """Whether `as_device_array(obj)` takes `obj` (never raises)."""
        try:
            self.as_device_array(obj)
        except Exception:  # noqa: BLE001 - a yes/no question
            return False
        return True

    @property
    def compute_capability(self) -> tuple[int, int]:
        """(major, minor) of the device (emulated or real)."""
        return self.capabilities().compute_capability

    @property
    def device_label(self) -> str:
        """The device as launch errors name it, such as "the simulated T4 (CC 7.5)"."""
        major, minor = self.compute_capability
        return f"the {self.device_name} (CC {major}.{minor})"

    # -- what timing, tracing, widgets and ops ask of a backend (defaults: none of it) -------
    @property
    def device_name(self) -> str:
        """The device in words, such as "simulated T4" or "Tesla T4" (default: `status()`'s)."""
        return self.status().device

    @property
    def is_simulated(self) -> bool:
        """True for gpukit's simulator: kernels run on the CPU with checks, can be traced, and
        GPU times are modeled from `profile`. False for real devices (and Numba's simulator)."""
        return False

    @property
    def launches(self) -> RecordLog:
        """The latest launches (10,000; `launches.limit` changes it), oldest first, as a
        `RecordLog`: indexed, sliced and iterated like a list; `launches.total` counts them
        all. Backends that log launches append to it."""
        log = self.__dict__.get("_launches")
        if log is None:
            log = self.__dict__["_launches"] = RecordLog()
        return log

    @launches.setter
    def launches(self, records: Iterable[LaunchRecord]) -> None:
        self.__dict__["_launches"] = RecordLog(records)

    @property
    def transfers(self) -> list[Any]:
        """Every host/device copy so far (the simulator's `TransferRecord`s); [] where copies
        are not logged."""
        return []

    def owns(self, array: Any) -> bool:
        """Whether `array` is a device array of this backend (freed ones included)."""
        return False

    def stream(self) -> Any:
        """A new stream for `stream=` arguments and `kernel[grid, block, stream]`."""
        raise UnsupportedOperationError(
            f"backend {self.name!r} has no streams; leave stream= out to use the default stream")

    def stream_label(self, stream: Any) -> int | str:
        """How logs and timelines name `stream`: 0 for the default stream (None or 0)."""
        if stream is None or (isinstance(stream, int) and not isinstance(stream, bool)
                              and stream == 0):
            return 0
        raise ArgumentTypeError(f"backend {self.name!r} has only the default stream (None or 0), "
                                f"got {type(stream).__name__}")

    def record_event(self, stream: Any = None) -> Any:
        """An event at the end of the work issued so far on `stream` (None: all work);
        `a.elapsed_ms(b)` is the time between two, of kind `event_kind`. The default waits for
        the device (`synchronize`) and reads the host's clock."""
        self.stream_label(stream)
        self.synchronize()
        return HostEvent()

    def timeline(self) -> list[Any]:
        """The schedule of copies and kernels so far (`TimelineEvent`s); [] where none is kept."""
        return []

    def reset_timeline(self) -> None:
        """Forget the timeline and restart its clock (nothing to do where none is kept)."""

    def time_launches(self, kernel: Any, grid: Any, block: Any, *args: Any, repeat: int = 1,
                      **options: Any) -> tuple[str, list[float], str]:
        """(kind, samples in ms, note) of `repeat` launches, each one timed on its own; the
        kernel is compiled before the first. The default: `record_event` around each
        `launch_kernel` (the CUDA backend records CUDA events around the enqueue alone)."""
        compiled = self.compile_kernel(kernel)
        stream = options.get("stream")
        samples, kind, note = [], self.event_kind, ""
        for _ in range(repeat):
            begin = self.record_event(stream)
            record = self.launch_kernel(compiled, grid, block, *args, **options)
            end = self.record_event(stream)
            ms = begin.elapsed_ms(end)
            kind, note = end.kind, end.note
            samples.append(ms)
            if isinstance(record, LaunchRecord):
                record.timings[kind] = ms
        return kind, samples, note

    def pinned_array(self, shape: Any, dtype: Any = "float32") -> Any:
        """A zeroed page-locked host array: faster copies, asynchronous on streams."""
        raise UnsupportedOperationError(
            f"backend {self.name!r} has no pinned host memory; use ordinary numpy arrays")

    def time_copies(self, direction: str, nbytes: int, pinned: bool,
                    repeat: int) -> tuple[str, list[float]]:
        """(kind, samples): `repeat` timed copies of `nbytes` bytes in `direction` ("h2d",
        "d2h", "d2d") from/to pinned or pageable host memory, in milliseconds, after a warm-up.
        `kind` is the Timing kind of the samples ("cuda-events" or "wall")."""
        raise UnsupportedOperationError(
            f"backend {self.name!r} cannot time copies; bandwidth sweeps run on gpukit's "
            "simulator (get_backend('cpu')) and on the CUDA backend")

    def initialize(self) -> Backend:
        """Acquire the device. Idempotent; returns the backend."""
        self._initialized = True
        return self

    def shutdown(self) -> None:
        """Release the device and everything allocated on it. Idempotent."""
        self._initialized = False

    @property
    def initialized(self) -> bool:
        return getattr(self, "_initialized", False)

    def __enter__(self: _B) -> _B:  # noqa: PYI019 - typing.Self needs Python 3.11
        self.initialize()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
