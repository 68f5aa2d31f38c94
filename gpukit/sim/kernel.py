"""Kernels for the simulator: bind a Numba CUDA kernel's `cuda` to the simulator and compile it.

The kernel's module globals are copied when the kernel is compiled (as Numba captures them) and,
like its closure cells, every reference to the `numba.cuda` module, to the `numba` package, or to
a function imported from `numba.cuda` is replaced by the simulator's stand-in. Nothing process-wide
is patched: the same function still compiles with numba-cuda for a real GPU.
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable
from typing import Any

from ..errors import UnsupportedKernelError
from .calls import call
from .intrinsics import SIM_CUDA
from .runtime import HELPERS
from .transform import Transformed, transform


class _NumbaProxy:
    """`numba` as a kernel sees it: `numba.cuda` is the simulator's, the rest is numba's own."""

    def __init__(self, numba: types.ModuleType):
        self._numba = numba

    def __getattr__(self, name: str) -> Any:
        if name == "cuda":
            return SIM_CUDA
        return getattr(self._numba, name)


def _rebind(value: Any) -> Any:
    """The simulator's stand-in for `value` if it is numba.cuda or a piece of it, else value."""
    if isinstance(value, types.ModuleType):
        if value.__name__ == "numba.cuda":
            return SIM_CUDA
        if value.__name__ == "numba":
            return _NumbaProxy(value)
        return value
    module = getattr(value, "__module__", None) or ""
    if module.startswith("numba.cuda") and not hasattr(value, "py_func"):
        name = getattr(value, "__name__", None)
        if name and name in dir(SIM_CUDA):
            return getattr(SIM_CUDA, name)
        if name in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
            return getattr(type(SIM_CUDA), name).fget(SIM_CUDA)
    return value


def _bound_globals(func: types.FunctionType) -> dict[str, Any]:
    env = {name: _rebind(value) for name, value in func.__globals__.items()}
    env.update(HELPERS, _g_call=call)
    env.setdefault("__builtins__", func.__globals__.get("__builtins__", __builtins__))
    return env


def instantiate(func: types.FunctionType, is_device: bool) -> tuple[Transformed, Callable]:
    """Transform `func` and build the callable with rebound globals and closure cells."""
    tr = transform(func, is_device=is_device)
    env = _bound_globals(func)
    exec(tr.code, env)  # noqa: S102 - our own generated code; defines _g_factory in env
    cells = []
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            cells.append(_rebind(cell.cell_contents))
        except ValueError:  # an empty cell: the closure variable was never assigned
            raise UnsupportedKernelError(
                f"kernel '{func.__name__}' uses the closure variable '{name}' before it is set",
                kernel=func.__name__) from None
    return tr, env["_g_factory"](*cells)


_DEVICE_CACHE: weakref.WeakKeyDictionary[Any, tuple[Transformed, Callable]] = \
    weakref.WeakKeyDictionary()


def device_function(py_func: types.FunctionType) -> Callable:
    """The simulator version of a device function: called as fn(mask, *args)."""
    entry = _DEVICE_CACHE.get(py_func)
    if entry is None:
        entry = _DEVICE_CACHE[py_func] = instantiate(py_func, is_device=True)
    return entry[1]


def python_function(kernel: Any) -> types.FunctionType:
    """The Python function of a kernel given as a function, a numba dispatcher or a SimKernel."""
    func = getattr(kernel, "py_func", kernel)
    if not isinstance(func, types.FunctionType):
        raise TypeError(
            f"a kernel must be a Python function (optionally decorated with @cuda.jit), not "
            f"{type(kernel).__name__}")
    return func


class SimKernel:
    """A kernel compiled for the simulator. Launch with kernel[grid, block](*args)."""

    def __init__(self, func: Any, backend: Any, signature: Any = None):
        self.py_func = python_function(func)
        self.backend = backend
        self.signature = signature
        self.name = self.py_func.__name__
        self.__name__ = self.name
        self.__doc__ = self.py_func.__doc__
        self.transformed, self.fn = instantiate(self.py_func, is_device=False)
        self.param_names = self.py_func.__code__.co_varnames[:self.py_func.__code__.co_argcount]

    def __getitem__(self, config: Any) -> _Launcher:
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            from ..errors import LaunchConfigError
            raise LaunchConfigError(
                f"launch a kernel as kernel[grid, block](...) or kernel[grid, block, stream, "
                f"dynamic_shared_bytes](...), got kernel[{config!r}]")
        grid, block, *rest = config
        stream = rest[0] if rest else 0
        dynamic = rest[1] if len(rest) > 1 else 0
        return _Launcher(self, grid, block, stream, dynamic)

    def __call__(self, *args: Any) -> None:
        from ..errors import LaunchConfigError
        raise LaunchConfigError(
            f"kernel '{self.name}' needs a launch configuration: kernel[grid, block](...)")

    def occupancy(self, block: Any, device: Any = None, args: Any = None,
                  dynamic_shared_bytes: int = 0) -> Any:
        """Theoretical occupancy of this kernel at `block` threads on `device`.

        Registers and static shared memory come from ptxas (the `inspect` extra) for the
        signature given at compile time or of `args`.
        """
        from ..inspect import kernel_occupancy
        signature = self.signature if args is None else tuple(args)
        if signature is None:
            raise TypeError(f"kernel '{self.name}' has no signature: pass args=(...) or compile "
                            "it with a signature")
        return kernel_occupancy(self, block, device or self.backend.profile, signature,
                                dynamic_shared_bytes=dynamic_shared_bytes)

    def explain(self) -> str:
        """The lock-step Python the simulator runs for this kernel (for the curious)."""
        return self.transformed.source

    def __repr__(self) -> str:
        return f"<gpukit kernel '{self.name}' on {self.backend.name}>"


class _Launcher:
    def __init__(self, kernel: SimKernel, grid: Any, block: Any, stream: Any, dynamic: Any):
        self.kernel, self.grid, self.block = kernel, grid, block
        self.stream, self.dynamic = stream, dynamic

    def __call__(self, *args: Any) -> None:
        self.kernel.backend.launch_kernel(self.kernel, self.grid, self.block, *args,
                                          stream=self.stream,
                                          dynamic_shared_bytes=self.dynamic)
