"""Matplotlib drawings of timing results: the modeled stream timeline and bandwidth curves.

Display only: they compute nothing and label every axis with the kind of time shown (modeled,
wall or CUDA events). matplotlib is imported when a function is called.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..backends.base import Backend
from ..errors import ArgumentTypeError, InvalidArgumentError
from ..utils import size_text

__all__ = ["KIND_COLORS", "plot_bandwidth", "plot_timeline"]

KIND_COLORS = {"h2d": "tab:blue", "d2h": "tab:green", "d2d": "tab:purple", "kernel": "tab:orange"}
_EVENT_FIELDS = ("kind", "stream", "engine", "start_ms", "end_ms", "label")
_ROW_FIELDS = ("size_bytes", "gb_per_s", "kind", "direction", "pinned")


def _items(values: Any, what: str, fields: tuple[str, ...]) -> list[Any]:
    """`values` as a list of objects that have `fields`, or a gpukit error saying what is not."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ArgumentTypeError(f"expected {what}, got {type(values).__name__}")
    items = list(values)
    for item in items:
        missing = [name for name in fields if not hasattr(item, name)]
        if missing:
            raise ArgumentTypeError(f"expected {what}; {item!r} has no {', '.join(missing)}")
    return items


def plot_timeline(events: Any, ax: Any = None, by: str = "stream", title: str | None = None
                  ) -> Any:
    """A Gantt chart of timeline events (a backend's `timeline()`, or the backend itself).

    One row per stream (`by="stream"`) or per engine (`by="engine"`), bars coloured by kind
    (h2d, d2h, d2d, kernel) and labelled with the kernel or the size. Returns the Axes.
    """
    if isinstance(events, Backend):
        events = events.timeline()
    events = _items(events, "timeline events (backend.timeline()) or a backend", _EVENT_FIELDS)
    if not isinstance(by, str) or by not in ("stream", "engine"):
        raise InvalidArgumentError(f"by must be 'stream' or 'engine', got {by!r}")
    if not events:
        raise InvalidArgumentError("no timeline events to plot: copy or launch something first "
                         "(backend.timeline() is empty)")
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 1.6 + 0.6 * len({getattr(e, by) for e in events})),
                               layout="constrained")

    def row_name(event: Any) -> str:
        if by == "engine":
            return event.engine
        return "stream 0 (default)" if event.stream == 0 else f"stream {event.stream}"

    rows = sorted({row_name(e) for e in events},
                  key=lambda r: (by == "stream" and int(r.split()[1]), r))
    span = max(e.end_ms for e in events) - min(e.start_ms for e in events) or 1.0
    for event in events:
        y = rows.index(row_name(event))
        width = event.end_ms - event.start_ms
        ax.broken_barh([(event.start_ms, width)], (y - 0.4, 0.8),
                       facecolors=KIND_COLORS.get(event.kind, "tab:gray"), edgecolor="black",
                       linewidth=0.5)
        text = event.kernel if event.kind == "kernel" else \
            f"{event.kind} {size_text(event.nbytes or 0)}"
        if width > 0.08 * span:
            ax.text(event.start_ms + width / 2, y, text, ha="center", va="center", fontsize=8)
    labels = sorted({e.label for e in events})
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel(f"time (ms, {' + '.join(labels)})")
    handles = [plt.Rectangle((0, 0), 1, 1, color=KIND_COLORS[k]) for k in KIND_COLORS
               if any(e.kind == k for e in events)]
    ax.legend(handles, [k for k in KIND_COLORS if any(e.kind == k for e in events)],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.set_title(title or f"{' + '.join(labels)} timeline" +
                 (" (not measured)" if labels == ["modeled"] else ""))
    return ax


def plot_bandwidth(rows: Iterable[Any], ax: Any = None, title: str | None = None) -> Any:
    """Bandwidth against copy size, one line per (timing kind, pinned or pageable). Returns Axes."""
    rows = _items(rows, "bandwidth rows (from bandwidth_sweep)", _ROW_FIELDS)
    if not rows:
        raise InvalidArgumentError("no bandwidth rows to plot (bandwidth_sweep returned none)")
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    memory = {True: "pinned", False: "pageable", None: "device"}
    series: dict[tuple[str, str, Any], list[Any]] = {}
    for row in rows:
        series.setdefault((row.kind, row.direction, row.pinned), []).append(row)
    for (kind, direction, pinned), points in series.items():
        points.sort(key=lambda r: r.size_bytes)
        ax.plot([r.size_bytes for r in points], [r.gb_per_s for r in points],
                linestyle="--" if kind == "modeled" else "-", marker="o", markersize=3,
                label=f"{direction} {memory[pinned]} ({kind})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("copy size (bytes)")
    ax.set_ylabel("GB/s")
    ax.legend(fontsize=8)
    ax.set_title(title or "transfer bandwidth")
    return ax
