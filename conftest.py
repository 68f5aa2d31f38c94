"""Repository-wide pytest hooks: report how long the notebooks (nbval) took in total."""

from __future__ import annotations

from collections import defaultdict

import pytest

_NOTEBOOK_SECONDS: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _NOTEBOOK_SECONDS[path] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _NOTEBOOK_SECONDS:
        return
    terminalreporter.section("notebooks (nbval)")
    for path, seconds in sorted(_NOTEBOOK_SECONDS.items()):
        terminalreporter.write_line(f"{seconds:7.1f} s  {path}")
    total = sum(_NOTEBOOK_SECONDS.values())
    count = len(_NOTEBOOK_SECONDS)
    terminalreporter.write_line(f"{total:7.1f} s  total nbval time, {count} notebooks")
