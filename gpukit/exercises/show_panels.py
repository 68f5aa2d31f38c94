"""What `gpukit.exercises.show` draws, read from a trace: one `Panel` per barrier phase (which
thread read or wrote which element), the `Run` it comes from, and `ShowInfo`, what a figure drew.
No matplotlib here: the drawing is gpukit/exercises/show_figure.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..trace.recorder import KINDS, Trace
from .spec import Case


@dataclass
class Run:
    """One run of a kernel as `show` draws it: its case, arrays, their roles, and its trace."""

    case: Case
    arrays: dict[str, np.ndarray]  # the kernel's parameter name -> values (inputs, outputs)
    roles: dict[str, str]  # the kernel's parameter name -> "input" or "output"
    names: dict[str, str]  # the kernel's parameter name -> the spec's name
    trace: Trace | None
    error: str | None
    note: str = ""
    kernel_name: str = "kernel"
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # of every array


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


def panels_of(trace: Trace | None) -> list[Panel]:
    """One panel per barrier phase of `trace`, with who touched what (local memory left out)."""
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


def first_conflict_phase(trace: Trace) -> int | None:
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


def cut_trace(trace: Trace, last_phase: int) -> Trace:
    """The accesses of `trace` up to phase `last_phase`."""
    keep = trace.columns["phase"] <= last_phase
    columns = {k: v[keep] for k, v in trace.columns.items()}
    return Trace(trace.kernel, trace.grid, trace.block, trace.arrays, trace.sites, columns)
