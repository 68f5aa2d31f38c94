"""CUDABackend: real NVIDIA GPUs through numba-cuda, with CuPy arrays where CuPy works.

It implements the same contract as the simulator (`gpukit.backends.base.Backend`), with the same
types, errors and semantics where a GPU can have them: device arrays with the simulator's
interface (`_cuda_arrays`), copies and the transfer log (`_cuda_copies`), launches checked and
recorded as `LaunchRecord`s (`_cuda_launch`), the device's facts as a `DeviceProfile`
(`_cuda_device`), streams, events and pinned memory (`_cuda_streams`). Under NUMBA_ENABLE_CUDASIM=1
it runs on Numba's CUDA simulator and says so. None of the simulator's in-kernel checks exist
here; its options are accepted and have no effect. numba and CuPy are imported on first use.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..devices import DeviceProfile
from ..errors import BackendUnavailableError
from ..launches import LaunchRecord
from ..sim.log import RecordLog
from ..sim.memory import TransferRecord
from ..timing.model import modeled_copy_ms
from ..utils import as_int
from . import _cuda_copies as copies
from . import _cuda_device as dev
from . import _cuda_env as env
from . import _cuda_launch as launching
from . import _cuda_streams as streams
from ._cuda_arrays import CUDADeviceArray, release
from ._cuda_env import cuda_unavailable_reason
from ._cuda_kernel import CUDAKernel, make_dispatcher
from ._cuda_toolkit import versions
from ._cuda_toolkit import versions as cuda_versions
from .base import Backend, BackendStatus, Capabilities, MemoryInfo
from .options import SIMULATOR_ONLY_OPTIONS, launch_options, simulator_options
from .validate import normalize_dtype, normalize_shape

__all__ = ["SIMULATOR_ONLY_OPTIONS", "CUDABackend", "CUDADeviceArray", "CUDAKernel",
           "cuda_unavailable_reason", "cuda_versions"]


class CUDABackend(Backend):
    """numba-cuda on one GPU: `device_id`, or `device` ("cuda:1", or a name such as "T4": the
    first GPU whose name has those words). `enable_caching` turns on Numba's on-disk cache.

    The simulator's options (checks, schedule, seed, watchdog_s, host_memory_budget_bytes,
    num_threads, use_numba) are checked as CPUBackend checks them and have no effect: a GPU runs
    kernels without the simulator's checks, so code written for either backend runs on both.
    """

    def __init__(self, device_id: int = 0, enable_caching: bool = False, *,
                 device: Any = None, **simulator: Any):
        self.device_id = as_int("device_id", device_id, 0)
        self.device = device
        self.enable_caching = bool(enable_caching)
        self.simulator_options = simulator_options(**simulator)  # same checks, same errors
        self.unavailable_reason: str | None = None
        self._kernels: weakref.WeakKeyDictionary[Any, CUDAKernel] = weakref.WeakKeyDictionary()
        self._live = env.ArrayTable()   # arrays this backend allocated -> nbytes
        self._raw = env.ArrayTable()    # their CuPy/Numba arrays -> the gpukit array
        self._pinned = env.ArrayTable()  # pinned host arrays from pinned_array
        self._transfers = RecordLog()  # the latest copies (gpukit.sim.log)
        self._opted_in: dict[int, int] = {}  # id(compiled kernel) -> dynamic bytes allowed
        self._kernels_launched = 0
        self._last_error: str | None = None
        self._fault: Exception | None = None
        self._capabilities: Capabilities | None = None
        self._profile: DeviceProfile | None = None
        self.last_kernel: str | None = None

    # -- availability -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return "cuda"

    @property
    def is_available(self) -> bool:
        return self.check_available()

    def check_available(self) -> bool:
        """Whether this backend can run here; sets `unavailable_reason`. Never raises."""
        reason = dev.availability(self, cuda_unavailable_reason)
        self.unavailable_reason = reason
        return reason is None

    @property
    def simulator(self) -> bool:
        """True when kernels run on Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)."""
        return env.simulator_enabled()

    @property
    def array_library(self) -> str:
        """"cupy" or "numba": which library's arrays stand behind this backend's arrays."""
        return "cupy" if env.cupy_usable() else "numba"

    @property
    def version(self) -> str:  # type: ignore[override]
        found = versions(self.simulator)
        parts = [f"numba-cuda {found['numba-cuda']}"]
        if self.simulator:
            parts.append(dev.SIMULATOR_NAME)
        elif cuda_unavailable_reason() is None:
            parts += [f"CUDA driver {found['CUDA driver']}",
                      f"CUDA runtime {found['CUDA runtime (cudart)']}"]
        return ", ".join(parts)

    def _usable(self) -> Any:
        if self._fault is not None:
            raise type(self._fault)(*self._fault.args[:1], kernel=getattr(
                self._fault, "kernel", None))
        if not self.check_available():
            raise BackendUnavailableError(f"the CUDA backend cannot be used: "
                                          f"{self.unavailable_reason}")
        return env.numba_cuda()

    def require_cuda(self) -> Any:
        """numba.cuda, once the backend is initialised (raises BackendUnavailableError, or the
        KernelFaultError that lost the GPU context)."""
        self.initialize()
        return env.numba_cuda()

    def device_scope(self) -> Any:
        """A context manager that makes this backend's GPU current."""
        if env.cupy_usable():
            import cupy  # lazy: only where CuPy works
            return cupy.cuda.Device(self.device_id)
        return env.numba_cuda().gpus[self.device_id]

    @contextlib.contextmanager
    def device_call(self) -> Iterator[None]:
        """This GPU current, and a kernel fault surfacing here turned into KernelFaultError."""
        try:
            with self.device_scope():
                yield
        except Exception as exc:
            fault = launching.translate_fault(exc, self.last_kernel)
            if fault is None:
                raise
            self._fault, self._last_error = fault, str(fault)
            raise fault from exc

    def numba_context(self) -> Any:  # numba's context of this GPU (None: Numba's simulator)
        return None if self.simulator else env.numba_cuda().current_context()

    # -- device facts -----------------------------------------------------------------------
    @property
    def device_name(self) -> str:
        cuda = self._usable()
        return dev.device_names(cuda, self.simulator)[self.device_id]

    @property
    def compute_capability(self) -> tuple[int, int]:
        cuda = self._usable()
        device = cuda.get_current_device() if self.simulator else \
            cuda.list_devices()[self.device_id]
        major, minor = device.compute_capability
        return (int(major), int(minor))

    @property
    def profile(self) -> DeviceProfile:  # type: ignore[override]
        """This GPU as a DeviceProfile (named as the driver names it; see _cuda_device)."""
        if self._profile is None:
            cuda = self.require_cuda()
            caps = self.capabilities()
            device = None if self.simulator else cuda.list_devices()[self.device_id]
            self._profile = dev.real_profile(self.device_name, caps.compute_capability,
                                             caps.sm_count, caps.total_memory_bytes, device)
        return self._profile

    def capabilities(self) -> Capabilities:
        if self._capabilities is None:
            self._capabilities = dev.read_capabilities(
                self.require_cuda(), self.device_id, self.compute_capability,
                self.memory_info().total_bytes, self.simulator, env.cupy_usable())
        return self._capabilities

    def memory_info(self) -> MemoryInfo:
        """The driver's free and total memory, with the blocks CuPy's pool holds unused (which
        any allocation reuses) counted as free, after numba's pending frees have run."""
        return copies.memory_info(self)

    def supports_device(self, device: Any) -> bool:
        """Whether `device` (an id, "cuda:N", or a name such as "T4": whole words of the GPU's
        name) is a GPU of this machine."""
        try:
            if not self.check_available():
                return False
            return dev.find_device(device, dev.device_names(env.numba_cuda(),
                                                            self.simulator)) is not None
        except Exception:  # noqa: BLE001 - a yes/no question never raises
            return False

    def status(self) -> BackendStatus:
        return dev.status(self, sum(self._live.values()), self._kernels_launched,
                          self._last_error, self._fault)

    # -- lifecycle --------------------------------------------------------------------------
    def initialize(self) -> CUDABackend:
        cuda = self._usable()
        if not self.initialized:
            if not self.simulator:
                cuda.select_device(self.device_id)
            self._initialized = True
        return self

    def shutdown(self) -> None:
        """Wait for the GPU, then free every array this backend allocated. Idempotent."""
        if not self.initialized:
            return
        try:
            if self._fault is None:
                self.synchronize()
        finally:
            for array in self._live.arrays():
                self.free(array)
            self._initialized = False

    def synchronize(self) -> None:
        cuda = self.require_cuda()
        with self.device_call():
            cuda.synchronize()

    # -- memory -----------------------------------------------------------------------------
    def register(self, array: CUDADeviceArray, nbytes: int) -> None:
        self._live.add(array, nbytes)
        self._raw.add(array.raw, array)

    def wrapper_of(self, raw: Any) -> CUDADeviceArray | None:
        """This backend's array whose CuPy/Numba array `raw` is, if any."""
        return self._raw.get(raw)

    def allocate(self, shape: Any, dtype: Any = "float32") -> CUDADeviceArray:
        """Uninitialised device memory, C order."""
        return copies.allocate(self, normalize_shape(shape), normalize_dtype(dtype))

    def to_device(self, array: Any, *, stream: Any = None,
                  implicit: bool = False) -> CUDADeviceArray:
        """A device copy of a numpy array (C or Fortran order kept, any byte order); with
        `stream`, enqueued on it (asynchronous for pinned arrays, see `pinned_array`)."""
        return copies.to_device(self, array, stream, implicit)

    def to_host(self, array: Any, out: np.ndarray | None = None, *, stream: Any = None,
                implicit: bool = False) -> np.ndarray:
        """A numpy copy of a device array (or a copy into `out`); with `stream`, enqueued on
        it: synchronise the stream before reading the result."""
        return copies.to_host(self, array, out, stream, implicit)

    def copy_to_device(self, host: Any, target: Any, *, stream: Any = None) -> CUDADeviceArray:
        """Copy a numpy array (or a device array) into an existing device array."""
        return copies.copy_to_device(self, host, target, stream)

    def free(self, array: Any) -> None:
        """Release `array` now: CuPy's block goes back to its pool, Numba's to the driver."""
        device = copies.adopt(self, array, "free")
        release(device, self.numba_context() if self.initialized else None)
        self._live.pop(device.root)

    def own(self, array: Any, operation: str) -> CUDADeviceArray:
        """`array` as this backend's (CuPy and Numba arrays are adopted); raises after free."""
        device = copies.adopt(self, array, operation)
        device.raw  # noqa: B018 - raises InvalidDeviceArrayError after free
        return device

    def as_device_array(self, obj: Any) -> CUDADeviceArray:
        return copies.adopt(self, obj, "as_device_array")

    def owns(self, array: Any) -> bool:
        return isinstance(array, CUDADeviceArray) and array.backend is self

    @property
    def transfers(self) -> RecordLog:
        """The latest host/device copies (a `RecordLog`, as on the simulator); `modeled_ms` is the link model of this GPU's profile
        (gpukit.timing.model), not a measurement (bandwidth_sweep measures)."""
        return self._transfers

    def log_transfer(self, direction: str, nbytes: int, pinned: bool, implicit: bool,
                     stream: Any) -> None:
        self._transfers.append(TransferRecord(
            direction, int(nbytes), modeled_copy_ms(self.profile, direction, nbytes, pinned),
            pinned, implicit))

    def is_pinned(self, array: Any) -> bool:
        """Whether `array` is (a view of) memory from `pinned_array`."""
        while isinstance(array, np.ndarray):
            if array in self._pinned:
                return True
            array = array.base
        return False

    def raise_if_out_of_memory(self, exc: Exception, requested_bytes: int) -> None:
        copies.raise_if_out_of_memory(self, exc, requested_bytes)

    # -- kernels ----------------------------------------------------------------------------
    def compile_kernel(self, func: Callable, signature: Any = None) -> CUDAKernel:
        """A CUDAKernel from a plain function, a `cuda.jit` kernel, or a factory taking `cuda`.

        With `signature` (e.g. "void(float32[:], float32[:])") it is compiled now, else on the
        first launch for the argument types given.
        """
        if isinstance(func, CUDAKernel):
            if signature is None and func.backend is self:
                return func
            func = func.dispatcher
        cuda = self.require_cuda()
        if signature is None and func in self._kernels:
            return self._kernels[func]
        py_func, dispatcher = make_dispatcher(cuda, func, signature, cache=self.enable_caching,
                                              compile_now=not self.simulator)
        kernel = CUDAKernel(dispatcher, py_func, self)
        if signature is None:
            self._kernels[func] = kernel
        return kernel

    def launch_kernel(self, kernel: Any, grid: Any, block: Any, *args: Any,
                      **options: Any) -> LaunchRecord:
        """Launch `kernel` (compiled, cuda.jit or a plain function) over `grid` x `block`.

        Options: `stream=`, `dynamic_shared_bytes=` and `flops=` (kept in the launch log); the
        simulator's checks, schedule, seed and watchdog_s are checked and have no effect, and
        trace=True raises UnsupportedOperationError. Returns the launch's `LaunchRecord`.
        """
        opts = launch_options(options, None, backend="cuda")
        prepared = launching.prepare(self, self.compile_kernel(kernel), grid, block,
                                     opts.stream, opts.dynamic_shared_bytes, args)
        try:
            prepared.run()
        except Exception as exc:
            self._last_error = f"{prepared.kernel.name}: {type(exc).__name__}: {exc}"
            prepared.release()
            raise
        record = prepared.record(opts.flops)
        prepared.finish()
        return record

    def time_launches(self, kernel: Any, grid: Any, block: Any, *args: Any, repeat: int = 1,
                      **options: Any) -> tuple[str, list[float], str]:
        """CUDA events right around each enqueue (checks and compilation done before)."""
        opts = launch_options(options, None, backend="cuda")
        prepared = launching.prepare(self, self.compile_kernel(kernel), grid, block,
                                     opts.stream, opts.dynamic_shared_bytes, args)
        try:
            return launching.time_launches(self, prepared, repeat, opts.flops)
        finally:
            prepared.finish()

    def launch_record(self, kernel: CUDAKernel, grid: tuple[int, int, int],
                      block: tuple[int, int, int], stream: Any, shared: int) -> LaunchRecord:
        self._kernels_launched += 1
        record = streams.launch_record(self, kernel, grid, block, stream, shared)
        self.launches.append(record)
        return record

    def opt_in_shared(self, compiled: Any, dynamic_bytes: int) -> None:
        """Let `compiled` use `dynamic_bytes` of dynamic shared memory (above 48 KiB)."""
        if self._opted_in.get(id(compiled), -1) >= dynamic_bytes:
            return
        from numba.cuda.cudadrv.driver import binding, driver  # lazy: a GPU path only
        with self.device_call():
            launching.opt_in_shared_memory(compiled, dynamic_bytes, driver, binding)
        self._opted_in[id(compiled)] = dynamic_bytes

    # -- streams, events, pinned memory and timed copies (gpukit.backends._cuda_streams) ------
    @property
    def event_kind(self) -> str:  # type: ignore[override]
        """"cuda-events" on a GPU; "wall" under Numba's simulator, whose events carry no time."""
        return streams.event_kind(self)

    event_note = property(lambda self: streams.SIMULATOR_EVENT_NOTE if self.simulator else "")

    def stream(self) -> Any:
        """A numba CUDA stream, with `record_event()` returning a gpukit CUDAEvent."""
        return streams.new_stream(self)

    def stream_label(self, stream: Any) -> int | str:
        return streams.stream_label(stream)

    def numba_stream(self, stream: Any) -> Any:  # numba's stream= (0: the default stream)
        return 0 if stream is None else stream

    def record_event(self, stream: Any = None) -> Any:
        """A CUDA event recorded now on `stream` (None: the default stream)."""
        return streams.record_event(self, stream)

    def time_copies(self, direction: str, nbytes: int, pinned: bool,
                    repeat: int) -> tuple[str, list[float]]:
        """CUDA-event timed copies (kind "cuda-events"; "wall" under Numba's simulator)."""
        return streams.time_copies(self, direction, nbytes, pinned, repeat)

    def pinned_array(self, shape: Any, dtype: Any = "float32") -> np.ndarray:
        """Zeroed page-locked host memory (numba's cuda.pinned_array, which is not zeroed)."""
        array = streams.pinned_array(self, shape, dtype)
        array[...] = 0
        self._pinned.add(array)
        return array
