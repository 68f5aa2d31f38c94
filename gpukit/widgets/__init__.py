"""Notebook widgets: launch geometry, occupancy, timings, device memory and the stream timeline.

Each widget is ipywidgets controls above a matplotlib figure and a text summary, with a
programmatic API (`.set(**values)`, `.summary`, `.figure`, `.widget`); displayed bare at the end
of a cell it shows itself, with the summary as its text/plain. Widgets only display: the numbers
come from gpukit's pure modules (occupancy, timing, devices, geometry, the backends).
"""

from __future__ import annotations

from ..geometry import LaunchGeometry, plan_launch
from ._base import GpukitWidget, WidgetControlError
from .launch import LaunchGeometryWidget, launch_geometry
from .monitors import MemoryMonitor, TimelineView, memory_monitor, timeline_view
from .occupancy import OccupancyExplorer, occupancy_explorer
from .timing import (
    TimingPlot,
    block_size_timing,
    problem_size_timing,
    timing_plot,
    transfer_bandwidth,
)

__all__ = [
    "GpukitWidget", "LaunchGeometry", "LaunchGeometryWidget", "MemoryMonitor", "OccupancyExplorer",
    "TimelineView", "TimingPlot", "WidgetControlError", "block_size_timing", "launch_geometry",
    "memory_monitor", "occupancy_explorer", "plan_launch", "problem_size_timing",
    "timeline_view", "timing_plot", "transfer_bandwidth",
]
