"""Backend and launch options, checked and normalised in one place for every backend.

`CPUBackend(checks=..., schedule=..., seed=..., watchdog_s=..., host_memory_budget_bytes=...)`
goes through `simulator_options`, and every `launch_kernel(..., **options)` through
`launch_options`, on the simulator and on CUDA alike. A bad value raises `InvalidOptionError` (a
ValueError) or `OptionTypeError` (also a TypeError) that names the option, the value and what is
allowed, before anything runs. The simulator then receives plain values: checks as a dict of
bools, a schedule name, an int seed or None, seconds or None, byte counts as ints.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidOptionError, OptionTypeError, UnsupportedOperationError
from ..sim import CHECKS
from ..trace.recorder import Recorder

__all__ = ["CHECKS", "LAUNCH_OPTIONS", "SCHEDULES", "SIMULATOR_ONLY_OPTIONS", "LaunchOptions",
           "SimulatorOptions", "launch_options", "normalize_checks", "normalize_flops",
           "normalize_host_budget", "normalize_schedule", "normalize_seed", "normalize_watchdog",
           "simulator_options"]

SCHEDULES = ("ordered", "shuffle")
# launch_kernel options every backend takes, and those only gpukit's simulator understands
LAUNCH_OPTIONS = ("stream", "dynamic_shared_bytes", "flops")
SIMULATOR_ONLY_OPTIONS = frozenset({"checks", "schedule", "seed", "watchdog_s", "trace"})
_CHECK_NAMES = ", ".join(CHECKS)


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not _is_bool(value)


def normalize_checks(checks: Any, base: Mapping[str, bool] | None = None) -> dict[str, bool]:
    """The simulator's checks as {name: bool} for every name in CHECKS.

    `checks`: True (all on) or False (all off); a dict {name: True/False} changing `base` (default:
    all on); an iterable of names (list, tuple, set) to turn on, all others off; None: `base`.
    Values in a dict must be bools: "no" or 0 would be ambiguous, so they are refused.
    """
    result = dict(base) if base is not None else dict.fromkeys(CHECKS, True)
    if checks is None:
        return result
    if _is_bool(checks):
        return dict.fromkeys(CHECKS, bool(checks))
    if isinstance(checks, Mapping):
        items = list(checks.items())
    elif isinstance(checks, (list, tuple, set, frozenset)):
        items = [(name, True) for name in checks]
        result = dict.fromkeys(CHECKS, False)
    else:
        raise OptionTypeError(
            f"checks must be True, False, a dict or a list of names, not {checks!r}; the checks "
            f"are: {_CHECK_NAMES}")
    for name, on in items:
        if not isinstance(name, str) or name not in CHECKS:
            raise InvalidOptionError(f"unknown check {name!r}; the checks are: {_CHECK_NAMES}")
        if not _is_bool(on):
            raise OptionTypeError(
                f"checks[{name!r}] must be True or False, got {type(on).__name__} {on!r}")
        result[name] = bool(on)
    return result


def normalize_schedule(schedule: Any) -> str:
    """"ordered" (blocks in index order) or "shuffle" (a seeded random legal order)."""
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        raise InvalidOptionError(f"schedule must be 'ordered' or 'shuffle', got {schedule!r}")
    return schedule


def normalize_seed(seed: Any) -> int | None:
    """The shuffled schedule's seed: an int >= 0, or None (the backend's, or fresh entropy)."""
    if seed is None:
        return None
    if not _is_int(seed):
        raise OptionTypeError(f"seed must be an int >= 0 or None, got {type(seed).__name__} "
                              f"{seed!r}")
    if seed < 0:
        raise InvalidOptionError(f"seed must be an int >= 0 or None, got {seed}")
    return int(seed)


def _seconds_or_none(name: str, value: Any, what: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, numbers.Real) or _is_bool(value):
        raise OptionTypeError(f"{name} must be {what}, got {type(value).__name__} {value!r}")
    number = float(value)
    if not number > 0 or number == float("inf"):
        raise InvalidOptionError(f"{name} must be {what}, got {value!r}")
    return number


def normalize_watchdog(watchdog_s: Any) -> float | None:
    """Seconds after which the watchdog stops a kernel (finite, > 0), or None: never."""
    return _seconds_or_none("watchdog_s", watchdog_s, "a positive number of seconds or None")


def normalize_flops(flops: Any) -> float | None:
    """A launch's declared floating-point operations (finite, >= 0; an int stays an int), or
    None: not declared."""
    if flops is None:
        return None
    if not isinstance(flops, numbers.Real) or _is_bool(flops):
        raise OptionTypeError(f"flops must be a number >= 0 or None, got {type(flops).__name__} "
                              f"{flops!r}")
    if not 0 <= float(flops) < float("inf"):
        raise InvalidOptionError(f"flops must be a finite number >= 0 or None, got {flops!r}")
    return int(flops) if isinstance(flops, numbers.Integral) else float(flops)


def normalize_host_budget(nbytes: Any) -> int | None:
    """Host memory the simulator may use, in bytes (an int >= 1), or None: half of the RAM."""
    if nbytes is None:
        return None
    if not _is_int(nbytes):
        raise OptionTypeError(f"host_memory_budget_bytes must be an int of bytes >= 1 or None "
                              f"(half of this machine's memory), got {type(nbytes).__name__} "
                              f"{nbytes!r}")
    if nbytes < 1:
        raise InvalidOptionError(f"host_memory_budget_bytes must be an int of bytes >= 1 or None "
                                 f"(half of this machine's memory), got {nbytes}")
    return int(nbytes)


def _optional_count(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if not _is_int(value) or value < 1:
        raise OptionTypeError(f"{name} must be an int >= 1 or None, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class SimulatorOptions:
    """The simulator's defaults for every launch of one backend."""

    checks: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(CHECKS, True))
    schedule: str = "ordered"
    seed: int | None = 0
    watchdog_s: float | None = 30.0
    host_memory_budget_bytes: int | None = None
    num_threads: int | None = None
    use_numba: bool | None = None


def simulator_options(*, checks: Any = True, schedule: Any = "ordered", seed: Any = 0,
                      watchdog_s: Any = 30.0, host_memory_budget_bytes: Any = None,
                      num_threads: Any = None, use_numba: Any = None) -> SimulatorOptions:
    """The constructor options of CPUBackend, checked (see the normalize_* functions)."""
    if use_numba is not None and not _is_bool(use_numba):
        raise OptionTypeError(f"use_numba must be True, False or None, got {use_numba!r}")
    return SimulatorOptions(
        normalize_checks(checks), normalize_schedule(schedule), normalize_seed(seed),
        normalize_watchdog(watchdog_s), normalize_host_budget(host_memory_budget_bytes),
        _optional_count("num_threads", num_threads),
        None if use_numba is None else bool(use_numba))


def _is_default(value: Any) -> bool:
    """The per-launch watchdog_s "default": the backend's (kept for older notebooks)."""
    return isinstance(value, str) and value == "default"


@dataclass(frozen=True)
class LaunchOptions:
    """One launch's options, checked; simulator defaults filled in from the backend's."""

    stream: Any = 0
    dynamic_shared_bytes: Any = 0  # checked against the device by validate.check_launch
    flops: float | None = None
    checks: dict[str, bool] = field(default_factory=dict)
    schedule: str = "ordered"
    seed: int | None = None
    watchdog_s: float | None = None
    trace: Recorder | Any = None  # None, or a recorder the simulator fills


def launch_options(options: Mapping[str, Any], defaults: SimulatorOptions | None = None,
                   backend: str = "cpu") -> LaunchOptions:
    """The options of one `launch_kernel` call, checked.

    `defaults` are the simulator's (None for a backend without the simulator: its options are
    then refused, saying that they belong to the simulator). `backend` names it in messages.
    """
    unknown = sorted(set(options) - set(LAUNCH_OPTIONS) - SIMULATOR_ONLY_OPTIONS)
    if unknown:
        accepted = [*LAUNCH_OPTIONS, *sorted(SIMULATOR_ONLY_OPTIONS)]
        raise OptionTypeError(
            f"launch_kernel() got unexpected option(s) {', '.join(unknown)}; the "
            f"{'CPU simulator' if defaults is not None else backend.upper() + ' backend'} "
            f"accepts {', '.join(accepted[:-1])} and {accepted[-1]}")
    if defaults is None:
        # A GPU has none of the simulator's checks: its options are checked (the same errors
        # on both backends) and change nothing; a trace cannot be recorded there.
        if options.get("trace") not in (None, False):
            raise UnsupportedOperationError(
                f"launch_kernel(trace=...) records what each simulated thread touched: the "
                f"{backend.upper()} backend cannot; trace the launch on the simulator "
                "(get_backend('cpu'))")
        defaults = SimulatorOptions()
    stream = options.get("stream", 0)
    seed = normalize_seed(options.get("seed"))
    return LaunchOptions(
        stream=0 if stream is None else stream,
        dynamic_shared_bytes=options.get("dynamic_shared_bytes", 0),
        flops=normalize_flops(options.get("flops")),
        checks=normalize_checks(options.get("checks"), defaults.checks),
        schedule=(defaults.schedule if options.get("schedule") is None
                  else normalize_schedule(options["schedule"])),
        seed=defaults.seed if seed is None else seed,
        watchdog_s=(defaults.watchdog_s if _is_default(options.get("watchdog_s", "default"))
                    else normalize_watchdog(options["watchdog_s"])),
        trace=Recorder.from_option(options.get("trace")))
