"""Old import path of bandwidth sweeps: see `gpukit.timing.transfers`."""

from __future__ import annotations

from .timing.transfers import (
    DEFAULT_SIZES,
    DIRECTIONS,
    MAX_REPEAT,
    MAX_SWEEP_BYTES,
    BandwidthRow,
    bandwidth_sweep,
)

__all__ = ["DEFAULT_SIZES", "DIRECTIONS", "MAX_REPEAT", "MAX_SWEEP_BYTES", "BandwidthRow",
           "bandwidth_sweep"]
