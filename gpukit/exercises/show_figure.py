"""The figure of `gpukit.exercises.show`: the panels of a run (gpukit/exercises/show_panels.py)
drawn as grids of cells, one per array (shared tiles once per block), coloured by the thread or
block that touched each cell and labelled with its threadIdx and value. matplotlib loads here,
when a figure is drawn, and nowhere else in the exercises.
"""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..trace.figures import rectangles, thread_colors
from ..trace.recorder import Trace
from .checker import ExerciseUsageError
from .show_panels import Panel, Run, ShowInfo
from .spec import Case, ExerciseSpec

MAX_CELLS = 2048  # cells of one panel
WRAP = 32  # 1-D arrays longer than this are drawn in rows of 32
CELL_H = 1.3  # a cell's height in units of its width (two lines of text fit)
MIN_FONT = 7.0
VALUE_FONT = 9.0
LABEL_FONT = 7.5
TITLE_FONT = 9.5
# Written as fractions: a bare 0.45 reads, to the style check, as a device fact (gpukit.devices).
MIN_CELL_IN, MAX_CELL_IN = 0.27, 9 / 20  # a cell's width in inches
INDEX_GREY = str(9 / 20)  # matplotlib's grey "0.45" of the index numbers
WRITTEN_WHITE, READ_WHITE = 9 / 20, 0.78  # parts of white in a written and in a read cell


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
    return float(np.clip(9.5 / width, MIN_CELL_IN, MAX_CELL_IN))


def _layout(run: Run, trace: Trace | None) -> tuple[list[_Item], float, float, float]:
    """The items, the panel's width and height in cells, and the inches per cell."""
    cell_in = 0.3
    for _ in range(4):  # the headings' width in cells depends on the cell size, and back
        items, width, height = _pack(run, trace, cell_in)
        if _cell_inches(width) >= cell_in - 1e-9:
            break
        cell_in = _cell_inches(width)
    return items, width, height, min(cell_in, _cell_inches(width))


def _pack(run: Run, trace: Trace | None, cell_in: float
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


def draw(run: Run, spec: ExerciseSpec, panels: list[Panel],
         launches: list[tuple[Run, list[Panel]]] | None = None) -> Any:
    """The figure: `run`'s title, error and note, then its panels; or, for an exercise answered
    by host code, the panels of each launch in `launches`, each with its own arrays."""
    from matplotlib.collections import PolyCollection  # lazy: matplotlib loads for drawings
    from matplotlib.figure import Figure  # lazy: as above

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
                    PolyCollection)
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
                cell_pt: float, PolyCollection: Any) -> None:
    for item in items:
        x0, y0 = item.x0, item.y0
        ax.text(x0, y0 - INDEX_H - 0.1, item.heading, ha="left", va="bottom",
                fontsize=LABEL_FONT + 0.5, gid="array heading")
        step = 1 if item.ncols <= 16 or cell_pt >= 24 else 4
        for c in range(0, item.ncols, step):
            ax.text(x0 + c + 0.5, y0 - 0.08, str(c), ha="center", va="bottom",
                    fontsize=MIN_FONT, color=INDEX_GREY)
        if item.row_labels:
            for row in range(item.nrows):
                start = row if len(item.shape) >= 2 else row * item.ncols
                ax.text(x0 - 0.15, y0 + (row + 0.5) * CELL_H, str(start), ha="right",
                        va="center", fontsize=MIN_FONT, color=INDEX_GREY)
        flat = np.arange(item.size)
        r, c = np.divmod(flat, item.ncols)
        ax.add_collection(PolyCollection(rectangles(x0 + c, y0 + r * CELL_H, 1, CELL_H),
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
                fill_colours.append(_tint(colour(tid), WRITTEN_WHITE if written else READ_WHITE))
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
            coll = PolyCollection(rectangles(sx, sy, sw, CELL_H), facecolors=fill_colours,
                                  edgecolors="none", zorder=2)
            coll.set_gid(gid)
            ax.add_collection(coll)
        if edges:
            ex, ey = np.array(edges).T
            ax.add_collection(PolyCollection(rectangles(ex, ey, 1, CELL_H), facecolors="none",
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
