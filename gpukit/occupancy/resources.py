"""Kernel resources without a GPU: registers, shared, local and constant memory per kernel.

`resources(kernel, signature, device)` compiles the kernel to PTX with numba-cuda and assembles it
with `ptxas -v` for the device's architecture, then reads what ptxas reports. NVVM, NVRTC and ptxas
come from the wheels of the `inspect` extra (nvidia-cuda-nvcc-cu12, nvidia-cuda-nvrtc-cu12), never
from a system CUDA toolkit. On a real GPU of the same compute capability, Numba's own kernel
attributes are used instead. Results are cached per (function, signature, architecture, options).
`kernel_occupancy` and `theoretical_occupancy` combine them with `gpukit.occupancy`. Nothing here
runs a kernel.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from ..devices import DEFAULT_PROFILE, ComputeCapability
from . import ptxas as _ptxas
from .calculator import (
    DeviceLike,
    Occupancy,
    OccupancyInputError,
    OccupancyTypeError,
    occupancy,
    resolve_device,
)
from .ptxas import (  # the errors and the result type belong to this module's API too
    INSTALL_HINT,
    InspectCompileError,
    InspectError,
    InspectSignatureError,
    InspectUnavailableError,
    KernelResources,
    parse_ptxas_output,
    ptxas_path,
    unavailable_reason,
)

__all__ = [
    "DEFAULT_REGS_PER_THREAD", "INSTALL_HINT", "InspectCompileError", "InspectError",
    "InspectSignatureError", "InspectUnavailableError", "KernelResources", "clear_cache",
    "kernel_occupancy", "parse_ptxas_output", "ptx", "ptxas_path", "resources",
    "signature_from_args", "theoretical_occupancy", "unavailable_reason",
]

# What `theoretical_occupancy` assumes when it cannot ask ptxas (a common ptxas result for small
# kernels, and the calculator's usual default).
DEFAULT_REGS_PER_THREAD = 32


# -- signatures ----------------------------------------------------------------------------------

def _layout_of(value: Any) -> str:
    layout = getattr(value, "layout", None)
    if layout in ("C", "F", "A"):
        return layout
    flags = getattr(value, "flags", None)
    if flags is not None:
        if getattr(flags, "c_contiguous", False) or _flag(flags, "C_CONTIGUOUS"):
            return "C"
        if getattr(flags, "f_contiguous", False) or _flag(flags, "F_CONTIGUOUS"):
            return "F"
    return "A"


def _flag(flags: Any, name: str) -> bool:
    try:
        return bool(flags[name])
    except (KeyError, TypeError, IndexError):
        return False


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_of(value: Any, position: int) -> Any:
    import numpy as np
    from numba import from_dtype, typeof, types

    if isinstance(value, types.Type):
        return value
    if isinstance(value, (bool, int, float, complex, np.generic, np.ndarray)):
        try:
            return typeof(value)
        except Exception as exc:  # noqa: BLE001 - numba: "Int value is too large", odd dtypes
            raise InspectSignatureError(
                f"Numba cannot type argument {position} ({type(value).__name__} "
                f"{_short(value)}): {exc}") from None
    if hasattr(value, "_numba_type_"):  # Numba's own device arrays
        return value._numba_type_
    if all(hasattr(value, name) for name in ("dtype", "ndim", "shape")):  # gpukit, CuPy arrays
        try:
            return types.Array(from_dtype(np.dtype(value.dtype)), int(value.ndim),
                               _layout_of(value))
        except Exception as exc:  # noqa: BLE001 - numba raises several kinds for odd dtypes
            raise InspectSignatureError(
                f"argument {position} has dtype {value.dtype!r}, which Numba cannot type: {exc}"
            ) from None
    try:
        return typeof(value)
    except Exception:  # noqa: BLE001 - numba raises several kinds for untypeable values
        raise InspectSignatureError(
            f"cannot work out a Numba type for argument {position} ({type(value).__name__}); "
            "pass an explicit signature such as (float32[:], int32)") from None


def signature_from_args(args: Any) -> tuple:
    """Numba argument types for example arguments: numpy arrays and scalars, Python scalars,
    device arrays (gpukit's simulated ones, CuPy's, Numba's). Numba types pass through."""
    if not isinstance(args, (tuple, list)):
        args = (args,)
    return tuple(_type_of(value, i) for i, value in enumerate(args))


def _normalize_signature(signature: Any) -> tuple:
    from numba import types
    from numba.core import sigutils

    if isinstance(signature, str):
        try:
            args, _ = sigutils.normalize_signature(signature)
        except Exception as exc:  # noqa: BLE001 - numba raises several kinds for bad text
            raise InspectSignatureError(f"cannot read signature {signature!r}: {exc}") from None
        return tuple(args)
    if hasattr(signature, "args") and hasattr(signature, "return_type"):  # numba Signature
        return tuple(signature.args)
    if isinstance(signature, types.Type):
        return (signature,)
    return signature_from_args(signature)


# -- compiling -----------------------------------------------------------------------------------

def _py_func(kernel: Any) -> Callable:
    func = getattr(kernel, "py_func", kernel)
    if not callable(func) or not hasattr(func, "__code__"):
        raise InspectSignatureError(
            f"expected a kernel function, a Numba CUDA dispatcher or a gpukit kernel, got "
            f"{type(kernel).__name__}")
    return func


def _options(kernel: Any) -> tuple[tuple[str, Any], ...]:
    """The dispatcher options that change the compiled code (@cuda.jit(max_registers=...))."""
    opts = getattr(kernel, "targetoptions", None) or {}
    wanted = ("fastmath", "max_registers", "launch_bounds")
    return tuple((k, opts[k]) for k in wanted if opts.get(k) not in (None, False))


@contextlib.contextmanager
def _device_functions_without_gpu(cc: tuple[int, int]) -> Iterator[None]:
    """Let numba-cuda compile the device functions a kernel calls when there is no GPU.

    numba-cuda's CUDADispatcher.compile_device asks the current device for its compute
    capability, which fails without a driver; for the duration of one compile (under a lock,
    so compiles do not interleave) it is told the architecture being inspected.
    """
    from numba import cuda
    from numba.cuda import dispatcher

    if cuda.is_available():
        yield
        return
    with _compile_lock:
        original = dispatcher.get_current_device
        dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=cc)
        try:
            yield
        finally:
            dispatcher.get_current_device = original


_compile_lock = threading.Lock()


def _compile_ptx(py_func: Callable, sig: tuple, cc: tuple[int, int], options: dict) -> str:
    """numba-cuda's compile_ptx, errors turned into gpukit errors."""
    try:
        from numba import cuda
        from numba.cuda.cudadrv import error as cuda_error
    except Exception as exc:  # noqa: BLE001 - a broken numba-cuda install fails in many ways
        raise InspectUnavailableError(f"numba-cuda cannot be imported: {exc}") from None
    kwargs = {k: v for k, v in options.items() if k in ("fastmath", "launch_bounds")}
    try:
        with _device_functions_without_gpu(cc):
            text, _ = cuda.compile_ptx(py_func, sig, cc=cc, **kwargs)
    except (cuda_error.NvvmSupportError, cuda_error.NvrtcSupportError) as exc:
        raise InspectUnavailableError(
            f"numba-cuda cannot find its compiler ({exc}); install it with: {INSTALL_HINT}"
        ) from None
    except Exception as exc:
        name = getattr(py_func, "__name__", "kernel")
        detail = " ".join(str(exc).split())
        detail = detail[:300] + " ..." if len(detail) > 300 else detail
        raise InspectCompileError(
            f"numba could not compile {name}({', '.join(map(str, sig))}) for "
            f"sm_{cc[0]}{cc[1]}: {type(exc).__name__}: {detail}") from exc
    return text


# -- cache ---------------------------------------------------------------------------------------

_lock = threading.Lock()
# py_func -> {(signature, arch, options): PTX text / KernelResources or the InspectError raised}
_PTX_CACHE: weakref.WeakKeyDictionary[Callable, dict] = weakref.WeakKeyDictionary()
_RESOURCES_CACHE: weakref.WeakKeyDictionary[Callable, dict] = weakref.WeakKeyDictionary()


def clear_cache() -> None:
    """Forget every compiled PTX and resource report."""
    with _lock:
        _PTX_CACHE.clear()
        _RESOURCES_CACHE.clear()


def _cached(cache: weakref.WeakKeyDictionary, func: Callable, key: tuple,
            compute: Callable[[], Any]) -> Any:
    with _lock:
        entry = cache.get(func, {}).get(key)
    if entry is None:
        try:
            entry = compute()
        except InspectCompileError as exc:  # remember failures: a launch must not retry each time
            entry = exc
        with _lock:
            cache.setdefault(func, {})[key] = entry
    if isinstance(entry, InspectError):
        raise entry
    return entry


def _target(device: DeviceLike | None) -> ComputeCapability:
    cc, _ = resolve_device(DEFAULT_PROFILE if device is None else device)
    return cc


def ptx(kernel: Any, signature: Any, device: DeviceLike | None = None) -> str:
    """The PTX numba-cuda generates for `kernel` with `signature` on `device` (default: T4)."""
    func, sig, cc = _py_func(kernel), _normalize_signature(signature), _target(device)
    options = _options(kernel)
    _ptxas.ptxas_path()  # a missing extra is reported as such, before numba tries
    return _cached(_PTX_CACHE, func, (sig, cc.arch, options),
                   lambda: _compile_ptx(func, sig, cc.cc, dict(options)))


def _real_gpu_cc() -> tuple[int, int] | None:
    """The compute capability of the current real GPU, or None (no GPU, or a simulator: Numba's,
    or gpukit's simulation mode, whose numba.cuda answers for the simulated device)."""
    # lazy: the occupancy package does not otherwise depend on the simulation mode
    from ..simulate.session import current
    if current() is not None:
        return None
    return _detected_gpu_cc()


@functools.lru_cache(maxsize=1)
def _detected_gpu_cc() -> tuple[int, int] | None:
    if _ptxas.cudasim_active():
        return None
    try:
        from numba import cuda
        if not cuda.is_available():
            return None
        return tuple(cuda.get_current_device().compute_capability)
    except Exception:  # noqa: BLE001 - checking for a GPU never raises
        return None


def _gpu_resources(kernel: Any, func: Callable, sig: tuple,
                   cc: ComputeCapability) -> KernelResources:
    from numba import cuda
    dispatcher = getattr(kernel, "dispatcher", kernel)  # a gpukit CUDAKernel: numba's own
    if not hasattr(dispatcher, "get_regs_per_thread"):
        dispatcher = cuda.jit(func)
    compiled = dispatcher.compile(sig)
    return KernelResources(
        regs_per_thread=compiled.regs_per_thread, shared_mem_bytes=compiled.shared_mem_per_block,
        local_mem_bytes=compiled.local_mem_per_thread, const_mem_bytes=compiled.const_mem_size,
        barriers=None, arch=cc.arch, source="numba (driver attributes)",
        kernel_name=func.__name__)


def resources(kernel: Any, signature: Any, device: DeviceLike | None = None) -> KernelResources:
    """Registers per thread, static shared memory, local and constant memory of `kernel`.

    `kernel`: a function written against `numba.cuda`, a `@cuda.jit` dispatcher or a gpukit kernel.
    `signature`: Numba types (a tuple, a Signature or "void(float32[:], int32)") or example
    arguments (see `signature_from_args`). `device`: a profile name, a DeviceProfile or a compute
    capability (default: T4). Raises InspectUnavailableError (saying how to install the extra),
    InspectCompileError or InspectSignatureError.
    """
    func, sig, cc = _py_func(kernel), _normalize_signature(signature), _target(device)
    options = _options(kernel)
    if _real_gpu_cc() == cc.cc:
        # The GPU is the device asked about: numba's kernel attributes say it. Whatever fails
        # there (a kernel only the simulator can run, a context error) falls back to ptxas,
        # which answers for any device without a GPU.
        try:
            return _cached(_RESOURCES_CACHE, func, (sig, "gpu", options),
                           lambda: _gpu_resources(kernel, func, sig, cc))
        except Exception:  # noqa: BLE001 - ptxas below reports what it finds, errors included
            with _lock:
                _RESOURCES_CACHE.get(func, {}).pop((sig, "gpu", options), None)

    def compute() -> KernelResources:
        ptx_text = ptx(kernel, sig, cc)
        output = _ptxas.run_ptxas(ptx_text, cc.arch, dict(options).get("max_registers"))
        return replace(parse_ptxas_output(output, ptx_text), kernel_name=func.__name__)

    return _cached(_RESOURCES_CACHE, func, (sig, cc.arch, options), compute)


# -- occupancy of kernels ------------------------------------------------------------------------

def _threads_in_block(block: Any) -> int:
    dims = block if isinstance(block, (tuple, list)) else (block,)
    if not 1 <= len(dims) <= 3:
        raise OccupancyInputError(f"block must be an int or a tuple of 1 to 3 ints, got {block!r}")
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise OccupancyTypeError(f"block dimensions must be ints, got {block!r}")
        if d < 1:
            raise OccupancyInputError(f"block dimensions must be positive, got {block!r}")
    return math.prod(int(d) for d in dims)


def _only_signature(kernel: Any) -> tuple:
    overloads = getattr(kernel, "overloads", None) or {}
    if len(overloads) == 1:
        return tuple(next(iter(overloads)))
    raise InspectSignatureError(
        "pass signature= (Numba types or example arguments): the kernel has "
        f"{len(overloads)} compiled signatures to choose from")


def kernel_occupancy(kernel: Any, block: Any, device: DeviceLike | None = None,
                     signature: Any = None, dynamic_shared_bytes: int = 0, *,
                     carveout: int | None = None, opt_in: bool = True) -> Occupancy:
    """The theoretical occupancy of launching `kernel` with `block` threads on `device`, from
    the kernel's real registers and static shared memory (see `resources`) plus
    `dynamic_shared_bytes`. Raises like `resources` when they cannot be determined."""
    threads = _threads_in_block(block)
    if signature is None:
        signature = _only_signature(kernel)
    res = resources(kernel, signature, device)
    return occupancy(DEFAULT_PROFILE if device is None else device, threads, res.regs_per_thread,
                     res.shared_mem_bytes + dynamic_shared_bytes, carveout, opt_in)


def theoretical_occupancy(py_func: Any, args: Any, threads_per_block: Any,
                          dynamic_shared_bytes: int = 0, device: DeviceLike | None = None, *,
                          static_shared_bytes: int = 0, carveout: int | None = None,
                          opt_in: bool = True) -> tuple[Occupancy, KernelResources | None, str]:
    """(occupancy, resources or None, source) of one launch, for the simulator to report.

    `threads_per_block` is an int or a block tuple; `args` the launch's arguments (or Numba
    types). Uses ptxas's numbers where the inspect extra works; when it is missing or numba
    cannot compile the kernel it never raises but assumes DEFAULT_REGS_PER_THREAD registers per
    thread and `static_shared_bytes` of static shared memory, and `source` says so
    ("ptxas", or "defaults: <why>").
    """
    device = DEFAULT_PROFILE if device is None else device
    threads = _threads_in_block(threads_per_block)
    try:
        res = resources(py_func, args, device)
    except InspectError as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        occ = occupancy(device, threads, DEFAULT_REGS_PER_THREAD,
                        static_shared_bytes + dynamic_shared_bytes, carveout, opt_in)
        return occ, None, (f"defaults: {why} (assumed {DEFAULT_REGS_PER_THREAD} registers per "
                           f"thread and {static_shared_bytes} B of static shared memory)")
    occ = occupancy(device, threads, res.regs_per_thread,
                    res.shared_mem_bytes + dynamic_shared_bytes, carveout, opt_in)
    return occ, res, res.source
