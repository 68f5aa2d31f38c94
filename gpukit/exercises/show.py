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
about a particular exercise. matplotlib is imported only here.
"""

from __future__ import annotations

import inspect
import io
import textwrap
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.cpu import CPUBackend
from ..errors import GpukitError, KernelError, RaceConditionError, UninitializedMemoryError
from ..trace.recorder import KINDS, Recorder, Trace, TraceTooLargeError
from .checker import ExerciseUsageError, _Kernels, _located, _validate_kernel, get_spec
from .report import RunResult
from .spec import Case, ExerciseSpec

__all__ = ["ShowInfo", "pick_case", "show"]

MAX_EVENTS = 200_000  # a picture of more accesses than this would be unreadable anyway
MAX_CELLS = 2048  # cells of one panel
WRAP = 32  # 1-D arrays longer than this are drawn in rows of 32
SMALL_THREADS = 64  # the automatic case has at most this many threads where the spec allows,
SMALL_BLOCKS = 4  # and several blocks, but at most this many
CELL_H = 1.3  # a cell's height in units of its width (two lines of text fit)
MIN_FONT = 7.0
VALUE_FONT = 9.0
LABEL_FONT = 7.5
TITLE_FONT = 9.5
READ_ALPHA, WRITE_ALPHA = 0.35, 0.85


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
@dataclass
class _Run:
    case: Case
    arrays: dict[str, np.ndarray]  # the kernel's parameter name -> values (inputs, outputs)
    roles: dict[str, str]  # the kernel's parameter name -> "input" or "output"
    names: dict[str, str]  # the kernel's parameter name -> the spec's name
    trace: Trace | None
    error: str | None
    note: str = ""
    kernel_name: str = "kernel"
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # of every array


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
             device: str, watchdog_s: float) -> _Run:
    backend = CPUBackend(device=device, checks=True, watchdog_s=watchdog_s)
    try:
        rng = np.random.default_rng([int(seed), max(index, 0)])
        inputs = spec.inputs(rng, case)
        expected = spec.reference(inputs, case)
        compiled = _Kernels(kernel, spec, backend).get(case)
        names = list(spec.params)
        if not isinstance(compiled, RunResult):
            names = list(compiled.param_names)
        roles = {k: "output" if n in spec.outputs else "input" for k, n in zip(names, spec.params)
                 if n in spec.outputs or isinstance(inputs.get(n), np.ndarray)}
        arrays = {k: (np.asarray(inputs[n]) if roles[k] == "input" else None)
                  for k, n in zip(names, spec.params) if k in roles}
        run = _Run(case, arrays, roles, dict(zip(names, spec.params)), None, None)
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
        run.error = _located(error)
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
    last = _first_conflict_phase(trace) if name == "races" else None
    note = "accesses from a re-run with the races and uninitialized checks off"
    if last is not None:
        trace = _cut(trace, last)
        note += f", up to phase {last}, where threads first conflict"
    return trace, note, values


def _first_conflict_phase(trace: Trace) -> int | None:
    """The first phase in which two threads touch one element, one of them writing (per block
    for shared memory), with no atomics."""
    col = trace.columns
    if not len(trace):
        return None
    shared = np.array([a.space == "shared" for a in trace.arrays])[col["array"]]
    block = np.where(shared, col["thread"] // trace.threads_per_block, -1)
    for phase in np.unique(col["phase"]):
        sel = (col["phase"] == phase) & (col["kind"] != KINDS.index("atomic"))
        keys = np.stack([col["array"][sel], block[sel], col["element"][sel]], 1)
        if not len(keys):
            continue
        thread, write = col["thread"][sel], col["kind"][sel] == KINDS.index("write")
        _, which = np.unique(keys, axis=0, return_inverse=True)
        which = which.reshape(-1)
        for g in np.unique(which[write]):
            if len(np.unique(thread[which == g])) > 1:
                return int(phase)
    return None


def _cut(trace: Trace, last_phase: int) -> Trace:
    keep = trace.columns["phase"] <= last_phase
    columns = {k: v[keep] for k, v in trace.columns.items()}
    return Trace(trace.kernel, trace.grid, trace.block, trace.arrays, trace.sites, columns)


# -- what the picture shows ----------------------------------------------------------------------
@dataclass
class Panel:
    """One barrier phase: which thread touched which element, and how.

    touches: (array name, block or None for global arrays, element index) -> {"read": threads,
    "write": threads, "atomic": threads}, threads as global linear thread ids.
    """

    phase: int
    title: str
    launch: int = 0  # for an exercise answered by host code: which launch (1, 2, ...)
    touches: dict[tuple[str, tuple[int, int, int] | None, tuple[int, ...]],
                  dict[str, set[int]]] = field(default_factory=dict)

    def threads_of(self, array: str, kind: str | None = None) -> dict[int, set[tuple[int, ...]]]:
        """Thread id -> the elements of `array` it touched in this phase (of `kind`, or any)."""
        out: dict[int, set[tuple[int, ...]]] = {}
        for (name, _, index), kinds in self.touches.items():
            if name != array:
                continue
            for k, threads in kinds.items():
                if kind is None or k == kind:
                    for t in threads:
                        out.setdefault(t, set()).add(index)
        return out


@dataclass
class ShowInfo:
    """What `show` drew, for tests and for reading in code: `figure.gpukit_show`."""

    exercise: str
    case: Case
    title: str
    error: str | None
    note: str
    panels: list[Panel]
    colour_by: str  # "thread" or "block"

    @property
    def phases(self) -> list[int]:
        return [p.phase for p in self.panels]


def _panels(trace: Trace | None) -> list[Panel]:
    if trace is None:
        return [Panel(0, "no accesses recorded")]
    col = trace.columns
    phases = sorted(set(col["phase"].tolist())) or [0]
    panels = []
    for phase in phases:
        sel = np.flatnonzero(col["phase"] == phase)
        panel = Panel(phase, _phase_title(trace, phase, sel))
        for i in sel.tolist():
            info = trace.arrays[col["array"][i]]
            if info.space == "local":
                continue
            e = int(col["element"][i])
            if not 0 <= e < int(np.prod(info.shape)):
                continue
            index = tuple(int(v) for v in np.unravel_index(e, info.shape))
            tid = int(col["thread"][i])
            block = trace.coordinates(tid)[1] if info.space == "shared" else None
            kinds = panel.touches.setdefault((info.label, block, index), {})
            kinds.setdefault(KINDS[col["kind"][i]], set()).add(tid)
        panels.append(panel)
    return panels


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _phase_title(trace: Trace, phase: int, sel: np.ndarray) -> str:
    when = ("before the first cuda.syncthreads()" if phase == 0 else
            f"after the {_ordinal(phase)} cuda.syncthreads()")
    sites = sorted({int(s) for s in trace.columns["site"][sel].tolist()},
                   key=lambda s: (trace.sites[s].lineno, s))
    texts: list[str] = []
    for s in sites:
        text = trace.sites[s].text
        if text not in texts:
            texts.append(text)
    shown = ", ".join(texts[:6]) + (", ..." if len(texts) > 6 else "")
    return f"phase {phase}, {when}" + (f": {shown}" if shown else "")


# -- drawing -------------------------------------------------------------------------------------
@dataclass
class _Item:
    """One array drawn in every panel: a grid of cells whose top left is (x0, y0), in cells."""

    name: str
    space: str
    role: str  # "input", "shared" or "output"
    shape: tuple[int, ...]
    values: np.ndarray | None
    block: tuple[int, int, int] | None = None
    x0: float = 0.0
    y0: float = 0.0

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 0

    @property
    def ncols(self) -> int:
        if len(self.shape) >= 2:
            return int(np.prod(self.shape[1:]))
        return max(1, min(self.size, WRAP))

    @property
    def nrows(self) -> int:
        return max(1, -(-self.size // self.ncols))

    @property
    def row_labels(self) -> bool:
        """Row numbers left of the cells: 2-D arrays, and 1-D arrays wrapped into rows."""
        return self.nrows > 1

    @property
    def heading(self) -> str:
        if self.space == "const":
            return f"{self.name} (constant memory)"
        if self.role == "shared":
            return f"{self.name}, block {_short(self.block)}"
        return f"{self.name} ({self.role}, {'x'.join(map(str, self.shape))})"

    def cell(self, index: tuple[int, ...]) -> tuple[int, int]:
        flat = int(np.ravel_multi_index(index, self.shape)) if self.shape else 0
        return divmod(flat, self.ncols)


HEAD_H, INDEX_H, GAP_H, GAP_W, ROW_LABEL_W = 0.75, 0.55, 0.55, 1.2, 1.3


def _heading_cells(text: str, cell_in: float) -> float:
    """The width of a heading, in cells of `cell_in` inches."""
    return len(text) * 0.6 * (LABEL_FONT + 0.5) / (cell_in * 72)


def _cell_inches(width: float) -> float:
    return float(np.clip(9.5 / width, 0.27, 0.45))


def _layout(run: _Run, trace: Trace | None) -> tuple[list[_Item], float, float, float]:
    """The items, the panel's width and height in cells, and the inches per cell."""
    cell_in = 0.3
    for _ in range(4):  # the headings' width in cells depends on the cell size, and back
        items, width, height = _pack(run, trace, cell_in)
        if _cell_inches(width) >= cell_in - 1e-9:
            break
        cell_in = _cell_inches(width)
    return items, width, height, min(cell_in, _cell_inches(width))


def _pack(run: _Run, trace: Trace | None, cell_in: float
          ) -> tuple[list[_Item], float, float]:
    """The arrays (shared ones once per block) packed into rows: inputs, then shared tiles, then
    outputs, each starting a row. Returns the items and the panel's width and height in cells."""
    groups: list[list[_Item]] = [[], [], []]
    for k, role in run.roles.items():
        values = run.arrays.get(k)
        shape = run.shapes.get(k, tuple(np.shape(values)) if values is not None else ())
        groups[0 if role == "input" else 2].append(_Item(k, "global", role, shape, values))
    if trace is not None:
        for info in trace.arrays:
            if info.space not in ("shared", "const") or any(i.name == info.label
                                                             for i in groups[1]):
                continue
            blocks = ([trace.coordinates(b * trace.threads_per_block)[1]
                       for b in range(trace.blocks)] if info.space == "shared" else [None])
            groups[1] += [_Item(info.label, info.space, "shared", tuple(info.shape), None, blk)
                          for blk in blocks]
    items = [i for g in groups for i in g]
    for item in items:
        if item.nrows * item.ncols > MAX_CELLS:
            raise ExerciseUsageError(
                f"{item.name} has {item.nrows * item.ncols:,} cells, too many to draw; pick a "
                "smaller case (sizes such as n=..., or case=...)")

    def footprint(item: _Item) -> float:
        left = ROW_LABEL_W if item.row_labels else 0.0
        return left + max(float(item.ncols), _heading_cells(item.heading, cell_in))

    row_width = max([WRAP + ROW_LABEL_W] + [footprint(i) for i in items])
    y, width = 0.0, 1.0
    for group in groups:
        x, row_h = 0.0, 0.0
        for item in group:
            w, h = footprint(item), HEAD_H + INDEX_H + item.nrows * CELL_H
            if x and x + w > row_width:
                y, x, row_h = y + row_h + GAP_H, 0.0, 0.0
            item.x0 = x + (ROW_LABEL_W if item.row_labels else 0.0)
            item.y0 = y + HEAD_H + INDEX_H
            x += w + GAP_W
            row_h = max(row_h, h)
            width = max(width, item.x0 + footprint(item) - (ROW_LABEL_W if item.row_labels
                                                              else 0.0))
        if group:
            y += row_h + GAP_H
    return items, width, max(y - GAP_H, 1.0)


def _compact(text: str) -> str:
    """'0.27' -> '.27', '1.9e+03' -> '1.9e3': the same number in fewer characters."""
    text = text.replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")
    if text.startswith("0.") and len(text) > 2:
        return text[1:]
    if text.startswith("-0.") and len(text) > 3:
        return "-" + text[2:]
    return text


def _max_chars(cell_pt: float) -> int:
    return max(1, int(0.9 * cell_pt / (0.62 * MIN_FONT)))


def _fmt(value: Any, cell_pt: float = 30.0) -> str:
    """A value as short as a cell needs: integers whole, other numbers with the most significant
    digits (3 at most) that fit at the smallest font."""
    v = float(value)
    if not np.isfinite(v):
        return {np.inf: "inf", -np.inf: "-inf"}.get(v, "nan")
    room = _max_chars(cell_pt)
    if v == int(v) and abs(v) < 1e6 and len(str(int(v))) <= room:
        return str(int(v))
    candidates = [_compact(f"{v:.{digits}g}") for digits in (3, 2, 1)]
    return next((c for c in candidates if len(c) <= room), min(candidates, key=len))


def _fit(text: str, cell_pt: float, size: float) -> float:
    """The font size (at most `size`, at least MIN_FONT) at which `text` fits in a cell."""
    return float(max(MIN_FONT, min(size, 0.9 * cell_pt / (0.62 * max(len(text), 1)))))


def _thread_label(trace: Trace, tid: int) -> str:
    t = trace.coordinates(tid)[0]
    _, by, bz = trace.block
    if bz > 1:
        return f"{t[0]},{t[1]},{t[2]}"
    if by > 1:
        return f"{t[0]},{t[1]}"
    return f"t{t[0]}"


def _colours(case: Case) -> tuple[str, Any]:
    """("thread", colour of a thread id) for one block, ("block", colour by block) for several."""
    import matplotlib  # lazy: matplotlib loads only for drawings

    from ..trace.plots import thread_colors

    if case.blocks == 1:
        per_thread = thread_colors(case.block)
        return "thread", lambda tid: per_thread[tid % case.threads]
    cmap = matplotlib.colormaps["tab10"]
    tpb = int(np.prod(case.block))
    return "block", lambda tid: cmap((tid // tpb) % 10)


def _short(block: tuple[int, ...] | None) -> str:
    if block is None:
        return ""
    dims = list(block)
    while len(dims) > 1 and dims[-1] == 0:
        dims.pop()
    return str(dims[0]) if len(dims) == 1 else "(" + ", ".join(map(str, dims)) + ")"


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def _tint(rgba: Any, white: float) -> tuple[float, float, float, float]:
    """A colour mixed with `white` parts of white: light enough for black text on it."""
    r, g, b = (float(v) * (1 - white) + white for v in tuple(rgba)[:3])
    return r, g, b, 1.0


def _draw(run: _Run, spec: ExerciseSpec, panels: list[Panel],
          launches: list[tuple[_Run, list[Panel]]] | None = None) -> Any:
    """The figure: `run`'s title, error and note, then its panels; or, for an exercise answered
    by host code, the panels of each launch in `launches`, each with its own arrays."""
    from matplotlib.collections import PolyCollection  # lazy: matplotlib loads for drawings
    from matplotlib.figure import Figure  # lazy: as above

    from ..trace.plots import _rects

    groups = launches if launches is not None else [(run, panels)]
    layouts = [_layout(r, r.trace) for r, _ in groups]
    cell_in = min([lay[3] for lay in layouts] or [0.42])
    width = max([lay[1] for lay in layouts] or [8.0])
    colour_by = "thread" if all(r.case.blocks == 1 for r, _ in groups) else "block"
    fig_w = max(6.5, (width + 0.4) * cell_in + 0.4)
    chars = int((fig_w - 0.4) * 72 / (TITLE_FONT * 0.6))
    who = "your function" if launches is not None else "kernel"
    title = f"{spec.title}: {who} '{run.kernel_name}', {run.case.describe()}"
    title_lines = textwrap.wrap(title, chars)
    error_lines = textwrap.wrap("✗ " + run.error.replace("\n", " "), chars) if run.error else []
    note_lines = textwrap.wrap(f"({run.note})", chars) if run.note else []
    head = [(t, "black", "bold") for t in title_lines] + \
        [(t, "firebrick", "normal") for t in error_lines] + \
        [(t, "0.3", "normal") for t in note_lines]
    legend_lines = textwrap.wrap(_legend_text(colour_by), int((fig_w - 0.4) * 72 /
                                                               ((LABEL_FONT + 1) * 0.6)))
    line_in = TITLE_FONT * 1.45 / 72
    head_in = line_in * len(head) + 0.1
    rows = []  # (group run, its layout, panel, title lines, height in inches)
    for number, ((r, ps), (items, _, height, _)) in enumerate(zip(groups, layouts), 1):
        prefix = (f"launch {number}: '{r.kernel_name}', {r.case.describe()}; "
                  if launches is not None else "")
        for p in ps:
            p.launch = number if launches is not None else 0
            lines = textwrap.wrap(prefix + p.title, chars)
            rows.append((r, items, height, p, lines,
                         height * cell_in + line_in * len(lines) + 0.3))
    foot_in = (LABEL_FONT + 1) * 1.45 / 72 * len(legend_lines) + 0.15
    fig_h = head_in + sum(row[-1] for row in rows) + foot_in
    fig = Figure(figsize=(fig_w, fig_h))
    fig._repr_png_ = lambda: _png(fig)
    for k, (line, color, weight) in enumerate(head):
        fig.text(0.2 / fig_w, 1 - (0.08 + line_in * k) / fig_h, line, fontsize=TITLE_FONT,
                 va="top", ha="left", color=color, fontweight=weight, gid="heading")
    top = head_in
    for r, items, height, panel, lines, h in rows:
        title_in = line_in * len(lines) + 0.3
        ax = fig.add_axes((0.2 / fig_w, (fig_h - top - h) / fig_h, width * cell_in / fig_w,
                           (h - title_in) / fig_h))
        ax.set_title("\n".join(lines), fontsize=TITLE_FONT, loc="left", pad=4)
        ax.set_gid(f"phase {panel.phase}")
        _draw_panel(ax, items, panel, r.trace, _colours(r.case)[1], cell_in * 72,
                    PolyCollection, _rects)
        ax.set_xlim(0, width)
        ax.set_ylim(height, 0)
        ax.set_aspect("equal", anchor="NW")
        ax.axis("off")
        top += h
    for k, line in enumerate(legend_lines):
        fig.text(0.2 / fig_w, (foot_in - 0.08 - (LABEL_FONT + 1) * 1.45 / 72 * k) / fig_h, line,
                 fontsize=LABEL_FONT + 1, va="top", ha="left", color="0.3", gid="legend")
    fig.gpukit_show = ShowInfo(spec.name, run.case, title, run.error, run.note,
                               [row[3] for row in rows], colour_by)
    return fig


def _legend_text(colour_by: str) -> str:
    who = ("colour = thread" if colour_by == "thread" else
           "colour = block (blue = block 0, orange = 1, green = 2, red = 3, ...)")
    return (f"Pale cell: read. Strong cell with a black edge: written. {who}; in each touched "
            "cell, the threadIdx of the thread that touched it (tN, or x,y), or ×N for N threads. Values: inputs, and what the kernel wrote (shown from the phase of the write).")


def _draw_panel(ax: Any, items: list[_Item], panel: Panel, trace: Trace | None, colour: Any,
                cell_pt: float, PolyCollection: Any, rects: Any) -> None:
    for item in items:
        x0, y0 = item.x0, item.y0
        ax.text(x0, y0 - INDEX_H - 0.1, item.heading, ha="left", va="bottom",
                fontsize=LABEL_FONT + 0.5, gid="array heading")
        step = 1 if item.ncols <= 16 or cell_pt >= 24 else 4
        for c in range(0, item.ncols, step):
            ax.text(x0 + c + 0.5, y0 - 0.08, str(c), ha="center", va="bottom",
                    fontsize=MIN_FONT, color="0.45")
        if item.row_labels:
            for row in range(item.nrows):
                start = row if len(item.shape) >= 2 else row * item.ncols
                ax.text(x0 - 0.15, y0 + (row + 0.5) * CELL_H, str(start), ha="right",
                        va="center", fontsize=MIN_FONT, color="0.45")
        flat = np.arange(item.size)
        r, c = np.divmod(flat, item.ncols)
        ax.add_collection(PolyCollection(rects(x0 + c, y0 + r * CELL_H, 1, CELL_H),
                                         facecolors="white", edgecolors="0.6",
                                         linewidths=0.6, zorder=1))
        written_before = _written_up_to(item, panel, trace)
        fills, fill_colours, edges = [], [], []
        for index in (np.ndindex(*item.shape) if item.shape else []):
            row, col = item.cell(index)
            cx, cy = x0 + col, y0 + row * CELL_H
            kinds = panel.touches.get((item.name, item.block, index), {})
            threads = sorted(set().union(*kinds.values())) if kinds else []
            written = bool(kinds.get("write") or kinds.get("atomic"))
            show_value = item.values is not None and (
                item.role == "input" or index in written_before)
            value = _fmt(item.values[index], cell_pt) if show_value else ""
            if not threads:
                if value:
                    ax.text(cx + 0.5, cy + 0.5 * CELL_H, value, ha="center", va="center",
                            fontsize=_fit(value, cell_pt, VALUE_FONT), color="0.3", zorder=5)
                continue
            shown = threads[:4]
            w = 1 / len(shown)
            for k, tid in enumerate(shown):
                fills.append((cx + k * w, cy, w))
                fill_colours.append(_tint(colour(tid), 0.45 if written else 0.78))
            if written:
                edges.append((cx, cy))
            label = (_thread_label(trace, threads[0]) if len(threads) == 1
                     else f"×{len(threads)}") if trace is not None else ""
            if len(label) > _max_chars(cell_pt):
                label = ""  # (x, y, z) of a wide block: the colour tells the block
            if value:
                ax.text(cx + 0.5, cy + 0.36 * CELL_H, value, ha="center", va="center",
                        fontsize=_fit(value, cell_pt, VALUE_FONT - 0.5), zorder=5)
                ax.text(cx + 0.5, cy + 0.77 * CELL_H, label, ha="center", va="center",
                        fontsize=_fit(label, cell_pt, LABEL_FONT), color="0.15", zorder=5)
            else:
                ax.text(cx + 0.5, cy + 0.5 * CELL_H, label, ha="center", va="center",
                        fontsize=_fit(label, cell_pt, LABEL_FONT), color="0.15", zorder=5)
        gid = item.name + (f" block {_short(item.block)}" if item.block is not None else "")
        if fills:
            sx, sy, sw = np.array(fills).T
            coll = PolyCollection(rects(sx, sy, sw, CELL_H), facecolors=fill_colours,
                                  edgecolors="none", zorder=2)
            coll.set_gid(gid)
            ax.add_collection(coll)
        if edges:
            ex, ey = np.array(edges).T
            ax.add_collection(PolyCollection(rects(ex, ey, 1, CELL_H), facecolors="none",
                                             edgecolors="black", linewidths=1.6, zorder=4))


def _written_up_to(item: _Item, panel: Panel, trace: Trace | None) -> set[tuple[int, ...]]:
    """Elements of an output written in this phase or before (their final value is shown)."""
    if item.role != "output" or trace is None:
        return set()
    col = trace.columns
    numbers = [i for i, a in enumerate(trace.arrays) if a.label == item.name
               and a.space == "global"]
    sel = np.isin(col["array"], numbers) & (col["kind"] > 0) & (col["phase"] <= panel.phase)
    return {tuple(int(v) for v in np.unravel_index(int(e), item.shape))
            for e in np.unique(col["element"][sel]) if 0 <= e < item.size}


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


def _launch_run(record: Any) -> _Run:
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
    run = _Run(case, dict.fromkeys(roles), roles, {}, trace, None,
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
    head = _Run(chosen, {}, {}, {}, None, None,
                kernel_name=getattr(func, "__name__", "function"))
    try:
        rng = np.random.default_rng([int(seed), max(index, 0)])
        inputs = spec.inputs(rng, chosen)
        try:
            spec.harness(func, backend, inputs, chosen)
        except Exception as exc:  # noqa: BLE001 - the learner's host code failed: draw it
            head.error = (_located(exc) if isinstance(exc, GpukitError)
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
        return _draw(head, spec, [Panel(0, "no launch")], [(head, [Panel(0, "no launch")])])
    return _draw(head, spec, [], [(r, _select(_panels(r.trace), wanted)) for r in launches])


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
    exercise's cases, or a `gpukit.exercises.Case`); `phases` (such as `range(3)`) draws only
    those barrier phases of a kernel that has many. A kernel that fails is drawn too, with the
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
    _validate_kernel(kernel, spec)
    index, chosen = pick_case(spec, case, int(seed), **size)
    run = _execute(kernel, spec, index, chosen, int(seed), device, watchdog_s)
    return _draw(run, spec, _select(_panels(run.trace), wanted))


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
