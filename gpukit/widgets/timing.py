"""The timing widget: kernel time against block size or problem size, and transfer bandwidth.

`timing_plot` draws results it is given (`gpukit.timing.Timing`s keyed by block size or problem
size, `gpukit.transfers.BandwidthRow`s, or plain rows with the same fields); every series is
labelled measured (wall clock or CUDA events) or modeled. `block_size_timing`,
`problem_size_timing` and `transfer_bandwidth` run `gpukit.timing.time_kernel` and
`gpukit.timing.bandwidth_sweep` first. The widget times nothing itself. Where there is a modeled
series and nothing measured on a GPU (the simulator), it shows the modeled GPU time by default;
the simulation's wall time is a "clock" series, labelled as the simulation on this CPU, never as
a measurement of a GPU.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as ipw
from matplotlib.figure import Figure

from ..timing import Timing, bandwidth_sweep, time_kernel
from ..utils import as_int, ceil_div, size_text
from ._base import GpukitWidget, WidgetControlError, check_flag, field

__all__ = ["TimingPlot", "block_size_timing", "problem_size_timing", "timing_plot",
           "transfer_bandwidth"]

_LABELS = {"wall": "wall clock: the host's time (on the simulator: the simulation, not a GPU)",
           "cuda-events": "measured: CUDA events", "modeled": "modeled GPU time (not measured)"}
SERIES = ("all", "modeled", "clock")  # "clock": wall clock or CUDA events
_MEMORY = {True: "pinned", False: "pageable", None: "device"}
_X_LABELS = {"threads_per_block": "threads per block", "n": "problem size n (elements)",
             "size_bytes": "problem size (bytes)"}
DEFAULT_BLOCK_SIZES = (32, 64, 128, 256, 512, 1024)


def series_label(kind: str) -> str:
    """What a series of `kind` is, in words: the simulation's wall clock, CUDA events measured on
    a GPU, or modeled GPU time."""
    return _LABELS.get(kind, kind)


def _number(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class _Point:
    x: float
    ms: float
    kind: str
    note: str = ""


@dataclass(frozen=True)
class _Copy:
    size_bytes: int
    gb_per_s: float
    direction: str
    pinned: bool | None
    kind: str


def _rows(rows: Any, what: str) -> list[Any]:
    if rows is None:
        return []
    if isinstance(rows, Mapping):
        return list(rows.items())
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
        raise WidgetControlError(f"timing_plot: {what} must be a collection of rows, got "
                                 f"{type(rows).__name__} {rows!r}")
    return list(rows)


def _real(name: str, value: Any, row: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not math.isfinite(value) or value < 0:
        raise WidgetControlError(f"timing_plot: {name} must be a finite number >= 0, got "
                                 f"{value!r} in {row!r}")
    return float(value)


def _text(name: str, value: Any, row: Any) -> str:
    if not isinstance(value, str):
        raise WidgetControlError(f"timing_plot: {name} must be a string, got {value!r} in "
                                 f"{row!r}")
    return value


def _copies(rows: Iterable[Any] | None) -> list[_Copy]:
    """`BandwidthRow`s, or rows (objects or dicts) with the same fields."""
    copies = []
    for row in _rows(rows, "bandwidth"):
        values = {name: field(row, name, default=...) for name in _Copy.__dataclass_fields__}
        missing = [name for name, value in values.items() if value is ...]
        if missing:
            raise WidgetControlError(f"timing_plot: a bandwidth row lacks {', '.join(missing)}: "
                                     f"{row!r}")
        if values["pinned"] not in (True, False, None) or not isinstance(values["pinned"],
                                                                         (bool, type(None))):
            raise WidgetControlError(f"timing_plot: pinned must be True, False or None, got "
                                     f"{values['pinned']!r} in {row!r}")
        copies.append(_Copy(int(_real("size_bytes", values["size_bytes"], row)),
                            _real("gb_per_s", values["gb_per_s"], row),
                            _text("direction", values["direction"], row), values["pinned"],
                            _text("kind", values["kind"], row)))
    return copies


def _kernel_points(kernel_times: Any, x: str) -> list[_Point]:
    """(x, Timing) pairs, a mapping x -> Timing, or rows with `x`, ms and kind fields."""
    points = []
    for item in _rows(kernel_times, "kernel_times"):
        if isinstance(item, tuple) and len(item) == 2:
            value, timing = item
            if not isinstance(timing, Timing):
                raise WidgetControlError(f"timing_plot: kernel_times pairs are (x value, Timing), "
                                         f"got {item!r}")
            value = _real(x, value, item)
            points.append(_Point(value, timing.median_ms, timing.kind, timing.note))
            if timing.modeled is not None:
                modeled = timing.modeled
                points.append(_Point(value, modeled.median_ms, modeled.kind, modeled.note))
            continue
        value = field(item, x)
        ms = field(item, "median_ms", "ms", "elapsed_ms")
        kind = field(item, "kind")
        if value is None or ms is None or kind is None:
            raise WidgetControlError(
                f"timing_plot: each kernel-time row needs {x!r}, 'ms' and 'kind' (or pass "
                f"(x, Timing) pairs), got {item!r}")
        points.append(_Point(_real(x, value, item), _real("ms", ms, item),
                             _text("kind", kind, item), str(field(item, "note", default=""))))
    return points


class TimingPlot(GpukitWidget):
    """See `timing_plot`."""

    kind = "timing_plot"

    def __init__(self, kernel_times: Any = None, bandwidth: Iterable[Any] | None = None, *,
                 x: str = "threads_per_block", x_label: str | None = None,
                 title: str | None = None, log_scale: bool | None = None):
        for name, value in (("x", x), ("x_label", x_label), ("title", title)):
            if not isinstance(value, str) and (name == "x" or value is not None):
                raise WidgetControlError(f"timing_plot: {name} must be a string, got {value!r}")
        if log_scale is not None:
            check_flag("log_scale", log_scale)
        self.points = _kernel_points(kernel_times, x)
        self.bandwidth = _copies(bandwidth)
        if not self.points and not self.bandwidth:
            raise WidgetControlError("timing_plot needs kernel_times=, bandwidth= or both")
        self.x, self.title = x, title
        self.x_label = x_label or _X_LABELS.get(x, x)
        views = (["both"] if self.points and self.bandwidth else []) + \
            (["kernel time"] if self.points else []) + (["bandwidth"] if self.bandwidth else [])
        if log_scale is None:
            xs = [p.x for p in self.points]
            log_scale = bool(xs) and x != "threads_per_block" and max(xs) >= 16 * min(xs) > 0
        directions = sorted({r.direction for r in self.bandwidth})
        controls: dict[str, ipw.ValueWidget] = {
            "view": ipw.Dropdown(options=views, value=views[0], description="show",
                                 layout=ipw.Layout(width="200px")),
            "series": ipw.Dropdown(options=list(SERIES), value=self._default_series(),
                                   description="series", layout=ipw.Layout(width="200px")),
            "log_scale": ipw.Checkbox(value=log_scale, description="log scale (kernel time)"),
        }
        if directions:
            controls["direction"] = ipw.Dropdown(options=["all", *directions], value="all",
                                                 description="copies",
                                                 layout=ipw.Layout(width="200px"))
        super().__init__(controls, figsize=(9.0, 3.6))
        self.update()

    def _default_series(self) -> str:
        """"modeled" where there is a model and no GPU measurement (the simulator), else "all"."""
        kinds = {p.kind for p in self.points} | {r.kind for r in self.bandwidth}
        return "modeled" if "modeled" in kinds and "cuda-events" not in kinds else "all"

    def _wanted(self, kind: str) -> bool:
        series = self.controls["series"].value
        return series == "all" or (series == "modeled") == (kind == "modeled")

    def _bandwidth_series(self) -> dict[tuple[str, Any, str], list[_Copy]]:
        direction = self.controls["direction"].value if "direction" in self.controls else "all"
        series: dict[tuple[str, Any, str], list[_Copy]] = {}
        for row in self.bandwidth:
            if self._wanted(row.kind) and direction in ("all", row.direction):
                series.setdefault((row.direction, row.pinned, row.kind), []).append(row)
        for rows in series.values():
            rows.sort(key=lambda r: r.size_bytes)
        return series

    def _draw(self, figure: Figure) -> str:
        view = self.controls["view"].value
        panels = ["kernel time", "bandwidth"] if view == "both" else [view]
        axes = figure.subplots(1, len(panels), squeeze=False)[0]
        lines = []
        for ax, panel in zip(axes, panels):
            lines += self._draw_kernel(ax) if panel == "kernel time" else self._draw_bandwidth(ax)
        if self.title:
            figure.suptitle(self.title, fontsize=10)
        figure.tight_layout()
        return "\n".join(lines)

    def _draw_kernel(self, ax: Any) -> list[str]:
        series: dict[str, list[_Point]] = {}
        for p in self.points:
            if self._wanted(p.kind):
                series.setdefault(p.kind, []).append(p)
        lines = [f"kernel time (median) against {self.x_label}:"]
        notes = []
        for kind, points in series.items():
            points.sort(key=lambda p: p.x)
            ax.plot([p.x for p in points], [p.ms for p in points], marker="o", markersize=4,
                    linestyle="--" if kind == "modeled" else "-", label=series_label(kind))
            best = min(points, key=lambda p: p.ms)
            worst = max(points, key=lambda p: p.ms)
            if best.ms == worst.ms:
                lines.append(f"  {series_label(kind)}: {best.ms:.4g} ms at every {self.x}")
            else:
                lines.append(f"  {series_label(kind)}: fastest {best.ms:.4g} ms at "
                             f"{_number(best.x)}, slowest {worst.ms:.4g} ms at "
                             f"{_number(worst.x)}")
            notes += [f"  ({kind}: {p.note})" for p in points[:1] if p.note]
        if not series:
            lines.append("  no series selected")
        if self.controls["log_scale"].value:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
        ax.set_xlabel(self.x_label)
        ax.set_ylabel("time (ms)")
        ax.set_title("kernel time", fontsize=10)
        ax.grid(alpha=0.3)
        if series:
            ax.legend(fontsize=8)
        return lines + notes

    def _draw_bandwidth(self, ax: Any) -> list[str]:
        lines = ["transfer bandwidth (GB/s = 10^9 bytes/s), peak of each series:"]
        series = self._bandwidth_series()
        for (direction, pinned, kind), rows in series.items():
            label = f"{direction} {_MEMORY[pinned]}, {series_label(kind)}"
            ax.plot([r.size_bytes for r in rows], [r.gb_per_s for r in rows], marker="o",
                    markersize=3, linestyle="--" if kind == "modeled" else "-", label=label)
            peak = max(rows, key=lambda r: r.gb_per_s)
            lines.append(f"  {label}: {peak.gb_per_s:.3g} GB/s at {size_text(peak.size_bytes)}")
        if not series:
            lines.append("  no series selected")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("copy size (bytes)")
        ax.set_ylabel("GB/s")
        ax.set_title("host <-> device bandwidth", fontsize=10)
        ax.grid(alpha=0.3)
        if series:
            ax.legend(fontsize=7)
        return lines


def timing_plot(kernel_times: Any = None, bandwidth: Iterable[Any] | None = None, *,
                x: str = "threads_per_block", x_label: str | None = None,
                title: str | None = None, log_scale: bool | None = None) -> TimingPlot:
    """A widget plotting kernel times against `x` and/or transfer bandwidth against copy size.

    `kernel_times`: {x value: Timing}, (x value, Timing) pairs, or rows with fields `x`, `ms`
    (or `median_ms`) and `kind`; a Timing's `.modeled` becomes the modeled series. `x` names the
    swept quantity ("threads_per_block", "n", ...). `bandwidth`: rows of `bandwidth_sweep`.
    Controls: "view", "series" ("all", "modeled", "clock": wall clock or CUDA events; the
    default is "modeled" where there is a model and no CUDA events), "log_scale" and, with
    bandwidth rows, "direction".
    """
    return TimingPlot(kernel_times, bandwidth, x=x, x_label=x_label, title=title,
                      log_scale=log_scale)


def block_size_timing(kernel: Any, n: int, *args: Any,
                      block_sizes: Sequence[int] = DEFAULT_BLOCK_SIZES, backend: Any = None,
                      repeat: int | None = None, **options: Any) -> TimingPlot:
    """Time `kernel[ceil(n / b), b](*args)` for each block size b with `gpukit.timing.time_kernel`
    (options such as flops= pass through) and plot time against threads per block."""
    n = as_int("n", n, 1)
    times = {b: time_kernel(kernel, ceil_div(n, b), b, *args, backend=backend, repeat=repeat,
                            **options) for b in _counts("block_sizes", block_sizes)}
    return timing_plot(times, x="threads_per_block",
                       title=f"{_name(kernel)}: n = {n:,}, time against block size")


def problem_size_timing(kernel: Any, args_for: Callable[[int], Sequence[Any]],
                        sizes: Sequence[int], threads_per_block: int = 256, *,
                        backend: Any = None, repeat: int | None = None,
                        **options: Any) -> TimingPlot:
    """Time `kernel[ceil(n / threads_per_block), threads_per_block](*args_for(n))` for each n in
    `sizes` with `gpukit.timing.time_kernel`, and plot time against the problem size."""
    if not callable(args_for):
        raise WidgetControlError(f"args_for must be a function of n returning the kernel's "
                                 f"arguments, got {type(args_for).__name__}")
    sizes = _counts("sizes", sizes)
    threads_per_block = as_int("threads_per_block", threads_per_block, 1)
    times = {n: time_kernel(kernel, ceil_div(n, threads_per_block), threads_per_block,
                            *args_for(n), backend=backend, repeat=repeat, **options)
             for n in sizes}
    return timing_plot(times, x="n", title=f"{_name(kernel)}: {threads_per_block} threads/block, "
                       "time against problem size")


def transfer_bandwidth(backend: Any = None, sizes: Iterable[int] | None = None,
                       directions: Sequence[str] = ("h2d", "d2h"), *,
                       repeat: int = 3) -> TimingPlot:
    """Run `gpukit.timing.bandwidth_sweep` for each direction, pinned and pageable, and plot it."""
    extra = {} if sizes is None else {"sizes": _counts("sizes", sizes)}
    if isinstance(directions, str) or not isinstance(directions, Iterable) or not all(
            isinstance(d, str) for d in directions):
        raise WidgetControlError(f"directions must be a sequence of 'h2d', 'd2h' or 'd2d', got "
                                 f"{directions!r}")
    rows = [row for direction in directions
            for row in bandwidth_sweep(backend, direction=direction, repeat=repeat, **extra)]
    return timing_plot(bandwidth=rows)


def _counts(name: str, values: Any) -> list[int]:
    """A non-empty sequence of ints >= 1 (block sizes, problem sizes)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise WidgetControlError(f"{name} must be a sequence of ints >= 1, got {values!r}")
    values = [as_int(f"each of {name}", v, 1) for v in values]
    if not values:
        raise WidgetControlError(f"{name} must not be empty")
    return values


def _name(kernel: Any) -> str:
    return getattr(kernel, "name", None) or getattr(kernel, "__name__", "kernel")
