"""Host/device transfer bandwidth: `bandwidth_sweep` over sizes, pinned against pageable memory.

On a GPU every row is CUDA-event timed copies (kind "cuda-events"). On the simulator each size
gets two rows: the real copy on this CPU (kind "wall": it shows what a memcpy costs here, not what
PCIe does) and the modeled host link of the device profile (kind "modeled": PCIe latency plus size
over the generation's effective bandwidth, pageable slower than pinned). The sweep's copies are
real copies: they appear in `backend.transfers` and on the simulator's timeline.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backends import _cuda_streams as cuda_streams
from .backends.cpu import modeled_copy_ms

DIRECTIONS = ("h2d", "d2h", "d2d")
DEFAULT_SIZES = tuple(1024 * 4**k for k in range(9))  # 1 KiB to 64 MiB


@dataclass(frozen=True)
class BandwidthRow:
    """One copy size: median milliseconds and GB/s (10^9 bytes per second) of one kind."""

    size_bytes: int
    ms: float
    gb_per_s: float
    direction: str
    pinned: bool | None  # None for device-to-device copies, which touch no host memory
    kind: str

    def __str__(self) -> str:
        memory = {True: "pinned", False: "pageable", None: "device"}[self.pinned]
        return (f"{self.direction} {self.size_bytes:>12,} B {memory:>8}: {self.ms:10.4f} ms "
                f"{self.gb_per_s:8.2f} GB/s ({self.kind})")


def _row(size: int, ms: float, direction: str, pinned: bool | None, kind: str) -> BandwidthRow:
    gb_per_s = size / (ms * 1e-3) / 1e9 if ms > 0 else float("inf")
    return BandwidthRow(size, ms, gb_per_s, direction, pinned, kind)


def _check(sizes: Iterable[int], direction: str, pinned: Any, repeat: int
           ) -> tuple[list[int], list[bool | None]]:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    sizes = list(sizes)
    if not sizes or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s <= 0
                        for s in sizes):
        raise ValueError(f"sizes must be positive ints of bytes, got {sizes!r}")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an int >= 1, got {repeat!r}")
    modes = [pinned] if isinstance(pinned, bool) else list(pinned)
    if not modes or not all(isinstance(m, bool) for m in modes):
        raise ValueError(f"pinned must be True, False or a sequence of them, got {pinned!r}")
    if direction == "d2d":
        modes = [None]
    return [int(s) for s in sizes], modes


def _sim_copy_ms(backend: Any, direction: str, size: int, pinned: bool | None) -> float:
    """The wall time of one real copy through the simulator's API (allocations not timed)."""
    device = backend.to_device(np.ones(size, np.uint8))
    try:
        if direction == "h2d":
            host = backend.pinned_array(size, "uint8") if pinned else np.ones(size, np.uint8)
            start = time.perf_counter()
            backend.copy_to_device(host, device)
        elif direction == "d2h":
            host = backend.pinned_array(size, "uint8") if pinned else np.ones(size, np.uint8)
            start = time.perf_counter()
            backend.to_host(device, out=host)
        else:
            target = backend.allocate(size, "uint8")
            start = time.perf_counter()
            target.copy_to_device(device)
            backend.free(target)
        return (time.perf_counter() - start) * 1e3
    finally:
        backend.free(device)


def bandwidth_sweep(backend: Any = None, sizes: Iterable[int] = DEFAULT_SIZES,
                    direction: str = "h2d", pinned: bool | Iterable[bool] = (False, True), *,
                    repeat: int = 3) -> list[BandwidthRow]:
    """Copy each size `repeat` times in `direction` ("h2d", "d2h", "d2d") from/to pinned and/or
    pageable host memory; one row per size, memory kind and timing kind (median of the repeats).

    On the simulator: a "wall" row (this CPU) and a "modeled" row (the profile's link) per size.
    """
    from .backends import current_backend
    be = backend if backend is not None else current_backend()
    sizes, modes = _check(sizes, direction, pinned, repeat)
    rows = []
    simulated = hasattr(be, "_timeline") and hasattr(be, "profile")
    is_cuda = getattr(be, "name", None) == "cuda" and hasattr(be, "simulator")
    if not (simulated or is_cuda):
        raise TypeError(f"bandwidth_sweep supports gpukit's simulator and CUDA backends, not "
                        f"{type(be).__name__}")
    for mode in modes:
        for size in sizes:
            if simulated:
                _sim_copy_ms(be, direction, size, mode)  # warm-up: first-touch page faults
                wall = [_sim_copy_ms(be, direction, size, mode) for _ in range(repeat)]
                rows.append(_row(size, statistics.median(wall), direction, mode, "wall"))
                model = modeled_copy_ms(be.profile, direction, size, bool(mode))
                rows.append(_row(size, model, direction, mode, "modeled"))
            else:
                samples = cuda_streams.timed_copy_ms(be, direction, size, bool(mode), repeat)
                rows.append(_row(size, statistics.median(samples), direction, mode,
                                 cuda_streams.event_kind(be)))
    return rows
