"""The per-block diagram of a `Trace`: threads and the array elements they read and wrote.

One panel per barrier phase. The cells view (small blocks): arrays the block only reads are drawn
on the left, the block's threads in the middle, arrays it writes on the right; each element is
coloured by the threads that touched it (striped when several did), written elements have a thick
edge, and lines join threads to their elements (dotted for reads, solid for writes). The heatmap
view (real sizes): per phase and array, a row per warp over the elements (binned past 512),
coloured by warp and darker where accessed more; 2-D arrays as an image coloured by warp (drawn
in trace/heatmap.py). Local memory is private to a thread and not drawn. `block_summary` says the
same in text. Display only: nothing here computes a metric.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..devices import WARP_SIZE
from ..utils import as_int
from .figures import new_figure, rectangles, thread_colors, warp_colors
from .heatmap import plot_heatmap
from .recorder import (
    KINDS,
    SPACES,
    Trace,
    TraceError,
    TraceInputError,
    TraceTypeError,
    check_space,
    check_trace,
)

__all__ = ["block_summary", "plot_block", "thread_colors", "warp_colors"]

WRAP = WARP_SIZE  # 1-D arrays longer than this are drawn in rows of a warp's width
MAX_STRIPES = 4  # more threads on one element: a grey cell with their number
GAP = 3.0


def _thread_positions(block: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Where each thread's marker goes: the block's x, y grid (z under y); 1-D in rows of 32."""
    bx, by, bz = block
    t = np.arange(bx * by * bz)
    if by * bz == 1 and bx > WRAP:
        return t % WRAP, t // WRAP  # a row per warp
    return t % bx, t // bx


def _block_events(trace: Any, block: Any, phase: int | None,
                  spaces: Any) -> tuple[int, np.ndarray]:
    trace = check_trace(trace)
    if phase is not None:
        phase = as_int("phase", phase, 0)
    if isinstance(spaces, str) or not isinstance(spaces, (tuple, list)) or not spaces:
        raise TraceTypeError(f"spaces must be a tuple of memory spaces ({', '.join(SPACES)}), "
                             f"got {spaces!r}")
    spaces = tuple(check_space(s) for s in spaces)
    first = trace.thread_id((0, 0, 0), block)
    col = trace.columns
    mask = col["thread"] // trace.threads_per_block == first // trace.threads_per_block
    mask &= np.isin(trace.space_of_events(), [SPACES.index(s) for s in spaces])
    if phase is not None:
        mask &= col["phase"] == phase
    return first, np.flatnonzero(mask)


class _Layout:
    """Where an array's elements go: a grid of display rows and columns, cropped to the touched."""

    def __init__(self, shape: tuple[int, ...], elements: np.ndarray, max_cells: int, label: str):
        if len(shape) >= 2:
            self.cols = int(np.prod(shape[1:]))
            rows, cols = elements // self.cols, elements % self.cols
            self.r0, self.c0 = int(rows.min()), int(cols.min())
            self.nrows, self.ncols = int(rows.max()) - self.r0 + 1, int(cols.max()) - self.c0 + 1
            self.wrapped = False
        else:
            lo, hi = int(elements.min()), int(elements.max())
            self.wrapped = hi - lo + 1 > WRAP
            self.cols = WRAP if self.wrapped else 1 << 62
            self.c0 = lo - lo % WRAP if self.wrapped else lo
            self.r0 = 0
            self.ncols = WRAP if self.wrapped else hi - lo + 1
            self.nrows = (hi - self.c0) // WRAP + 1 if self.wrapped else 1
        if self.nrows * self.ncols > max_cells:
            raise TraceError(
                f"the elements of {label} this block touches span {self.nrows} x {self.ncols} "
                f"cells, more than max_cells={max_cells:,}; pick one phase with phase=..., "
                "trace a smaller launch, or raise max_cells")
        self.shape = shape

    def cell(self, elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.wrapped:
            rel = elements - self.c0
            return rel // WRAP, rel % WRAP
        if len(self.shape) >= 2:
            return elements // self.cols - self.r0, elements % self.cols - self.c0
        return np.zeros_like(elements), elements - self.c0

    def title(self, label: str) -> str:
        if len(self.shape) >= 2:
            return (f"{label}[{self.r0}:{self.r0 + self.nrows}, "
                    f"{self.c0}:{self.c0 + self.ncols}] (flattened)" if len(self.shape) > 2 else
                    f"{label}[{self.r0}:{self.r0 + self.nrows}, {self.c0}:{self.c0 + self.ncols}]")
        end = self.c0 + (self.nrows * WRAP if self.wrapped else self.ncols)
        return f"{label}[{self.c0}:{end}]" + (f" in rows of {WRAP}" if self.wrapped else "")


VIEWS = ("auto", "cells", "heatmap")
AUTO_CELLS_THREADS = 128  # view="auto" draws every cell up to this many threads per block ...
AUTO_CELLS_ELEMENTS = 512  # ... and this many distinct elements touched; else a heatmap


def plot_block(trace: Trace, block: Any = (0, 0, 0), *, phase: int | None = None,
               spaces: tuple[str, ...] = ("global", "shared", "const"), view: str = "auto",
               max_lines: int = 512, max_cells: int = 4096) -> Any:
    """A matplotlib Figure of block `block`'s threads and the elements they read and wrote, one
    panel per barrier phase (0 = before the first syncthreads).

    view: "cells" draws every element and every thread (threads in the middle, the arrays read
    on the left and written on the right, lines joining them); "heatmap" aggregates for real
    sizes: per phase and array, which warp touched which element and how often (a row per warp,
    coloured per warp, darker = more accesses; 2-D arrays as an image coloured by warp); "auto"
    (default) picks "cells" for blocks of at most 128 threads touching at most 512 elements.
    phase: only the accesses of that phase (one panel).
    max_lines: (cells) above this many thread-element connections, lines are left out.
    In the cells view the threads are the collection with gid "threads", one colour per thread.
    """
    max_lines, max_cells = as_int("max_lines", max_lines, 0), as_int("max_cells", max_cells, 1)
    if not isinstance(view, str) or view not in VIEWS:
        raise TraceInputError(f"view must be one of {', '.join(VIEWS)}, got {view!r}")
    first, events = _block_events(trace, block, phase, spaces)
    col = trace.columns
    phases = [phase] if phase is not None else sorted(set(col["phase"][events].tolist())) or [0]
    if view == "auto":
        touched = len(np.unique(np.stack([col["array"][events], col["element"][events]]),
                                axis=1)[0]) if len(events) else 0
        small = trace.threads_per_block <= AUTO_CELLS_THREADS and touched <= AUTO_CELLS_ELEMENTS
        view = "cells" if small else "heatmap"
    by_phase = [events[col["phase"][events] == p] for p in phases]
    named = phase is not None or len(phases) > 1
    if view == "cells":
        return _plot_cells(trace, first, phases, by_phase, named, max_lines, max_cells)
    return plot_heatmap(trace, first, phases, by_phase)


def _plot_cells(trace: Trace, first: int, phases: list[int], by_phase: list[np.ndarray],
                named: bool, max_lines: int, max_cells: int) -> Any:
    fig = new_figure((6, 4))
    extents = []
    for p, events in zip(phases, by_phase):
        ax = fig.add_axes((0, 0, 1, 1))
        extents.append(_draw_cells(ax, trace, first, events, p if named else None, max_lines,
                                   max_cells))
    right = max(r for r, _ in extents)
    total = sum(b + 2 for _, b in extents)
    inches = min(0.25, 16 / (right + 1), max(0.06, 12 / total) if len(phases) == 1
                 else max(0.06, 24 / total))  # per cell, the same both ways
    width = max(4.0, inches * (right + 1))
    heights = [inches * (b + 2) + 0.4 for _, b in extents]
    height = max(2.0, sum(heights))
    fig.set_size_inches(width, height)
    top = 0.0
    for ax, h, (r, b) in zip(fig.axes, heights, extents):
        ax.set_position((0.01, 1 - (top + h) / height + 0.01 / height,
                         0.98, (h - 0.35) / height))
        ax.set_anchor("NW")
        top += h
    return fig


def _draw_cells(ax: Any, trace: Trace, first: int, events: np.ndarray, phase: int | None,
                max_lines: int, max_cells: int) -> tuple[float, float]:
    """One panel of the cells view; returns its extent (right, bottom) in cells."""
    from matplotlib.collections import (  # lazy: matplotlib loads only for drawings
        EllipseCollection,
        LineCollection,
        PolyCollection,
    )

    col = trace.columns
    tpb, (_, by, bz) = trace.threads_per_block, trace.block
    colors = thread_colors(trace.block)
    tx, ty = _thread_positions(trace.block)
    th_w, th_h = int(tx.max()) + 1, int(ty.max()) + 1
    ev_array, ev_element = col["array"][events], col["element"][events]
    ev_thread, ev_write = col["thread"][events] - first, col["kind"][events] > 0
    arrays = sorted(set(ev_array.tolist()))
    outputs = [a for a in arrays if ev_write[ev_array == a].any()]
    inputs = [a for a in arrays if a not in outputs]
    layouts = {a: _Layout(trace.arrays[a].shape, ev_element[ev_array == a], max_cells,
                          trace.arrays[a].label) for a in arrays}
    th_x = max([layouts[a].ncols for a in inputs], default=-GAP) + GAP
    out_x = th_x + th_w + GAP
    grid_cells, stripes, stripe_colors, edges, texts = [], [], [], [], []
    centres: dict[tuple[int, int], tuple[float, float]] = {}
    heights = []
    for x0, column in ((0.0, inputs), (out_x, outputs)):
        y = 0.0
        for a in column:
            lay, info = layouts[a], trace.arrays[a]
            ax.text(x0, y - 0.4, lay.title(info.label) + f" ({info.space})", fontsize=8,
                    va="bottom")
            r, c = np.divmod(np.arange(lay.nrows * lay.ncols), lay.ncols)
            grid_cells.append(rectangles(x0 + c, y + r, 1, 1))
            sel = ev_array == a
            pairs = sorted(set(zip(ev_element[sel].tolist(), ev_thread[sel].tolist())))
            by_element: dict[int, list[int]] = {}
            for e, t in pairs:
                by_element.setdefault(e, []).append(t)
            written = set(ev_element[sel & ev_write].tolist())
            rows, cs = lay.cell(np.array(list(by_element), np.int64))
            for (e, threads), r, c in zip(by_element.items(), rows.tolist(), cs.tolist()):
                cx, cy = x0 + c, y + r
                centres[(a, e)] = (cx + 0.5, cy + 0.5)
                if len(threads) <= MAX_STRIPES:
                    w = 1 / len(threads)
                    stripes += [(cx + k * w, cy, w) for k in range(len(threads))]
                    stripe_colors += [colors[t] for t in threads]
                else:
                    stripes.append((cx, cy, 1.0))
                    stripe_colors.append((0.8, 0.8, 0.8, 1.0))
                    texts.append((cx + 0.5, cy + 0.5, str(len(threads))))
                if e in written:
                    edges.append((cx, cy))
            y += lay.nrows + 2.0
        heights.append(y)
    if grid_cells:
        ax.add_collection(PolyCollection(np.concatenate(grid_cells), facecolors="white",
                                         edgecolors="0.7", linewidths=0.5, zorder=1))
    if stripes:
        sx, sy, sw = np.array(stripes).T
        ax.add_collection(PolyCollection(rectangles(sx, sy, sw, 1), facecolors=stripe_colors,
                                         edgecolors="none", zorder=2))
    if edges:
        ex, ey = np.array(edges).T
        ax.add_collection(PolyCollection(rectangles(ex, ey, 1, 1), facecolors="none",
                                         edgecolors="black", linewidths=1.4, zorder=4))
    for x, y, s in texts:
        ax.text(x, y, s, ha="center", va="center", fontsize=6, zorder=5)
    # the threads, laid out as the block (z stacked under y)
    th_y = max(0.0, (max(heights) - th_h) / 2)
    ax.add_collection(EllipseCollection(
        np.full(tpb, 0.8), np.full(tpb, 0.8), np.zeros(tpb), units="xy",
        offsets=np.stack([th_x + tx + 0.5, th_y + ty + 0.5], 1), offset_transform=ax.transData,
        facecolors=colors, edgecolors="black", linewidths=0.5, zorder=3, gid="threads"))
    blk = trace.coordinates(first)[1]
    ax.text(th_x, th_y - 0.4, f"threads of block {blk}", fontsize=8, va="bottom")
    if tpb <= 64:
        for x, y in zip(tx.tolist(), ty.tolist()):
            ax.text(th_x + x + 0.5, th_y + y + 0.5, f"{x},{y}" if by * bz > 1 else str(x + WRAP * y),
                    ha="center", va="center", fontsize=5, zorder=4)
    links = sorted(set(zip(ev_thread.tolist(), ev_array.tolist(), ev_element.tolist(),
                           ev_write.tolist())))
    title = f"kernel '{trace.kernel}', block {blk}" + ("" if phase is None else f", phase {phase}")
    if len(links) <= max_lines:
        for write in (False, True):
            segs = [[centres[(a, e)], (th_x + tx[th] + 0.5, th_y + ty[th] + 0.5)]
                    for th, a, e, w in links if w == write]
            segc = [colors[th] for th, _, _, w in links if w == write]
            ax.add_collection(LineCollection(segs, colors=segc, linewidths=0.7, alpha=0.6,
                                             linestyles="solid" if write else "dotted", zorder=2))
    else:
        title += f" ({len(links):,} thread-element links: lines left out)"
    ax.set_title(title, fontsize=9)
    right = out_x + max([layouts[a].ncols for a in outputs], default=-GAP)
    bottom = max(heights + [th_y + th_h])
    ax.set_xlim(-0.5, right + 0.5)
    ax.set_ylim(bottom + 0.5, -1.5)  # row 0 at the top, as arrays print
    ax.set_aspect("equal")
    ax.axis("off")
    return right, bottom


def block_summary(trace: Trace, block: Any = (0, 0, 0), *, phase: int | None = None,
                  max_threads: int = 32) -> str:
    """Text: what each thread of `block` read and wrote (global, shared and const memory)."""
    max_threads = as_int("max_threads", max_threads, 1)
    first, events = _block_events(trace, block, phase, ("global", "shared", "const"))
    col = trace.columns
    blk = trace.coordinates(first)[1]
    lines = [f"Block {blk} of kernel '{trace.kernel}': {trace.threads_per_block:,} threads, "
             f"{len(events):,} accesses" + ("" if phase is None else f" in phase {phase}")]
    phased = bool((col["phase"][events] > 0).any())
    threads = np.unique(col["thread"][events])
    for tid in threads[:max_threads]:
        mine = events[col["thread"][events] == tid]
        parts = []
        for ph in np.unique(col["phase"][mine]):
            by_kind: dict[str, list[str]] = {}
            for i in mine[col["phase"][mine] == ph]:
                info = trace.arrays[col["array"][i]]
                index = np.unravel_index(int(col["element"][i]), info.shape)
                name = f"{info.label}[{', '.join(str(int(v)) for v in index)}]"
                by_kind.setdefault(KINDS[col["kind"][i]], []).append(name)
            text = "; ".join(f"{_VERBS[k]} {', '.join(v)}" for k, v in by_kind.items())
            parts.append(f"phase {ph}: {text}" if phased else text)
        lines.append(f"  thread {trace.coordinates(tid)[0]}: " + " | ".join(parts))
    if len(threads) > max_threads:
        lines.append(f"  ... and {len(threads) - max_threads:,} more threads")
    idle = trace.threads_per_block - len(threads)
    if idle:
        lines.append(f"  {idle:,} threads made no access")
    return "\n".join(lines)


_VERBS = {"read": "reads", "write": "writes", "atomic": "atomically updates"}
