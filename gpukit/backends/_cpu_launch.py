"""Launching a kernel on CPUBackend: check everything, run the simulator, record the launch.

`launch` checks the launch's options (`gpukit.backends.options`), its grid, block and shared
memory against the simulated device (`gpukit.backends.validate`) and its arguments, copies host
arrays to the device (and back after, with an ImplicitTransferWarning), hands the simulator
(`gpukit.sim.launch.run`) plain values, and builds the `LaunchRecord` from what the simulator
reports, placing the kernel on the modeled timeline. Nothing here simulates.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..devices import STATIC_SHARED_MEM_PER_BLOCK as STATIC_SHARED_LIMIT_BYTES
from ..errors import ArgumentTypeError, KernelError, LaunchConfigError
from ..launches import LaunchRecord
from ..occupancy.calculator import occupancy
from ..occupancy.resources import theoretical_occupancy
from ..sim.launch import run
from ..sim.memory import DeviceArray
from ..sim.report import TraceCapacityError
from ..sim.stream_order import Access
from ..sim.usage import ANY
from ..timing.model import model_launch
from ..utils import map_tuple, tuple_items
from ._cpu_kernel import CPUKernel
from .options import LaunchOptions, launch_options
from .validate import (
    check_dynamic_shared_bytes,
    check_launch,
    normalize_dim3,
    warn_implicit_copies,
)

__all__ = ["launch"]


def _is_scalar(value: Any) -> bool:
    # enum members too: Numba types an Enum member by its class, an IntEnum one as an integer
    return isinstance(value, (bool, int, float, complex, np.generic, enum.Enum))


def _is_array(value: Any) -> bool:
    return isinstance(value, (DeviceArray, np.ndarray))


def launch(backend: Any, kernel: CPUKernel, grid: Any, block: Any, args: tuple,
           options: dict[str, Any]) -> LaunchRecord:
    """Run one launch of `kernel` on the CPUBackend `backend`; returns its record."""
    opts = launch_options(options, backend.options) if options else backend.default_launch
    timeline = backend.modeled_timeline
    stream = timeline.stream_id(opts.stream)  # a foreign stream is refused before anything runs
    _check_arguments(kernel, args)  # first: a kernel may be rewritten for their types
    sim = kernel.select(args)  # its layout for these arguments' dtypes, where it depends on them
    grid3, block3, shared = _check_geometry(backend, kernel, grid, block, opts)
    with timeline.launching():
        device_args, copies = _device_arguments(backend, kernel, args)
        recorder = opts.trace
        try:  # (on the default stream it follows all earlier work: nothing to compare)
            timeline.issue_kernel(kernel.name, stream,
                                  _accesses(sim, device_args) if stream else [],
                                  check=opts.checks.get("races", True))
            result = run(sim, backend.memory, backend.workspace, tuple(device_args),
                         grid=grid3, block=block3, dynamic_shared_bytes=shared,
                         checks=opts.checks, schedule=opts.schedule, seed=opts.seed,
                         watchdog_s=opts.watchdog_s, threads=backend.options.num_threads,
                         trace_capacity=recorder.capacity if recorder is not None else 0,
                         trace_sample=recorder.sample if recorder is not None else 0)
            for name, host, device in copies:
                backend.to_host(device, out=host, implicit=True)
        except TraceCapacityError:
            raise recorder.too_large(kernel.name, grid3, block3) from None
        except KernelError as exc:  # a traced launch's error carries what it recorded before
            partial = getattr(exc, "partial_trace", None)
            if partial is not None and recorder is not None:
                exc.trace = recorder.collect(kernel.name, grid3, block3, *partial)
            raise
        finally:
            for _, _, device in copies:
                backend.free(device)
        result.stats.implicit_transfers = tuple(name for name, _, _ in copies)
        record = LaunchRecord(
            kernel.name, grid3, block3, shared, opts.stream, result.wall_ms, result.stats,
            dict(opts.checks), opts.schedule, timings={"wall": result.wall_ms}, backend=backend.name,
            signature=result.signature,
            occupancy_of=_occupancy_of(backend.profile, kernel, result.signature, block3, shared,
                                       result.stats.static_shared_bytes))
        record.extra["host_threads"] = result.host_threads
        record.extra["host_blocks"] = result.host_blocks
        if result.host_cores is not None:
            record.extra["host_cores"] = result.host_cores
        if opts.flops is not None:
            record.extra["flops"] = opts.flops
        if result.trace is not None:
            events, slots, sites = result.trace
            record.extra["trace"] = recorder.collect(
                kernel.name, grid3, block3, events, slots, sites,
                traced_blocks=result.traced_blocks, complete=result.trace_complete)
        record.modeled = model = model_launch(backend.profile, record)
        timeline.kernel(record.kernel, record.stream, model.ms)
    return record


def _accesses(sim: Any, device_args: list) -> list[Access]:
    """The device arrays a launch gives its kernel (in tuples too), each read and written as
    its parameter's code may (`SimKernel.param_usage`): what it may race with on other streams."""
    accesses = []
    for name, arg in zip(sim.param_names, device_args):
        if isinstance(arg, DeviceArray):
            items = ((name, arg),)
        elif isinstance(arg, tuple):
            items = tuple_items(name, arg)
        else:
            continue
        usage = sim.param_usage.get(name, ANY)
        for label, value in items:
            if isinstance(value, DeviceArray):
                reads, writes = usage.of(value.shape if isinstance(arg, DeviceArray) else None,
                                         value.dtype.fields is not None)
                if reads or writes:
                    accesses.append(Access(value, writes, f"argument '{label}'"))
    return accesses


def _device_arguments(backend: Any, kernel: CPUKernel, args: tuple
                      ) -> tuple[list, list[tuple[str, np.ndarray, DeviceArray]]]:
    """The arguments as the simulator takes them: host arrays copied to the device."""
    copies: list[tuple[str, np.ndarray, DeviceArray]] = []

    def on_device(name: str, arg: Any) -> Any:
        if isinstance(arg, np.ndarray):
            device = backend.to_device(arg, implicit=True)
            copies.append((name, arg, device))
            return device
        return arg

    try:  # numba-cuda passes tuples of arrays (and of tuples) too
        values = [arg if type(arg) is DeviceArray else map_tuple(name, arg, on_device)
                  for name, arg in zip(kernel.param_names, args)]
    except BaseException:
        for _, _, device in copies:
            backend.free(device)
        raise
    if copies:
        warn_implicit_copies(kernel.name, [name for name, _, _ in copies])
    return values, copies


def _check_geometry(backend: Any, kernel: CPUKernel, grid: Any, block: Any,
                    opts: LaunchOptions) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """(grid, block, dynamic shared bytes) checked; a geometry of plain ints is checked once per
    kernel (a loop of small launches repeats it)."""
    key = None
    if _plain(grid) and _plain(block) and type(opts.dynamic_shared_bytes) is int:
        key = (grid, block, opts.dynamic_shared_bytes, opts.checks["launch_limits"],
               kernel.static_shared_bytes)
        found = kernel.checked_geometry.get(key)
        if found is not None:
            return found
    checked = _checked_geometry(backend, kernel, grid, block, opts)
    if key is not None and len(kernel.checked_geometry) < 256:
        kernel.checked_geometry[key] = checked
    return checked


def _plain(dim: Any) -> bool:
    return type(dim) is int or (type(dim) is tuple and all(type(d) is int for d in dim))


def _checked_geometry(backend: Any, kernel: CPUKernel, grid: Any, block: Any,
                      opts: LaunchOptions) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    name = kernel.name
    if opts.checks["launch_limits"]:
        profile = backend.profile
        device = f"the simulated {profile.name} (CC {profile.cc.name})"
        grid3, block3 = check_launch(name, grid, block, opts.dynamic_shared_bytes,
                                     backend.capabilities(), device=device)
    else:
        grid3 = normalize_dim3(grid, f"kernel '{name}': grid")
        block3 = normalize_dim3(block, f"kernel '{name}': block")
    dynamic = check_dynamic_shared_bytes(name, opts.dynamic_shared_bytes)
    if opts.checks["launch_limits"]:
        _check_shared(backend.profile, kernel, dynamic)
        if kernel.sim.cooperative:
            _check_cooperative(backend.profile, kernel, grid3, block3, dynamic)
    return grid3, block3, dynamic


def _check_cooperative(profile: Any, kernel: CPUKernel, grid: tuple[int, int, int],
                       block: tuple[int, int, int], dynamic: int) -> None:
    """A kernel that calls grid.sync() is launched cooperatively (numba-cuda does so by itself):
    every block of the grid must be resident on the GPU at once."""
    blocks, threads = grid[0] * grid[1] * grid[2], block[0] * block[1] * block[2]
    occ = occupancy(profile, threads, regs_per_thread=0,
                    shared_mem_bytes=kernel.static_shared_bytes + dynamic)
    most = occ.active_blocks_per_sm * profile.sm_count
    if blocks > most:
        raise LaunchConfigError(
            f"kernel '{kernel.name}' calls grid.sync(), so it is launched cooperatively: all "
            f"{blocks:,} blocks must be resident on the GPU at once, but the simulated "
            f"{profile.name} holds at most {most:,} blocks of {threads} threads "
            f"({occ.active_blocks_per_sm} per SM on {profile.sm_count} SMs, before counting "
            "registers, which can only lower it); a GPU refuses the launch "
            "(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE). Launch at most "
            "max_cooperative_grid_blocks(blockdim) blocks and give each thread several elements "
            "(a grid-stride loop)")


def _check_shared(profile: Any, kernel: CPUKernel, dynamic: int) -> None:
    """Static shared memory (laid out when the kernel compiled) against the device's limits."""
    static = kernel.static_shared_bytes
    cc = profile.cc
    if static <= STATIC_SHARED_LIMIT_BYTES and static + dynamic <= cc.shared_mem_per_block_optin:
        return
    lines = ", ".join(f"line {n}" for n in kernel.sim.shared_lines) or "its declarations"
    if static > STATIC_SHARED_LIMIT_BYTES:
        raise LaunchConfigError(
            f"kernel '{kernel.name}' declares {static:,} bytes of static shared memory "
            f"({lines}); static shared memory is limited to {STATIC_SHARED_LIMIT_BYTES:,} bytes "
            "(48 KiB) per block on every GPU; only dynamic shared memory (cuda.shared.array(0, "
            "...) sized at launch) can go above it")
    if static + dynamic > cc.shared_mem_per_block_optin:
        raise LaunchConfigError(
            f"kernel '{kernel.name}' needs {static:,} bytes of static plus {dynamic:,} bytes of "
            f"dynamic shared memory per block, over the {profile.name}'s limit of "
            f"{cc.shared_mem_per_block_optin:,} bytes (CC {cc.name}); use smaller tiles")


def _check_arguments(kernel: CPUKernel, args: tuple) -> None:
    names = kernel.param_names
    if len(args) != len(names):
        raise ArgumentTypeError(f"kernel '{kernel.name}' takes {len(names)} arguments "
                                f"({', '.join(names)}), got {len(args)}")
    for name, arg in zip(names, args):
        if type(arg) is DeviceArray:  # the common case, at once
            continue
        for label, value in tuple_items(name, arg):
            if isinstance(value, int) and not -(1 << 63) <= value < (1 << 64):
                raise ArgumentTypeError(
                    f"argument '{label}' of kernel '{kernel.name}' holds the integer {value}, "
                    "which no 64-bit integer type holds (Numba types kernel arguments as int64 "
                    "or uint64)")
            if not (_is_scalar(value) or _is_array(value)):
                raise ArgumentTypeError(
                    f"argument '{label}' of kernel '{kernel.name}' is a {type(value).__name__}; "
                    "kernels take device arrays (backend.to_device / allocate), numpy arrays "
                    "(copied implicitly), numbers, or tuples of these")


def _occupancy_of(profile: Any, kernel: CPUKernel, signature: tuple, block: tuple[int, int, int],
                  dynamic_shared_bytes: int, static_shared_bytes: int
                  ) -> Callable[[], tuple[Any, str]]:
    """The launch's theoretical occupancy, worked out when asked for (it compiles the kernel for
    a GPU target with the Numba types the simulator compiled it for). The kernel keeps one
    partial per launch configuration, which its launches' records share: the log keeps 10,000
    records, and every object a launch leaves there adds to each full garbage collection."""
    # by identity: hashing a profile or Numba's types costs more than the rest of a launch's
    # bookkeeping; the partial keeps both alive, so their ids stay theirs while it is kept
    key = (id(profile), id(signature), block, dynamic_shared_bytes, static_shared_bytes)
    found = kernel.occupancy_of.get(key)
    if found is None:
        if len(kernel.occupancy_of) >= 256:
            kernel.occupancy_of.clear()
        found = kernel.occupancy_of[key] = partial(
            _occupancy, profile, kernel.py_func, signature, block, dynamic_shared_bytes,
            static_shared_bytes)
    return found


def _occupancy(profile: Any, py_func: Any, signature: tuple, block: tuple[int, int, int],
               dynamic_shared_bytes: int, static_shared_bytes: int) -> tuple[Any, str]:
    occ, _, source = theoretical_occupancy(py_func, signature, block, dynamic_shared_bytes,
                                           profile, static_shared_bytes=static_shared_bytes)
    return occ, source
