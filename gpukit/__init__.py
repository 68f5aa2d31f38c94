"""gpukit: learn and explore GPU computing in Python.

Two backends share one interface: CPUBackend, a GPU simulator that runs ordinary Numba CUDA kernels
on the CPU and catches the bugs real hardware hides, and CUDABackend for real NVIDIA GPUs.
`import gpukit` needs only numpy; numba, CuPy, matplotlib and ipywidgets load where they are used.
`gpukit.simulate(...)` (loaded on first use) runs numba.cuda programs unchanged on the simulator;
`%load_ext gpukit` adds the `%gpukit` magic to IPython. In IPython, gpukit's errors show the
learner's frames, not gpukit's (`gpukit.tracebacks(False)` turns that off; gpukit.notebook).
"""

from __future__ import annotations

from typing import Any

from . import errors, trace
from .backends import (
    available_backends,
    current_backend,
    get_backend,
    register_backend,
    registered_backends,
)
from .devices import DeviceProfile, get_profile, list_profiles
from .notebook import install_default as _install_tracebacks
from .notebook import show_errors, tracebacks

__version__ = "0.1.0"

_install_tracebacks()   # in IPython: gpukit's errors show the learner's frames (gpukit.notebook)


def __getattr__(name: str) -> Any:
    if name == "simulate":  # lazily: the simulation mode's module is callable, gpukit.simulate()
        import importlib
        return importlib.import_module(".simulate", __name__)
    raise AttributeError(f"module 'gpukit' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext gpukit`: registers the `%gpukit` line magic (`%gpukit simulate [device]`)."""
    _install_tracebacks()
    from .simulate.magic import register  # lazy: IPython loads it only for %load_ext gpukit
    register(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .simulate.magic import unregister  # lazy: as in load_ipython_extension
    unregister(ipython)


__all__ = [
    "DeviceProfile",
    "__version__",
    "available_backends",
    "current_backend",
    "errors",
    "get_backend",
    "get_profile",
    "list_profiles",
    "register_backend",
    "registered_backends",
    "show_errors",
    "simulate",
    "trace",
    "tracebacks",
]
