"""The GPU simulator behind CPUBackend: kernels compiled by Numba, run thread by thread, checked.

`kernel` (with `compiler`, `transform`, `names`, `source`, `exec_sources`, `regions`,
`overloads`) turns a Numba CUDA kernel into compiled code; `launch` runs a launch (`sync`
schedules threads at barriers and warp intrinsics, `regions` splits barrier-only kernels into
per-thread loops between barriers; `access`, `atomics`, `intrinsics`, `runtime`, `vectors` and
`eager` are what the compiled code calls, `cache` and `engine_cache` keep what is compiled;
`report` words errors); `memory` is the simulated device memory and `streams` its modeled
timeline. It imports nothing from the rest of gpukit but `gpukit.errors`: the backend validates
launches and passes plain values in. It models execution and memory semantics, not timing.
"""

from . import exec_sources  # noqa: F401 - its audit hook keeps the text of exec()-built kernels
from .layout import CHECK_NAMES

CHECKS = ("launch_limits", *CHECK_NAMES)  # the checks a launch can switch on and off

__all__ = ["CHECKS"]
