"""Host/device transfer bandwidth: `bandwidth_sweep` over sizes, pinned against pageable memory.

On a GPU every row is CUDA-event timed copies (kind "cuda-events"). On the simulator each size
gets two rows: the real copy on this CPU (kind "wall": it shows what a memcpy costs here, not what
PCIe does) and the modeled host link of the device profile (kind "modeled": PCIe latency plus size
over the generation's effective bandwidth, pageable slower than pinned). The sweep's copies are
real copies: they appear in `backend.transfers` and on the simulator's timeline. Backends time
their own copies (`Backend.time_copies`); the model is `gpukit.timing.model.modeled_copy_ms`.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends import current_backend
from ..backends.base import Backend
from ..errors import ArgumentTypeError, InvalidArgumentError
from ..utils import as_choice, as_int
from .model import COPY_DIRECTIONS, modeled_copy_ms

__all__ = ["DEFAULT_SIZES", "DIRECTIONS", "MAX_REPEAT", "MAX_SWEEP_BYTES", "BandwidthRow", "bandwidth_sweep"]

DIRECTIONS = COPY_DIRECTIONS
DEFAULT_SIZES = tuple(1024 * 4**k for k in range(9))  # 1 KiB to 64 MiB
MAX_SWEEP_BYTES = 1 << 30  # copies are real: a sweep's largest copy stays at 1 GiB
MAX_REPEAT = 10_000


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


def _check(sizes: Any, direction: Any, pinned: Any, repeat: Any
           ) -> tuple[list[int], list[bool | None], int]:
    as_choice("direction", direction, DIRECTIONS)
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Iterable):
        raise ArgumentTypeError(f"sizes must be positive ints of bytes, got {sizes!r}")
    sizes = list(sizes)
    if not sizes or any(isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer))
                        or not 0 < s <= MAX_SWEEP_BYTES for s in sizes):
        raise InvalidArgumentError(
            f"sizes must be positive ints of bytes, at most {MAX_SWEEP_BYTES:,} (1 GiB), got "
            f"{sizes!r}")
    repeat = as_int("repeat", repeat, 1, MAX_REPEAT)
    if isinstance(pinned, (str, bytes)) or not isinstance(pinned, (bool, Iterable)):
        raise ArgumentTypeError(f"pinned must be True, False or a sequence of them, got "
                                f"{pinned!r}")
    modes = [pinned] if isinstance(pinned, bool) else list(pinned)
    if not modes or not all(isinstance(m, bool) for m in modes):
        raise InvalidArgumentError(
            f"pinned must be True, False or a sequence of them, got {pinned!r}")
    if direction == "d2d":
        modes = [None]
    return [int(s) for s in sizes], modes, repeat


def bandwidth_sweep(backend: Any = None, sizes: Iterable[int] = DEFAULT_SIZES,
                    direction: str = "h2d", pinned: bool | Iterable[bool] = (False, True), *,
                    repeat: int = 3) -> list[BandwidthRow]:
    """Copy each size `repeat` times in `direction` ("h2d", "d2h", "d2d") from/to pinned and/or
    pageable host memory; one row per size, memory kind and timing kind (median of the repeats).

    On the simulator: a "wall" row (this CPU) and a "modeled" row (the profile's link) per size.
    On a GPU: a "cuda-events" row per size. Sizes are at most 1 GiB (the copies are real).
    """
    be = backend if backend is not None else current_backend()
    if not isinstance(be, Backend):
        raise ArgumentTypeError(f"backend must be a gpukit backend (gpukit.get_backend()), got "
                                f"{type(be).__name__}")
    sizes, modes, repeat = _check(sizes, direction, pinned, repeat)
    rows = []
    for mode in modes:
        for size in sizes:
            kind, samples = be.time_copies(direction, size, bool(mode), repeat)
            rows.append(_row(size, statistics.median(samples), direction, mode, kind))
            if be.is_simulated:
                model = modeled_copy_ms(be.profile, direction, size, bool(mode))
                rows.append(_row(size, model, direction, mode, "modeled"))
    return rows
