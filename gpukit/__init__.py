"""gpukit: learn and explore GPU computing in Python.

Two backends share one interface: CPUBackend, a GPU simulator that runs ordinary Numba CUDA kernels
on the CPU and catches the bugs real hardware hides, and CUDABackend for real NVIDIA GPUs.
`import gpukit` needs only numpy; numba, CuPy, matplotlib and ipywidgets load where they are used.
"""

from __future__ import annotations

from . import errors, trace
from .backends import (
    available_backends,
    current_backend,
    get_backend,
    register_backend,
    registered_backends,
)
from .devices import DeviceProfile, get_profile, list_profiles

__version__ = "0.1.0"

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
    "trace",
]
