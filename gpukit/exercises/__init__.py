"""Workshop exercises and their checker: `check(kernel, "map")` prints a verdict and returns it.

`check` runs a learner's kernel on gpukit's simulator at several sizes, launch shapes and block
orders with every check on, compares with a numpy reference, and enforces the exercise's budgets
(global reads and writes per thread, atomics per block, shared memory). It reports a wrong
kernel and raises only when it is called wrongly. It never runs on a real GPU, and it says
nothing about speed. `show(kernel, "map")` draws what the kernel did at a small size: which
thread read and wrote which element, phase by phase (`check(..., show=True)` draws it first).
"""

from __future__ import annotations

from .budgets import AccessCounter, BudgetCheck
from .checker import ExerciseUsageError, RunResult, check, describe_error, get_spec
from .progress import Progress, progress
from .report import CheckResult
from .show import show
from .spec import Budget, Case, ExerciseSpec
from .specs import EXERCISES


def list_exercises() -> list[str]:
    """The exercise names, in workshop order."""
    return list(EXERCISES)


__all__ = [
    "EXERCISES",
    "AccessCounter",
    "Budget",
    "BudgetCheck",
    "Case",
    "CheckResult",
    "ExerciseSpec",
    "ExerciseUsageError",
    "Progress",
    "RunResult",
    "check",
    "describe_error",
    "get_spec",
    "list_exercises",
    "progress",
    "show",
]
