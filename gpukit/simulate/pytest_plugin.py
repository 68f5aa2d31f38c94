"""pytest plugin (registered on install): `pytest --gpukit-simulate[=DEVICE]` runs a test suite's
numba.cuda code on gpukit's simulator, for the whole session.

Without the option it does nothing (it imports nothing beyond this module). With it, the
simulation mode starts before collection, so `cuda.is_available()` is True at import time of the
test modules, and stops at the end. `--gpukit-checks` and `--gpukit-schedule` pass options on.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

_BARE = "--gpukit-simulate"
_DEFAULT = "default"
ENV = "GPUKIT_SIMULATE"  # gpukit.simulate.startup.ENV: the processes tests start simulate too


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpukit", "gpukit's GPU simulator")
    group.addoption(_BARE, dest="gpukit_simulate", default=None, metavar="DEVICE", nargs="?",
                    const=_DEFAULT,
                    help="run numba.cuda (host API and kernels) on gpukit's simulator, "
                         "emulating DEVICE (default T4): --gpukit-simulate or "
                         "--gpukit-simulate=A100")
    group.addoption("--gpukit-checks", dest="gpukit_checks", default="all",
                    help="with --gpukit-simulate: comma-separated checks to keep on, 'all' "
                         "(default) or 'none'")
    group.addoption("--gpukit-schedule", dest="gpukit_schedule", default="ordered",
                    choices=["ordered", "shuffle"],
                    help="with --gpukit-simulate: block and write order")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: Any, parser: Any, args: list[str]) -> None:
    # `--gpukit-simulate` alone would take the next argument (a test path) as its DEVICE
    for i, arg in enumerate(args):
        if arg == _BARE:
            args[i] = f"{_BARE}={_DEFAULT}"


def pytest_configure(config: pytest.Config) -> None:
    device = config.getoption("gpukit_simulate", None)
    if device is None:
        return
    from . import start
    from .__main__ import checks_option
    checks, schedule = config.getoption("gpukit_checks"), config.getoption("gpukit_schedule")
    config._gpukit_simulation = start(
        None if device == _DEFAULT else device, checks=checks_option(checks), schedule=schedule)
    # Python processes the tests start simulate too (as NUMBA_ENABLE_CUDASIM=1 would reach them)
    config._gpukit_environ = os.environ.get(ENV)
    os.environ[ENV] = _environ_value(device, checks, schedule)


def _environ_value(device: str, checks: str, schedule: str) -> str:
    """GPUKIT_SIMULATE's value for the same simulation (gpukit.simulate.options_from_text)."""
    parts = ["1" if device == _DEFAULT else device]
    if checks != "all":
        names = [c.strip() for c in checks.split(",") if c.strip()]
        parts.append("checks=" + ("none" if checks == "none" else "+".join(names)))
    if schedule != "ordered":
        parts.append(f"schedule={schedule}")
    return ",".join(parts)


def pytest_unconfigure(config: pytest.Config) -> None:
    simulation = getattr(config, "_gpukit_simulation", None)
    if simulation is not None:
        simulation.stop()
        previous = config._gpukit_environ
        if previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = previous


def pytest_report_header(config: pytest.Config) -> str | None:
    simulation = getattr(config, "_gpukit_simulation", None)
    if simulation is None:
        return None
    return (f"gpukit: numba.cuda runs on a simulated {simulation.profile.name} "
            f"(checks {simulation.options['checks']!r}, schedule "
            f"{simulation.options['schedule']})")
