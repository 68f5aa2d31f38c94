"""Theoretical occupancy, computed exactly as NVIDIA's occupancy calculator does.

`occupancy(device, threads_per_block, ...)` returns what
`cudaOccupancyMaxActiveBlocksPerMultiprocessor` returns, quirks included (per-partition register
flooring, the CC 6.0 GP10x re-check, the 1 KiB shared-memory reserve on CC >= 8.0, carveout
rounding and override). The rules are those of the CUDA toolkit's `cuda_occupancy.h`; the
numbers come from `gpukit.devices`. The three charts of NVIDIA's calculator and `best_block_size`
live in `gpukit.occupancy.curves`. Pure functions: no GPU, no numba. Achieved occupancy (what a
profiler measures) is not modelled.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

from ..devices import (
    COMPUTE_CAPABILITIES,
    PROFILES,
    ComputeCapability,
    DeviceProfile,
    UnknownDeviceError,
    get_compute_capability,
    get_profile,
)
from ..errors import GpukitError
from ..utils import ceil_div, round_up

__all__ = ["FACTORS", "DeviceLike", "Occupancy", "OccupancyInputError", "OccupancyTypeError",
           "check_int", "occupancy", "resolve_device"]

# The limiting factors, in the order ties are broken.
FACTORS = ("warps", "registers", "shared_memory", "blocks")
_FACTOR_TEXT = {"warps": "warps", "registers": "registers", "shared_memory": "shared memory",
                "blocks": "blocks per SM"}

DeviceLike = str | DeviceProfile | ComputeCapability | tuple | float


class OccupancyInputError(GpukitError, ValueError):
    """An occupancy question was asked with an impossible value (a negative size, ...)."""


class OccupancyTypeError(OccupancyInputError, TypeError):
    """An occupancy question was asked with a value of the wrong type (a float block size, ...)."""


def resolve_device(device: DeviceLike) -> tuple[ComputeCapability, DeviceProfile | None]:
    """The compute capability limits (and the profile, if one was named) of `device`.

    `device` is a profile name ("A100", "t4"), a `DeviceProfile`, a `ComputeCapability`, or a
    compute capability ("8.0", "sm_80", (8, 0), 8.0). Names are tried as profiles first.
    """
    if isinstance(device, DeviceProfile):
        return device.cc, device
    if isinstance(device, ComputeCapability):
        return device, None
    if isinstance(device, str):
        try:
            profile = get_profile(device)
            return profile.cc, profile
        except UnknownDeviceError:
            pass
        try:
            return get_compute_capability(device), None
        except UnknownDeviceError:
            ccs = ", ".join(c.name for c in COMPUTE_CAPABILITIES.values())
            raise UnknownDeviceError(
                f"unknown device {device!r}: not a profile ({', '.join(PROFILES)}) nor a compute "
                f"capability ({ccs})") from None
    if isinstance(device, (tuple, float)) and not isinstance(device, bool):
        return get_compute_capability(device), None
    raise OccupancyTypeError(
        "device must be a profile name, a DeviceProfile, a ComputeCapability or a compute "
        f"capability such as '8.0' or (8, 0), not {type(device).__name__}")


def check_int(name: str, value: Any, minimum: int) -> int:
    """`value` as an int >= `minimum`; raises OccupancyTypeError / OccupancyInputError naming
    `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OccupancyTypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        what = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise OccupancyInputError(f"{name} must be {what}, got {value}")
    return int(value)


def _carveout_arg(carveout: Any) -> int | None:
    if carveout is None:
        return None
    carveout = check_int("carveout", carveout, 0)
    if carveout > 100:
        raise OccupancyInputError(
            f"carveout is a percentage of the SM's shared memory, 0..100 (or None for the "
            f"default), got {carveout}")
    return carveout


def _kib(n_bytes: int) -> str:
    return f"{n_bytes // 1024} KiB" if n_bytes % 1024 == 0 else f"{n_bytes} B"


@dataclass(frozen=True)
class Occupancy:
    """The theoretical occupancy of one launch configuration on one SM, with its breakdown.

    `block_limits` maps each factor of `FACTORS` to the blocks per SM it allows (None: no limit, as
    for a kernel without registers or, before CC 8.0, without shared memory). `registers_per_block`
    and `shared_mem_per_block` are what the hardware allocates (rounded up to its granularity, the
    1 KiB reserve included on CC >= 8.0); `shared_mem_per_sm` is the shared-memory capacity the
    driver configures for this launch (the carveout). `valid` is False when not even one block can
    run; `reason` then says why.
    """

    device: str
    compute_capability: tuple[int, int]
    threads_per_block: int
    regs_per_thread: int
    shared_mem_bytes: int
    carveout: int | None
    opt_in: bool
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    warps_per_block: int
    occupancy: float
    limiting_factor: str
    limiting_factors: tuple[str, ...]
    block_limits: dict[str, int | None] = field(hash=False)
    registers_per_block: int
    shared_mem_per_block: int
    shared_mem_per_sm: int
    valid: bool
    reason: str | None = None

    @property
    def active_threads_per_sm(self) -> int:
        return self.active_blocks_per_sm * self.threads_per_block

    def percent(self) -> str:
        """The occupancy as "75%" (or "66.7%" when it is not a whole percent)."""
        value = round(self.occupancy * 100, 1)
        return f"{value:.0f}%" if value == int(value) else f"{value:.1f}%"

    def summary(self) -> str:
        """One line, such as "75% occupancy (48/64 warps), 12 blocks/SM, limited by registers"."""
        if not self.valid:
            return f"0% occupancy: cannot launch, {self.reason}"
        factors = " and ".join(_FACTOR_TEXT[f] for f in self.limiting_factors)
        blocks = self.active_blocks_per_sm
        return (f"{self.percent()} occupancy ({self.active_warps_per_sm}/{self.max_warps_per_sm} "
                f"warps), {blocks} block{'s' if blocks > 1 else ''}/SM, limited by {factors}")

    def describe(self) -> str:
        """A few lines: the question, the answer, the limit of every factor, the allocations."""
        cc = "{}.{}".format(*self.compute_capability)
        where = self.device if self.device.startswith("CC ") else f"{self.device} (CC {cc})"
        carveout = "default" if self.carveout is None else f"{self.carveout}%"
        limits = ", ".join(f"{_FACTOR_TEXT[f]} {'no limit' if v is None else v}"
                           for f, v in self.block_limits.items())
        question = (f"{where}: {self.threads_per_block} threads/block, {self.regs_per_thread} "
                    f"registers/thread, {self.shared_mem_bytes} B shared memory/block (carveout "
                    f"{carveout}, opt-in {'on' if self.opt_in else 'off'})")
        allocated = (f"  allocated per block: {self.registers_per_block} registers, "
                     f"{self.shared_mem_per_block} B shared memory (SM configured for "
                     f"{_kib(self.shared_mem_per_sm)})")
        return "\n".join([question, f"  {self.summary()}", f"  blocks/SM allowed by: {limits}",
                          allocated])

    def __str__(self) -> str:
        return self.summary()


def _register_limit(cc: ComputeCapability, regs: int, warps_per_block: int,
                    partitions: int) -> tuple[int | None, int, str | None]:
    """(blocks allowed, registers allocated per block, why 0) with `partitions` sub-partitions."""
    per_warp = round_up(regs * cc.warp_size, cc.register_alloc_unit)
    per_block = per_warp * warps_per_block
    # The hardware launch check assumes the block takes registers from every sub-partition at once.
    assumed = per_warp * round_up(warps_per_block, partitions)
    if regs > cc.max_registers_per_thread:
        return 0, per_block, (f"{regs} registers per thread exceeds the limit of "
                              f"{cc.max_registers_per_thread}")
    if per_block > cc.registers_per_block:
        return 0, per_block, (f"the block needs {per_block} registers ({warps_per_block} warps x "
                              f"{per_warp}) but a block can have at most {cc.registers_per_block}")
    if assumed > cc.registers_per_block:
        return 0, per_block, (
            f"the block needs {assumed} registers as the hardware counts them ({warps_per_block} "
            f"warps rounded up to a multiple of {partitions} sub-partitions, x {per_warp}) but a "
            f"block can have at most {cc.registers_per_block}")
    if per_warp == 0:
        return None, 0, None
    warps_per_partition = (cc.registers_per_sm // partitions) // per_warp
    return warps_per_partition * partitions // warps_per_block, per_block, None


def _capacity_at_least(cc: ComputeCapability, n_bytes: int) -> int:
    """The smallest selectable shared-memory capacity (carveout) of at least `n_bytes`."""
    return min(k * 1024 for k in cc.carveout_kib if k * 1024 >= n_bytes)


def _shared_memory_limit(cc: ComputeCapability, smem: int, carveout: int | None,
                         opt_in: bool) -> tuple[int | None, int, int, str | None]:
    """(blocks allowed, bytes allocated per block, SM capacity configured, why 0)."""
    reserved = cc.shared_mem_reserved_per_block
    allocated = round_up(smem + reserved, cc.shared_mem_alloc_unit)
    cap = (cc.shared_mem_per_block_optin if opt_in else cc.shared_mem_per_block) + reserved
    if cc.carveout_kib is None:  # dedicated shared memory before Volta: the carveout is ignored
        capacity = cc.shared_mem_per_sm
    else:
        preference = (cc.shared_mem_per_sm if carveout is None
                      else carveout * cc.shared_mem_per_sm // 100)
        capacity = _capacity_at_least(cc, preference)
    if allocated > cap:
        reason = (f"the block needs {allocated} B of shared memory ({smem} B asked"
                  + (f" + {reserved} B reserved" if reserved else "")
                  + f", rounded up to {cc.shared_mem_alloc_unit} B) but a block can have at most "
                  f"{cap - reserved} B" + (f" plus the {reserved} B reserve" if reserved else ""))
        if not opt_in and allocated <= cc.shared_mem_per_block_optin + reserved:
            reason += (f"; with opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize) up to "
                       f"{cc.shared_mem_per_block_optin} B")
        return 0, allocated, capacity, reason
    if cc.carveout_kib is not None and capacity < allocated:
        # The carveout is only a preference: the driver picks a capacity that fits one block.
        capacity = _capacity_at_least(cc, allocated)
    return (None if allocated == 0 else capacity // allocated), allocated, capacity, None


def occupancy(device: DeviceLike, threads_per_block: int, regs_per_thread: int = 32,
              shared_mem_bytes: int = 0, carveout: int | None = None,
              opt_in: bool = True) -> Occupancy:
    """The theoretical occupancy of blocks of `threads_per_block` threads on one SM of `device`.

    `regs_per_thread` as ptxas reports it; `shared_mem_bytes` per block, static plus dynamic;
    `carveout` the preferred shared-memory share of the SM in percent (None: the default, the
    maximum), a hint that the driver overrides when one block would not fit; `opt_in` whether the
    kernel raised cudaFuncAttributeMaxDynamicSharedMemorySize (otherwise a block is capped at
    48 KiB). Equals cudaOccupancyMaxActiveBlocksPerMultiprocessor. A launch that cannot run gives
    `valid=False`, 0 blocks and a `reason`; impossible inputs raise `OccupancyInputError`.
    """
    cc, profile = resolve_device(device)
    threads_per_block = check_int("threads_per_block", threads_per_block, 1)
    regs_per_thread = check_int("regs_per_thread", regs_per_thread, 0)
    shared_mem_bytes = check_int("shared_mem_bytes", shared_mem_bytes, 0)
    carveout = _carveout_arg(carveout)
    if not isinstance(opt_in, bool):
        raise OccupancyTypeError(f"opt_in must be True or False, got {opt_in!r}")

    reasons = []
    warps_per_block = ceil_div(threads_per_block, cc.warp_size)
    if threads_per_block > cc.max_threads_per_block:
        warp_limit = 0
        reasons.append(f"a block of {threads_per_block} threads exceeds the limit of "
                       f"{cc.max_threads_per_block} threads per block")
    else:
        warp_limit = cc.max_warps_per_sm // warps_per_block

    reg_limit, regs_allocated, why = _register_limit(cc, regs_per_thread, warps_per_block,
                                                     cc.sub_partitions)
    if reg_limit != 0 and cc.sub_partitions != 4:
        # CC 6.0 (GP100, 2 sub-partitions): the runtime refuses a kernel that could not run on the
        # 4-partition GP10x parts, for compatibility within Pascal.
        gp10x_limit, _, gp10x_why = _register_limit(cc, regs_per_thread, warps_per_block, 4)
        if gp10x_limit == 0:
            reg_limit = 0
            why = (f"{gp10x_why or 'no block fits the registers of a 4-partition SM'} (CC "
                   f"{cc.name} also requires that the block fit a 4-sub-partition Pascal SM)")
    if reg_limit == 0:
        reasons.append(why or "no block fits the registers of one SM")

    smem_limit, smem_allocated, smem_per_sm, why = _shared_memory_limit(
        cc, shared_mem_bytes, carveout, opt_in)
    if why:
        reasons.append(why)

    limits: dict[str, int | None] = {"warps": warp_limit, "registers": reg_limit,
                                     "shared_memory": smem_limit, "blocks": cc.max_blocks_per_sm}
    active = min(v for v in limits.values() if v is not None)
    factors = tuple(f for f in FACTORS if limits[f] == active)
    warps = active * warps_per_block
    assert warps <= cc.max_warps_per_sm and active <= cc.max_blocks_per_sm  # invariant
    return Occupancy(
        device=profile.name if profile is not None else f"CC {cc.name}",
        compute_capability=cc.cc, threads_per_block=threads_per_block,
        regs_per_thread=regs_per_thread, shared_mem_bytes=shared_mem_bytes, carveout=carveout,
        opt_in=opt_in, active_blocks_per_sm=active, active_warps_per_sm=warps,
        max_warps_per_sm=cc.max_warps_per_sm, warps_per_block=warps_per_block,
        occupancy=warps / cc.max_warps_per_sm, limiting_factor=factors[0],
        limiting_factors=factors, block_limits=limits, registers_per_block=regs_allocated,
        shared_mem_per_block=smem_allocated, shared_mem_per_sm=smem_per_sm, valid=active > 0,
        reason="; ".join(reasons) if active == 0 else None)

