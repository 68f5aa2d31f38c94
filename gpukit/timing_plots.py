"""Old import path of the timing plots: see `gpukit.timing.plots`."""

from __future__ import annotations

from .timing.plots import (
    KIND_COLORS,
    plot_bandwidth,
    plot_timeline,
)

__all__ = ["KIND_COLORS", "plot_bandwidth", "plot_timeline"]
