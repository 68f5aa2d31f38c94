"""`show(kernel, exercise)`: a picture of what the learner's own kernel did, GPU-Puzzles style.

The kernel runs once on gpukit's simulator (every check on, accesses traced) at a small size of
the exercise, chosen from the exercise's own cases (the smallest with several blocks, or pass
sizes such as `n=21` or `case=` to pick another). The picture has one panel per barrier phase
(the accesses between two `cuda.syncthreads()`), and in each the kernel's arrays as grids of
cells: inputs with their values, the shared-memory tiles of every block, outputs with the values
the kernel wrote. A cell a thread touched in that phase is coloured (by thread in a one-block
launch, by block otherwise) and labelled with the threadIdx that touched it; pale cells were
read, strong cells with a black edge were written. A kernel that fails still gets its picture,
with the error in the title. Everything is generic: it reads the spec and the trace, nothing
about a particular exercise. Here: choosing the case and running the kernel; what the panels
show is gpukit/exercises/show_panels.py, the drawing (matplotlib) gpukit/exercises/show_figure.py.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends.cpu import CPUBackend
from ..errors import GpukitError, KernelError, RaceConditionError, UninitializedMemoryError
from ..trace.recorder import Recorder, Trace, TraceTooLargeError
from .checker import ExerciseUsageError, Kernels, get_spec, located, validate_kernel
from .report import RunResult
from .show_figure import MIN_FONT, draw
from .show_panels import (
    Panel,
    Run,
    ShowInfo,
    cut_trace,
    first_conflict_phase,
    panels_of,
)
from .spec import Case, ExerciseSpec

__all__ = ["MIN_FONT", "ShowInfo", "pick_case", "show"]

DEFAULT_PHASES = 4  # barrier phases drawn unless `phases` asks for others

MAX_EVENTS = 200_000  # a picture of more accesses than this would be unreadable anyway
SMALL_THREADS = 64  # the automatic case has at most this many threads where the spec allows,
SMALL_BLOCKS = 4  # and several blocks, but at most this many


# -- which case ----------------------------------------------------------------------------------
def _spec_cases(spec: ExerciseSpec, seed: int) -> list[Case]:
    cases = spec.cases
    try:
        wants_rng = len(inspect.signature(cases).parameters) >= 1
    except (TypeError, ValueError):
        wants_rng = False
    return list(cases(np.random.default_rng(seed)) if wants_rng else cases())


def _case_cells(case: Case) -> int:
    return int(np.prod(list(case.size.values()) or [1]))


def pick_case(spec: ExerciseSpec, case: Case | int | None = None, seed: int = 0,
              **size: int) -> tuple[int, Case]:
    """(index, case) of the exercise's case to draw.

    case: a `Case` (drawn as given), or an index into the exercise's cases. size: values the
    case must have (sizes such as n=21 or factory arguments such as TPB=8). Neither: the
    smallest case with 2 to 4 blocks and at most 64 threads, else the case with the fewest
    threads (and then elements), preferring at least 4 threads.
    """
    cases = _spec_cases(spec, seed)
    if isinstance(case, Case):
        if size:
            raise ExerciseUsageError("give either case=... or sizes such as n=..., not both")
        return -1, case
    if case is not None:
        if isinstance(case, bool) or not isinstance(case, (int, np.integer)) \
                or not 0 <= case < len(cases):
            raise ExerciseUsageError(f"case must be a gpukit.exercises.Case or an index from 0 "
                                     f"to {len(cases) - 1} into the exercise's cases, got "
                                     f"{case!r}")
        return int(case), cases[int(case)]
    indexed = list(enumerate(cases))
    if size:
        bad = [k for k, v in size.items()
               if isinstance(v, bool) or not isinstance(v, (int, np.integer))]
        if bad:
            raise ExerciseUsageError(f"sizes must be ints, got {bad[0]}={size[bad[0]]!r}")
        indexed = [(i, c) for i, c in indexed
                   if all({**c.size, **c.params}.get(k) == v for k, v in size.items())]
        if not indexed:
            known = "; ".join(c.describe() for c in cases)
            asked = ", ".join(f"{k}={v}" for k, v in size.items())
            raise ExerciseUsageError(
                f"exercise {spec.name!r} has no case with {asked}; its cases are: {known}. "
                "Pass one of those sizes, case=<index>, or case=gpukit.exercises.Case(...)")
    small = [ic for ic in indexed if 1 < ic[1].blocks <= SMALL_BLOCKS
             and ic[1].threads <= SMALL_THREADS]
    pool = small or indexed
    return min(pool, key=lambda ic: (ic[1].threads < 4, ic[1].threads, _case_cells(ic[1]),
                                     ic[0]))


# -- running the kernel once, traced -------------------------------------------------------------
def _trace_of_error(exc: BaseException) -> Trace | None:
    """The trace of the accesses made before a kernel error, where the simulator attaches one."""
    trace = getattr(exc, "trace", None)
    return trace if isinstance(trace, Trace) else None


def _launch(backend: Any, compiled: Any, spec: ExerciseSpec, case: Case, inputs: dict,
            expected: dict, names: list[str], checks: Any = True
            ) -> tuple[Any, dict[str, np.ndarray], BaseException | None]:
    args, devs = [], {}
    for kname, name in zip(names, spec.params):
        if name in spec.outputs:
            want = expected[name]
            dev = backend.to_device(np.zeros(want.shape, want.dtype)) \
                if spec.outputs[name] == "zeros" else backend.allocate(want.shape, want.dtype)
            devs[kname] = dev
            args.append(dev)
        elif isinstance(inputs[name], np.ndarray):
            devs[kname] = backend.to_device(inputs[name])
            args.append(devs[kname])
        else:
            args.append(inputs[name])
    record, error = None, None
    try:
        record = backend.launch_kernel(compiled, case.grid, case.block, *args, checks=checks,
                                       trace=Recorder(MAX_EVENTS))
    except (GpukitError, TypeError) as exc:  # the learner's kernel failed: draw it anyway
        error = exc
    values = {}
    for kname, dev in devs.items():
        try:
            values[kname] = backend.to_host(dev)
        except GpukitError:  # pragma: no cover - an array the failed launch left unreadable
            values[kname] = None
        backend.free(dev)
    return record, values, error


def _execute(kernel: Any, spec: ExerciseSpec, index: int, case: Case, seed: int,
             device: str, watchdog_s: float) -> Run:
    backend = CPUBackend(device=device, checks=True, watchdog_s=watchdog_s)
    try:
        rng = np.random.default_rng([int(seed), max(index, 0)])
        inputs = spec.inputs(rng, case)
        expected = spec.reference(inputs, case)
        compiled = Kernels(kernel, spec, backend).get(case)
        names = list(spec.params)
        if not isinstance(compiled, RunResult):
            names = list(compiled.param_names)
        roles = {k: "output" if n in spec.outputs else "input" for k, n in zip(names, spec.params)
                 if n in spec.outputs or isinstance(inputs.get(n), np.ndarray)}
        arrays = {k: (np.asarray(inputs[n]) if roles[k] == "input" else None)
                  for k, n in zip(names, spec.params) if k in roles}
        run = Run(case, arrays, roles, dict(zip(names, spec.params)), None, None)
        run.kernel_name = getattr(getattr(kernel, "py_func", kernel), "__name__", "kernel")
        run.shapes = {k: tuple(np.shape(inputs[n] if roles[k] == "input" else expected[n]))
                      for k, n in zip(names, spec.params) if k in roles}
        if isinstance(compiled, RunResult):  # the factory or the compilation failed
            run.error = compiled.message
            return run
        run.kernel_name = getattr(compiled, "name", "kernel")
        record, values, error = _launch(backend, compiled, spec, case, inputs, expected, names)
        run.arrays.update({k: values.get(k) for k, role in roles.items() if role == "output"})
        if error is None:
            run.trace = record.trace
            if not len(run.trace):
                run.note = "the kernel read and wrote nothing"
            return run
        run.error = located(error)
        if isinstance(error, TraceTooLargeError):
            run.note = ("this case makes too many accesses to draw: pick a smaller one "
                        "(sizes such as n=..., or case=...)")
            return run
        run.trace = _trace_of_error(error)
        if run.trace is None:
            run.trace, run.note, values = _rerun_without(backend, compiled, spec, case, inputs,
                                                         expected, names, error)
            run.arrays.update({k: v for k, v in values.items() if run.roles[k] == "output"})
        return run
    finally:
        backend.shutdown()


def _rerun_without(backend: Any, compiled: Any, spec: ExerciseSpec, case: Case, inputs: dict,
                   expected: dict, names: list[str], error: BaseException
                   ) -> tuple[Trace | None, str, dict[str, np.ndarray]]:
    """Until the simulator keeps the trace of a failed launch: a race or an uninitialised read is
    re-run with the race and uninitialised-memory checks off (safe: they only report), and the
    picture is cut after the phase where threads first conflict. Other errors (an access out of
    bounds) cannot be re-run safely with their check off."""
    check = {RaceConditionError: "races", UninitializedMemoryError: "uninitialized"}
    name = next((v for k, v in check.items() if isinstance(error, k)), None)
    if name is None or not isinstance(error, KernelError):
        return None, ("the simulator keeps no record of the accesses of a launch that failed, "
                      "so only the arrays are drawn"), {}
    # both only report (reading memory no one wrote is a race's usual consequence)
    record, values, again = _launch(backend, compiled, spec, case, inputs, expected, names,
                               checks={"races": False, "uninitialized": False})
    if again is not None or record is None or record.trace is None:
        return None, (f"the arrays only: re-run with the {name} check off, the launch fails "
                      f"with {type(again).__name__}"), {}
    trace = record.trace
    last = first_conflict_phase(trace) if name == "races" else None
    note = "accesses from a re-run with the races and uninitialized checks off"
    if last is not None:
        trace = cut_trace(trace, last)
        note += f", up to phase {last}, where threads first conflict"
    return trace, note, values


class _TracingBackend(CPUBackend):
    """A private simulator that traces every launch made through it and keeps the records, the
    failing launch's error included."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.records: list[Any] = []

    def launch_kernel(self, kernel: Any, grid: Any, block: Any, *args: Any,
                      **options: Any) -> Any:
        options["trace"] = Recorder(MAX_EVENTS)
        record = super().launch_kernel(kernel, grid, block, *args, **options)
        self.records.append(record)
        return record


def _launch_run(record: Any) -> Run:
    """A launch made by host code as a picture: its arrays as the trace saw them (no values)."""
    trace = record.trace
    case = Case({}, tuple(record.grid), tuple(record.block))
    roles, shapes = {}, {}
    for number, info in enumerate(trace.arrays):
        if info.space != "global":
            continue
        written = bool((trace.columns["kind"][trace.columns["array"] == number] > 0).any())
        roles[info.label] = "output" if written else "input"
        shapes[info.label] = tuple(info.shape)
    run = Run(case, dict.fromkeys(roles), roles, {}, trace, None,
               kernel_name=record.kernel)
    run.shapes = shapes
    return run


def _show_host(func: Any, spec: ExerciseSpec, case: Case | int | None, seed: int,
               device: str, watchdog_s: float, size: dict[str, int],
               wanted: set[int] | None = None) -> Any:
    """The picture of an exercise answered by a host function (a spec with `host` and
    `harness`, such as a multi-block scan): a section per launch it made."""
    if hasattr(func, "py_func") or not callable(func):
        raise ExerciseUsageError(f"exercise {spec.name!r} takes a host function (the one that "
                                 f"allocates, launches and copies), called as {spec.call}")
    index, chosen = pick_case(spec, case, seed, **size)
    backend = _TracingBackend(device=device, checks=True, watchdog_s=watchdog_s)
    head = Run(chosen, {}, {}, {}, None, None,
                kernel_name=getattr(func, "__name__", "function"))
    try:
        rng = np.random.default_rng([int(seed), max(index, 0)])
        inputs = spec.inputs(rng, chosen)
        try:
            spec.harness(func, backend, inputs, chosen)
        except Exception as exc:  # noqa: BLE001 - the learner's host code failed: draw it
            head.error = (located(exc) if isinstance(exc, GpukitError)
                          else f"your function raised {type(exc).__name__}: {exc}")
            partial = _trace_of_error(exc)
            if partial is not None:
                backend.records.append(_PartialRecord(partial))
        launches = [_launch_run(r) for r in backend.records if r.trace is not None]
    finally:
        backend.shutdown()
    head.note = (f"{len(launches)} launch{'es' if len(launches) != 1 else ''}, each drawn with "
                 "the arrays it touched" if launches else "no kernel was launched")
    if not launches:
        return draw(head, spec, [Panel(0, "no launch")], [(head, [Panel(0, "no launch")])])
    return draw(head, spec, [], [(r, _select(panels_of(r.trace), wanted)) for r in launches])


@dataclass
class _PartialRecord:
    """The launch that failed, from the trace its error carries."""

    trace: Trace

    @property
    def kernel(self) -> str:
        return self.trace.kernel

    @property
    def grid(self) -> tuple[int, int, int]:
        return self.trace.grid

    @property
    def block(self) -> tuple[int, int, int]:
        return self.trace.block


def display(figure: Any) -> None:
    """Show a figure in Jupyter now (outside IPython, nothing is shown)."""
    try:
        from IPython.display import display as ipython_display  # lazy: only under IPython
    except ImportError:  # pragma: no cover - IPython is installed with the notebooks
        return
    ipython_display(figure)


# -- the entry point -----------------------------------------------------------------------------
def show(kernel: Any, exercise: str | ExerciseSpec, *, case: Case | int | None = None,
         phases: Any = None, seed: int = 0, device: str = "T4", watchdog_s: float = 10.0,
         **size: int) -> Any:
    """A picture of your kernel (or `make_kernel` factory) at a small size of an exercise.

    Runs it once on the simulator with every check on and draws, per barrier phase, the input
    and output arrays with their values, the shared-memory tiles of each block, and which thread
    read (pale) or wrote (strong, black edge) each element. Pick the size with sizes of the
    exercise's cases (`show(make_kernel, "shared_memory", n=21)`) or `case=` (an index into the
    exercise's cases, or a `gpukit.exercises.Case`); the first DEFAULT_PHASES barrier phases are
    drawn (the note says which are left out), `phases` (such as `range(4, 8)`) picks others. A kernel that fails is drawn too, with the
    error in the title. For an exercise answered by a host function (one that allocates,
    launches and copies), pass that function: each launch it makes is drawn, phase by phase,
    with the arrays it touched. Returns a matplotlib Figure (Jupyter displays it); what it drew
    is in `figure.gpukit_show` (a `ShowInfo`).
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ExerciseUsageError(f"seed must be an int >= 0, got {seed!r}")
    spec = get_spec(exercise)
    wanted = _phases(phases)
    if getattr(spec, "host", False) and getattr(spec, "harness", None) is not None:
        return _show_host(kernel, spec, case, int(seed), device, watchdog_s, size, wanted)
    validate_kernel(kernel, spec)
    index, chosen = pick_case(spec, case, int(seed), **size)
    run = _execute(kernel, spec, index, chosen, int(seed), device, watchdog_s)
    panels = _select(panels_of(run.trace), wanted)
    if wanted is None and len(panels) > DEFAULT_PHASES:  # a figure stays readable (and small)
        last = panels[-1].phase
        more = (f"phases {DEFAULT_PHASES} to {last} are not drawn: "
                f"phases=range({DEFAULT_PHASES}, {last + 1}) draws them")
        run.note = f"{run.note}; {more}" if run.note else more
        panels = panels[:DEFAULT_PHASES]
    return draw(run, spec, panels)


def _phases(phases: Any) -> set[int] | None:
    if phases is None:
        return None
    try:
        wanted = set(phases)
    except TypeError:
        wanted = {phases}
    if not wanted or any(isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 0
                         for p in wanted):
        raise ExerciseUsageError(f"phases must be barrier phase numbers (ints >= 0, such as "
                                 f"range(3)), got {phases!r}")
    return {int(p) for p in wanted}


def _select(panels: list[Panel], wanted: set[int] | None) -> list[Panel]:
    """The panels of the wanted phases (all when None; the first one when none of them ran)."""
    if wanted is None:
        return panels
    return [p for p in panels if p.phase in wanted] or panels[:1]


def display_show(kernel: Any, exercise: str | ExerciseSpec, **options: Any) -> None:
    """Draw `show(kernel, exercise, **options)` in Jupyter now (what `check(..., show=True)`
    does before its verdict)."""
    display(show(kernel, exercise, **options))
