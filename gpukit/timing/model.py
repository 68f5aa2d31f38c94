"""The modeled GPU time of the simulator: an analytical model per launch, a link model per copy.

`model_launch` models a simulated launch from what the simulator saw (`gpukit.timing.facts`):
sectors touched (coalescing) and their reuse in L2, shared-memory wavefronts (bank conflicts),
occupancy and the latency it hides (Little's law), waves and the grid's tail, atomic throughput
and same-address serialisation, barriers, declared flops and launch overhead
(`gpukit.timing.terms`); `KernelModel.breakdown` shows every term and which one binds.
`model_kernel` is the bare roofline of a byte count (no launch to look at). A copy takes PCIe
latency + size / effective link bandwidth (pinned faster than pageable), or, device to device,
size read and written / effective memory bandwidth. Every number comes from a `DeviceProfile`
and the constants of `gpukit.devices`. Nothing here is measured.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..devices import (
    DEVICE_COPY_EFFICIENCY,
    PAGEABLE_COPY_EFFICIENCY,
    PCIE_LATENCY_US,
    PINNED_COPY_EFFICIENCY,
    DeviceProfile,
)
from ..occupancy import occupancy as occupancy_of
from ..occupancy.resources import DEFAULT_REGS_PER_THREAD
from ..utils import as_choice, as_int, as_number
from .breakdown import Breakdown
from .facts import LaunchFacts, launch_facts
from .terms import kernel_terms

__all__ = ["COPY_DIRECTIONS", "DEVICE_COPY_EFFICIENCY", "PAGEABLE_EFFICIENCY",
           "PINNED_EFFICIENCY", "KernelModel", "model_kernel", "model_launch", "modeled_copy_ms"]

COPY_DIRECTIONS = ("h2d", "d2h", "d2d")
# The names these had when they lived in gpukit.backends.cpu.
PINNED_EFFICIENCY = PINNED_COPY_EFFICIENCY
PAGEABLE_EFFICIENCY = PAGEABLE_COPY_EFFICIENCY


@dataclass(frozen=True)
class KernelModel:
    """A kernel's modeled duration. `breakdown` (launches only; None for the bare roofline of
    `model_kernel`) lists every term, which one binds (`breakdown.binding`) and by how much."""

    ms: float
    launch_ms: float
    memory_ms: float
    compute_ms: float
    bytes_moved: int
    flops: float | None
    breakdown: Breakdown | None = None

    @property
    def bound(self) -> str:
        """"launch" (overhead dominates), "memory" or "compute" (the bare roofline), or, for a
        launch, the binding term of `breakdown` ("dram", "l2", "latency", "shared", ...)."""
        if self.breakdown is not None:
            limit = self.breakdown.ms(self.breakdown.binding)
            return "launch" if self.launch_ms >= limit else self.breakdown.binding
        if self.launch_ms >= max(self.memory_ms, self.compute_ms):
            return "launch"
        return "memory" if self.memory_ms >= self.compute_ms else "compute"

    def describe(self) -> str:
        if self.breakdown is not None:
            b = self.breakdown
            margin = "" if b.margin == float("inf") else f", {b.margin:.2f}x the next limit"
            return (f"{self.ms:.4g} ms modeled ({self.bound}-bound{margin}): launch "
                    f"{self.launch_ms:.4g} ms + memory {self.memory_ms:.4g} ms "
                    f"({b.facts['sectors_per_request']:.1f} sectors/request; "
                    f"{'observed' if b.facts['observed'] else 'assumed coalesced, not traced'}), "
                    f"see .breakdown")
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


@functools.lru_cache(maxsize=256)
def _default_occupancy(profile: DeviceProfile, threads: int, shared_bytes: int) -> Any:
    """The calculator's occupancy with default registers (cached: launches repeat shapes)."""
    return occupancy_of(profile, threads, DEFAULT_REGS_PER_THREAD, shared_bytes)


def model_launch(profile: DeviceProfile, record: Any, flops: float | None = None) -> KernelModel:
    """The analytical model of a simulated launch (a `LaunchRecord` with `stats`) on `profile`.

    Exact sectors, wavefronts and atomic contention where the launch was traced, assumed ideal
    otherwise (`breakdown.facts["observed"]`). Occupancy: the launch's own (`record.occupancy`,
    from ptxas) where it was already computed, else the calculator with 32 registers per thread
    and the launch's shared memory. `flops` given here or declared at launch feed the compute term.
    """
    if flops is None:
        flops = record.extra.get("flops")
    if flops is not None:
        flops = as_number("flops", flops)
    facts = launch_facts(record)
    occ = record.extra.get("occupancy")
    if occ is None or getattr(occ, "device", profile.name) != profile.name:
        occ = _default_occupancy(profile, facts.threads_per_block, facts.shared_bytes_per_block)
    return _model(profile, facts, occ.active_blocks_per_sm, occ.occupancy,
                  None if flops is None else float(flops))


@functools.lru_cache(maxsize=1024)
def _model(profile: DeviceProfile, facts: LaunchFacts, active_blocks_per_sm: int,
           occupancy: float, flops: float | None) -> KernelModel:
    """The model of given facts (cached: a loop of launches repeats the same facts; the
    result is shared between their records, so it is not to be changed)."""
    breakdown = kernel_terms(profile, facts, active_blocks_per_sm, flops)
    breakdown.facts["occupancy"] = occupancy
    limit = max(t.ms for t in breakdown.terms if t.overlaps or t.role == "sum")
    added = sum(t.ms for t in breakdown.terms if t.role == "added")
    launch_ms = breakdown.ms("launch")
    return KernelModel(added + limit, launch_ms, breakdown.ms("memory"),
                       breakdown.ms("compute"), facts.global_bytes, flops, breakdown)


def modeled_copy_ms(profile: DeviceProfile, direction: str, nbytes: int, pinned: bool) -> float:
    """A copy's modeled duration: link latency plus size over effective bandwidth."""
    as_choice("direction", direction, COPY_DIRECTIONS)
    nbytes = as_int("nbytes", nbytes)
    if direction == "d2d":
        return nbytes * 2 / (profile.memory_bandwidth_gb_s * DEVICE_COPY_EFFICIENCY * 1e9) * 1e3
    efficiency = PINNED_COPY_EFFICIENCY if pinned else PAGEABLE_COPY_EFFICIENCY
    seconds = nbytes / (profile.host_link_gb_s * efficiency * 1e9)
    return PCIE_LATENCY_US * 1e-3 + seconds * 1e3
