"""GPU facts as data: per-compute-capability limits, memory-system constants, named profiles.

The numbers come from NVIDIA's CUDA C++ Programming Guide (the compute capability tables), the
`cuda_occupancy.h` header of the CUDA toolkit and public deviceQuery and bandwidthTest logs.
Nothing here computes: the occupancy calculator, the timing model, the trace metrics and the
backends read these tables. Every hardware number gpukit uses is written here, once.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ArgumentTypeError, GpukitError, InvalidArgumentError
from .utils import as_int, as_number

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

# -- facts shared by every compute capability ------------------------------------------------
WARP_SIZE = 32  # threads per warp
# Static shared memory a kernel may declare per block (cuda.shared.array with a constant shape);
# also the cap on static + dynamic shared memory of a launch without the opt-in attribute.
STATIC_SHARED_MEM_PER_BLOCK = 48 * KiB
SECTOR_BYTES = 32  # global memory is served in 32-byte sectors (Nsight Compute's unit)
SHARED_MEM_BANKS = 32  # shared memory: 32 banks ...
BANK_WIDTH_BYTES = 4  # ... of 4-byte words, one distinct word per bank per cycle


class UnknownDeviceError(GpukitError, KeyError):
    """No device profile or compute capability matches the name asked for."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class ComputeCapability:
    """The limits that depend only on the compute capability (one row of the programming guide's
    table of technical specifications per compute capability)."""

    major: int
    minor: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_mem_per_sm: int              # bytes, the largest carveout
    shared_mem_per_block_optin: int     # bytes; equals the default (48 KiB) where there is no opt-in
    shared_mem_alloc_unit: int          # bytes
    shared_mem_reserved_per_block: int  # bytes the system keeps per block (CC >= 8.0)
    carveout_kib: tuple[int, ...] | None  # selectable shared-memory capacities; None: fixed
    sub_partitions: int = 4
    warp_size: int = WARP_SIZE
    max_threads_per_block: int = 1024
    max_block_dim: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dim: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    register_alloc_unit: int = 256
    shared_mem_per_block: int = STATIC_SHARED_MEM_PER_BLOCK  # the default cap, without opt-in
    const_mem_bytes: int = 64 * KiB

    @property
    def cc(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def name(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    @property
    def arch(self) -> str:
        """The ptxas/NVVM target name, such as "sm_80"."""
        return f"sm_{self.major}{self.minor}"


_VOLTA_PLUS = (0, 8, 16, 32, 64, 100)
COMPUTE_CAPABILITIES: dict[tuple[int, int], ComputeCapability] = {
    c.cc: c
    for c in (
        ComputeCapability(5, 0, 2048, 32, 64 * KiB, 48 * KiB, 256, 0, None),
        ComputeCapability(5, 2, 2048, 32, 96 * KiB, 48 * KiB, 256, 0, None),
        ComputeCapability(6, 0, 2048, 32, 64 * KiB, 48 * KiB, 256, 0, None, sub_partitions=2),
        ComputeCapability(6, 1, 2048, 32, 96 * KiB, 48 * KiB, 256, 0, None),
        ComputeCapability(7, 0, 2048, 32, 96 * KiB, 96 * KiB, 256, 0, (0, 8, 16, 32, 64, 96)),
        ComputeCapability(7, 5, 1024, 16, 64 * KiB, 64 * KiB, 256, 0, (32, 64)),
        ComputeCapability(8, 0, 2048, 32, 164 * KiB, 163 * KiB, 128, KiB,
                          (0, 8, 16, 32, 64, 100, 132, 164)),
        ComputeCapability(8, 6, 1536, 16, 100 * KiB, 99 * KiB, 128, KiB, _VOLTA_PLUS),
        ComputeCapability(8, 9, 1536, 24, 100 * KiB, 99 * KiB, 128, KiB, _VOLTA_PLUS),
        ComputeCapability(9, 0, 2048, 32, 228 * KiB, 227 * KiB, 128, KiB,
                          (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)),
        ComputeCapability(10, 0, 2048, 32, 228 * KiB, 227 * KiB, 128, KiB,
                          (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)),
        ComputeCapability(12, 0, 1536, 24, 100 * KiB, 99 * KiB, 128, KiB, _VOLTA_PLUS),
    )
}

# PCIe x16 host link, per direction: theoretical GB/s by generation (8 GT/s x 128b/130b for Gen3,
# doubling each generation), and the latency of one small copy. Timing models read these.
PCIE_X16_GB_S = {3: 15.75, 4: 31.5, 5: 63.0}
PCIE_LATENCY_US = 10.0
# The fraction of the link (or, device to device, of memory bandwidth) a copy achieves: pinned
# buffers stream at close to the link rate; pageable ones go through a staging copy first
# (roughly half, as bandwidthTest shows); device-to-device copies read and write device memory.
PINNED_COPY_EFFICIENCY = 0.80
PAGEABLE_COPY_EFFICIENCY = 0.45
DEVICE_COPY_EFFICIENCY = 0.80

# -- the memory system as the kernel timing model sees it (gpukit.timing.model) ----------------
# Latency of a global load that misses every cache, in SM clock cycles, by compute capability
# major. Approximate, from published pointer-chasing microbenchmarks: Jia et al., "Dissecting
# the NVIDIA Volta GPU Architecture via Microbenchmarking" (arXiv:1804.06826) and "Dissecting the
# NVidia Turing T4 GPU via Microbenchmarking" (arXiv:1903.07486) measure some 400-600 cycles on
# V100 and T4; later papers on A100 and H100 (Abdelkhalik et al. 2022, Luo et al. 2024) a
# similar 450-500. One number per generation: the model needs the order, not the last cycle.
DRAM_LATENCY_CYCLES = {5: 350, 6: 450, 7: 500, 8: 480, 9: 480, 10: 480, 12: 480}
# The L2 cache's bandwidth as a multiple of DRAM bandwidth (NVIDIA's whitepapers and the
# microbenchmarks above put L2 at about 2-3x DRAM on these parts); re-reads that hit L2 cost this.
L2_BANDWIDTH_FACTOR = 2.5
# Shared memory serves one wavefront (a conflict-free warp request: 32 banks x 4 bytes) per SM
# per clock (CUDA C++ Programming Guide, "Shared Memory" of each compute capability); an n-way
# bank conflict takes n wavefronts.
SHARED_WAVEFRONTS_PER_CLOCK = 1
# Atomics are executed at the L2 (global) or the SM (shared). Updates of one address serialise:
# about one per clock at best (Jia et al. measure atomic throughput on one address at roughly a
# clock per operation); updates of distinct addresses proceed at the L2's rate, here taken as
# one per L2 slice per clock, with 32 slices (the order of V100's and T4's slice counts).
ATOMIC_SAME_ADDRESS_CYCLES = 1.0
ATOMIC_UNITS = 32
# A block-wide barrier (__syncthreads) with every warp arriving costs some 20 cycles of the
# block's time (Jia et al. list its latency among the instruction latencies).
BARRIER_CYCLES = 20
# Independent global loads a warp keeps in flight at once (memory-level parallelism) at most:
# the model counts a kernel's distinct load sites, up to this many, as loads in flight per warp.
MAX_LOADS_IN_FLIGHT = 4


@dataclass(frozen=True)
class DeviceProfile:
    """One GPU model as the simulator emulates it and the calculators describe it."""

    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    memory_bytes: int
    memory_bandwidth_gb_s: float
    fp32_tflops: float
    pcie_gen: int
    copy_engines: int = 2
    launch_overhead_us: float = 5.0
    aliases: tuple[str, ...] = ()
    # The SM (boost) clock and the L2 cache size, read by the timing model: the clocks are those
    # reproducing the peak FP32 above (2 x CUDA cores x boost clock, from deviceQuery logs); L2
    # sizes from NVIDIA's architecture whitepapers (Turing, Volta, Ampere GA100 and GA102, Ada,
    # Hopper).
    sm_clock_mhz: float = 1500.0
    l2_bytes: int = 4 * MiB

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ArgumentTypeError(f"a device profile's name must be a non-empty string, got "
                                    f"{self.name!r}")
        if not isinstance(self.compute_capability, tuple) or \
                self.compute_capability not in COMPUTE_CAPABILITIES:
            known = ", ".join(str(cc) for cc in COMPUTE_CAPABILITIES)
            raise UnknownDeviceError(f"profile {self.name!r}: compute capability "
                                     f"{self.compute_capability!r} is not one of {known}")
        as_int("sm_count", self.sm_count, 1)
        as_int("memory_bytes", self.memory_bytes, 1)
        as_int("copy_engines", self.copy_engines, 1)
        if not isinstance(self.pcie_gen, int) or isinstance(self.pcie_gen, bool) or \
                self.pcie_gen not in PCIE_X16_GB_S:
            raise InvalidArgumentError(f"profile {self.name!r}: pcie_gen must be one of "
                                       f"{', '.join(map(str, PCIE_X16_GB_S))}, got "
                                       f"{self.pcie_gen!r}")
        as_number("memory_bandwidth_gb_s", self.memory_bandwidth_gb_s, positive=True)
        as_number("fp32_tflops", self.fp32_tflops, positive=True)
        as_number("launch_overhead_us", self.launch_overhead_us)
        as_number("sm_clock_mhz", self.sm_clock_mhz, positive=True)
        as_int("l2_bytes", self.l2_bytes, 1)

    @property
    def cc(self) -> ComputeCapability:
        """The per-compute-capability limits of this device."""
        return COMPUTE_CAPABILITIES[self.compute_capability]

    @property
    def arch(self) -> str:
        return self.cc.arch

    @property
    def host_link_gb_s(self) -> float:
        """Theoretical PCIe bandwidth per direction of the host link."""
        return PCIE_X16_GB_S[self.pcie_gen]

    def describe(self) -> str:
        major, minor = self.compute_capability
        return (f"{self.name} (CC {major}.{minor}, {self.sm_count} SMs, "
                f"{self.memory_bytes / GiB:.1f} GiB, {self.memory_bandwidth_gb_s:g} GB/s, "
                f"{self.fp32_tflops:g} TFLOP/s FP32, PCIe Gen{self.pcie_gen})")


# Memory: deviceQuery's usable total where a log gives one (T4, L4), else the nominal size.
PROFILES: dict[str, DeviceProfile] = {
    p.name: p
    for p in (
        DeviceProfile("T4", (7, 5), 40, 15100 * MiB, 320, 8.1, 3,
                      sm_clock_mhz=1590, l2_bytes=4 * MiB, aliases=("tesla t4",)),
        DeviceProfile("V100", (7, 0), 80, 16 * GiB, 900, 15.7, 3,
                      sm_clock_mhz=1530, l2_bytes=6 * MiB,
                      aliases=("tesla v100", "v100 sxm2")),
        DeviceProfile("A100 40GB", (8, 0), 108, 40 * GiB, 1555, 19.5, 4, copy_engines=3,
                      sm_clock_mhz=1410, l2_bytes=40 * MiB,
                      aliases=("a100", "a100-40gb", "a100 sxm4 40gb")),
        DeviceProfile("A100 80GB", (8, 0), 108, 80 * GiB, 2039, 19.5, 4, copy_engines=3,
                      sm_clock_mhz=1410, l2_bytes=40 * MiB,
                      aliases=("a100-80gb", "a100 sxm4 80gb")),
        DeviceProfile("RTX 3090", (8, 6), 82, 24 * GiB, 936, 35.6, 4,
                      sm_clock_mhz=1695, l2_bytes=6 * MiB,
                      aliases=("geforce rtx 3090", "3090")),
        DeviceProfile("RTX 4090", (8, 9), 128, 24 * GiB, 1008, 82.6, 4,
                      sm_clock_mhz=2520, l2_bytes=72 * MiB,
                      aliases=("geforce rtx 4090", "4090")),
        DeviceProfile("L4", (8, 9), 58, 22518 * MiB, 300, 30.3, 4,
                      sm_clock_mhz=2040, l2_bytes=48 * MiB),
        DeviceProfile("H100 SXM", (9, 0), 132, 80 * GiB, 3350, 67.0, 5, copy_engines=3,
                      sm_clock_mhz=1980, l2_bytes=50 * MiB,
                      aliases=("h100", "h100 sxm5", "h100-sxm")),
        DeviceProfile("H200", (9, 0), 132, 141 * 10**9, 4800, 67.0, 5, copy_engines=3,
                      sm_clock_mhz=1980, l2_bytes=50 * MiB,
                      aliases=("h200 sxm",)),
    )
}

DEFAULT_PROFILE = "T4"


def name_key(name: str) -> str:
    """A device name reduced for comparisons: lower case, letters and digits only."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def name_tokens(name: str) -> frozenset[str]:
    """The words of a device name, lower case ("NVIDIA A100-SXM4-40GB" -> a100, sxm4, 40gb, ...)."""
    words, word = set(), []
    for ch in name.lower() + " ":
        if ch.isalnum():
            word.append(ch)
        elif word:
            words.add("".join(word))
            word = []
    return frozenset(words)


def names_device(name: str, device_name: str) -> bool:
    """Whether `name` (a profile name or alias, such as "A100" or "T4") names the GPU the driver
    calls `device_name`: every word of `name` is a whole word of `device_name`, so "L4" names
    "NVIDIA L4" but not "NVIDIA L40S", and "A100" names "NVIDIA A100-SXM4-80GB"."""
    wanted = name_tokens(name)
    return bool(wanted) and wanted <= name_tokens(device_name)


def match_profile(device_name: str) -> DeviceProfile | None:
    """The named profile of a real GPU, from the name its driver reports, or None: the profile
    one of whose names matches with the most words (see `names_device`)."""
    best, best_words = None, 0
    for profile in PROFILES.values():
        for alias in (profile.name, *profile.aliases):
            words = len(name_tokens(alias))
            if names_device(alias, device_name) and words > best_words:
                best, best_words = profile, words
    return best


# FP32 lanes (CUDA cores) per SM, per compute capability major.minor: a real GPU's peak FP32 is
# SMs x lanes x 2 (a fused multiply-add) x clock.
FP32_LANES_PER_SM = {(5, 0): 128, (5, 2): 128, (6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 5): 64,
                     (8, 0): 64, (8, 6): 128, (8, 9): 128, (9, 0): 128, (10, 0): 128,
                     (12, 0): 128}
# A GPU's host link generation when nothing names it (the driver does not report it).
ASSUMED_PCIE_GEN = 4


def known_cc(cc: tuple[int, int]) -> tuple[int, int]:
    """`cc` if gpukit's tables have it, else the closest one below it (same major first), so a
    newer GPU (e.g. CC 8.7 or 12.1) is described with the limits of its family."""
    if cc in COMPUTE_CAPABILITIES:
        return cc
    below = [k for k in COMPUTE_CAPABILITIES if k <= cc]
    return max(below) if below else min(COMPUTE_CAPABILITIES)


_BY_KEY = {name_key(alias): p for p in PROFILES.values() for alias in (p.name, *p.aliases)}


def list_profiles() -> list[DeviceProfile]:
    """Every named profile, in the order of the table above."""
    return list(PROFILES.values())


def get_profile(device: str | DeviceProfile | None = None) -> DeviceProfile:
    """A profile by name, case- and punctuation-insensitive ("a100", "H100-SXM"); None: the default."""
    if isinstance(device, DeviceProfile):
        return device
    if device is None:
        device = DEFAULT_PROFILE
    if not isinstance(device, str):
        raise ArgumentTypeError(
            f"device must be a profile name or a DeviceProfile, not {type(device).__name__}")
    try:
        return _BY_KEY[name_key(device)]
    except KeyError:
        names = ", ".join(PROFILES)
        raise UnknownDeviceError(f"unknown device profile {device!r}; known profiles: {names}") from None


def parse_cc(cc: str | tuple[int, int] | float) -> tuple[int, int]:
    """(major, minor) from "8.0", "80", "sm_80", 8.0 or (8, 0)."""
    if isinstance(cc, tuple) and len(cc) == 2 and all(isinstance(v, int) for v in cc):
        return cc
    text = str(cc).lower().removeprefix("sm_").removeprefix("compute_")
    if "." in text:
        major, _, minor = text.partition(".")
    elif text.isdigit() and len(text) >= 2:
        major, minor = text[:-1], text[-1]
    else:
        major, minor = "", ""
    if not (major.isdigit() and minor.isdigit()):
        raise UnknownDeviceError(f"cannot read compute capability {cc!r}; write it as '8.0' or (8, 0)")
    return (int(major), int(minor))


def get_compute_capability(cc: str | tuple[int, int] | float) -> ComputeCapability:
    """The limits of a compute capability given as "8.0", (8, 0), "sm_80" or 8.0."""
    key = parse_cc(cc)
    try:
        return COMPUTE_CAPABILITIES[key]
    except KeyError:
        known = ", ".join(c.name for c in COMPUTE_CAPABILITIES.values())
        raise UnknownDeviceError(
            f"compute capability {key[0]}.{key[1]} is not in gpukit's tables; known: {known}"
        ) from None


def profiles_with_cc(cc: str | tuple[int, int] | float) -> list[DeviceProfile]:
    """The named profiles of one compute capability (possibly none)."""
    key = parse_cc(cc)
    return [p for p in PROFILES.values() if p.compute_capability == key]
