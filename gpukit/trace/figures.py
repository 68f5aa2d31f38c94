"""Matplotlib helpers shared by the trace's drawings and `gpukit.exercises.show`: a colour per
thread and per warp, rectangles as vertices for one PolyCollection, and a Figure built without
pyplot that still shows in Jupyter. matplotlib loads when one of them is called, not on import.
"""

from __future__ import annotations

import colorsys
import io
from typing import Any

import numpy as np

from .recorder import TraceInputError, xyz

MAX_BLOCK_THREADS = 1024  # threads of one block (every GPU's limit)


def thread_colors(block: Any) -> np.ndarray:
    """One distinct RGBA colour per thread of a block of dimensions `block` (linear order).

    Up to 20 threads: tab10/tab20. More: hue follows threadIdx.x and brightness threadIdx.y
    (and z), so a block's pattern of access stays visible; 1-D blocks alternate brightness
    between neighbours.
    """
    import matplotlib  # lazy: matplotlib loads only for drawings

    bx, by, bz = xyz(block, "block")
    if min(bx, by, bz) < 1 or bx * by * bz > MAX_BLOCK_THREADS:
        raise TraceInputError(f"block dimensions must be >= 1 with at most "
                              f"{MAX_BLOCK_THREADS} threads in all, got {block!r}")
    n = bx * by * bz
    if n <= 20:
        cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
        return np.array([cmap(i) for i in range(n)])
    t = np.arange(n)
    x, rows = t % bx, t // bx
    out = np.ones((n, 4))
    for i in range(n):
        if rows[-1] == 0:  # 1-D
            hue, value = 0.8 * i / n, (1.0, 0.72)[i % 2]
        else:
            hue, value = 0.8 * x[i] / bx, 0.35 + 0.65 * rows[i] / rows[-1]
        out[i, :3] = colorsys.hsv_to_rgb(hue, 0.85, value)
    return out


def warp_colors(warps: int) -> np.ndarray:
    """One RGBA colour per warp of a block: tab10 up to 10 warps, hues around the wheel beyond."""
    import matplotlib  # lazy: matplotlib loads only for drawings

    if warps <= 10:
        cmap = matplotlib.colormaps["tab10"]
        return np.array([cmap(i) for i in range(warps)])
    out = np.ones((warps, 4))
    for w in range(warps):
        out[w, :3] = colorsys.hsv_to_rgb(0.85 * w / warps, 0.8, (0.9, 0.65)[w % 2])
    return out


def rectangles(x: Any, y: Any, w: Any, h: Any) -> np.ndarray:
    """Vertices (n, 4, 2) of axis-aligned rectangles: drawn as one PolyCollection, fast."""
    x, y, w, h = np.broadcast_arrays(*(np.asarray(v, float) for v in (x, y, w, h)))
    return np.stack([np.stack([x, y], -1), np.stack([x + w, y], -1),
                     np.stack([x + w, y + h], -1), np.stack([x, y + h], -1)], 1)


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=72)  # small enough to store in notebooks
    return buffer.getvalue()


def new_figure(size: tuple[float, float], **kwargs: Any) -> Any:
    """A matplotlib Figure of `size` inches that Jupyter shows as a PNG."""
    from matplotlib.figure import Figure  # lazy: matplotlib loads only for drawings

    fig = Figure(figsize=size, **kwargs)
    # Built without pyplot, so Jupyter would show only its text until pyplot is loaded: give it
    # its own PNG representation.
    fig._repr_png_ = lambda: _png(fig)
    return fig
