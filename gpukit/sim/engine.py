"""Launching a kernel on the simulator: bind the arguments, run the blocks, report what happened.

The backend (`gpukit.backends.cpu`) has already checked and normalised everything it passes in:
grid and block as (x, y, z), the checks as a dict of bools, the schedule, seed, watchdog seconds,
dynamic shared bytes and the trace recorder; it also builds the launch's record from what
`run_launch` returns (`LaunchRun`: the statistics, the wall time, the recorder). Blocks run in groups, each group in lock-step as numpy vectors (see `gpukit.sim.context`). The
"ordered" schedule runs blocks in index order; "shuffle" runs them, and applies racing writes
and atomics, in a seeded random order, so results that depend on the order show up. Errors that
escape the kernel's own code are re-raised as `KernelError`s that name the thread, the block and
the line.
"""

from __future__ import annotations

import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import (
    GpukitError,
    ImplicitTransferWarning,
    InvalidDeviceArrayError,
    KernelError,
)
from .arrays import SimArray
from .context import STATE, Group, Launch, LaunchStats
from .kernel import SimKernel
from .memory import DeviceArray
from .races import RaceShadow

LANES_PER_GROUP = 1 << 18  # threads simulated together; bounds the size of every lane vector


@dataclass
class LaunchRun:
    """What one simulated launch did: its statistics, the simulation's wall time (argument
    binding and implicit copies included) and the trace recorder it filled (or None)."""

    stats: LaunchStats
    wall_ms: float
    recorder: Any = None


def _user_stacklevel() -> int:
    """The warnings stacklevel of the first frame outside gpukit (the learner's launch line)."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("gpukit"):
        frame, level = frame.f_back, level + 1
    return level - 1


class _Bound:
    """The kernel's arguments as the simulator passes them, and what to copy back after."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.copy_back: list[tuple[np.ndarray, DeviceArray]] = []
        self.shadow_bytes = 0


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex, np.generic))


def _bind(backend: Any, kernel: SimKernel, args: tuple, launch: Launch) -> _Bound:
    bound = _Bound()
    try:
        return _bind_into(backend, kernel, args, launch, bound)
    except BaseException:  # give back what the arguments bound so far took
        backend.memory.host_budget.give_back(bound.shadow_bytes)
        for _, device in bound.copy_back:
            backend.free(device)
        raise


def _bind_into(backend: Any, kernel: SimKernel, args: tuple, launch: Launch,
               bound: _Bound) -> _Bound:
    if len(args) != len(kernel.param_names):
        raise TypeError(f"kernel '{kernel.name}' takes {len(kernel.param_names)} arguments "
                        f"({', '.join(kernel.param_names)}), got {len(args)}")
    states: dict[int, tuple[Any, RaceShadow | None]] = {}
    written_allocs = {a.allocation.id for name, a in zip(kernel.param_names, args)
                      if isinstance(a, DeviceArray) and not a.is_freed
                      and name in kernel.transformed.written}
    for name, arg in zip(kernel.param_names, args):
        if isinstance(arg, np.ndarray):
            device = backend.to_device(arg, implicit=True)
            bound.copy_back.append((arg, device))
            launch.stats.implicit_transfers.append(name)
            arg = device
        if isinstance(arg, DeviceArray):
            alloc = arg.allocation  # raises for a freed array
            if alloc.memory is not backend.memory:
                raise InvalidDeviceArrayError(
                    f"argument '{name}' of kernel '{kernel.name}' lives on another backend's "
                    "device; copy it to the host and to this backend's device first")
            if alloc.id not in states:
                shadow = None
                # an array no parameter writes cannot race (implicit copies are new: check them)
                if launch.checks["races"] and (alloc.id in written_allocs
                                               or name in kernel.transformed.written):
                    nbytes = alloc.count * RaceShadow.bytes_per_element(launch.tid_dtype)
                    backend.memory.host_budget.take(
                        nbytes, f"the race check's records of '{name}' (or pass "
                        "checks={'races': False})")
                    bound.shadow_bytes += nbytes
                    shadow = RaceShadow(alloc.count, launch.tid_dtype)
                init = alloc.init_mask() if launch.checks["uninitialized"] else None
                states[alloc.id] = (init, shadow)
            init, shadow = states[alloc.id]
            estrides = tuple(s // arg.itemsize for s in arg.strides)
            bound.values.append(SimArray(alloc.buffer(), arg.shape, estrides,
                                         arg.element_offset(), name, init, shadow))
        elif _is_scalar(arg) or (isinstance(arg, tuple) and all(map(_is_scalar, arg))):
            bound.values.append(arg)
        else:
            raise TypeError(
                f"argument '{name}' of kernel '{kernel.name}' is a {type(arg).__name__}; kernels "
                "take device arrays (backend.to_device / allocate), numpy arrays (copied "
                "implicitly), numbers, or tuples of numbers")
    if bound.copy_back:
        names = ", ".join(launch.stats.implicit_transfers)
        warnings.warn(
            f"kernel '{kernel.name}': host arrays passed directly ({names}) are copied to the "
            "device before the launch and back after it; copy them once with backend.to_device "
            "to avoid these implicit transfers", ImplicitTransferWarning,
            stacklevel=_user_stacklevel())
    return bound


def _locate(exc: BaseException, launch: Launch, group: Group | None) -> KernelError:
    """A KernelError for an unexpected exception, at the innermost kernel frame."""
    lineno = filename = None
    lane = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        if "_g_r" in frame.f_code.co_varnames:  # a transformed kernel or device function
            lineno, filename = line, frame.f_code.co_filename
            m = frame.f_locals.get("_g_m", True)
            if m is True:
                lane = 0
            elif isinstance(m, np.ndarray) and m.any():
                lane = int(np.argmax(m))
    thread = group.thread_of(lane) if group is not None and lane is not None else None
    block = group.block_of(lane) if group is not None and lane is not None else None
    if isinstance(exc, KernelError):  # raised without a location: add it
        exc.kernel, exc.thread, exc.block = launch.name, thread, block
        exc.lineno = exc.lineno or lineno
        exc.filename = exc.filename or filename
        exc.args = (exc._format(),)
        return exc
    return KernelError(f"{type(exc).__name__}: {exc}", kernel=launch.name, thread=thread,
                       block=block, lineno=lineno, filename=filename)


def run_launch(backend: Any, kernel: SimKernel, grid: tuple[int, int, int],
               block: tuple[int, int, int], args: tuple, *, dynamic_shared_bytes: int,
               checks: dict[str, bool], schedule: str, seed: int | None,
               watchdog_s: float | None, recorder: Any = None) -> LaunchRun:
    """Run `kernel` over `grid` x `block` threads on `backend`'s simulated device.

    Every value comes checked from the backend: `grid` and `block` (x, y, z) tuples of ints >= 1,
    `checks` {name: bool} for every check, `schedule` "ordered" or "shuffle" (with `seed`),
    `watchdog_s` seconds or None, `recorder` None or a trace recorder.
    """
    rng = np.random.default_rng(seed) if schedule == "shuffle" else None
    launch = Launch(kernel.name, grid, block, checks, backend.profile, rng, watchdog_s,
                    int(dynamic_shared_bytes), recorder)
    start = time.perf_counter()
    bound = _bind(backend, kernel, args, launch)
    order = np.arange(launch.nblocks, dtype=np.int64)
    if rng is not None:
        order = rng.permutation(order)
    per_group = max(1, LANES_PER_GROUP // launch.tpb)
    group = None
    try:
        with np.errstate(all="ignore"):
            for first in range(0, launch.nblocks, per_group):
                group = Group(launch, order[first:first + per_group])
                STATE.group = group
                kernel.fn(*bound.values)
                STATE.group = None
        for host, device in bound.copy_back:
            backend.to_host(device, out=host, implicit=True)
    except KernelError as exc:
        if exc.thread is None or exc.lineno is None:
            raise _locate(exc, launch, group) from None
        raise
    except GpukitError:
        raise
    except Exception as exc:  # a Python error in the kernel's code: locate it
        raise _locate(exc, launch, group) from exc
    finally:
        STATE.group = None
        backend.memory.host_budget.give_back(bound.shadow_bytes)
        for _, device in bound.copy_back:
            backend.free(device)
    return LaunchRun(launch.stats, (time.perf_counter() - start) * 1e3, recorder)
