"""Simulation mode: numba.cuda itself (host API and dispatchers) runs on gpukit's simulator.

`gpukit.simulate(device="T4", checks=True, schedule="ordered", seed=0, watchdog_s=30.0)` starts it
and returns the `Simulation` (also a context manager: leaving the block stops it);
`gpukit.simulate.stop()` ends every simulation and gives numba.cuda back its own objects.
`python -m gpukit.simulate script.py`, `GPUKIT_SIMULATE=1`, `pytest --gpukit-simulate` and
`%gpukit simulate` start it for a script, a process, a test run or a notebook. Nothing is patched
until one of these asks (`gpukit.simulate.patching.PATCHED` lists what is, and why); this module
imports neither numba nor the simulator until then.
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["active", "options_from_text", "start", "stop"]


def start(device: Any = None, **options: Any) -> Any:
    """Start simulating numba.cuda on a simulated `device` (a profile name such as "A100", or a
    `DeviceProfile`; default T4). Options are CPUBackend's: checks, schedule, seed, watchdog_s,
    host_memory_budget_bytes. Returns the `Simulation`."""
    from .session import Simulation
    return Simulation(device, **options).start()


def stop() -> None:
    """End the simulation mode: numba.cuda's own functions and launch path are back."""
    from .session import stop_all
    stop_all()


def active() -> Any:
    """The active `Simulation`, or None."""
    from .session import current
    return current()


def options_from_text(value: str | None) -> dict[str, Any]:
    """Simulation options from GPUKIT_SIMULATE's value or a magic's argument: "1" or "" (the
    default device), a device name ("A100"), or "A100,checks=bounds+races,seed=3"."""
    options: dict[str, Any] = {}
    parts = [p.strip() for p in (value or "").split(",") if p.strip()]
    for part in parts:
        key, sep, text = part.partition("=")
        if not sep:
            if key.lower() not in ("1", "true", "yes", "on"):
                options["device"] = key
            continue
        key = key.strip().replace("-", "_")
        if key == "checks":
            options[key] = {"all": True, "none": False}.get(text, [c for c in text.split("+")
                                                                  if c])
        elif key in ("seed",):
            options[key] = None if text.lower() == "none" else int(text)
        elif key == "watchdog_s":
            options[key] = None if text.lower() == "none" else float(text)
        else:
            options[key] = text
    return options


class _SimulateModule(types.ModuleType):
    """`gpukit.simulate(...)` calls `start`; the module also runs as `python -m gpukit.simulate`."""

    def __call__(self, device: Any = None, **options: Any) -> Any:
        return start(device, **options)


sys.modules[__name__].__class__ = _SimulateModule
