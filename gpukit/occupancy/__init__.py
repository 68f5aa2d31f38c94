"""Occupancy without a GPU: the calculator, its curves, and the resources of real kernels.

`occupancy(device, threads_per_block, ...)` is NVIDIA's occupancy calculator, exactly
(`gpukit.occupancy.calculator`); `occupancy_vs_block_size`, `..._registers`,
`..._shared_memory`, `calculator_curves` and `best_block_size` are its charts and block-size
search (`gpukit.occupancy.curves`). `gpukit.occupancy.resources` reads a compiled kernel's
registers and shared memory with ptxas (`gpukit.occupancy.ptxas`); it is imported on its own, as
it compiles kernels with numba-cuda. Pure functions: no GPU is needed or used.
"""

from __future__ import annotations

from .calculator import (
    FACTORS,
    DeviceLike,
    Occupancy,
    OccupancyInputError,
    OccupancyTypeError,
    occupancy,
    resolve_device,
)
from .curves import (
    Curve,
    best_block_size,
    calculator_curves,
    occupancy_vs_block_size,
    occupancy_vs_registers,
    occupancy_vs_shared_memory,
)

__all__ = [
    "FACTORS", "Curve", "DeviceLike", "Occupancy", "OccupancyInputError", "OccupancyTypeError",
    "best_block_size", "calculator_curves", "occupancy", "occupancy_vs_block_size",
    "occupancy_vs_registers", "occupancy_vs_shared_memory", "resolve_device",
]
