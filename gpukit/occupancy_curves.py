"""Old import path of the occupancy calculator's curves: see `gpukit.occupancy.curves`."""

from __future__ import annotations

from .occupancy.curves import (
    Curve,
    best_block_size,
    calculator_curves,
    occupancy_vs_block_size,
    occupancy_vs_registers,
    occupancy_vs_shared_memory,
)

__all__ = ["Curve", "best_block_size", "calculator_curves", "occupancy_vs_block_size",
           "occupancy_vs_registers", "occupancy_vs_shared_memory"]
