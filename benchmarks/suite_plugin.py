"""A pytest plugin for benchmarks/numba_cuda_suite.py (loaded with `-p benchmarks.suite_plugin`).

It needs no package beyond pytest. It gives a per-test time limit (SIGALRM, `GPUKIT_SUITE_TEST_TIMEOUT`
seconds: the test fails with `TestTimeout`) and one JSON line per test outcome, appended as it
happens to the file `GPUKIT_SUITE_LOG` (so that a module killed at its own time limit still
leaves what it ran). A collection line lists every test id first.
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest


class TestTimeout(Exception):
    """A test ran past GPUKIT_SUITE_TEST_TIMEOUT seconds."""

    __test__ = False


def _write(record: dict[str, Any]) -> None:
    path = os.environ.get("GPUKIT_SUITE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")


def pytest_collection_finish(session: pytest.Session) -> None:
    _write({"collected": [item.nodeid for item in session.items]})


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _write({"nodeid": report.nodeid, "when": "collect", "outcome": "error",
                "reason": _reason(report)})


def _alarm(signum: int, frame: Any) -> None:
    raise TestTimeout(f"ran past {os.environ.get('GPUKIT_SUITE_TEST_TIMEOUT')} s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Any:
    limit = int(os.environ.get("GPUKIT_SUITE_TEST_TIMEOUT", "0"))
    if limit:
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(limit)
    try:
        yield
    finally:
        if limit:
            signal.alarm(0)


def _reason(report: Any) -> str:
    """The failure's one line: the exception and its message's first line."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    elif isinstance(report.longrepr, tuple):  # a skip: (path, line, reason)
        text = str(report.longrepr[2])
    else:
        text = str(report.longrepr or "")
        lines = [ln for ln in text.splitlines() if ln.startswith("E ")]
        text = lines[0][1:].strip() if lines else (text.strip().splitlines() or [""])[-1]
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first[:300]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or report.outcome != "passed":
        outcome = report.outcome
        if report.when != "call" and outcome == "failed":
            outcome = "error"
        _write({"nodeid": report.nodeid, "when": report.when, "outcome": outcome,
                "reason": "" if outcome == "passed" else _reason(report),
                "seconds": round(report.duration, 2)})


# numba-cuda's CUDATestCase uses this fixture, which its repository's conftest.py defines and its
# wheel does not ship: the same effect (FileCheck reproducers are not dumped)
@pytest.fixture(scope="class")
def initialize_from_pytest_config(request: pytest.FixtureRequest) -> None:
    request.cls._dump_failed_filechecks = False
