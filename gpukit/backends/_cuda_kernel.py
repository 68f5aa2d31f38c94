"""Kernels of the CUDA backend: turning functions into numba-cuda kernels and launching them.

`make_dispatcher` accepts what DESIGN.md section 3 calls a gpukit kernel (a plain function, a
`cuda.jit` kernel, or a GPU-Puzzles style factory taking `cuda`); `CUDAKernel` wraps numba's
dispatcher so launches go through the backend, which checks them and counts them.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from ..errors import ArgumentTypeError, LaunchConfigError


class CUDAKernel:
    """A compiled kernel: `kernel[grid, block](*args)` or
    `kernel[grid, block, stream, dynamic_shared_bytes](*args)`, launched through its backend.

    `py_func` is the Python function, `name` its name, `param_names` its parameters and
    `dispatcher` numba's kernel object, whose own attributes (`inspect_types`, `definitions`,
    ...) are readable here too. `occupancy(...)` as on the simulator's kernels.
    """

    def __init__(self, dispatcher: Any, py_func: Callable, backend: Any):
        self.dispatcher = dispatcher
        self.py_func = py_func
        self.backend = backend
        self.name: str = getattr(py_func, "__name__", "kernel")
        try:
            self.param_names = list(inspect.signature(py_func).parameters)
        except (TypeError, ValueError):
            self.param_names = []

    def __getitem__(self, config: Any) -> Callable[..., Any]:
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise LaunchConfigError(
                f"launch kernel '{self.name}' as {self.name}[grid, block](...) or "
                f"{self.name}[grid, block, stream, dynamic_shared_bytes](...), got [{config!r}]")
        grid, block, stream, shared_bytes = (*config, 0, 0)[:4]
        return functools.partial(self.backend.launch_kernel, self, grid, block,
                                 stream=stream or 0, dynamic_shared_bytes=shared_bytes)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise LaunchConfigError(
            f"kernel '{self.name}' needs a launch configuration: call it as "
            f"{self.name}[grid, block](...)")

    def occupancy(self, block: Any, device: Any = None, args: Any = None,
                  dynamic_shared_bytes: int = 0) -> Any:
        """Theoretical occupancy of this kernel at `block` threads on `device` (default: this
        GPU), from its registers and static shared memory for the types of `args` (default:
        its only compiled signature)."""
        from ..occupancy.resources import kernel_occupancy  # lazy: numba loads on first use
        return kernel_occupancy(self, block, device or self.backend.profile,
                                None if args is None else tuple(args),
                                dynamic_shared_bytes=dynamic_shared_bytes)

    def __getattr__(self, attr: str) -> Any:
        if attr in ("dispatcher", "__setstate__"):  # not set yet: avoid recursion
            raise AttributeError(attr)
        return getattr(self.dispatcher, attr)

    def __repr__(self) -> str:
        return f"<CUDAKernel {self.name!r}>"


def is_factory(func: Any) -> bool:
    """A GPU-Puzzles style factory: a plain function whose only parameter is named `cuda`."""
    return inspect.isfunction(func) and list(inspect.signature(func).parameters) == ["cuda"]


def make_dispatcher(cuda: Any, func: Any, signature: Any = None, *, cache: bool = False,
                    compile_now: bool = True) -> tuple[Callable, Any]:
    """(py_func, numba dispatcher) for a plain function, a `cuda.jit` kernel or a factory.

    With `signature` the kernel is compiled at once (unless `compile_now` is False, as under
    Numba's simulator, which has nothing to compile); `cache` uses Numba's on-disk cache where
    the function has a file to cache against.
    """
    if is_factory(func):
        func = func(cuda)
    if hasattr(func, "py_func") and hasattr(func, "__getitem__"):  # already a cuda.jit kernel
        py_func = func.py_func
        if getattr(func, "_device", False) or getattr(func, "targetoptions", {}).get("device"):
            raise ArgumentTypeError(f"'{py_func.__name__}' is a device function "
                                    "(cuda.jit(device=True)); launch a kernel that calls it")
        if signature is not None and compile_now:
            func.compile(signature)
        return py_func, func
    if not inspect.isfunction(func):
        raise ArgumentTypeError(f"compile_kernel expects a Python function or a numba.cuda.jit "
                                f"kernel, got {type(func).__name__}")
    if not cache:
        return func, cuda.jit(signature)(func)
    try:
        return func, cuda.jit(signature, cache=True)(func)
    except RuntimeError as exc:  # "cannot cache function ...": no source file to cache against
        if "cannot cache" not in str(exc):
            raise
        warnings.warn(f"kernel '{func.__name__}' cannot use Numba's on-disk cache ({exc}); "
                      "compiling it without the cache", RuntimeWarning, stacklevel=3)
        return func, cuda.jit(signature)(func)
