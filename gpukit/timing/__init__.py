"""Honest timing: CUDA events on GPUs, wall time plus a labelled model on the simulator.

Every result is a `Timing` whose `kind` says what it is: "cuda-events" (GPU time between CUDA
events), "wall" (the host's clock) or "modeled" (computed from the device profile, never
measured). `time_kernel`, `timer` and `launch_log` live in `gpukit.timing.timers`; the
simulator's kernel and copy model in `gpukit.timing.model` (its inputs in `.facts`, its terms in
`.terms`, their `Breakdown` in `.breakdown`); `bandwidth_sweep` in
`gpukit.timing.transfers`; matplotlib drawings in `gpukit.timing.plots`.
"""

from __future__ import annotations

from ..sim.streams import TimelineEvent
from .breakdown import Breakdown, Term
from .facts import LaunchFacts, launch_facts
from .model import KernelModel, model_kernel, model_launch, modeled_copy_ms
from .plots import plot_bandwidth, plot_timeline
from .timers import KINDS, LaunchLogEntry, Timer, Timing, launch_log, time_kernel, timer
from .transfers import BandwidthRow, bandwidth_sweep

__all__ = [
    "KINDS", "BandwidthRow", "Breakdown", "KernelModel", "LaunchFacts", "LaunchLogEntry", "Term",
    "TimelineEvent", "Timer", "Timing", "bandwidth_sweep", "launch_facts", "launch_log",
    "model_kernel", "model_launch", "modeled_copy_ms",
    "plot_bandwidth", "plot_timeline", "time_kernel", "timer",
]
