"""The three charts of NVIDIA's occupancy calculator as data, and the best block size.

Occupancy against threads per block, registers per thread and shared memory per block (each a
`Curve` of `Occupancy` points, for widgets and notebooks to plot), and `best_block_size`, which
searches block sizes as `cudaOccupancyMaxPotentialBlockSize` does, including dynamic shared memory
that depends on the block size. Everything here is computed by `gpukit.occupancy.occupancy` (the
calculator, `gpukit.occupancy.calculator`); nothing is drawn here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..devices import ComputeCapability, DeviceProfile, profiles_with_cc
from ..utils import round_up
from .calculator import (
    DeviceLike,
    Occupancy,
    OccupancyInputError,
    OccupancyTypeError,
    check_int,
    occupancy,
    resolve_device,
)

__all__ = ["Curve", "best_block_size", "calculator_curves", "occupancy_vs_block_size",
           "occupancy_vs_registers", "occupancy_vs_shared_memory"]

SharedMemSpec = int | Callable[[int], int]

_LABELS = {"threads_per_block": "Threads per block", "regs_per_thread": "Registers per thread",
           "shared_mem_bytes": "Shared memory per block (bytes)"}


@dataclass(frozen=True)
class Curve:
    """Occupancy as one launch parameter varies; the others stay fixed.

    `parameter` is "threads_per_block", "regs_per_thread" or "shared_mem_bytes"; `points` the
    occupancy at each value; `current` the configuration asked about (to mark on a chart), if any.
    Iterating gives (x, Occupancy) pairs.
    """

    parameter: str
    points: tuple[Occupancy, ...]
    current: Occupancy | None = None

    @property
    def label(self) -> str:
        return _LABELS[self.parameter]

    @property
    def xs(self) -> tuple[int, ...]:
        return tuple(getattr(p, self.parameter) for p in self.points)

    @property
    def occupancies(self) -> tuple[float, ...]:
        return tuple(p.occupancy for p in self.points)

    @property
    def active_warps(self) -> tuple[int, ...]:
        return tuple(p.active_warps_per_sm for p in self.points)

    def best(self) -> Occupancy:
        """The first point with the highest occupancy."""
        return max(self.points, key=lambda p: p.occupancy)

    def __iter__(self) -> Iterator[tuple[int, Occupancy]]:
        return iter(zip(self.xs, self.points))

    def __len__(self) -> int:
        return len(self.points)


def _device_arg(device: DeviceLike) -> tuple[ComputeCapability, DeviceProfile | ComputeCapability]:
    cc, profile = resolve_device(device)
    return cc, (profile if profile is not None else cc)


def _values(name: str, values: Any, default: Iterable[int]) -> Iterable[int]:
    """The values a curve sweeps: `default`, or an iterable of ints (checked point by point)."""
    if values is None:
        return default
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise OccupancyTypeError(f"{name} must be an iterable of ints, got "
                                 f"{type(values).__name__} {values!r}")
    return values


def _smem_for(shared_mem_bytes: SharedMemSpec, threads_per_block: int) -> int:
    if callable(shared_mem_bytes):
        return check_int(f"shared_mem_bytes({threads_per_block})",
                         shared_mem_bytes(threads_per_block), 0)
    return shared_mem_bytes


def occupancy_vs_block_size(device: DeviceLike, regs_per_thread: int = 32,
                            shared_mem_bytes: SharedMemSpec = 0, *, carveout: int | None = None,
                            opt_in: bool = True, block_sizes: Iterable[int] | None = None,
                            current: int | None = None) -> Curve:
    """Occupancy for each block size (default: every multiple of the warp size up to 1024).

    `shared_mem_bytes` may be a function of the block size, as dynamic shared memory often is.
    """
    cc, dev = _device_arg(device)
    sizes = _values("block_sizes", block_sizes,
                    range(cc.warp_size, cc.max_threads_per_block + 1, cc.warp_size))
    points = tuple(occupancy(dev, b, regs_per_thread, _smem_for(shared_mem_bytes, b), carveout,
                             opt_in) for b in sizes)
    mark = None if current is None else occupancy(
        dev, current, regs_per_thread, _smem_for(shared_mem_bytes, current), carveout, opt_in)
    return Curve("threads_per_block", points, mark)


def occupancy_vs_registers(device: DeviceLike, threads_per_block: int,
                           shared_mem_bytes: int = 0, *, carveout: int | None = None,
                           opt_in: bool = True, registers: Iterable[int] | None = None,
                           current: int | None = None) -> Curve:
    """Occupancy for each register count per thread (default: 1 to 255)."""
    cc, dev = _device_arg(device)
    counts = _values("registers", registers, range(1, cc.max_registers_per_thread + 1))
    points = tuple(occupancy(dev, threads_per_block, r, shared_mem_bytes, carveout, opt_in)
                   for r in counts)
    mark = None if current is None else occupancy(dev, threads_per_block, current,
                                                  shared_mem_bytes, carveout, opt_in)
    return Curve("regs_per_thread", points, mark)


def occupancy_vs_shared_memory(device: DeviceLike, threads_per_block: int,
                               regs_per_thread: int = 32, *, carveout: int | None = None,
                               opt_in: bool = True, sizes: Iterable[int] | None = None,
                               current: int | None = None) -> Curve:
    """Occupancy for each shared-memory size per block (default: 0 to the per-block limit, in
    steps of the allocation unit)."""
    cc, dev = _device_arg(device)
    cap = cc.shared_mem_per_block_optin if opt_in else cc.shared_mem_per_block
    sizes = _values("sizes", sizes, range(0, cap + 1, cc.shared_mem_alloc_unit))
    points = tuple(occupancy(dev, threads_per_block, regs_per_thread, s, carveout, opt_in)
                   for s in sizes)
    mark = None if current is None else occupancy(dev, threads_per_block, regs_per_thread,
                                                  current, carveout, opt_in)
    return Curve("shared_mem_bytes", points, mark)


def calculator_curves(device: DeviceLike, threads_per_block: int, regs_per_thread: int = 32,
                      shared_mem_bytes: int = 0, carveout: int | None = None,
                      opt_in: bool = True) -> dict[str, Curve]:
    """The three charts of NVIDIA's calculator around one configuration, keyed by parameter."""
    common = {"carveout": carveout, "opt_in": opt_in}
    return {
        "threads_per_block": occupancy_vs_block_size(
            device, regs_per_thread, shared_mem_bytes, current=threads_per_block, **common),
        "regs_per_thread": occupancy_vs_registers(
            device, threads_per_block, shared_mem_bytes, current=regs_per_thread, **common),
        "shared_mem_bytes": occupancy_vs_shared_memory(
            device, threads_per_block, regs_per_thread, current=shared_mem_bytes, **common),
    }


def _sm_count(cc: ComputeCapability, profile: DeviceProfile | None, sm_count: int | None) -> int:
    if sm_count is not None:
        return check_int("sm_count", sm_count, 1)
    if profile is not None:
        return profile.sm_count
    counts = {p.sm_count for p in profiles_with_cc(cc.cc)}
    if len(counts) == 1:
        return counts.pop()
    known = ", ".join(f"{p.name}: {p.sm_count}" for p in profiles_with_cc(cc.cc)) or "none known"
    raise OccupancyInputError(
        f"compute capability {cc.name} does not say how many SMs the device has ({known}); "
        "pass sm_count= or a device profile name")


def best_block_size(device: DeviceLike, regs_per_thread: int = 32,
                    shared_mem_bytes: SharedMemSpec = 0, max_block_size: int = 0, *,
                    carveout: int | None = None, opt_in: bool = True,
                    sm_count: int | None = None) -> tuple[int, int]:
    """(min_grid_size, block_size) as cudaOccupancyMaxPotentialBlockSize suggests them.

    Block sizes are tried from the largest allowed (`max_block_size`, 0 for the device's limit)
    down in steps of the warp size; the first one that reaches the most active threads per SM
    wins. `shared_mem_bytes` (per block, static plus dynamic) may be a function of the block size,
    as in cudaOccupancyMaxPotentialBlockSizeVariableSMem. `min_grid_size` is the number of blocks
    that fills every SM (`sm_count`, by default the profile's). (0, 0) means no block size can run.
    """
    cc, profile = resolve_device(device)
    dev = profile if profile is not None else cc
    max_block_size = check_int("max_block_size", max_block_size, 0)
    n_sms = _sm_count(cc, profile, sm_count)
    limit = (cc.max_threads_per_block if max_block_size == 0
             else min(max_block_size, cc.max_threads_per_block))
    best_threads = best_size = best_blocks = 0
    for aligned in range(round_up(limit, cc.warp_size), 0, -cc.warp_size):
        size = min(limit, aligned)
        result = occupancy(dev, size, regs_per_thread, _smem_for(shared_mem_bytes, size),
                           carveout, opt_in)
        threads = size * result.active_blocks_per_sm
        if threads > best_threads:
            best_threads, best_size, best_blocks = threads, size, result.active_blocks_per_sm
        if best_threads == cc.max_threads_per_sm:
            break
    return best_blocks * n_sms, best_size
