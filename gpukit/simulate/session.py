"""One simulation: a simulated device (a CPUBackend) that numba.cuda runs on while it is active.

`Simulation` holds the backend, its numba-style context and device, and the options; starting the
first one patches numba.cuda (`gpukit.simulate.patching`) and stopping the last one restores it.
Simulations nest: leaving a `with gpukit.simulate(...)` block returns to the one active before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import GpukitError

if TYPE_CHECKING:
    from typing_extensions import Self

_STACK: list[Simulation] = []


class SimulationNotActiveError(GpukitError, RuntimeError):
    """numba.cuda's simulated host API was used after the simulation mode was stopped."""


class Simulation:
    """numba.cuda running on gpukit's simulator: `gpukit.simulate(device, **options)` makes one.

    `backend` is the CPUBackend underneath (its `launches`, `transfers`, `timeline()`),
    `context` and `device` what `cuda.current_context()` and `cuda.get_current_device()` return.
    Use it as a context manager, or call `stop()`.
    """

    def __init__(self, device: Any = None, *, checks: Any = True, schedule: str = "ordered",
                 seed: int | None = 0, watchdog_s: float | None = 30.0,
                 host_memory_budget_bytes: int | None = None):
        from ..backends.cpu import CPUBackend
        from .arrays import register_context
        from .device import DeviceList, SimContext

        self.backend = CPUBackend(device, checks=checks, schedule=schedule, seed=seed,
                                  watchdog_s=watchdog_s,
                                  host_memory_budget_bytes=host_memory_budget_bytes)
        self.profile = self.backend.profile
        self.options = {"checks": checks, "schedule": schedule, "seed": seed,
                        "watchdog_s": watchdog_s}
        self.context = SimContext(self)
        self.device = self.context.device
        self.gpus = DeviceList(self.device)
        register_context(self.backend.memory, self.context)
        self.active = False

    @property
    def launches(self) -> list:
        """Every kernel launched in this simulation (gpukit LaunchRecords)."""
        return self.backend.launches

    def start(self) -> Simulation:
        from . import patching
        if self.active:
            return self
        if not _STACK:
            patching.apply()
        _STACK.append(self)
        self.active = True
        return self

    def stop(self) -> None:
        """End this simulation; numba.cuda returns to the one active before it, or to itself."""
        from . import patching
        if not self.active:
            return
        _STACK.remove(self)
        self.active = False
        if not _STACK:
            patching.restore()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "active" if self.active else "stopped"
        return f"<gpukit simulation of numba.cuda on a simulated {self.profile.name}, {state}>"


def current(required: bool = False) -> Simulation | None:
    """The active simulation (the innermost), or None."""
    if _STACK:
        return _STACK[-1]
    if required:
        raise SimulationNotActiveError(
            "gpukit's simulation mode is not active; start it with gpukit.simulate() (this "
            "object was made while it was)")
    return None


def stop_all() -> None:
    """End every simulation: numba.cuda is its original self again."""
    while _STACK:
        _STACK[-1].stop()
