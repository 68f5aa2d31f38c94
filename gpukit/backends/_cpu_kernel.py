"""A kernel compiled for CPUBackend: launch it as kernel[grid, block](...).

It pairs the simulator's compiled kernel (`gpukit.sim.kernel.SimKernel`) with the backend that
launches it, and adds what learners call on a kernel: its launch configuration, `occupancy`
and `explain`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import LaunchConfigError, UnsupportedKernelError
from ..sim.kernel import NeedsArgumentDtypes, NeedsArgumentTypes, SimKernel, python_function
from ..sim.launch import argument_types


class CPUKernel:
    """A Numba CUDA kernel compiled for CPUBackend. Launch with kernel[grid, block](*args).

    A kernel that declares a shared or local array with an argument's dtype (`dtype=a.dtype`)
    is laid out for each launch's argument dtypes, as numba-cuda compiles one overload per
    argument types: `sim` is then the layout of the latest launch (`select` picks it). One that
    calls an `@overload` whose implementation uses CUDA is rewritten for each launch's argument
    types (numba-cuda picks the implementation by them)."""

    def __init__(self, func: Any, backend: Any, signature: Any = None, debug: bool = False):
        self.py_func = python_function(func)
        self.backend = backend
        self.signature = signature
        self.debug = debug
        self.name = self.__name__ = self.py_func.__name__
        self.__doc__ = self.py_func.__doc__
        code = self.py_func.__code__
        self.param_names = code.co_varnames[:code.co_argcount]
        self.checked_geometry: dict = {}  # (grid, block, dynamic shared, limits on, static) -> ...
        self.occupancy_of: dict = {}  # (device, signature, block, shared bytes) -> a partial
        self._layouts: dict[tuple, SimKernel] | None = None  # by argument dtypes, where needed
        self._by_types = False  # ... or by their Numba types
        try:
            self._sim: SimKernel | None = SimKernel(self.py_func, signature, debug)
        except NeedsArgumentDtypes as exc:
            self._sim, self._layouts = None, {}
            self._by_types = isinstance(exc, NeedsArgumentTypes)

    @property
    def sim(self) -> SimKernel:
        """The simulator's kernel (for a kernel laid out by argument dtypes: the latest
        launch's)."""
        if self._sim is None:
            what = ("calls an @overload whose implementation uses CUDA, so how it is simulated"
                    if self._by_types else "declares shared or local memory with an argument's "
                    "dtype, so its layout")
            raise UnsupportedKernelError(
                f"kernel '{self.name}' {what} depends on the arguments' types: launch it first "
                "(or compile it with a signature)", kernel=self.name)
        return self._sim

    def select(self, args: tuple) -> SimKernel:
        """The simulator's kernel for launch arguments `args` (made on first use)."""
        if self._layouts is None:
            return self.sim
        dtypes = tuple(getattr(arg, "dtype", None) for arg in args)
        key = argument_types(args) if self._by_types else dtypes
        sim = self._layouts.get(key)
        if sim is None:
            try:
                sim = SimKernel(self.py_func, None, self.debug,
                                {name: dtype for name, dtype in zip(self.param_names, dtypes)
                                 if isinstance(dtype, np.dtype)},
                                key if self._by_types else None)
            except NeedsArgumentTypes:  # it declares by dtype and calls such an overload
                self._by_types, self._layouts = True, {}
                return self.select(args)
            self._layouts[key] = sim
        self._sim = sim
        return sim

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
