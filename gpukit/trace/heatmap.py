"""The heatmap view of `plot_block`, for blocks at real sizes: per phase and array, a row per warp
over the elements (binned past 512), coloured by warp and darker where accessed more; 2-D arrays
as an image coloured by warp. Display only: nothing here computes a metric.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..devices import WARP_SIZE
from ..utils import ceil_div
from .figures import new_figure, warp_colors
from .recorder import KINDS, Trace

MAX_BINS = 512  # a heatmap's columns (elements are binned beyond this)
FULL_EXTENT = 8192  # 1-D arrays up to this size are drawn whole in the heatmap, larger ones cropped
MIN_FONT = 7.0


def plot_heatmap(trace: Trace, first: int, phases: list[int], by_phase: list[np.ndarray]
                 ) -> Any:
    """The aggregated view of the block whose first thread is `first`: rows = `phases` (with
    the events of each in `by_phase`), columns = the arrays the block touched."""
    col = trace.columns
    tpb = trace.threads_per_block
    warps = ceil_div(tpb, WARP_SIZE)
    colours = warp_colors(warps)
    arrays = sorted(set(np.concatenate([col["array"][e] for e in by_phase]).tolist())) \
        if any(len(e) for e in by_phase) else []
    ncols = max(len(arrays), 1)
    width = min(15.0, 1.2 + 3.6 * ncols)
    fig = new_figure((width, 0.9 + 2.3 * len(phases)), layout="constrained")
    blk = trace.coordinates(first)[1]
    total = sum(len(e) for e in by_phase)
    fig.suptitle(f"kernel '{trace.kernel}', block {blk}: {tpb:,} threads in {warps} warp"
                 f"{'s' if warps > 1 else ''}, {total:,} accesses; one row per phase, "
                 "colour = warp, darker = more accesses", fontsize=9)
    grid = fig.subplots(len(phases), ncols, squeeze=False)
    for row, (p, events) in enumerate(zip(phases, by_phase)):
        for c in range(ncols):
            ax = grid[row, c]
            ax.set_gid(f"phase {p}")
            if not arrays:
                ax.set_title(f"phase {p}: no accesses", fontsize=8)
                ax.axis("off")
                continue
            a = arrays[c]
            mine = events[col["array"][events] == a]
            _heat_panel(ax, trace, a, mine, first, p, warps, colours)
    return fig


def _heat_panel(ax: Any, trace: Trace, a: int, events: np.ndarray, first: int, phase: int,
                warps: int, colours: np.ndarray) -> None:
    from matplotlib.ticker import MaxNLocator  # lazy: matplotlib loads only for drawings

    col = trace.columns
    info = trace.arrays[a]
    kinds = col["kind"][events]
    numbers = [(int((kinds == k).sum()), name) for k, name in enumerate(KINDS)]
    counts = ", ".join(f"{n:,} {name}{'s' if n > 1 else ''}" for n, name in numbers if n)
    ax.set_title(f"phase {phase} · {info.label} ({info.space})" + (f": {counts}" if counts
                                                                    else ": not touched"),
                 fontsize=8)
    ax.tick_params(labelsize=MIN_FONT)
    if not len(events):
        ax.axis("off")
        return
    warp = (col["thread"][events] - first) // WARP_SIZE
    element = col["element"][events]
    if len(info.shape) >= 2:
        rows_of = int(np.prod(info.shape[1:]))
        r, c = element // rows_of, element % rows_of
        rb, r0, rn = _bins(r)
        cb, c0, cn = _bins(c)
        n = np.zeros((rn, cn), np.int64)
        np.add.at(n, (rb, cb), 1)
        owner = np.full((rn, cn), -1, np.int64)
        owner[rb, cb] = warp
        several = np.zeros((rn, cn), np.int64)
        np.maximum.at(several, (rb, cb), warp)
        mixed = np.zeros((rn, cn), bool)
        mixed[rb, cb] = several[rb, cb] != warp
        img = np.ones((rn, cn, 4))
        hit = n > 0
        base = np.where(mixed[..., None], np.array([0.35, 0.35, 0.35, 1.0]),
                        colours[np.clip(owner, 0, None)])
        strength = 0.35 + 0.65 * n / max(int(n.max()), 1)
        img[hit] = 1 - (1 - base[hit]) * strength[hit][:, None]
        img[..., 3] = 1.0
        ax.imshow(img, extent=(c0, c0 + _span(c), r0 + _span(r), r0), aspect="auto",
                  interpolation="nearest")
        ax.set_xlabel("column", fontsize=MIN_FONT + 0.5)
        ax.set_ylabel("row (grey: several warps)", fontsize=MIN_FONT + 0.5)
    else:
        size = int(np.prod(info.shape))
        whole = size <= FULL_EXTENT  # the whole array, so that phases compare at a glance
        eb, e0, en = _bins(element, (0, size - 1) if whole else None)
        n = np.zeros((warps, en), np.int64)
        np.add.at(n, (warp, eb), 1)
        strength = n / max(int(n.max()), 1)
        img = np.ones((warps, en, 4))
        hit = n > 0
        shade = 0.35 + 0.65 * strength
        img[hit] = 1 - (1 - colours[np.nonzero(hit)[0]]) * shade[hit][:, None]
        img[..., 3] = 1.0
        span = size if whole else _span(element)
        ax.imshow(img, extent=(e0, e0 + span, warps, 0), aspect="auto", interpolation="nearest")
        ax.set_xlabel(f"element of {info.label}" + (f" ({span // en} per column)"
                                                    if en < span else ""),
                      fontsize=MIN_FONT + 0.5)
        ax.set_ylabel("warp (threads)", fontsize=MIN_FONT + 0.5)
        ticks = list(range(0, warps, max(1, ceil_div(warps, 8))))
        ax.set_yticks([t + 0.5 for t in ticks])
        tpb = trace.threads_per_block
        ax.set_yticklabels([f"{t} ({t * WARP_SIZE}-{min((t + 1) * WARP_SIZE, tpb) - 1})"
                            for t in ticks])
        for label, t in zip(ax.get_yticklabels(), ticks):
            label.set_color(colours[t])
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))


def _span(values: np.ndarray) -> int:
    return int(values.max()) - int(values.min()) + 1


def _bins(values: np.ndarray, extent: tuple[int, int] | None = None
          ) -> tuple[np.ndarray, int, int]:
    """(bin of each value, the first value, the number of bins) over `extent` (default: the
    values' own range): one bin per value up to MAX_BINS values, binned evenly beyond."""
    lo, hi = extent if extent is not None else (int(values.min()), int(values.max()))
    span = hi - lo + 1
    nbins = min(span, MAX_BINS)
    return (values - lo) * nbins // span, lo, nbins
