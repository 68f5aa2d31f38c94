"""Launching a kernel on the simulator: validate the configuration, bind the arguments, run.

Blocks run in groups, each group in lock-step as numpy vectors (see `gpukit.sim.context`). The
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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends._validate import check_launch, normalize_dim3
from ..errors import (
    GpukitError,
    ImplicitTransferWarning,
    InvalidDeviceArrayError,
    KernelError,
)
from .arrays import SimArray
from .context import CHECKS, STATE, Group, Launch, LaunchStats
from .kernel import SimKernel
from .memory import DeviceArray
from .races import RaceShadow

LANES_PER_GROUP = 1 << 18  # threads simulated together; bounds the size of every lane vector


@dataclass
class LaunchRecord:
    """One launch in a backend's log."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int
    stream: Any
    wall_ms: float
    stats: LaunchStats
    checks: dict[str, bool]
    schedule: str
    extra: dict[str, Any] = field(default_factory=dict)
    profile: Any = field(default=None, repr=False)
    py_func: Any = field(default=None, repr=False)
    arg_specs: tuple = field(default=(), repr=False)

    @property
    def threads(self) -> int:
        return int(np.prod(self.grid)) * int(np.prod(self.block))

    @property
    def occupancy(self) -> Any:
        """Theoretical occupancy of this launch on the emulated device (computed when asked).

        Registers and static shared memory come from ptxas where the `inspect` extra is
        installed; otherwise from stated defaults. `occupancy_source` says which.
        """
        if "occupancy" not in self.extra:
            from ..inspect import theoretical_occupancy
            occ, _, source = theoretical_occupancy(
                self.py_func, self.arg_specs, self.block, self.dynamic_shared_bytes, self.profile,
                static_shared_bytes=self.stats.static_shared_bytes)
            self.extra["occupancy"], self.extra["occupancy_source"] = occ, source
        return self.extra["occupancy"]

    @property
    def trace(self) -> Any:
        """The execution trace of a launch made with trace=True (gpukit.trace.Trace), or None."""
        return self.extra.get("trace")

    @property
    def occupancy_source(self) -> str:
        """"ptxas", or "defaults: <why>" when the kernel's resources could not be read."""
        self.occupancy  # noqa: B018 - computes and caches both
        return self.extra["occupancy_source"]


@dataclass(frozen=True)
class ArgSpec:
    """What the occupancy calculation needs to know of a device array argument."""

    dtype: np.dtype
    ndim: int
    shape: tuple[int, ...]
    layout: str


def _arg_spec(arg: Any) -> Any:
    if isinstance(arg, (DeviceArray, np.ndarray)):
        layout = arg.layout if isinstance(arg, DeviceArray) else (
            "C" if arg.flags.c_contiguous else "F" if arg.flags.f_contiguous else "A")
        return ArgSpec(arg.dtype, arg.ndim, tuple(arg.shape), layout)
    return arg


def _user_stacklevel() -> int:
    """The warnings stacklevel of the first frame outside gpukit (the learner's launch line)."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("gpukit"):
        frame, level = frame.f_back, level + 1
    return level - 1


def normalize_checks(checks: Any, base: dict[str, bool] | None = None) -> dict[str, bool]:
    """True/False, a dict of check names to bools, or an iterable of the names to enable."""
    result = dict(base) if base is not None else dict.fromkeys(CHECKS, True)
    if checks is None:
        return result
    if checks is True or checks is False:
        return dict.fromkeys(CHECKS, bool(checks))
    if isinstance(checks, dict):
        items = checks.items()
    elif isinstance(checks, str):
        raise TypeError(f"checks must be True, False, a dict or a list of names, not {checks!r}")
    else:
        names = list(checks)
        items = [(n, True) for n in names]
        result = dict.fromkeys(CHECKS, False)
    for name, on in items:
        if name not in CHECKS:
            raise ValueError(f"unknown check {name!r}; the checks are: {', '.join(CHECKS)}")
        result[name] = bool(on)
    return result


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
            device = backend.to_device(arg, _implicit=True)
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


def run_launch(backend: Any, kernel: SimKernel, grid: Any, block: Any, args: tuple, *,
               stream: Any = 0, dynamic_shared_bytes: int = 0, checks: Any = None,
               schedule: str | None = None, seed: int | None = None,
               watchdog_s: float | None | str = "default", trace: Any = None) -> LaunchRecord:
    """Run `kernel` over `grid` x `block` threads on `backend`'s simulated device."""
    check_set = normalize_checks(checks, backend.checks)
    if check_set["launch_limits"]:
        cc = backend.profile.cc
        grid3, block3 = check_launch(kernel.name, grid, block, dynamic_shared_bytes,
                                     backend.capabilities(),
                                     device=f"the simulated {backend.profile.name} (CC {cc.name})")
    else:
        grid3 = normalize_dim3(grid, f"kernel '{kernel.name}': grid")
        block3 = normalize_dim3(block, f"kernel '{kernel.name}': block")
    schedule = schedule or backend.schedule
    if schedule not in ("ordered", "shuffle"):
        raise ValueError(f"schedule must be 'ordered' or 'shuffle', got {schedule!r}")
    if schedule == "shuffle":
        base_seed = backend.seed if seed is None else seed
        rng = np.random.default_rng(base_seed)
    else:
        rng = None
    watchdog = backend.watchdog_s if watchdog_s == "default" else watchdog_s
    from ..trace import Recorder  # numpy only

    recorder = Recorder.from_option(trace)  # None, True, an int of max_events, or a recorder
    launch = Launch(kernel.name, grid3, block3, check_set, backend.profile, rng, watchdog,
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
            backend.to_host(device, out=host, _implicit=True)
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
    wall_ms = (time.perf_counter() - start) * 1e3
    record = LaunchRecord(kernel.name, grid3, block3, int(dynamic_shared_bytes), stream,
                          wall_ms, launch.stats, check_set, schedule, profile=backend.profile,
                          py_func=kernel.py_func, arg_specs=tuple(_arg_spec(a) for a in args))
    if recorder is not None:  # a recorder of one's own may have no finish(): keep it as it is
        finish = getattr(recorder, "finish", None)
        record.extra["trace"] = finish(record) if finish is not None else recorder
    return record
