"""What the CUDA backend finds in this process: numba-cuda, a driver, a GPU, the toolkit, CuPy.

`cuda_unavailable_reason()` answers once per process, and never raises, whether CUDABackend can
run here and, if not, why in words a learner can act on: no numba-cuda, no driver, no GPU, CUDA
libraries missing or from a system toolkit (`_cuda_toolkit`), or no context can be created on
GPU 0 (then "auto" falls back to the simulator instead of failing on first use). It also holds
the small helpers that import numba-cuda and CuPy lazily. It allocates nothing.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import weakref
from collections.abc import Callable
from typing import Any

from ._cuda_arrays import CUDADeviceArray
from ._cuda_toolkit import driver_version, load_toolkit, package_version, toolkit_problem
from .validate import BFLOAT16

_USE_CPU = "gpukit uses its CPU simulator instead (get_backend('cpu'))"


def numba_cuda() -> Any:
    """The `numba.cuda` module, imported on first use."""
    from numba import cuda
    return cuda


@functools.cache
def simulator_enabled() -> bool:
    """Whether numba.cuda is Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1) in this process."""
    try:
        return bool(numba_cuda().config.ENABLE_CUDASIM)
    except Exception:  # noqa: BLE001 - numba-cuda missing or broken: read the switch itself
        return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


@functools.cache
def cuda_unavailable_reason() -> str | None:
    """None if the CUDA backend can run here, else why not. Cached; never raises."""
    try:
        return _probe()
    except Exception as exc:  # noqa: BLE001 - availability checks never raise
        return f"checking for CUDA failed: {type(exc).__name__}: {exc}"


def _probe() -> str | None:
    if importlib.util.find_spec("numba") is None:
        return "numba is not installed (pip install numba numba-cuda); " + _USE_CPU
    if package_version("numba-cuda") is None:
        return "numba-cuda is not installed (pip install numba-cuda); " + _USE_CPU
    try:
        numba_cuda()
    except Exception as exc:  # noqa: BLE001 - ImportError, OSError from a missing library, ...
        return f"numba.cuda cannot be imported ({type(exc).__name__}: {exc}); " + _USE_CPU
    if simulator_enabled():
        return None
    reason = _driver_problem()
    if reason is not None:
        return reason
    if device_count() == 0:
        return "the CUDA driver found no GPU; " + _USE_CPU
    reason = toolkit_problem(load_toolkit(), driver_version())
    if reason is not None:
        return f"{reason}; until then " + _USE_CPU
    return context_problem(0)


def create_context(device_id: int) -> None:
    """Make GPU `device_id`'s primary context current (what every later CUDA call needs)."""
    cuda = numba_cuda()
    cuda.select_device(device_id)
    cuda.current_context()


@functools.cache
def context_problem(device_id: int) -> str | None:
    """Why no CUDA context can be made on GPU `device_id` (out of memory, exclusive-process
    mode, a driver that does not match, ...), or None. Cached; never raises."""
    try:
        create_context(device_id)
    except Exception as exc:  # noqa: BLE001 - CudaAPIError, CudaSupportError, ...: reported
        text = " ".join(f"{type(exc).__name__}: {exc}".split())
        return (f"a CUDA context could not be created on GPU {device_id} ({text}); another "
                "process may hold the GPU, or its memory may be full (nvidia-smi shows both); "
                + _USE_CPU)
    return None


def _driver_problem() -> str | None:
    """Why the CUDA driver cannot be used, or None. Reads numba-cuda's own driver loader."""
    from numba.cuda.cudadrv import driver as driver_module
    from numba.cuda.cudadrv.error import CudaSupportError

    driver = driver_module.driver
    detail = driver.initialization_error  # set when libcuda.so could not be loaded
    if detail is None:
        try:
            if driver.is_available:  # runs cuInit
                return None
            detail = driver.initialization_error
        except CudaSupportError as exc:
            detail = str(exc)
    text = " ".join(str(detail).split())
    if "cannot be found" in text:
        return ("no CUDA driver found (libcuda.so): this machine has no NVIDIA driver or GPU; "
                + _USE_CPU)
    if "error occurred during load" in text:
        return f"the CUDA driver (libcuda.so) failed to load: {text}; " + _USE_CPU
    return (f"the CUDA driver failed to initialise ({text}); check that a GPU is visible "
            "(nvidia-smi, CUDA_VISIBLE_DEVICES); " + _USE_CPU)


def device_count() -> int:
    """How many GPUs numba-cuda sees (1 under its simulator). Call once CUDA is usable."""
    return 1 if simulator_enabled() else len(numba_cuda().gpus)


@functools.cache
def cupy_usable() -> bool:
    """Whether CuPy imports and sees a GPU (never under Numba's simulator). Never raises."""
    if simulator_enabled() or importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - CuPy raises its own errors when there is no driver
        return False


def cupy_holds(dtype: Any) -> bool:
    """Whether CuPy makes arrays of `dtype`: every dtype device arrays hold, but bfloat16
    (ml_dtypes') only from CuPy 14 on; older CuPy's arrays of it are Numba's."""
    if dtype != BFLOAT16:
        return True
    import cupy
    return int(cupy.__version__.split(".")[0]) >= 14


class ArrayTable:
    """Device arrays by identity, with a value each, without keeping them alive.

    CuPy arrays are unhashable, so a dict keyed by id() holds a weak reference that removes the
    entry when the array is collected (then its id may be reused by another object).
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Callable[[], Any], Any]] = {}

    def add(self, array: Any, value: Any = None) -> None:
        key = id(array)
        try:
            ref: Callable[[], Any] = weakref.ref(array, functools.partial(self._drop, key))
        except TypeError:  # not weak-referenceable: keep it alive so its id stays unique
            ref = functools.partial(_identity, array)
        self._entries[key] = (ref, value)

    def _drop(self, key: int, ref: Any) -> None:
        entry = self._entries.get(key)
        if entry is not None and entry[0] is ref:
            del self._entries[key]

    def __contains__(self, array: Any) -> bool:
        entry = self._entries.get(id(array))
        return entry is not None and entry[0]() is array

    def get(self, array: Any, default: Any = None) -> Any:
        return self._entries[id(array)][1] if array in self else default

    def pop(self, array: Any, default: Any = None) -> Any:
        if array not in self:
            return default
        return self._entries.pop(id(array))[1]

    def arrays(self) -> list[Any]:
        """Every array still alive."""
        return [array for ref, _ in self._entries.values() if (array := ref()) is not None]

    def values(self) -> list[Any]:
        """The value of every array still alive."""
        return [value for ref, value in self._entries.values() if ref() is not None]

    def clear(self) -> None:
        self._entries.clear()


def _identity(value: Any) -> Any:
    return value


def device_kind(obj: Any) -> str | None:
    """"gpukit" (a CUDABackend array), "cupy", "numba" (Numba's simulator's arrays too), "cai"
    (another GPU array) or None."""
    if isinstance(obj, CUDADeviceArray):
        return "gpukit"
    if type(obj).__module__.partition(".")[0] == "cupy" and hasattr(obj, "get"):
        return "cupy"
    if getattr(obj, "__cuda_ndarray__", False):
        return "numba"
    if hasattr(obj, "__cuda_array_interface__"):
        return "cai"
    return None


def host_memory() -> tuple[int, int]:
    """(free_bytes, total_bytes) of host RAM, or (0, 0) where the OS does not say."""
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page
    except (AttributeError, ValueError, OSError):
        return 0, 0
