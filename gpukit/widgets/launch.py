"""The launch-geometry widget: blocks and threads laid over the data, idle threads marked.

Sliders for the data size and the block size; the picture, the index formulas and the counts come
from `gpukit.geometry.plan_launch`. It launches nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..devices import DeviceProfile, get_profile
from ..geometry import LaunchGeometry, plan_launch
from ..utils import as_int
from ._base import GpukitWidget, WidgetControlError, int_slider

__all__ = ["LaunchGeometryWidget", "launch_geometry"]

# Two alternating block colours, then idle.
_COLOURS = ListedColormap(["#8ecae6", "#ffb703", "#d9d9d9"])
_IDLE = 2
_ANNOTATE_CELLS = 256  # write into cells only while the text stays readable
_ANNOTATE_WIDTH = 16
MAX_DRAWN_THREADS = 1 << 20  # cells of the picture: one per thread launched


class LaunchGeometryWidget(GpukitWidget):
    """See `launch_geometry`."""

    kind = "launch_geometry"

    def __init__(self, n: int | tuple[int, int], threads_per_block: int | tuple[int, int],
                 device: str | DeviceProfile | None = None, max_n: int | None = None):
        self.device = get_profile(device).name
        first = plan_launch(n, threads_per_block, self.device)  # checks the arguments
        if first.threads > MAX_DRAWN_THREADS:
            raise WidgetControlError(
                f"launch_geometry draws one cell per thread: {first.launch} launches "
                f"{first.threads:,} threads, more than {MAX_DRAWN_THREADS:,}; plan bigger launches "
                "with gpukit.geometry.plan_launch")
        if max_n is not None:
            max_n = as_int("max_n", max_n, max(first.shape), MAX_DRAWN_THREADS)
        if first.ndim == 1:
            high = max_n or max(4096, first.shape[0])
            controls = {
                "n": int_slider("n (elements)", first.shape[0], 1, high),
                "threads_per_block": int_slider("threads_per_block", first.block[0], 1, 1024),
            }
        else:
            high = max_n or max(64, *first.shape)
            biggest_block = max(64, *first.block)
            controls = {
                "rows": int_slider("rows", first.shape[0], 1, high),
                "cols": int_slider("cols", first.shape[1], 1, high),
                "block_x": int_slider("block_x", first.block[0], 1, biggest_block),
                "block_y": int_slider("block_y", first.block[1], 1, biggest_block),
            }
        super().__init__(controls, figsize=(6.4, 4.0))
        self.update()

    @property
    def geometry(self) -> LaunchGeometry:
        """The launch the controls describe now."""
        v = self.values
        if "n" in v:
            return plan_launch(v["n"], v["threads_per_block"], self.device)
        return plan_launch((v["rows"], v["cols"]), (v["block_x"], v["block_y"]), self.device)

    def _check(self, name: str, value: Any) -> None:
        super()._check(name, value)  # type and slider range
        planned = {**self.values, name: value}
        geometry = (plan_launch(planned["n"], planned["threads_per_block"], self.device)
                    if "n" in planned else
                    plan_launch((planned["rows"], planned["cols"]),
                                (planned["block_x"], planned["block_y"]), self.device))
        if geometry.threads > MAX_DRAWN_THREADS:
            raise WidgetControlError(
                f"{self.kind}: {name}={value} makes {geometry.launch} launch "
                f"{geometry.threads:,} threads, more than the {MAX_DRAWN_THREADS:,} the picture "
                "can show")

    def _draw(self, figure: Figure) -> str:
        geo = self.geometry
        ax = figure.add_subplot()
        mask = geo.active_mask()
        if geo.ndim == 1:
            colour = np.broadcast_to((np.arange(geo.grid[0]) % 2)[:, None], mask.shape)
        else:
            by = np.arange(mask.shape[0])[:, None] // geo.block[1]
            bx = np.arange(mask.shape[1])[None, :] // geo.block[0]
            colour = (bx + by) % 2
        image = np.where(mask, colour, _IDLE)
        ax.imshow(image, cmap=_COLOURS, vmin=0, vmax=2, aspect="auto", interpolation="nearest")
        small = mask.size <= _ANNOTATE_CELLS and mask.shape[1] <= _ANNOTATE_WIDTH
        handles = [Patch(color=_COLOURS(0), label="thread with an element"),
                   Patch(color=_COLOURS(_IDLE), label="idle thread (outside the data)")]
        if geo.ndim == 1:
            self._decorate_1d(ax, geo, mask, small)
        else:
            self._decorate_2d(ax, geo, small)
            handles.append(Patch(fill=False, edgecolor="#d62828", linewidth=2, label="the data"))
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.16),
                  ncol=len(handles), fontsize=8, frameon=False)
        figure.subplots_adjust(bottom=0.25, top=0.92)
        return summarize(geo)

    @staticmethod
    def _decorate_1d(ax, geo: LaunchGeometry, mask: np.ndarray, small: bool) -> None:
        blocks, width = mask.shape
        ax.set_title(f"{geo.launch}: {blocks} block{'s' if blocks > 1 else ''} x {width} threads "
                     f"over n = {geo.shape[0]}", fontsize=10)
        ax.set_xlabel("cuda.threadIdx.x")
        ax.set_ylabel("cuda.blockIdx.x")
        for warp_edge in range(geo.warp_size, width, geo.warp_size):
            ax.axvline(warp_edge - 0.5, color="black", linewidth=0.8, linestyle=":")
        if small:
            for b in range(blocks):
                for t in range(width):
                    i = b * width + t
                    ax.text(t, b, str(i) if mask[b, t] else "x", ha="center", va="center",
                            fontsize=7, color="black" if mask[b, t] else "#777777")
        ax.set_yticks(range(blocks) if blocks <= 16 else ax.get_yticks()[1:-1])

    @staticmethod
    def _decorate_2d(ax, geo: LaunchGeometry, small: bool) -> None:
        (rows, cols), (bx, by), (gx, gy) = geo.shape, geo.block, geo.grid
        ax.set_title(f"{geo.launch} over a {rows} x {cols} array", fontsize=10)
        ax.set_xlabel("col = blockIdx.x * blockDim.x + threadIdx.x")
        ax.set_ylabel("row = blockIdx.y * blockDim.y + threadIdx.y")
        for x in range(1, gx):
            ax.axvline(x * bx - 0.5, color="black", linewidth=0.8)
        for y in range(1, gy):
            ax.axhline(y * by - 0.5, color="black", linewidth=0.8)
        ax.add_patch(Rectangle((-0.5, -0.5), cols, rows, fill=False, edgecolor="#d62828",
                               linewidth=2, label="the data"))
        if small:
            for r in range(gy * by):
                for c in range(gx * bx):
                    if r >= rows or c >= cols:
                        ax.text(c, r, "x", ha="center", va="center", fontsize=7, color="#777777")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summarize(geo: LaunchGeometry) -> str:
    """The widget's text: the launch, the counts, the formulas, a worked example."""
    lines = []
    if geo.ndim == 1:
        lines.append(f"1D launch {geo.launch} over n = {geo.shape[0]} elements")
        lines.append(f"{_plural(geo.blocks, 'block')} x {geo.threads_per_block} threads = "
                     f"{geo.threads} threads: {geo.active_threads} work, {geo.idle_threads} idle "
                     f"({geo.idle_fraction:.1%})")
    else:
        (rows, cols), (bx, by), (gx, gy) = geo.shape, geo.block, geo.grid
        lines.append(f"2D launch {geo.launch} over a {rows} x {cols} array (rows x cols)")
        lines.append(f"grid {gx} x {gy} = {_plural(geo.blocks, 'block')} of {bx} x {by} = "
                     f"{geo.threads_per_block} threads: {geo.threads} threads, "
                     f"{geo.active_threads} work, {geo.idle_threads} idle "
                     f"({geo.idle_fraction:.1%})")
    lines.extend(geo.formulas())
    last = geo.shape[0] - 1 if geo.ndim == 1 else (geo.shape[0] - 1, geo.shape[1] - 1)
    block, thread = geo.thread_of(last)
    if geo.ndim == 1:
        lines.append(f"last element i = {last}: block {block[0]}, thread {thread[0]}: "
                     f"{block[0]} * {geo.block[0]} + {thread[0]} = {last}")
    else:
        lines.append(f"last element [{last[0]}, {last[1]}]: block {block}, thread {thread}")
    if geo.lanes_in_last_warp != geo.warp_size:
        lines.append(f"{geo.threads_per_block} threads/block is not a multiple of the warp size "
                     f"({geo.warp_size}): each block's last warp runs {geo.lanes_in_last_warp} "
                     f"of {geo.warp_size} lanes")
    if not geo.valid:
        lines.append(f"cannot launch on the {geo.device}: {geo.reason}")
    return "\n".join(lines)


def launch_geometry(n: int | tuple[int, int] = 100, threads_per_block: int | tuple[int, int] = 32,
                    *, device: str | DeviceProfile | None = None,
                    max_n: int | None = None) -> LaunchGeometryWidget:
    """A widget showing how a grid of blocks of threads covers the data, one thread per element.

    1D: `launch_geometry(n=100, threads_per_block=32)`; sliders "n" and "threads_per_block".
    2D: `launch_geometry(n=(rows, cols), threads_per_block=(block_x, block_y))`; sliders "rows",
    "cols", "block_x", "block_y" (x runs along a row). `max_n` caps the size sliders; `device`
    (default T4) says which launches are valid. Idle threads (outside the data) are grey.
    """
    return LaunchGeometryWidget(n, threads_per_block, device, max_n)
