"""Checking exercises whose answer is host code: a function that allocates, launches and copies.

`check(kernel, exercise)` runs one kernel per case. Some exercises need more: a multi-block scan
launches two kernels per level (and recurses), a stream pipeline issues copies and kernels on
several streams. For those the learner writes a *host function* and the exercise is a
`HostExerciseSpec`; `check` hands it to `check_host`, which, for each case and each block order,

* makes a private simulator (every check on, blocks in order or shuffled with a seed) and gives it
  to the learner's function as its first argument, `backend`, with the case's inputs;
* records every launch the function makes (traced, so budgets can be counted per launch) and the
  modeled timeline of its copies and kernels;
* compares the outputs with the numpy reference (elements never written are named), enforces the
  budget on every launch (shared memory: the largest any launch used), and applies the
  exercise's own rules (`HostExerciseSpec.rules`: no copies to the host, several streams, ...).

Verdicts are the same `CheckResult` as for kernels. Nothing here runs on a real GPU.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends.cpu import CPUBackend
from ..errors import GpukitError, KernelTimeoutError
from .budgets import AccessCounter, BudgetCheck, judge
from .progress import record as record_progress
from .report import CheckResult, RunResult
from .spec import Case, ExerciseSpec

TRACE_EVENTS = 4_000_000

# (outputs {name: (got, written mask or None)}) = harness(func, backend, inputs, case)
Harness = Callable[[Callable, "RecordingBackend", dict[str, Any], Case],
                   dict[str, tuple[np.ndarray, np.ndarray | None]]]
# rules(backend, case) -> None, or (kind, message) for the first rule broken
Rules = Callable[["RecordingBackend", Case], tuple[str, str] | None]


class RecordingBackend(CPUBackend):
    """A private simulator that traces and keeps every launch made through it (`checked`)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.checked: list[Any] = []

    def launch_kernel(self, kernel: Any, grid: Any, block: Any, *args: Any,
                      **options: Any) -> Any:
        options.setdefault("trace", TRACE_EVENTS)
        record = super().launch_kernel(kernel, grid, block, *args, **options)
        self.checked.append(record)
        return record


@dataclass(frozen=True)
class HostExerciseSpec(ExerciseSpec):
    """An exercise answered by a host function `func(backend, *params)`.

    harness: sets up the case's inputs on `backend`, calls the learner's function and returns
        each output as (host array, mask of the elements written or None).
    rules: the exercise's own requirements on what the function did (launches, copies, streams).
    The `budget` applies to every launch the function makes.
    """

    harness: Harness | None = None
    rules: Rules | None = None
    host: bool = True

    @property
    def call(self) -> str:
        return f"{self.name}(backend, {', '.join(self.params)})"


def _located(exc: BaseException) -> str:
    from .checker import describe_error  # lazy: checker imports this module
    return describe_error(exc)


def _launch_case(record: Any) -> Case:
    return Case({}, tuple(record.grid), tuple(record.block))


def _budgets(spec: HostExerciseSpec, case: Case, backend: RecordingBackend) -> list[BudgetCheck]:
    """Each limit checked on every launch; the worst launch's line is kept."""
    limits = spec.budget.limits(case)
    shared = {k: limits.pop(k) for k in ("min_shared_bytes", "max_shared_bytes") if k in limits}
    worst: dict[str, BudgetCheck] = {}
    most_shared = 0
    for record in backend.checked:
        stats = record.stats
        used_shared = stats.static_shared_bytes + stats.dynamic_shared_bytes
        most_shared = max(most_shared, used_shared)
        if "max_shared_bytes" in shared:
            limit = shared["max_shared_bytes"]
            line = BudgetCheck("max_shared_bytes", limit, used_shared, used_shared <= limit)
            if "max_shared_bytes" not in worst or line.used > worst["max_shared_bytes"].used:
                worst["max_shared_bytes"] = line
        if limits:
            launch = _launch_case(record)
            for line in judge(limits, AccessCounter(launch, record.trace), used_shared, launch):
                if line.where:
                    line = BudgetCheck(line.name, line.limit, line.used, line.ok,
                                       f"{line.where} in the launch of '{record.kernel}'")
                if line.name not in worst or line.used > worst[line.name].used:
                    worst[line.name] = line
    if "min_shared_bytes" in shared:
        limit = shared["min_shared_bytes"]
        worst["min_shared_bytes"] = BudgetCheck("min_shared_bytes", limit, most_shared,
                                                most_shared >= limit)
    return list(worst.values())


def _compare(spec: ExerciseSpec, outputs: dict[str, tuple[np.ndarray, np.ndarray | None]],
             expected: dict[str, np.ndarray]) -> tuple[str, str, dict] | None:
    from .checker import compare_output  # lazy: checker imports this module
    for name, want in expected.items():
        if name not in outputs:
            continue
        got, written = outputs[name]
        kind, message, facts = compare_output(name, got, want, written, None, spec)
        if kind is not None:
            return kind, message, facts
    return None


def _run(func: Callable, spec: HostExerciseSpec, case: Case, schedule: str, seed: int | None,
         inputs: dict[str, Any], expected: dict[str, np.ndarray], device: str,
         watchdog_s: float) -> RunResult:
    backend = RecordingBackend(device=device, checks=True, schedule=schedule,
                               seed=0 if seed is None else seed, watchdog_s=watchdog_s)
    try:
        try:
            outputs = spec.harness(func, backend, inputs, case)
        except GpukitError as exc:
            return RunResult(case, schedule, seed, False, type(exc).__name__, _located(exc))
        except Exception as exc:  # noqa: BLE001 - the learner's host code failed: report it
            return RunResult(case, schedule, seed, False, "host_error",
                             f"your function raised {type(exc).__name__}: {exc}")
        compared = _compare(spec, outputs, expected)
        failure, facts = (compared[:2], compared[2]) if compared is not None else (None, {})
        if failure is None and not backend.checked:
            failure = ("no_launch", ("your function launched no kernel: the work must run on "
                       "the (simulated) device"))
        if failure is None and spec.rules is not None:
            failure = spec.rules(backend, case)
        budgets = _budgets(spec, case, backend)
        over = [b for b in budgets if not b.ok]
        if failure is None and over:
            failure = ("budget", "; ".join(
                f"over budget: {b.describe()}" + (f", by {b.where}" if b.where else "")
                if b.name != "min_shared_bytes" else f"under the minimum: {b.describe()}"
                for b in over))
        if failure is None:
            return RunResult(case, schedule, seed, True, "ok", "", budgets)
        return RunResult(case, schedule, seed, False, failure[0], failure[1], budgets, facts)
    finally:
        backend.shutdown()


def _validate(func: Any, spec: HostExerciseSpec) -> None:
    from .checker import ExerciseUsageError  # lazy: checker imports this module
    if hasattr(func, "py_func") or not callable(func):
        raise ExerciseUsageError(
            f"exercise {spec.name!r} checks a host function, not a kernel: pass your function "
            f"{spec.call}, the one that allocates, launches and copies")
    try:
        names = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return
    if len(names) != len(spec.params) + 1:
        raise ExerciseUsageError(
            f"exercise {spec.name!r} calls your function as {spec.call}, but yours takes "
            f"{len(names)} argument(s) ({', '.join(names)})")


def check_host(func: Any, spec: HostExerciseSpec, *, seed: int = 0, quiet: bool = False,
               device: str = "T4", watchdog_s: float = 10.0) -> CheckResult:
    """`check` for a host-function exercise (see the module docstring)."""
    _validate(func, spec)
    runs: list[RunResult] = []
    cases = spec.all_cases(int(seed))
    for index, case in enumerate(cases):
        rng = np.random.default_rng([int(seed), index])
        inputs = spec.inputs(rng, case)
        expected = spec.reference(inputs, case)
        for schedule, run_seed in (("ordered", None), ("shuffle", int(seed) + index + 1)):
            run = _run(func, spec, case, schedule, run_seed, inputs, expected, device,
                       watchdog_s)
            runs.append(run)
            if run.kind == KernelTimeoutError.__name__:
                break
        if runs and runs[-1].kind == KernelTimeoutError.__name__:
            break
    from .checker import note_untouched  # lazy: checker imports this module
    note_untouched(runs)
    result = CheckResult(spec, runs, int(seed))
    record_progress(result)  # for progress()
    if not quiet:
        print(result.report)
    return result
