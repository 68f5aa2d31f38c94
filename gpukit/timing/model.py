"""The modeled GPU time of the simulator: a roofline per kernel launch, a link model per copy.

A kernel takes launch overhead + max(global bytes moved / memory bandwidth, flops / peak FP32);
a copy takes PCIe latency + size / effective link bandwidth (pinned faster than pageable), or,
device to device, size read and written / effective memory bandwidth. Every number comes from a
`DeviceProfile` and the constants of `gpukit.devices`. Nothing here is measured, and caches,
coalescing, occupancy and clocks are not modeled (see `gpukit.timing`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..devices import (
    DEVICE_COPY_EFFICIENCY,
    PAGEABLE_COPY_EFFICIENCY,
    PCIE_LATENCY_US,
    PINNED_COPY_EFFICIENCY,
    DeviceProfile,
)
from ..utils import as_choice, as_int, as_number

__all__ = ["COPY_DIRECTIONS", "DEVICE_COPY_EFFICIENCY", "PAGEABLE_EFFICIENCY",
           "PINNED_EFFICIENCY", "KernelModel", "model_kernel", "model_launch", "modeled_copy_ms"]

COPY_DIRECTIONS = ("h2d", "d2h", "d2d")
# The names these had when they lived in gpukit.backends.cpu.
PINNED_EFFICIENCY = PINNED_COPY_EFFICIENCY
PAGEABLE_EFFICIENCY = PAGEABLE_COPY_EFFICIENCY


@dataclass(frozen=True)
class KernelModel:
    """A kernel's modeled duration: launch overhead + max(memory time, compute time)."""

    ms: float
    launch_ms: float
    memory_ms: float
    compute_ms: float
    bytes_moved: int
    flops: float | None

    @property
    def bound(self) -> str:
        """"launch" (overhead dominates), "memory" or "compute": what limits the modeled time."""
        if self.launch_ms >= max(self.memory_ms, self.compute_ms):
            return "launch"
        return "memory" if self.memory_ms >= self.compute_ms else "compute"

    def describe(self) -> str:
        flops = ("flops not declared, compute not modeled" if self.flops is None
                 else f"{self.flops:,.0f} flops: {self.compute_ms:.4g} ms")
        return (f"{self.ms:.4g} ms modeled ({self.bound}-bound): launch {self.launch_ms:.4g} ms "
                f"+ max(memory {self.bytes_moved:,} B: {self.memory_ms:.4g} ms, {flops})")


def model_kernel(profile: DeviceProfile, bytes_moved: int, flops: float | None = None
                 ) -> KernelModel:
    """The roofline of one launch on `profile` from the global bytes it moved and its flops."""
    bytes_moved = as_int("bytes_moved", bytes_moved)
    if flops is not None:
        flops = as_number("flops", flops)
    launch_ms = profile.launch_overhead_us * 1e-3
    memory_ms = bytes_moved / (profile.memory_bandwidth_gb_s * 1e9) * 1e3
    compute_ms = 0.0 if flops is None else flops / (profile.fp32_tflops * 1e12) * 1e3
    return KernelModel(launch_ms + max(memory_ms, compute_ms), launch_ms, memory_ms, compute_ms,
                       int(bytes_moved), None if flops is None else float(flops))


def model_launch(profile: DeviceProfile, record: Any, flops: float | None = None) -> KernelModel:
    """The roofline of a simulated launch (a `LaunchRecord` with `stats`): its counted global
    bytes, and `flops` given here or declared at launch (`record.extra["flops"]`)."""
    if flops is None:
        flops = record.extra.get("flops")
    stats = record.stats
    return model_kernel(profile, stats.global_load_bytes + stats.global_store_bytes, flops)


def modeled_copy_ms(profile: DeviceProfile, direction: str, nbytes: int, pinned: bool) -> float:
    """A copy's modeled duration: link latency plus size over effective bandwidth."""
    as_choice("direction", direction, COPY_DIRECTIONS)
    nbytes = as_int("nbytes", nbytes)
    if direction == "d2d":
        return nbytes * 2 / (profile.memory_bandwidth_gb_s * DEVICE_COPY_EFFICIENCY * 1e9) * 1e3
    efficiency = PINNED_COPY_EFFICIENCY if pinned else PAGEABLE_COPY_EFFICIENCY
    seconds = nbytes / (profile.host_link_gb_s * efficiency * 1e9)
    return PCIE_LATENCY_US * 1e-3 + seconds * 1e3
