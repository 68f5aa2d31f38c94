"""Launching a kernel on the CUDA backend: check, prepare once, launch, record.

`prepare` does all the host-side work of a launch before anything is enqueued: the launch
configuration against the device's limits, the arguments (device arrays as Numba views made
once, numpy arrays copied in with an ImplicitTransferWarning, as on the simulator), compiling the
kernel for the argument types (numba's typing errors become `KernelTypingError`), static plus
dynamic shared memory against the device, and the opt-in a launch above 48 KiB of shared memory
needs (`cudaFuncSetAttribute(MaxDynamicSharedMemorySize)`). `LaunchPlan.run` then only
enqueues the kernel, so CUDA events around it time the kernel and not gpukit (`time_launches`).
CUDA errors of a kernel that faulted are turned into `KernelFaultError` by `translate_fault`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import (
    ArgumentTypeError,
    KernelFaultError,
    LaunchConfigError,
    typing_error_as,
)
from ..launches import LaunchRecord
from ..utils import map_tuple
from ._cuda_arrays import CUDADeviceArray
from ._cuda_hold import event_times
from .validate import check_launch, warn_implicit_copies

# CUDA errors a faulting kernel leaves behind; all are sticky (the context is lost).
FAULT_CODES = {
    700: "CUDA_ERROR_ILLEGAL_ADDRESS", 702: "CUDA_ERROR_LAUNCH_TIMEOUT",
    710: "CUDA_ERROR_ASSERT", 714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
    715: "CUDA_ERROR_ILLEGAL_INSTRUCTION", 716: "CUDA_ERROR_MISALIGNED_ADDRESS",
    717: "CUDA_ERROR_INVALID_ADDRESS_SPACE", 718: "CUDA_ERROR_INVALID_PC",
    719: "CUDA_ERROR_LAUNCH_FAILED", 214: "CUDA_ERROR_ECC_UNCORRECTABLE",
}


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex, np.generic))


def param_names(py_func: Callable) -> list[str]:
    try:
        return list(inspect.signature(py_func).parameters)
    except (TypeError, ValueError):
        return []


def translate_fault(exc: BaseException, kernel: str | None) -> KernelFaultError | None:
    """The KernelFaultError for a CUDA error a faulting kernel causes, else None."""
    code = getattr(exc, "code", exc.args[0] if exc.args else None)
    try:
        number = int(code)  # numba's CudaAPIError carries a CUresult (an IntEnum) or an int
    except (TypeError, ValueError):
        return None
    if type(exc).__name__ != "CudaAPIError" or number not in FAULT_CODES:
        return None
    name = f"kernel '{kernel}'" if kernel else "a kernel"
    return KernelFaultError(
        f"{name} faulted on the GPU ({FAULT_CODES[number]}: {exc}); a GPU does not say which "
        "thread or line: run the same launch on gpukit's simulator (get_backend('cpu')), whose "
        "checks name them. This CUDA error is sticky: the process's GPU context is lost, so "
        "restart the Python process (in Jupyter: Kernel > Restart) before using the GPU again",
        kernel=kernel)


def compile_for(dispatcher: Any, name: str, args: list[Any], simulator: bool) -> Any:
    """numba's compiled kernel for these launch arguments (compiling now, not inside a timed
    launch), or None under Numba's simulator, which compiles nothing."""
    if simulator:
        return None
    try:
        types = tuple(dispatcher.typeof_pyval(a) for a in args)
        return dispatcher.compile(types)
    except Exception as exc:
        if type(exc).__name__ not in ("TypingError", "UnsupportedError", "NumbaError"):
            raise
        detail = "\n".join(ln.rstrip() for ln in str(exc).splitlines()
                           if ln.strip() and not ln.startswith(("During:", "Failed in")))
        raise typing_error_as(exc, f"numba-cuda would not compile kernel '{name}' for "
                              f"this GPU: {detail}", kernel=name) from None


def opt_in_shared_memory(compiled: Any, dynamic_bytes: int, driver: Any, binding: Any) -> None:
    """Allow `compiled` (numba's compiled kernel) `dynamic_bytes` of dynamic shared memory: a
    launch above 48 KiB fails unless the kernel opted in (cudaFuncSetAttribute with
    cudaFuncAttributeMaxDynamicSharedMemorySize; cuKernelSetAttribute in numba-cuda's terms)."""
    cufunc = compiled._codelibrary.get_cufunc()  # numba-cuda's handle of the loaded kernel
    attribute = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attribute, int(dynamic_bytes), cufunc.handle, cufunc.device.id)


class LaunchPlan:
    """One checked, compiled launch; `run()` enqueues it (and nothing else)."""

    def __init__(self, backend: Any, kernel: Any, grid: tuple[int, int, int],
                 block: tuple[int, int, int], stream: Any, shared_bytes: int, args: list[Any],
                 copies: list[tuple[np.ndarray, CUDADeviceArray]]):
        self.backend, self.kernel, self.grid, self.block = backend, kernel, grid, block
        self.stream, self.shared_bytes, self.args, self.copies = stream, shared_bytes, args, copies
        self._launch = kernel.dispatcher[grid, block, backend.numba_stream(stream), shared_bytes]

    def run(self) -> None:
        """Enqueue the kernel (asynchronous on a GPU)."""
        self.backend.last_kernel = self.kernel.name
        with self.backend.device_call():
            self._launch(*self.args)

    def record(self, flops: Any = None) -> LaunchRecord:
        """Count and log one launch; returns its record."""
        record = self.backend.launch_record(self.kernel, self.grid, self.block, self.stream,
                                            self.shared_bytes)
        if flops is not None:
            record.extra["flops"] = flops
        return record

    def finish(self) -> None:
        """Copy implicitly copied host arrays back and free their device copies."""
        try:
            for host, device in self.copies:
                self.backend.to_host(device, out=host, implicit=True)
        finally:
            self.release()

    def release(self) -> None:
        for _, device in self.copies:
            self.backend.free(device)
        self.copies = []


def prepare(backend: Any, kernel: Any, grid: Any, block: Any, stream: Any, shared_bytes: Any,
            args: tuple) -> LaunchPlan:
    """Check everything, copy host arguments in, compile, opt in to shared memory."""
    backend.require_cuda()
    caps = backend.capabilities()
    device = backend.device_label
    grid3, block3 = check_launch(kernel.name, grid, block, shared_bytes, caps, device=device)
    shared = int(shared_bytes)
    backend.stream_label(stream)  # a stream of another backend is refused now
    values, copies = _arguments(backend, kernel, args)
    try:
        compiled = compile_for(kernel.dispatcher, kernel.name, values, backend.simulator)
        if compiled is not None:
            static = int(compiled.shared_mem_per_block)
            if static + shared > caps.shared_mem_per_block_optin:
                raise LaunchConfigError(
                    f"kernel '{kernel.name}' needs {static:,} bytes of static plus {shared:,} "
                    f"bytes of dynamic shared memory per block, over {device}'s limit of "
                    f"{caps.shared_mem_per_block_optin:,} bytes; use smaller tiles")
            if static + shared > caps.shared_mem_per_block:
                backend.opt_in_shared(compiled, shared)
        return LaunchPlan(backend, kernel, grid3, block3, stream, shared, values, copies)
    except BaseException:
        for _, device_copy in copies:
            backend.free(device_copy)
        raise


def _arguments(backend: Any, kernel: Any, args: tuple
               ) -> tuple[list[Any], list[tuple[np.ndarray, CUDADeviceArray]]]:
    names = param_names(kernel.py_func)
    if names and len(args) != len(names):
        raise ArgumentTypeError(f"kernel '{kernel.name}' takes {len(names)} arguments "
                                f"({', '.join(names)}), got {len(args)}")
    names = names or [f"argument {i}" for i in range(len(args))]
    copies: list[tuple[np.ndarray, CUDADeviceArray]] = []
    copied: list[str] = []

    def on_device(name: str, arg: Any) -> Any:
        if isinstance(arg, np.ndarray):
            device = backend.to_device(arg, implicit=True)
            copies.append((arg, device))
            copied.append(name)
            return device.numba_view()
        if _is_scalar(arg):
            return arg
        if backend.accepts(arg):
            return backend.own(arg, f"kernel '{kernel.name}'").numba_view()
        raise ArgumentTypeError(
            f"argument '{name}' of kernel '{kernel.name}' is a {type(arg).__name__}; "
            "kernels take device arrays (backend.to_device / allocate), numpy arrays "
            "(copied implicitly), numbers, or tuples of these")

    try:  # numba-cuda passes tuples of arrays (and of tuples) too
        values = [map_tuple(name, arg, on_device) for name, arg in zip(names, args)]
    except BaseException:
        for _, device in copies:
            backend.free(device)
        raise
    if copies:
        warn_implicit_copies(kernel.name, copied)
    return values, copies


def time_launches(backend: Any, prepared: LaunchPlan, repeat: int, flops: Any
                  ) -> tuple[str, list[float], str]:
    """(kind, samples in ms, note): CUDA events recorded right before and after each enqueue,
    so gpukit's checks and the JIT (done in `prepare`) are outside what they time, and queued
    while the stream waits (`_cuda_hold`), so that the host's enqueue latency is outside too.
    Under Numba's simulator, whose events carry no time, the host's clock around each launch."""
    stream = backend.numba_stream(prepared.stream)
    if backend.event_kind != "cuda-events":
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            prepared.run()
            samples.append((time.perf_counter() - start) * 1e3)
            prepared.record(flops).timings["wall"] = samples[-1]
        return "wall", samples, backend.event_note
    with backend.device_call():
        samples, note = event_times(backend, stream, prepared.run, repeat)
    for ms in samples:
        prepared.record(flops).timings["cuda-events"] = ms
    return "cuda-events", samples, note
