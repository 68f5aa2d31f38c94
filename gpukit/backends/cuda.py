"""CUDABackend: real NVIDIA GPUs through numba-cuda, with CuPy arrays where CuPy works.

Kernels are ordinary Numba CUDA kernels compiled by numba-cuda; device arrays are CuPy arrays when
CuPy is importable and sees a GPU, else Numba device arrays. Under NUMBA_ENABLE_CUDASIM=1 it runs on
Numba's CUDA simulator and says so. It checks launches against the device's limits, but none of the
CPU simulator's in-kernel checks exist here. numba and CuPy are imported on first use.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..devices import name_key
from ..errors import (
    BackendUnavailableError,
    InvalidDeviceArrayError,
    OutOfMemoryError,
    TransferError,
)
from ..launches import LaunchRecord
from ..utils import as_int
from . import _cuda_env as env
from . import _cuda_streams
from ._cuda_env import cuda_unavailable_reason, device_kind
from ._cuda_kernel import CUDAKernel, make_dispatcher
from .base import Backend, BackendStatus, Capabilities, MemoryInfo
from .options import SIMULATOR_ONLY_OPTIONS, launch_options
from .validate import (
    check_array_size,
    check_copy_target,
    check_host_array,
    check_launch,
    normalize_dtype,
    normalize_shape,
)

__all__ = ["SIMULATOR_ONLY_OPTIONS", "CUDABackend", "CUDAKernel", "cuda_unavailable_reason"]

_SIMULATOR_NAME = "Numba CUDA simulator"


class CUDABackend(Backend):
    """numba-cuda on GPU `device_id`; `enable_caching` turns on Numba's on-disk kernel cache."""

    def __init__(self, device_id: int = 0, enable_caching: bool = False):
        self.device_id = as_int("device_id", device_id, 0)
        self.enable_caching = bool(enable_caching)
        self.unavailable_reason: str | None = None
        self._kernels: weakref.WeakKeyDictionary[Any, CUDAKernel] = weakref.WeakKeyDictionary()
        self._live = env.ArrayTable()   # arrays this backend allocated -> nbytes
        self._freed = env.ArrayTable()  # arrays passed to free()
        self._kernels_launched = 0
        self._last_error: str | None = None
        self._capabilities: Capabilities | None = None

    # -- availability -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return "cuda"

    @property
    def is_available(self) -> bool:
        return self.check_available()

    def check_available(self) -> bool:
        """Whether this backend can run here; sets `unavailable_reason`. Never raises."""
        try:
            reason = cuda_unavailable_reason()
            if reason is None:
                count = env.device_count()
                if self.device_id >= count:
                    reason = (f"device_id {self.device_id} does not exist: {count} CUDA "
                              f"device(s) found (ids 0 to {count - 1})")
        except Exception as exc:  # noqa: BLE001 - availability checks never raise
            reason = f"checking for CUDA failed: {type(exc).__name__}: {exc}"
        self.unavailable_reason = reason
        return reason is None

    @property
    def simulator(self) -> bool:
        """True when kernels run on Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)."""
        return env.simulator_enabled()

    @property
    def array_library(self) -> str:
        """"cupy" or "numba": which library's arrays allocate/to_device return."""
        return "cupy" if env.cupy_usable() else "numba"

    @property
    def version(self) -> str:  # type: ignore[override]
        parts = [f"numba-cuda {env.package_version('numba-cuda') or 'not installed'}"]
        runtime = env.runtime_version() if cuda_unavailable_reason() is None else None
        if self.simulator:
            parts.append(_SIMULATOR_NAME)
        elif runtime:
            parts.append(f"CUDA runtime {runtime}")
        return ", ".join(parts)

    def _usable(self) -> Any:
        """numba.cuda, if this backend can run here; else raises BackendUnavailableError."""
        if not self.check_available():
            raise BackendUnavailableError(f"the CUDA backend cannot be used: "
                                          f"{self.unavailable_reason}")
        return env.numba_cuda()

    def require_cuda(self) -> Any:
        """numba.cuda, once the backend is initialised (raises BackendUnavailableError)."""
        self.initialize()
        return env.numba_cuda()

    def device_scope(self) -> Any:
        """A context manager that makes this backend's GPU current."""
        if env.cupy_usable():
            import cupy
            return cupy.cuda.Device(self.device_id)
        return env.numba_cuda().gpus[self.device_id]

    # -- device facts -----------------------------------------------------------------------
    @property
    def device_name(self) -> str:
        cuda = self._usable()
        if self.simulator:
            return _SIMULATOR_NAME
        name = cuda.list_devices()[self.device_id].name
        return name.decode() if isinstance(name, bytes) else str(name)

    @property
    def compute_capability(self) -> tuple[int, int]:
        cuda = self._usable()
        device = cuda.get_current_device() if self.simulator else \
            cuda.list_devices()[self.device_id]
        major, minor = device.compute_capability
        return (int(major), int(minor))

    def capabilities(self) -> Capabilities:
        if self._capabilities is None:
            self._capabilities = env.read_capabilities(
                self.require_cuda(), self.device_id, self.compute_capability,
                self.memory_info().total_bytes, self.simulator)
        return self._capabilities

    def memory_info(self) -> MemoryInfo:
        cuda = self.require_cuda()
        if self.simulator:  # Numba's simulator reports infinite memory: use the host's
            return MemoryInfo(*env.host_memory())
        with self.device_scope():
            free_bytes, total_bytes = cuda.current_context().get_memory_info()
        return MemoryInfo(int(free_bytes), int(total_bytes))

    def supports_device(self, device: Any) -> bool:
        """Whether `device` (an id, "cuda:N", or a name such as "T4") is this machine's GPU."""
        try:
            if not self.check_available():
                return False
            if isinstance(device, str) and device.lower().startswith("cuda:"):
                device = int(device[5:])
            if isinstance(device, int) and not isinstance(device, bool):
                return 0 <= device < env.device_count()
            names = [getattr(device, "name", device), *getattr(device, "aliases", ())]
            mine = name_key(self.device_name)
            return any(isinstance(n, str) and name_key(n) and name_key(n) in mine
                       for n in names)
        except Exception:  # noqa: BLE001 - a yes/no question never raises
            return False

    def status(self) -> BackendStatus:
        available = self.check_available()
        extra: dict[str, Any] = {
            "simulator": self.simulator, "device_id": self.device_id,
            "enable_caching": self.enable_caching, "version": self.version,
            "unavailable_reason": self.unavailable_reason,
        }
        device = "unavailable"
        if available:
            extra["array_library"] = self.array_library
            extra["compute_capability"] = self.compute_capability
            extra["memory_source"] = ("host RAM (Numba's simulator has no device memory)"
                                      if self.simulator else "CUDA driver")
            device = self.device_name
        in_use = sum(self._live.values())
        return BackendStatus(self.name, self.initialized, device, in_use,
                             self._kernels_launched, self._last_error, extra)

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
            self.synchronize()
        finally:
            for array in self._live.arrays():
                self.free(array)
            self._initialized = False

    def synchronize(self) -> None:
        cuda = self.require_cuda()
        with self.device_scope():
            cuda.synchronize()

    # -- memory -----------------------------------------------------------------------------
    def allocate(self, shape: Any, dtype: Any = "float32") -> Any:
        shape = normalize_shape(shape)
        dtype = normalize_dtype(dtype)
        nbytes = check_array_size(shape, dtype)
        cuda = self.require_cuda()
        with self.device_scope():
            try:
                if env.cupy_usable():
                    import cupy
                    array = cupy.empty(shape, dtype)
                else:
                    array = cuda.device_array(shape, dtype)
            except Exception as exc:
                self._raise_if_out_of_memory(exc, nbytes)
                raise
        self._live.add(array, nbytes)
        return array

    def to_device(self, array: Any, *, stream: Any = None) -> Any:
        """A device copy of a numpy array (enqueued on `stream` if given: asynchronous for
        pinned arrays, see `pinned_array`)."""
        if stream is not None:
            return _cuda_streams.to_device_async(self, array, stream)
        host = check_host_array(array, operation="to_device")
        cuda = self.require_cuda()
        with self.device_scope():
            try:
                if env.cupy_usable():
                    import cupy
                    device_array = cupy.asarray(host)
                else:
                    device_array = cuda.to_device(host)
            except Exception as exc:
                self._raise_if_out_of_memory(exc, host.nbytes)
                raise
        self._live.add(device_array, host.nbytes)
        return device_array

    def to_host(self, array: Any, out: np.ndarray | None = None, *,
                stream: Any = None) -> np.ndarray:
        """A numpy copy of a device array (or a copy into the numpy array `out`); with `stream`,
        enqueued on it: synchronise the stream before reading the result."""
        if stream is not None:
            return _cuda_streams.to_host_async(self, array, out, stream)
        kind = self.device_kind_of(array, "to_host")
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TransferError(f"to_host's out must be a numpy array, got "
                                    f"{type(out).__name__}")
            check_copy_target(out, array.shape, array.dtype, operation="to_host")
            if out.dtype.byteorder not in "=|" or not out.flags.c_contiguous:
                out[...] = self.to_host(array)  # numba and CuPy copy into native C order only
                return out
        cuda = self.require_cuda()
        with self.device_scope():
            if kind == "cupy":
                return array.get(out=out)
            source = array if kind == "numba" else cuda.as_cuda_array(array)
            return source.copy_to_host(out) if out is not None else source.copy_to_host()

    def copy_to_device(self, host: np.ndarray, target: Any) -> Any:
        """Copy a numpy array into an existing device array of the same shape and dtype."""
        kind = self.device_kind_of(target, "copy_to_device")
        host = check_host_array(host, operation="copy_to_device")
        check_copy_target(host, target.shape, target.dtype, operation="copy_to_device")
        cuda = self.require_cuda()
        with self.device_scope():
            if kind == "cupy":
                target.set(host)
            else:
                (target if kind == "numba" else cuda.as_cuda_array(target)).copy_to_device(host)
        return target

    def free(self, array: Any) -> None:
        """Release `array`; using it through this backend afterwards raises.

        Numba arrays this backend allocated give their memory back at once; CuPy returns memory
        to its pool when the last reference to the array goes.
        """
        kind = self.device_kind_of(array, "free", problem="double free")
        nbytes = self._live.pop(array)
        self._freed.add(array)
        if nbytes is not None and kind == "numba" and not self.simulator:
            cuda = env.numba_cuda()
            with self.device_scope():
                array.gpu_data.free()
                cuda.current_context().deallocations.clear()

    def device_kind_of(self, array: Any, operation: str, problem: str = "use after free") -> str:
        """The kind of device array `array` is; raises if it is none or was freed."""
        kind = device_kind(array)
        if kind is None:
            raise TransferError(f"{operation} expects a device array of this backend, got "
                                f"{type(array).__name__}")
        self._check_not_freed(array, f"{operation}'s argument", problem)
        return kind

    def _check_not_freed(self, array: Any, subject: str, problem: str = "use after free"
                         ) -> None:
        if array in self._freed:
            hint = "free each array once" if problem == "double free" else \
                "allocate a new one with backend.allocate or backend.to_device"
            raise InvalidDeviceArrayError(
                f"{problem}: {subject} is a {array.shape} {array.dtype} device array that was "
                f"already freed; {hint}")

    def _raise_if_out_of_memory(self, exc: Exception, requested_bytes: int) -> None:
        text = f"{type(exc).__name__} {exc}".upper()
        if not any(word in text for word in ("OUTOFMEMORY", "OUT_OF_MEMORY", "OUT OF MEMORY")):
            return
        try:
            free_bytes, total_bytes = self.get_memory_info()
        except Exception:  # noqa: BLE001 - report the out-of-memory error even so
            free_bytes = total_bytes = 0
        raise OutOfMemoryError(
            f"cannot allocate {requested_bytes} bytes on the GPU: {free_bytes} of {total_bytes} "
            "bytes are free; free arrays you no longer need (backend.free) or use smaller sizes",
            requested_bytes, free_bytes, total_bytes) from exc

    # -- kernels ----------------------------------------------------------------------------
    def compile_kernel(self, func: Callable, signature: Any = None) -> CUDAKernel:
        """A CUDAKernel from a plain function, a `cuda.jit` kernel, or a factory taking `cuda`.

        With `signature` (e.g. "void(float32[:], float32[:])") it is compiled now, else on the
        first launch for the argument types given.
        """
        if isinstance(func, CUDAKernel):
            if signature is None and func._launch == self._launch:
                return func
            func = func.dispatcher
        cuda = self.require_cuda()
        if signature is None and func in self._kernels:
            return self._kernels[func]
        py_func, dispatcher = make_dispatcher(cuda, func, signature, cache=self.enable_caching,
                                              compile_now=not self.simulator)
        kernel = CUDAKernel(dispatcher, py_func, self._launch)
        if signature is None:
            self._kernels[func] = kernel
        return kernel

    def launch_kernel(self, kernel: Any, grid: Any, block: Any, *args: Any,
                      **options: Any) -> LaunchRecord:
        """Launch `kernel` (compiled, cuda.jit or a plain function) over `grid` x `block`.

        Options: `stream=`, `dynamic_shared_bytes=` and `flops=` (declared floating-point
        operations, kept in the launch log), checked by `gpukit.backends.options`. The CPU
        simulator's options (checks, schedule, seed, watchdog_s, trace) raise OptionTypeError
        here. Returns the launch's record, also appended to `launches`.
        """
        opts = launch_options(options, None, backend="cuda")
        compiled = self.compile_kernel(kernel)
        record = self._launch(compiled, grid, block, opts.stream, opts.dynamic_shared_bytes,
                              *args)
        if opts.flops is not None:
            record.extra["flops"] = opts.flops
        return record

    def _launch(self, kernel: CUDAKernel, grid: Any, block: Any, stream: Any,
                shared_bytes: Any, *args: Any) -> LaunchRecord:
        self.require_cuda()
        grid3, block3 = check_launch(kernel.name, grid, block, shared_bytes, self.capabilities())
        for position, arg in enumerate(args):
            self._check_not_freed(arg, f"kernel '{kernel.name}' argument {position}")
            if isinstance(arg, np.ndarray) and arg.dtype.byteorder not in "=|":
                raise TransferError(
                    f"kernel '{kernel.name}' argument {position} is a {arg.dtype} array in "
                    "non-native byte order, which numba-cuda cannot pass to a kernel; copy it "
                    "with backend.to_device(array) (which converts it) and pass that")
        with self.device_scope():
            try:
                kernel.dispatcher[grid3, block3, stream, shared_bytes](*args)
            except Exception as exc:
                self._last_error = f"{kernel.name}: {type(exc).__name__}: {exc}"
                raise
        self._kernels_launched += 1
        record = _cuda_streams.launch_record(self, kernel, grid3, block3, stream, shared_bytes)
        self.launches.append(record)
        return record

    # -- streams, events, pinned memory and timed copies (gpukit.backends._cuda_streams) ------
    def owns(self, array: Any) -> bool:
        return device_kind(array) is not None

    @property
    def event_kind(self) -> str:  # type: ignore[override]
        """"cuda-events" on a GPU; "wall" under Numba's simulator, whose events carry no time."""
        return _cuda_streams.event_kind(self)

    def stream(self) -> Any:
        """A numba CUDA stream, with `record_event()` returning a gpukit CUDAEvent."""
        return _cuda_streams.new_stream(self)

    def stream_label(self, stream: Any) -> int | str:
        return _cuda_streams.stream_label(stream)

    def record_event(self, stream: Any = None) -> Any:
        """A CUDA event recorded now on `stream` (None: the default stream)."""
        return _cuda_streams.record_event(self, stream)

    def time_copies(self, direction: str, nbytes: int, pinned: bool,
                    repeat: int) -> tuple[str, list[float]]:
        """CUDA-event timed copies (kind "cuda-events"; "wall" under Numba's simulator)."""
        return _cuda_streams.time_copies(self, direction, nbytes, pinned, repeat)

    def pinned_array(self, shape: Any, dtype: Any = "float32") -> np.ndarray:
        """Page-locked host memory (numba's cuda.pinned_array): faster, asynchronous copies."""
        return _cuda_streams.pinned_array(self, shape, dtype)
