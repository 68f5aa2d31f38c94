"""Widgets that watch a backend: device memory in use, and the stream timeline.

`memory_monitor(backend)` shows `backend.memory_info()` (used, free, pressure level) and its
history; `timeline_view(backend)` draws `backend.timeline()` with `gpukit.timing.plot_timeline`.
Both re-read the backend on `.refresh()`, on their Refresh button and, in IPython, after every
cell. They read and draw; they allocate, copy and launch nothing.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any

import ipywidgets as ipw
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..backends import current_backend
from ..backends.base import PRESSURE_LEVELS, Backend, MemoryInfo
from ..timing.plots import plot_timeline
from ._base import GpukitWidget, WidgetControlError, check_flag, field

__all__ = ["MemoryMonitor", "TimelineView", "memory_monitor", "timeline_view"]

_UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
_PRESSURE_COLOURS = {"low": "#2a9d8f", "medium": "#e9c46a", "high": "#f4a261",
                     "critical": "#e63946"}


class _Refreshing(GpukitWidget):
    """A widget that re-reads its source on `.refresh()`, a button, and after each IPython cell."""

    def __init__(self, controls: dict[str, ipw.ValueWidget], *, figsize: tuple[float, float],
                 auto_refresh: bool):
        self._button = ipw.Button(description="Refresh", icon="refresh",
                                  layout=ipw.Layout(width="110px"))
        self._button.on_click(lambda _: self.refresh())
        super().__init__(controls, figsize=figsize, extra=[self._button])
        self._unhook: Callable[[], None] | None = None
        self.refresh_error: str | None = None  # why refreshing after cells stopped, if it did
        if auto_refresh:
            self._hook_ipython()

    def refresh(self) -> GpukitWidget:
        """Read the backend again and redraw."""
        self._read()
        self.update()
        return self

    def close(self) -> None:
        """Stop refreshing after cells and close the ipywidgets."""
        if self._unhook is not None:
            self._unhook()
            self._unhook = None
        self.widget.close()

    def _read(self) -> None:
        raise NotImplementedError

    def _hook_ipython(self) -> None:
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover - ipykernel brings IPython
            return
        shell = get_ipython()
        if shell is None:
            return
        ref = weakref.ref(self)

        def after_cell(result: Any = None) -> None:
            widget = ref()
            if widget is None:  # the widget was garbage collected: stop listening
                shell.events.unregister("post_run_cell", after_cell)
                return
            try:
                widget.refresh()
            except Exception as exc:  # noqa: BLE001 - e.g. a backend shut down: cells go on
                widget.refresh_error = f"{type(exc).__name__}: {exc}"
                shell.events.unregister("post_run_cell", after_cell)
                widget._unhook = None

        shell.events.register("post_run_cell", after_cell)
        self._unhook = lambda: shell.events.unregister("post_run_cell", after_cell)


class MemoryMonitor(_Refreshing):
    """See `memory_monitor`."""

    kind = "memory_monitor"

    def __init__(self, backend: Any, unit: str = "MiB", auto_refresh: bool = True):
        if not isinstance(backend, Backend):
            raise WidgetControlError(f"memory_monitor needs a gpukit backend, got "
                                     f"{type(backend).__name__}")
        self.backend = backend
        self.history: list[MemoryInfo] = [backend.memory_info()]
        controls = {"unit": ipw.Dropdown(options=list(_UNITS), value=unit, description="unit",
                                         layout=ipw.Layout(width="160px"))}
        super().__init__(controls, figsize=(8.0, 2.8), auto_refresh=auto_refresh)
        self.update()

    @property
    def info(self) -> MemoryInfo:
        """The latest reading."""
        return self.history[-1]

    def _read(self) -> None:
        self.history.append(self.backend.memory_info())
        del self.history[:-200]  # a long session keeps the last 200 readings

    def _draw(self, figure: Figure) -> str:
        info, unit = self.info, self.controls["unit"].value
        scale = _UNITS[unit]
        colour = _PRESSURE_COLOURS.get(info.pressure, "#888888")
        bar, history = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.4]})
        bar.barh([0], [info.used_bytes / scale], color=colour, label="used")
        bar.barh([0], [info.free_bytes / scale], left=[info.used_bytes / scale], color="#e0e0e0",
                 label="free")
        for level, limit in PRESSURE_LEVELS[:-1]:
            bar.axvline(limit * info.total_bytes / scale, color="black", linestyle=":",
                        linewidth=0.8)
        bar.set_xlim(0, info.total_bytes / scale)
        bar.set_yticks([])
        bar.set_xlabel(f"{unit} (dotted: 70/85/95% used)")
        bar.set_title(f"{info.used_fraction:.1%} used, pressure {info.pressure}", fontsize=10)
        bar.legend(loc="upper right", fontsize=8)
        history.plot(range(len(self.history)), [m.used_bytes / scale for m in self.history],
                     marker="o", markersize=3, color=colour)
        history.set_xlabel("reading")
        history.xaxis.set_major_locator(MaxNLocator(integer=True))
        history.set_ylabel(f"used ({unit})")
        history.set_ylim(bottom=0)
        history.grid(alpha=0.3)
        history.set_title("used over time", fontsize=10)
        figure.tight_layout()
        return self._summary_text(info, unit)

    def _summary_text(self, info: MemoryInfo, unit: str) -> str:
        scale = _UNITS[unit]
        device = self.backend.device_name
        lines = [f"device memory of {device}:",
                 (f"  used {info.used_bytes / scale:,.2f} {unit} ({info.used_bytes:,} bytes), "
                 f"free {info.free_bytes / scale:,.2f} {unit} of {info.total_bytes / scale:,.2f} "
                 f"{unit}"),
                 f"  {info.used_fraction:.1%} used: pressure {info.pressure}"]
        peak = max(m.used_bytes for m in self.history)
        if peak > info.used_bytes:
            lines.append(f"  highest reading so far: {peak / scale:,.2f} {unit}")
        return "\n".join(lines)


def memory_monitor(backend: Any = None, *, unit: str = "MiB",
                   auto_refresh: bool = True) -> MemoryMonitor:
    """A widget showing a backend's used and free device memory and its pressure level.

    `backend` defaults to the current one. It reads `backend.memory_info()` again on
    `.refresh()`, on its Refresh button and, when `auto_refresh` (in IPython), after every cell,
    so allocations and frees show up. Control: "unit" ("KiB", "MiB", "GiB").
    """
    if backend is None:
        backend = current_backend()
    check_flag("auto_refresh", auto_refresh)
    if not isinstance(unit, str) or unit not in _UNITS:
        raise WidgetControlError(f"unit must be one of {', '.join(_UNITS)}, got {unit!r}")
    return MemoryMonitor(backend, unit, auto_refresh)


class TimelineView(_Refreshing):
    """See `timeline_view`."""

    kind = "timeline_view"

    def __init__(self, source: Any, by: str = "stream", auto_refresh: bool = True):
        self.source = source
        self.events: list[Any] = []
        self._read()
        controls = {"by": ipw.Dropdown(options=["stream", "engine"], value=by,
                                       description="rows", layout=ipw.Layout(width="180px"))}
        super().__init__(controls, figsize=(9.0, 3.0),
                         auto_refresh=auto_refresh and isinstance(source, Backend))
        self.update()

    def _read(self) -> None:
        if isinstance(self.source, Backend):
            self.events = list(self.source.timeline())
        elif isinstance(self.source, (list, tuple)):
            self.events = list(self.source)
        else:
            raise WidgetControlError(f"timeline_view needs a gpukit backend or a list of timeline "
                                     f"events, got {type(self.source).__name__}")

    def _draw(self, figure: Figure) -> str:
        ax = figure.add_subplot()
        by = self.controls["by"].value
        if not self.events:
            ax.set_axis_off()
            ax.text(0.5, 0.5, "no events yet: copy or launch something, then refresh",
                    ha="center", va="center", transform=ax.transAxes)
            return "timeline: no events yet (copy or launch something, then .refresh())"
        plot_timeline(self.events, ax=ax, by=by)
        figure.tight_layout()
        return self._summary_text(by)

    def _summary_text(self, by: str) -> str:
        events = self.events
        start = min(e.start_ms for e in events)
        end = max(e.end_ms for e in events)
        labels = sorted({field(e, "label", default="?") for e in events})
        rows = sorted({str(getattr(e, by)) for e in events})
        lines = [(f"{' + '.join(labels)} timeline: {len(events)} events on {len(rows)} "
                 f"{by}{'s' if len(rows) != 1 else ''} ({', '.join(rows)}), "
                 f"{start:.4g} to {end:.4g} ms")]
        counts = Counter(e.kind for e in events)
        for kind in sorted(counts):
            busy = sum(e.end_ms - e.start_ms for e in events if e.kind == kind)
            moved = sum(field(e, "nbytes", default=0) or 0 for e in events if e.kind == kind)
            extra = f", {moved:,} bytes" if kind != "kernel" else ""
            lines.append(f"  {kind}: {counts[kind]} event{'s' if counts[kind] > 1 else ''}, "
                         f"{busy:.4g} ms in total{extra}")
        if labels == ["modeled"]:
            lines.append("  (modeled from the device profile, not measured)")
        return "\n".join(lines)


def timeline_view(backend: Any = None, *, by: str = "stream",
                  auto_refresh: bool = True) -> TimelineView:
    """A widget drawing the stream timeline: `backend.timeline()` (or a list of its events).

    One row per stream (or per engine: control "by"), copies and kernels as bars. It reads the
    timeline again on `.refresh()`, on its Refresh button and, when `auto_refresh` (in IPython),
    after every cell. On the simulator the timeline is modeled, and says so.
    """
    if backend is None:
        backend = current_backend()
    check_flag("auto_refresh", auto_refresh)
    if not isinstance(by, str) or by not in ("stream", "engine"):
        raise WidgetControlError(f"by must be 'stream' or 'engine', got {by!r}")
    return TimelineView(backend, by, auto_refresh)
