"""The `%gpukit` IPython line magic: `%gpukit simulate [device] [option=value ...]`, `%gpukit stop`,
`%gpukit status`. Loaded with `%load_ext gpukit`; it only starts and stops the simulation mode."""

from __future__ import annotations

from typing import Any

from . import active, options_from_text, start, stop

USAGE = ("usage: %gpukit simulate [DEVICE] [checks=bounds+races] [schedule=shuffle] [seed=N] "
         "[watchdog_s=S] | %gpukit stop | %gpukit status")


def gpukit_magic(line: str) -> Any:
    """`%gpukit simulate A100`: numba.cuda runs on a simulated A100 from the next cell on."""
    words = line.split()
    if not words:
        print(USAGE)
        return None
    command, rest = words[0], words[1:]
    if command == "simulate":
        options = options_from_text(",".join(rest))
        stop()  # the magic switches: a second %gpukit simulate replaces the first
        simulation = start(options.pop("device", None), **options)
        print(f"gpukit: numba.cuda now runs on a simulated {simulation.profile.name} "
              f"(checks on; %gpukit stop to end)")
        return None
    if command == "stop":
        stop()
        print("gpukit: simulation mode stopped; numba.cuda is its own again")
        return None
    if command == "status":
        simulation = active()
        print("gpukit: simulation mode is off" if simulation is None else
              f"gpukit: numba.cuda runs on a simulated {simulation.profile.name}, "
              f"{len(simulation.launches)} launches so far")
        return None
    print(USAGE)
    return None


def register(ipython: Any) -> None:
    ipython.register_magic_function(gpukit_magic, magic_kind="line", magic_name="gpukit")


def unregister(ipython: Any) -> None:
    stop()
