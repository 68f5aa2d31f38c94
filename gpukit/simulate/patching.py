"""Exactly what the simulation mode replaces in numba.cuda, and putting it all back.

`PATCHED` lists every attribute, in which module or class, and why. `apply()` saves each original
and installs gpukit's; `restore()` puts every original back (a test checks they are the very same
objects). Nothing else in the process changes, except `sys.excepthook` while it is Python's own
(so a script's traceback ends at the user's launch line). Code that imported a function by name
before the simulation started (`from numba.cuda import to_device`) keeps the original.
"""

from __future__ import annotations

import sys
from typing import Any

# (module, or a class: "CUDADispatcher", "CUDACodeLibrary", "Driver", "_Runtime",
#  "CUDAUFuncMechanism", "_CUDAGUFuncCallSteps", "DeviceNDArrayBase" or "DeviceNDArray"; attribute,
#  replacement in gpukit.simulate, why)
_HOST = "host_api"
_DISPATCH = "dispatch"
_NRT = "nrt"
_COMPILED = "compiled"
_LAUNCHCONFIG = "launchconfig"
_NAMES_HOST = (
    "is_available", "cuda_error", "is_supported_version", "detect", "list_devices",
    "select_device", "get_current_device", "current_context", "close", "synchronize",
    "defer_cleanup", "profile_start", "profile_stop", "profiling", "to_device", "device_array",
    "device_array_like", "pinned_array", "pinned_array_like", "mapped_array",
    "mapped_array_like", "managed_array", "pinned", "mapped", "is_cuda_array", "as_cuda_array",
    "from_cuda_array_interface",
    "stream", "default_stream", "legacy_default_stream", "per_thread_default_stream",
    "external_stream", "event", "event_elapsed_time",
)
PATCHED: list[tuple[str, str, str, str, str]] = [
    *[("numba.cuda", name, _HOST, name, "the host API runs on the simulated device")
      for name in _NAMES_HOST],
    ("numba.cuda", "gpus", "", "gpus", "the device list holds the simulated device"),
    ("numba.cuda", "jit", _DISPATCH, "jit", ("dispatchers made now need no GPU (eager "
                                             "signatures are honoured at launch instead of "
                                             "compiled)")),
    ("numba.cuda.decorators", "jit", _DISPATCH, "jit", "as numba.cuda.jit"),
    *[("numba.cuda.api", name, _HOST, name, "as in numba.cuda (numba's own modules call these)") for name in _NAMES_HOST if name not in ("is_available", "cuda_error",
                                                         "is_supported_version")],
    ("numba.cuda.api", "gpus", "", "gpus", "as numba.cuda.gpus"),
    ("numba.cuda.cudadrv.devicearray", "auto_device", _HOST, "auto_device",
     "numba's helpers that copy host arrays to the device"),
    ("numba.cuda.cudadrv.devices", "get_context", _HOST, "current_context",
     "numba's helpers (its test decorators among them) ask the context for the device"),
    ("numba.cuda.dispatcher", "get_context", _HOST, "current_context",
     "compiled kernels ask the context for occupancy (max_cooperative_grid_blocks)"),
    ("numba.cuda.dispatcher", "get_current_device", _HOST, "get_current_device",
     "typing eager device functions asks for the device's compute capability"),
    ("numba.cuda.compiler", "get_current_device", _HOST, "get_current_device",
     "as numba.cuda.dispatcher.get_current_device"),
    ("Driver", "get_device", _HOST, "driver_get_device",
     "numba-cuda's library kernels (cuda.kernels.transpose) ask the driver for the device"),
    ("CUDADispatcher", "__getitem__", _DISPATCH, "dispatcher_getitem",
     ("kernel[grid, block, stream, shared] launches on the simulator (dispatchers made "
      "before the simulation started too)")),
    ("CUDADispatcher", "_compile_for_args", _LAUNCHCONFIG, "compile_for_args",
     ("a launch that compiles, where the program takes part in compiling (a wrapper, a "
      "rewrite), types the kernel as numba-cuda does with the launch's configuration current")),
    ("numba.cuda.launchconfig", "current_launch_config", _LAUNCHCONFIG, "current_launch_config",
     "the configuration of the simulated launch compiling on this thread"),
    ("CUDADispatcher", "configure", _DISPATCH, "dispatcher_configure", "as __getitem__"),
    ("CUDADispatcher", "forall", _DISPATCH, "dispatcher_forall", "kernel.forall(n)"),
    ("CUDADispatcher", "call", _DISPATCH, "dispatcher_call",
     "launches configured before the simulation started"),
    ("CUDADispatcher", "specialize", _DISPATCH, "dispatcher_specialize",
     ("numba-cuda compiles the specialization for a GPU now; the simulator's is compiled "
      "when looked at")),
    ("CUDACodeLibrary", "get_cufunc", _COMPILED, "codelibrary_get_cufunc",
     ("numba-cuda's compiled kernels (overloads, inspect_asm, regs_per_thread) load onto the "
      "simulated device: attributes from ptxas, no driver")),
    *[(where, name, _HOST, name, ("numba's ufuncs and gufuncs broadcast a device array by "
                                  "building numba's DeviceNDArray over its gpu_data: the "
                                  "simulated array's view instead, which copies to the host"))
      for where, name in (("CUDAUFuncMechanism", "broadcast_device"),
                          ("_CUDAGUFuncCallSteps", "_broadcast_scalar_input"),
                          ("_CUDAGUFuncCallSteps", "_broadcast_add_axis"))],
    ("DeviceNDArrayBase", "__init__", _HOST, "numba_array_init",
     ("numba's own DeviceNDArray made without memory (devicearray.from_array_like, "
      "cuda.kernels.transpose) gets simulated memory, as numba-cuda allocates GPU memory")),
    *[(where, name, _HOST, replacement,
       ("numba's own DeviceNDArray over simulated memory copies and indexes through the "
        "simulated array it views (numba-cuda's way goes through the driver)"))
      for where, name, replacement in (
          ("DeviceNDArrayBase", "copy_to_host", "numba_array_copy_to_host"),
          ("DeviceNDArrayBase", "copy_to_device", "numba_array_copy_to_device"),
          ("DeviceNDArray", "__getitem__", "numba_array_index"),
          ("DeviceNDArray", "getitem", "numba_array_getitem"),
          ("DeviceNDArray", "__setitem__", "numba_array_assign"),
          ("DeviceNDArray", "setitem", "numba_array_setitem"))],
    *[("_Runtime", name, _NRT, "nothing",
       ("numba-cuda's NRT memory system lives on a GPU; the simulator's kernels allocate "
        "through Numba's CPU runtime, which needs no setting up"))
      for name in ("ensure_allocated", "allocate", "ensure_initialized", "initialize",
                   "set_memsys_to_module")],
    *[("_Runtime", name, _NRT, name,
       "NRT statistics are those of Numba's CPU runtime, which the simulator's kernels use")
      for name in ("memsys_enable_stats", "memsys_disable_stats", "memsys_stats_enabled",
                   "get_allocation_stats", "memsys_get_stats_alloc", "memsys_get_stats_free",
                   "memsys_get_stats_mi_alloc", "memsys_get_stats_mi_free", "print_memsys")],
]

_MISSING = object()
_saved: list[tuple[Any, str, Any]] = []
_saved_excepthook: Any = None


def _target(where: str) -> Any:
    if where == "CUDADispatcher":
        from numba.cuda.dispatcher import CUDADispatcher
        return CUDADispatcher
    if where == "CUDACodeLibrary":
        from numba.cuda.codegen import CUDACodeLibrary
        return CUDACodeLibrary
    if where == "Driver":
        from numba.cuda.cudadrv.driver import Driver
        return Driver
    if where in ("CUDAUFuncMechanism", "_CUDAGUFuncCallSteps"):
        from numba.cuda import vectorizers
        return getattr(vectorizers, where)
    if where in ("DeviceNDArrayBase", "DeviceNDArray"):
        from numba.cuda.cudadrv import devicearray
        return getattr(devicearray, where)
    if where == "_Runtime":
        from numba.cuda.memory_management.nrt import _Runtime
        return _Runtime
    __import__(where)
    return sys.modules[where]


def _replacement(module: str, name: str) -> Any:
    from . import compiled, dispatch, host_api, launchconfig, nrt
    if module == "":
        return _GpusProxy()
    modules = {_HOST: host_api, _DISPATCH: dispatch, _NRT: nrt, _COMPILED: compiled,
               _LAUNCHCONFIG: launchconfig}
    return getattr(modules[module], name)


class _GpusProxy:
    """`cuda.gpus` that follows the active simulation."""

    def _list(self) -> Any:
        from .session import current
        return current(required=True).gpus

    def __getitem__(self, devnum: Any) -> Any:
        return self._list()[devnum]

    def __iter__(self) -> Any:
        return iter(self._list())

    def __len__(self) -> int:
        return len(self._list())

    @property
    def current(self) -> Any:
        return self._list().current

    def __str__(self) -> str:
        return str(self._list())


def original(name: str, where: str = "numba.cuda") -> Any:
    """The numba.cuda object the simulation replaced (the current one when not patched)."""
    for target, attr, value in _saved:
        if attr == name and getattr(target, "__name__", None) == where:
            return value
    return getattr(_target(where), name)


def apply() -> None:
    """Install the simulated host API and launch path (once; see `restore`)."""
    global _saved_excepthook
    if _saved:
        return
    for where, attr, module, name, _ in PATCHED:
        target = _target(where)
        value = target.__dict__.get(attr, _MISSING) if isinstance(target, type) else \
            getattr(target, attr, _MISSING)
        _saved.append((target, attr, value))
        setattr(target, attr, _replacement(module, name))
    from .tracebacks import excepthook
    if sys.excepthook is sys.__excepthook__:
        _saved_excepthook = sys.excepthook
        sys.excepthook = excepthook


def restore() -> None:
    """Put back every original object `apply` replaced."""
    global _saved_excepthook
    from .compiled import give_back
    give_back()
    while _saved:
        target, attr, value = _saved.pop()
        if value is _MISSING:
            delattr(target, attr)
        else:
            setattr(target, attr, value)
    from .tracebacks import excepthook
    if _saved_excepthook is not None and sys.excepthook is excepthook:
        sys.excepthook = _saved_excepthook
    _saved_excepthook = None


def is_applied() -> bool:
    return bool(_saved)
