"""A kernel compiled for CPUBackend: launch it as kernel[grid, block](...).

It pairs the simulator's compiled kernel (`gpukit.sim.kernel.SimKernel`) with the backend that
launches it, and adds what learners call on a kernel: its launch configuration, `occupancy`
and `explain`.
"""

from __future__ import annotations

from typing import Any

from ..errors import LaunchConfigError
from ..sim.kernel import SimKernel


class CPUKernel:
    """A Numba CUDA kernel compiled for CPUBackend. Launch with kernel[grid, block](*args)."""

    def __init__(self, sim: SimKernel, backend: Any, signature: Any = None):
        self.sim = sim
        self.backend = backend
        self.signature = signature
        self.py_func = sim.py_func
        self.name = sim.name
        self.__name__ = sim.name
        self.__doc__ = sim.py_func.__doc__
        self.param_names = sim.param_names
        self.checked_geometry: dict = {}  # (grid, block, dynamic shared, limits on) -> checked

    @property
    def static_shared_bytes(self) -> int:
        """Static shared memory per block, laid out at compile time as on a GPU."""
        return self.sim.static_shared_bytes

    def __getitem__(self, config: Any) -> _Launcher:
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise LaunchConfigError(
                f"launch a kernel as kernel[grid, block](...) or kernel[grid, block, stream, "
                f"dynamic_shared_bytes](...), got kernel[{config!r}]")
        grid, block, *rest = config
        # only what was given: a launch without options takes the backend's defaults as they are
        options = dict(zip(("stream", "dynamic_shared_bytes"), rest))
        return _Launcher(self, grid, block, options)

    def __call__(self, *args: Any) -> None:
        raise LaunchConfigError(
            f"kernel '{self.name}' needs a launch configuration: kernel[grid, block](...)")

    def occupancy(self, block: Any, device: Any = None, args: Any = None,
                  dynamic_shared_bytes: int = 0) -> Any:
        """Theoretical occupancy of this kernel at `block` threads on `device`.

        Registers and static shared memory come from ptxas (the `inspect` extra) for the
        signature given at compile time or of `args`.
        """
        from ..occupancy.resources import kernel_occupancy  # lazy: loads numba-cuda's compiler
        signature = self.signature if args is None else tuple(args)
        if signature is None:
            raise TypeError(f"kernel '{self.name}' has no signature: pass args=(...) or compile "
                            "it with a signature")
        return kernel_occupancy(self, block, device or self.backend.profile, signature,
                                dynamic_shared_bytes=dynamic_shared_bytes)

    def explain(self) -> str:
        """The Python the simulator compiles for this kernel (for the curious)."""
        return self.sim.explain()

    def __repr__(self) -> str:
        return f"<gpukit kernel '{self.name}' on {self.backend.name}>"


class _Launcher:
    def __init__(self, kernel: CPUKernel, grid: Any, block: Any, options: dict[str, Any]):
        self.kernel, self.grid, self.block, self.options = kernel, grid, block, options

    def __call__(self, *args: Any) -> None:
        self.kernel.backend.launch_kernel(self.kernel, self.grid, self.block, *args,
                                          **self.options)
