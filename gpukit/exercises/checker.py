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
import re
from typing import Any

import numpy as np

from ..backends.cpu import CPUBackend
from ..errors import (
    GpukitError,
    KernelError,
    KernelTimeoutError,
    OutOfBoundsError,
    RaceConditionError,
)
from .budgets import AccessCounter, judge
from .host import HostExerciseSpec, check_host
from .progress import record as _record_progress
from .report import CheckResult, RunResult
from .spec import Case, ExerciseSpec
from .specs import EXERCISES

__all__ = [
    "ExerciseUsageError",
    "Kernels",
    "RunResult",
    "check",
    "compare_output",
    "describe_error",
    "error_cause",
    "get_spec",
    "located",
    "note_untouched",
    "validate_kernel",
]

TRACE_EVENTS = 4_000_000  # exercise launches are small: every access is traced for the budgets
_STOPS = (KernelTimeoutError.__name__, "TraceTooLargeError")  # a loop that never ends: stop checking


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


def validate_kernel(kernel: Any, spec: ExerciseSpec) -> None:
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


def located(exc: BaseException) -> str:
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
    return located(exc)


class Kernels:
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
                                 f"make_kernel({call}) raised {located(exc)}")
            if obj is None or not (callable(obj) or hasattr(obj, "py_func")):
                return RunResult(None, "", None, False, "factory",
                                 f"make_kernel({call}) returned {obj!r} instead of a kernel; "
                                 "end the factory with `return <your kernel>`")
        try:
            compiled = self.backend.compile_kernel(obj)
        except Exception as exc:  # noqa: BLE001 - e.g. UnsupportedKernelError: report it
            return RunResult(None, "", None, False, type(exc).__name__, located(exc))
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


def compare_output(name: str, got: np.ndarray, want: np.ndarray, written: np.ndarray | None,
                   start: np.ndarray | None, spec: ExerciseSpec) -> tuple[str | None, str, dict]:
    """(kind, message, facts) for an output; kind is None when it is the reference.

    `written` is the mask of elements the kernel wrote (None where the output starts at zeros
    and cannot tell); `start` is that starting value. The facts say what happened: how many
    elements were never written, how many written ones are wrong, and whether the kernel left the
    output untouched (so a verdict never guesses "still the skeleton" from a single case).
    """
    if np.issubdtype(want.dtype, np.floating):
        bad = ~np.isclose(got, want, rtol=spec.rtol, atol=spec.atol)
    else:
        bad = got != want
    missing = np.zeros(got.shape, bool) if written is None else ~written
    wrong = bad & ~missing
    untouched = bool(missing.all()) if written is not None else (
        start is not None and bool(np.array_equal(got, start)))
    facts = {"output": name, "elements": int(got.size), "unwritten": int(missing.sum()),
             "wrong": int(wrong.sum()), "untouched": untouched}
    if not missing.any() and not wrong.any():
        return None, "", facts
    if untouched and written is not None:
        return "unwritten", f"the kernel wrote none of the {got.size} elements of '{name}'", facts
    parts = []
    kind = "unwritten" if missing.any() else "mismatch"
    if missing.any():
        idx = _first_index(missing)
        more = int(missing.sum()) - 1
        extra = f" (and {more} more of its {missing.size} elements)" if more else ""
        parts.append(f"{_fmt_index(name, idx)} was never written{extra}; expected "
                     f"{want[idx].item()!r}")
    if wrong.any():
        idx = _first_index(wrong)
        count = int(wrong.sum())
        of = (f"{count} of the {int((~missing).sum())} elements it wrote are wrong"
              if missing.any() else f"{count} of {bad.size} elements differ")
        parts.append(f"{_fmt_index(name, idx)} is {got[idx].item()!r}, expected "
                     f"{want[idx].item()!r} ({of})")
    elif missing.any():
        parts.append("every element it wrote is right")
    if untouched:
        parts.append(f"'{name}' is still all {start.flat[0].item()!r}, as it started")
    return kind, "; ".join(parts), facts


_SPACE = re.compile(r"indexes (?:axis \d+ of )?(\w+) array")
_ACCESS = re.compile(r"(reads|writes) it at line \d+ \('(.*?)'\)")


def error_cause(exc: BaseException) -> str | None:
    """What a kernel error shows happened, for the hint: "oob:shared", "race:blocks", ...

    Races: "race:blocks" (two blocks: no barrier orders them), "race:atomic_and_plain" (the
    same between an atomic and a plain access: an atomic writes too), "race:same_element" (threads of one block
    update one element with the same code: one thread should, or atomically), "race:same_statement"
    (one line reads what another thread writes there), "race:two_lines" (a barrier is missing).
    """
    if isinstance(exc, OutOfBoundsError):
        found = _SPACE.search(exc.detail)
        return f"oob:{found.group(1)}" if found else None
    if isinstance(exc, RaceConditionError):
        accesses = _ACCESS.findall(exc.detail)
        texts = [text for _, text in accesses]
        if exc.block is not None and exc.other_block is not None and exc.block != exc.other_block:
            # between blocks, so in global memory: no barrier can order these
            if any("atomic" in text for text in texts) and not all("atomic" in t for t in texts):
                return "race:atomic_and_plain"
            return "race:blocks"
        if exc.lineno is not None and exc.lineno == exc.other_lineno:
            if len(texts) == 2 and texts[0] == texts[1]:
                return "race:same_element"
            return "race:same_statement"
        return "race:two_lines"
    return None


def budget_cause(over: list[Any], counter: AccessCounter) -> str | None:
    """What a budget failure shows: atomics where none belong, or shared memory declared but not
    used (so the exercise's staging hint is not the first thing to say)."""
    names = {b.name for b in over}
    atomics = next((b for b in over if b.name == "global_atomics_per_block"), None)
    if atomics is not None and atomics.limit == 0:
        return "budget:atomics"
    shared = next((b for b in over if b.name == "min_shared_bytes"), None)
    if names == {"min_shared_bytes"} and shared.declared is not None \
            and shared.declared >= shared.limit and counter.shared_unused:
        return "budget:unused_shared"
    return None


def _run(kernels: Kernels, spec: ExerciseSpec, case: Case, schedule: str, seed: int | None,
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
        cause = error_cause(exc)
        return RunResult(case, schedule, seed, False, type(exc).__name__, located(exc),
                         facts={"cause": cause} if cause else {})
    failure, facts = None, {}
    for name, dev in outs.items():
        got = backend.to_host(dev)
        zeros = spec.outputs[name] == "zeros"
        mask = None if zeros else dev.allocation.init_mask()
        written = None if mask is None else mask.reshape(got.shape)
        start = np.zeros(got.shape, got.dtype) if zeros else None
        kind, message, out_facts = compare_output(name, got, expected[name], written, start, spec)
        if failure is None and kind is not None:
            failure = (kind, message, out_facts)
        if not facts or (facts["untouched"] and not out_facts["untouched"]):
            facts = out_facts  # an output it touched shows it is not the skeleton
    for name, dev in ins.items():
        if failure is None and not np.array_equal(backend.to_host(dev), inputs[name]):
            failure = ("input_modified", (f"your kernel changed its input '{name}'; write results "
                       "only to the output"), {})
    for dev in (*outs.values(), *ins.values()):
        backend.free(dev)
    stats = record.stats
    counter = AccessCounter(case, record.trace)
    budgets = judge(spec.budget.limits(case), counter,
                    stats.static_shared_bytes + stats.dynamic_shared_bytes, case)
    over = [b for b in budgets if not b.ok]
    if failure is None and over:
        unused = "".join(f" (shared array '{label}' is {_half_used(label, record.trace)})"
                         for label in counter.shared_unused)
        failure = ("budget", "; ".join(
            f"over budget: {b.describe()}" + (f", by {b.where}" if b.where else "")
            if b.name != "min_shared_bytes" else f"under the minimum: {b.describe()}{unused}"
            for b in over), {"over": [b.name for b in over]})
        cause = budget_cause(over, counter)
        if cause is not None:
            failure[2]["cause"] = cause
    if failure is None:
        return RunResult(case, schedule, seed, True, "ok", "", budgets, facts=facts)
    return RunResult(case, schedule, seed, False, failure[0], failure[1], budgets,
                     facts={**facts, **failure[2]})


def _half_used(label: str, trace: Any) -> str:
    number = next(i for i, info in enumerate(trace.arrays) if info.label == label)
    kinds = set(trace.columns["kind"][trace.columns["array"] == number].tolist())
    return "written but never read" if 1 in kinds else "read but never written"


def note_untouched(runs: list[RunResult]) -> None:
    """Say "still the skeleton?" only when no run wrote anything; else say it writes elsewhere."""
    compared = [r for r in runs if "untouched" in r.facts]
    never = bool(runs) and len(compared) == len(runs) and all(r.facts["untouched"]
                                                              for r in runs)
    for run in compared:
        if run.passed or not run.facts["untouched"] or run.kind not in ("unwritten",
                                                                        "mismatch"):
            continue
        name = run.facts["output"]
        if never:
            run.message += " (is it still the skeleton?)"
            run.facts["cause"] = f"{run.kind}:skeleton"
        else:
            run.message += (f", though it writes '{name}' in other cases: whatever condition "
                            "guards your writes is false for every thread here (compare it with "
                            "this case's sizes)")
            run.facts["cause"] = f"{run.kind}:untouched"


def check(kernel: Any, exercise: str | ExerciseSpec, *, seed: int = 0, quiet: bool = False,
          device: str = "T4", watchdog_s: float = 10.0, show: bool = False) -> CheckResult:
    """Run `kernel` (or your `make_kernel` factory) against an exercise and print a verdict.

    Every case of the exercise (its fixed cases and the cases drawn from `seed`) runs in block
    order and in a shuffled order (seeds derived from `seed`), with all simulator checks on, on a
    private simulated `device`. The report names the seed: `check(kernel, name, seed=...)` with
    it replays the same sizes, inputs and orders. Returns a `CheckResult` (`.passed`, `.runs`,
    `.report`); prints the report unless `quiet`. show=True first draws
    `gpukit.exercises.show(kernel, exercise)`, the picture of the kernel.
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ExerciseUsageError(f"seed must be an int >= 0, got {seed!r}")
    if not isinstance(quiet, bool):
        raise ExerciseUsageError(f"quiet must be True or False, got {quiet!r}")
    if not isinstance(show, bool):
        raise ExerciseUsageError(f"show must be True or False, got {show!r}")
    spec = get_spec(exercise)
    if show:  # the picture before the verdict (gpukit/exercises/show.py)
        from .show import display_show  # lazy: show imports this module
        display_show(kernel, spec, seed=seed, device=device, watchdog_s=watchdog_s)
    if isinstance(spec, HostExerciseSpec):  # answered by a host function
        return check_host(kernel, spec, seed=int(seed), quiet=quiet, device=device,
                          watchdog_s=watchdog_s)
    validate_kernel(kernel, spec)
    cases = spec.all_cases(int(seed))
    backend = CPUBackend(device=device, checks=True, watchdog_s=watchdog_s)  # checks both
    kernels = Kernels(kernel, spec, backend)
    runs: list[RunResult] = []
    try:
        for index, case in enumerate(cases):
            rng = np.random.default_rng([int(seed), index])
            inputs = spec.inputs(rng, case)
            expected = spec.reference(inputs, case)
            for schedule, run_seed in (("ordered", None), ("shuffle", int(seed) + index + 1)):
                run = _run(kernels, spec, case, schedule, run_seed, inputs, expected)
                runs.append(run)
                if run.kind in _STOPS:
                    break
            if runs and runs[-1].kind in _STOPS:
                break  # a kernel that hangs would hang in every case: stop here
    finally:
        backend.shutdown()
    note_untouched(runs)
    result = CheckResult(spec, runs, int(seed))
    _record_progress(result)  # for progress()
    if not quiet:
        print(result.report)
    return result
