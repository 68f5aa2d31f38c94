"""gpukit.backends.options: backend and launch options, checked once for every backend."""

from __future__ import annotations

import numpy as np
import pytest

from gpukit.backends.options import (
    CHECKS,
    launch_options,
    normalize_checks,
    normalize_flops,
    normalize_host_budget,
    normalize_seed,
    normalize_watchdog,
    simulator_options,
)
from gpukit.errors import InvalidOptionError, OptionTypeError, UnsupportedOperationError
from gpukit.trace import Recorder

ALL_ON = dict.fromkeys(CHECKS, True)


def test_checks_become_a_dict_of_bools_for_every_check():
    assert normalize_checks(True) == ALL_ON and normalize_checks(np.False_) == dict.fromkeys(
        CHECKS, False)
    assert normalize_checks({"races": False}) == {**ALL_ON, "races": False}
    assert normalize_checks(["bounds"]) == {**dict.fromkeys(CHECKS, False), "bounds": True}
    assert normalize_checks(None, {**ALL_ON, "bounds": False})["bounds"] is False


@pytest.mark.parametrize(("checks", "error", "message"), [
    ({"races": "no"}, OptionTypeError, "checks['races'] must be True or False, got str 'no'"),
    ({"races": 0}, OptionTypeError, "checks['races'] must be True or False, got int 0"),
    ({"race": True}, InvalidOptionError, ("unknown check 'race'; the checks are: launch_limits, "
                                          "bounds, races, barriers, uninitialized, "
                                          "division_by_zero, wraparound")),
    ([3], InvalidOptionError, ("unknown check 3; the checks are: launch_limits, bounds, races, "
                               "barriers, uninitialized, division_by_zero, wraparound")),
    ("bounds", OptionTypeError, ("checks must be True, False, a dict or a list of names, not "
                                 "'bounds'; the checks are: launch_limits, bounds, races, "
                                 "barriers, uninitialized, division_by_zero, wraparound")),
])
def test_bad_checks(checks, error, message):
    with pytest.raises(error) as info:
        normalize_checks(checks)
    assert str(info.value) == message


def test_scalar_options():
    assert normalize_seed(None) is None and normalize_seed(np.int32(7)) == 7
    assert normalize_watchdog(None) is None and normalize_watchdog(2) == 2.0
    assert normalize_flops(10) == 10 and type(normalize_flops(10)) is int
    assert normalize_flops(2.5) == 2.5 and normalize_host_budget(1 << 20) == 1 << 20
    for call, message in [
            (lambda: normalize_watchdog(0), ("watchdog_s must be a positive number of seconds or "
                                             "None, got 0")),
            (lambda: normalize_watchdog(float("inf")), ("watchdog_s must be a positive number "
                                                        "of seconds or None, got inf")),
            (lambda: normalize_flops(-1), "flops must be a finite number >= 0 or None, got -1"),
            (lambda: normalize_seed(True), "seed must be an int >= 0 or None, got bool True"),
            (lambda: normalize_host_budget(0), ("host_memory_budget_bytes must be an int of bytes "
                                                ">= 1 or None (half of this machine's memory), "
                                                "got 0"))]:
        with pytest.raises(InvalidOptionError) as info:
            call()
        assert str(info.value) == message


def test_launch_options_fill_in_the_backends_defaults():
    defaults = simulator_options(checks={"races": False}, schedule="shuffle", seed=5,
                                 watchdog_s=None)
    opts = launch_options({}, defaults)
    assert (opts.checks["races"], opts.schedule, opts.seed, opts.watchdog_s) == (
        False, "shuffle", 5, None)
    opts = launch_options({"schedule": "ordered", "seed": 1, "watchdog_s": 3, "trace": 10,
                           "stream": None, "flops": 4}, defaults)
    assert (opts.schedule, opts.seed, opts.watchdog_s, opts.stream, opts.flops) == (
        "ordered", 1, 3.0, 0, 4)
    assert isinstance(opts.trace, Recorder) and opts.trace.max_events == 10
    assert launch_options({"watchdog_s": "default"}, defaults).watchdog_s is None


def test_a_backend_without_the_simulator_checks_its_options_and_refuses_traces():
    """The simulator's options mean nothing on a GPU but get the same checks, so code written
    for one backend runs on the other; a trace cannot be recorded there."""
    opts = launch_options({"checks": False, "schedule": "shuffle", "seed": 3, "watchdog_s": 1},
                          None, backend="cuda")
    assert (opts.schedule, opts.seed) == ("shuffle", 3)
    with pytest.raises(OptionTypeError, match="checks must be True, False, a dict or a list"):
        launch_options({"checks": 1}, None, backend="cuda")
    with pytest.raises(UnsupportedOperationError, match=r"launch_kernel\(trace=...\) records "
                                                        "what each simulated thread touched"):
        launch_options({"trace": True}, None, backend="cuda")
    with pytest.raises(OptionTypeError, match="unexpected option\\(s\\) grid; the CUDA backend "
                                              "accepts stream, dynamic_shared_bytes, flops, "
                                              "checks, schedule, seed, trace and watchdog_s$"):
        launch_options({"grid": 1}, None, backend="cuda")


def test_constructor_extras():
    assert simulator_options(num_threads=4, use_numba=np.True_).use_numba is True
    with pytest.raises(OptionTypeError, match="num_threads must be an int >= 1 or None, got 0"):
        simulator_options(num_threads=0)
    with pytest.raises(OptionTypeError, match="use_numba must be True, False or None, got 1"):
        simulator_options(use_numba=1)
