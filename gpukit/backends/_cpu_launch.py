"""Launching a kernel on CPUBackend: check everything, run the simulator, record the launch.

`launch` checks the launch's options (`gpukit.backends.options`), its grid, block and shared
memory against the simulated device (`gpukit.backends.validate`) and its arguments, hands the
simulator (`gpukit.sim.engine.run_launch`) plain values, and builds the `LaunchRecord` from what
the simulator reports, placing the kernel on the modeled timeline. Nothing here simulates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError
from ..launches import LaunchRecord
from ..occupancy.resources import theoretical_occupancy
from ..sim.engine import run_launch
from ..sim.kernel import SimKernel
from ..sim.memory import DeviceArray
from ..timing.model import model_launch
from .options import LaunchOptions, launch_options
from .validate import check_dynamic_shared_bytes, check_launch, normalize_dim3, normalize_dtype

__all__ = ["ArgSpec", "launch"]


@dataclass(frozen=True)
class ArgSpec:
    """What the occupancy calculation needs to know of an array argument (its Numba type)."""

    dtype: np.dtype
    ndim: int
    shape: tuple[int, ...]
    layout: str


def _arg_spec(arg: Any) -> Any:
    if isinstance(arg, DeviceArray):
        return ArgSpec(arg.dtype, arg.ndim, tuple(arg.shape), arg.layout)
    if isinstance(arg, np.ndarray):
        layout = "C" if arg.flags.c_contiguous else "F" if arg.flags.f_contiguous else "A"
        return ArgSpec(normalize_dtype(arg.dtype), arg.ndim, tuple(arg.shape), layout)
    return arg


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex, np.generic))


def launch(backend: Any, kernel: SimKernel, grid: Any, block: Any, args: tuple,
           options: dict[str, Any]) -> LaunchRecord:
    """Run one launch of `kernel` on the CPUBackend `backend`; returns its record."""
    opts = launch_options(options, backend.options)
    timeline = backend.modeled_timeline
    timeline.stream_id(opts.stream)  # a foreign stream is refused before anything runs
    grid3, block3, shared = _check_geometry(backend, kernel.name, grid, block, opts)
    _check_arguments(kernel, args)
    with timeline.launching():
        run = run_launch(backend, kernel, grid3, block3, args, dynamic_shared_bytes=shared,
                         checks=opts.checks, schedule=opts.schedule, seed=opts.seed,
                         watchdog_s=opts.watchdog_s, recorder=opts.trace)
        record = LaunchRecord(
            kernel.name, grid3, block3, shared, opts.stream, run.wall_ms, run.stats,
            opts.checks, opts.schedule, timings={"wall": run.wall_ms}, backend=backend.name,
            occupancy_of=_occupancy_of(backend.profile, kernel, args, block3, shared,
                                       run.stats))
        if opts.flops is not None:
            record.extra["flops"] = opts.flops
        if run.recorder is not None:  # a recorder of one's own may have no finish()
            finish = getattr(run.recorder, "finish", None)
            record.extra["trace"] = finish(record) if finish is not None else run.recorder
        timeline.kernel(record.kernel, record.stream, model_launch(backend.profile, record).ms)
    return record


def _check_geometry(backend: Any, name: str, grid: Any, block: Any, opts: LaunchOptions
                    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    if opts.checks["launch_limits"]:
        profile = backend.profile
        device = f"the simulated {profile.name} (CC {profile.cc.name})"
        grid3, block3 = check_launch(name, grid, block, opts.dynamic_shared_bytes,
                                     backend.capabilities(), device=device)
    else:
        grid3 = normalize_dim3(grid, f"kernel '{name}': grid")
        block3 = normalize_dim3(block, f"kernel '{name}': block")
    return grid3, block3, check_dynamic_shared_bytes(name, opts.dynamic_shared_bytes)


def _check_arguments(kernel: SimKernel, args: tuple) -> None:
    names = kernel.param_names
    if len(args) != len(names):
        raise ArgumentTypeError(f"kernel '{kernel.name}' takes {len(names)} arguments "
                                f"({', '.join(names)}), got {len(args)}")
    for name, arg in zip(names, args):
        if isinstance(arg, (DeviceArray, np.ndarray)) or _is_scalar(arg) or (
                isinstance(arg, tuple) and all(map(_is_scalar, arg))):
            continue
        raise ArgumentTypeError(
            f"argument '{name}' of kernel '{kernel.name}' is a {type(arg).__name__}; kernels "
            "take device arrays (backend.to_device / allocate), numpy arrays (copied "
            "implicitly), numbers, or tuples of numbers")


def _occupancy_of(profile: Any, kernel: SimKernel, args: tuple, block: tuple[int, int, int],
                  dynamic_shared_bytes: int, stats: Any) -> Callable[[], tuple[Any, str]]:
    specs = tuple(_arg_spec(a) for a in args)

    def occupancy() -> tuple[Any, str]:
        occ, _, source = theoretical_occupancy(
            kernel.py_func, specs, block, dynamic_shared_bytes, profile,
            static_shared_bytes=stats.static_shared_bytes)
        return occ, source

    return occupancy
