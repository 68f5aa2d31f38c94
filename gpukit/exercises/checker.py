"""`check(kernel, exercise)`: run a learner's kernel the many ways a GPU might, and judge it.

Each case (a size with a launch shape, see `ExerciseSpec.cases`) runs twice on a private
simulator with every check on: once with blocks in order, once shuffled with its own seed. Inputs
are seeded and non-constant; outputs from `allocate` start uninitialised, so reading them before
writing is caught and elements nobody wrote are named. Results are compared with the numpy
reference, and budgets are enforced from per-thread access counts. A wrong kernel is reported,
never raised; misusing `check` itself raises `ExerciseUsageError`. It does not run on a real GPU.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any

import numpy as np

from ..backends.cpu import CPUBackend
from ..errors import GpukitError, KernelError, KernelTimeoutError
from .budgets import AccessCounter, judge

TRACE_EVENTS = 4_000_000  # exercise launches are small: every access is traced for the budgets
from .report import CheckResult, RunResult
from .spec import Case, ExerciseSpec
from .specs import EXERCISES

__all__ = ["ExerciseUsageError", "RunResult", "check", "describe_error", "get_spec"]


class ExerciseUsageError(GpukitError, ValueError):
    """check() was called wrongly: an unknown exercise, something that is not a kernel, or a
    kernel where the exercise wants a kernel factory (or the other way round)."""


def get_spec(exercise: str | ExerciseSpec) -> ExerciseSpec:
    """The spec of an exercise given by name (or the spec itself)."""
    if isinstance(exercise, ExerciseSpec):
        return exercise
    specs = EXERCISES
    if not isinstance(exercise, str):
        if callable(exercise):
            raise ExerciseUsageError(
                "check's arguments are the other way round: call check(your_kernel, "
                "'exercise_name')")
        raise ExerciseUsageError(f"the exercise must be a name such as 'map', got "
                                 f"{type(exercise).__name__}")
    key = exercise.strip().lower().replace("-", "_").replace(" ", "_")
    if key not in specs:
        close = difflib.get_close_matches(key, list(specs), n=1)
        guess = f"did you mean '{close[0]}'? " if close else ""
        raise ExerciseUsageError(f"unknown exercise {exercise!r}; {guess}the exercises are: "
                                 f"{', '.join(specs)}")
    return specs[key]


def _param_names(obj: Any) -> list[str] | None:
    func = getattr(obj, "py_func", obj)
    try:
        return list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return None


def _validate_kernel(kernel: Any, spec: ExerciseSpec) -> None:
    if isinstance(kernel, (str, ExerciseSpec)):
        raise ExerciseUsageError("check's arguments are the other way round: call "
                                 f"check(your_kernel, {spec.name!r})")
    if not callable(kernel) and not hasattr(kernel, "py_func"):
        raise ExerciseUsageError(
            f"check expects your kernel function (or a kernel factory) as its first argument, "
            f"got {type(kernel).__name__}")
    names = _param_names(kernel)
    factory_call = f"make_kernel({', '.join(spec.factory)})"
    if spec.factory:
        if hasattr(kernel, "py_func") or (names is not None and len(names) == len(spec.params)
                                          and len(names) != len(spec.factory)):
            raise ExerciseUsageError(
                f"exercise {spec.name!r} needs a kernel factory, not a kernel: pass "
                f"{factory_call}, the function that builds and returns your kernel for a given "
                f"{', '.join(spec.factory)}, as in check(make_kernel, {spec.name!r})")
        if names is not None and len(names) != len(spec.factory):
            raise ExerciseUsageError(
                f"exercise {spec.name!r} calls your factory as {factory_call}, but yours takes "
                f"{len(names)} argument(s) ({', '.join(names)})")
    elif names is not None and len(names) == 1 < len(spec.params) \
            and not hasattr(kernel, "py_func"):
        raise ExerciseUsageError(
            f"exercise {spec.name!r} takes the kernel itself, not a factory: pass the kernel "
            f"function (called as {spec.call})")


def _located(exc: BaseException) -> str:
    """An error's message with its place, without the (notebook-dependent) file name."""
    if isinstance(exc, KernelError):
        where = []
        if exc.thread is not None:
            where.append(f"thread {exc.thread}")
        if exc.block is not None:
            where.append(f"block {exc.block}")
        if exc.lineno is not None:
            where.append(f"line {exc.lineno}")
        text = f"{type(exc).__name__}: {exc.detail}"
        return text + (f"\n(at {', '.join(where)} of your kernel)" if where else "")
    return f"{type(exc).__name__}: {exc}"


def describe_error(exc: BaseException) -> str:
    """A gpukit error as check() prints it: class, message, thread, block and line."""
    return _located(exc)


class _Kernels:
    """The learner's kernel compiled once per factory arguments (or the reason it failed)."""

    def __init__(self, kernel: Any, spec: ExerciseSpec, backend: Any):
        self.kernel, self.spec, self.backend = kernel, spec, backend
        self.cache: dict[tuple, Any] = {}

    def get(self, case: Case) -> Any:
        key = tuple(case.params[p] for p in self.spec.factory)
        if key not in self.cache:
            self.cache[key] = self._build(key)
        return self.cache[key]

    def _build(self, key: tuple) -> Any:
        spec, obj = self.spec, self.kernel
        if spec.factory:
            call = ", ".join(f"{p}={v}" for p, v in zip(spec.factory, key))
            try:
                obj = self.kernel(*key)
            except Exception as exc:  # noqa: BLE001 - the learner's factory failed: report it
                return RunResult(None, "", None, False, "factory",
                                 f"make_kernel({call}) raised {_located(exc)}")
            if obj is None or not (callable(obj) or hasattr(obj, "py_func")):
                return RunResult(None, "", None, False, "factory",
                                 f"make_kernel({call}) returned {obj!r} instead of a kernel; "
                                 "end the factory with `return <your kernel>`")
        try:
            compiled = self.backend.compile_kernel(obj)
        except Exception as exc:  # noqa: BLE001 - e.g. UnsupportedKernelError: report it
            return RunResult(None, "", None, False, type(exc).__name__, _located(exc))
        got = list(compiled.param_names)
        if len(got) != len(spec.params):
            return RunResult(None, "", None, False, "signature",
                             f"your kernel takes ({', '.join(got)}) but this exercise calls it as "
                             f"{spec.call}")
        return compiled


def _first_index(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(v) for v in np.argwhere(mask)[0])


def _fmt_index(name: str, index: tuple[int, ...]) -> str:
    return f"{name}[{', '.join(map(str, index))}]"


def _compare(name: str, got: np.ndarray, want: np.ndarray, written: np.ndarray | None,
             spec: ExerciseSpec) -> tuple[str, str] | None:
    if written is not None and not written.any():
        return "unwritten", (f"the kernel wrote none of the {written.size} elements of '{name}' "
                             "(is it still the skeleton?)")
    if written is not None and not written.all():
        missing = ~written
        idx = _first_index(missing)
        more = int(missing.sum()) - 1
        extra = f" (and {more} more of its {missing.size} elements)" if more else ""
        return "unwritten", (f"{_fmt_index(name, idx)} was never written{extra}; expected "
                             f"{want[idx].item()!r}")
    if np.issubdtype(want.dtype, np.floating):
        bad = ~np.isclose(got, want, rtol=spec.rtol, atol=spec.atol)
    else:
        bad = got != want
    if bad.any():
        idx = _first_index(bad)
        count = int(bad.sum())
        return "mismatch", (f"{_fmt_index(name, idx)} is {got[idx].item()!r}, expected "
                            f"{want[idx].item()!r} ({count} of {bad.size} elements differ)")
    return None


def _run(kernels: _Kernels, spec: ExerciseSpec, case: Case, schedule: str, seed: int | None,
         inputs: dict[str, Any], expected: dict[str, np.ndarray]) -> RunResult:
    backend = kernels.backend
    compiled = kernels.get(case)
    if isinstance(compiled, RunResult):
        return RunResult(case, schedule, seed, False, compiled.kind, compiled.message)
    args, outs, ins = [], {}, {}
    for name in spec.params:
        if name in spec.outputs:
            want = expected[name]
            if spec.outputs[name] == "zeros":
                dev = backend.to_device(np.zeros(want.shape, want.dtype))
            else:
                dev = backend.allocate(want.shape, want.dtype)
            outs[name] = dev
            args.append(dev)
        elif isinstance(inputs[name], np.ndarray):
            ins[name] = backend.to_device(inputs[name])
            args.append(ins[name])
        else:
            args.append(inputs[name])
    try:
        record = backend.launch_kernel(compiled, case.grid, case.block, *args,
                                       schedule=schedule, seed=seed, trace=TRACE_EVENTS)
    except (GpukitError, TypeError) as exc:  # the learner's kernel failed: report it
        for dev in (*outs.values(), *ins.values()):
            backend.free(dev)
        return RunResult(case, schedule, seed, False, type(exc).__name__, _located(exc))
    failure = None
    for name, dev in outs.items():
        got = backend.to_host(dev)
        mask = dev.allocation.init_mask() if spec.outputs[name] != "zeros" else None
        written = None if mask is None else mask.reshape(got.shape)
        failure = failure or _compare(name, got, expected[name], written, spec)
    for name, dev in ins.items():
        if failure is None and not np.array_equal(backend.to_host(dev), inputs[name]):
            failure = ("input_modified", (f"your kernel changed its input '{name}'; write results "
                       "only to the output"))
    for dev in (*outs.values(), *ins.values()):
        backend.free(dev)
    stats = record.stats
    counter = AccessCounter(case, record.trace)
    budgets = judge(spec.budget.limits(case), counter,
                    stats.static_shared_bytes + stats.dynamic_shared_bytes, case)
    over = [b for b in budgets if not b.ok]
    if failure is None and over:
        failure = ("budget", "; ".join(
            f"over budget: {b.describe()}" + (f", by {b.where}" if b.where else "")
            if b.name != "min_shared_bytes" else f"under the minimum: {b.describe()}"
            for b in over))
    if failure is None:
        return RunResult(case, schedule, seed, True, "ok", "", budgets)
    return RunResult(case, schedule, seed, False, failure[0], failure[1], budgets)


def check(kernel: Any, exercise: str | ExerciseSpec, *, seed: int = 0, quiet: bool = False,
          device: str = "T4", watchdog_s: float = 10.0) -> CheckResult:
    """Run `kernel` (or your `make_kernel` factory) against an exercise and print a verdict.

    Every case of the exercise runs in block order and in a shuffled order (seeds derived from
    `seed`), with all simulator checks on, on a private simulated `device`. Returns a
    `CheckResult` (`.passed`, `.runs`, `.report`); prints the report unless `quiet`.
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ExerciseUsageError(f"seed must be an int >= 0, got {seed!r}")
    if not isinstance(quiet, bool):
        raise ExerciseUsageError(f"quiet must be True or False, got {quiet!r}")
    backend = CPUBackend(device=device, checks=True, watchdog_s=watchdog_s)  # checks both
    spec = get_spec(exercise)
    if getattr(spec, "host", False):  # answered by a host function (gpukit.exercises.host)
        from .host import check_host
        return check_host(kernel, spec, seed=int(seed), quiet=quiet, device=device,
                          watchdog_s=watchdog_s)
    _validate_kernel(kernel, spec)
    kernels = _Kernels(kernel, spec, backend)
    runs: list[RunResult] = []
    try:
        for index, case in enumerate(spec.cases()):
            rng = np.random.default_rng([int(seed), index])
            inputs = spec.inputs(rng, case)
            expected = spec.reference(inputs, case)
            for schedule, run_seed in (("ordered", None), ("shuffle", int(seed) + index + 1)):
                run = _run(kernels, spec, case, schedule, run_seed, inputs, expected)
                runs.append(run)
                if run.kind == KernelTimeoutError.__name__:
                    break
            if runs and runs[-1].kind == KernelTimeoutError.__name__:
                break  # a kernel that hangs would hang in every case: stop here
    finally:
        backend.shutdown()
    result = CheckResult(spec, runs)
    if not quiet:
        print(result.report)
    return result
