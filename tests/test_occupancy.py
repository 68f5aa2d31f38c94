"""gpukit.occupancy and gpukit.occupancy_curves: NVIDIA's published examples, hand-computed cases
for every compute capability, NVIDIA's own cuda_occupancy.h as an oracle, properties, errors."""

from __future__ import annotations

import dataclasses
import importlib.util
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit.devices import COMPUTE_CAPABILITIES, UnknownDeviceError, get_profile
from gpukit.errors import GpukitError
from gpukit.occupancy import (
    FACTORS,
    Curve,
    OccupancyInputError,
    OccupancyTypeError,
    best_block_size,
    calculator_curves,
    occupancy,
    occupancy_vs_block_size,
    occupancy_vs_registers,
    occupancy_vs_shared_memory,
)

ALL_CCS = [c.name for c in COMPUTE_CAPABILITIES.values()]


# -- NVIDIA's published examples -------------------------------------------------------------------

def test_best_practices_guide_volta_37_registers():
    small = occupancy("7.0", 128, 37)
    assert (small.active_blocks_per_sm, small.occupancy) == (12, 0.75)
    assert small.limiting_factor == "registers"
    assert small.summary() == "75% occupancy (48/64 warps), 12 blocks/SM, limited by registers"
    # Per-partition flooring: 5 blocks by plain division, 4 on the hardware.
    large = occupancy("7.0", 320, 37)
    assert large.active_blocks_per_sm == 4
    assert large.active_warps_per_sm == 40


@pytest.mark.parametrize("cc", ["6.0", "6.1"])
def test_programming_guide_pascal_register_example(cc):
    assert occupancy(cc, 512, 64).active_blocks_per_sm == 2
    assert occupancy(cc, 512, 65).active_blocks_per_sm == 1


# -- hand-computed cases, every compute capability -------------------------------------------------

# 256 threads, 32 registers, no shared memory: 8 warps per block, 1024 registers per warp.
PLAIN = {"5.0": 8, "5.2": 8, "6.0": 8, "6.1": 8, "7.0": 8, "7.5": 4, "8.0": 8, "8.6": 6,
         "8.9": 6, "9.0": 8, "10.0": 8, "12.0": 6}
# 128 threads, 32 registers, 10000 B of shared memory: 10240 B allocated before 8.0 (256 B units),
# 11136 B from 8.0 on (1 KiB reserve, 128 B units), divided into the SM's shared memory.
SMEM_10000 = {"5.0": (6, 10240), "5.2": (9, 10240), "6.0": (6, 10240), "6.1": (9, 10240),
              "7.0": (9, 10240), "7.5": (6, 10240), "8.0": (15, 11136), "8.6": (9, 11136),
              "8.9": (9, 11136), "9.0": (16, 11136), "10.0": (16, 11136), "12.0": (9, 11136)}


def test_hand_cases_cover_every_compute_capability():
    assert set(PLAIN) == set(SMEM_10000) == set(ALL_CCS)


@pytest.mark.parametrize("cc", ALL_CCS)
def test_plain_kernel_on_every_cc(cc):
    result = occupancy(cc, 256, 32)
    assert result.active_blocks_per_sm == PLAIN[cc]
    assert result.occupancy == 1.0
    assert result.registers_per_block == 8 * 1024
    assert result.limiting_factor == "warps"


@pytest.mark.parametrize("cc", ALL_CCS)
def test_shared_memory_on_every_cc(cc):
    blocks, allocated = SMEM_10000[cc]
    result = occupancy(cc, 128, 32, 10000)
    assert (result.active_blocks_per_sm, result.shared_mem_per_block) == (blocks, allocated)
    if cc in ("9.0", "10.0"):  # 20 fit in 228 KiB, but warps and registers allow 16
        assert result.limiting_factors == ("warps", "registers")
    else:
        assert result.limiting_factor == "shared_memory"


@pytest.mark.parametrize("cc, carveout, smem, blocks, capacity_kib", [
    ("7.0", 50, 10000, 6, 64),     # 48 KiB preferred, rounded up to 64 KiB
    ("7.0", 0, 0, 16, 0),          # no shared memory: Volta can configure 0 KiB
    ("7.5", 0, 10000, 3, 32),      # Turing's smallest capacity is 32 KiB
    ("8.0", 0, 0, 8, 8),           # the 1 KiB reserve: 8 KiB holds 8 blocks
    ("8.6", 0, 0, 8, 8),
    ("9.0", 0, 0, 8, 8),
    ("12.0", 0, 0, 8, 8),
    ("8.0", 25, 10000, 5, 64),     # 41984 B preferred, rounded up to 64 KiB
    ("8.0", 0, 40000, 1, 64),      # one block does not fit 0 KiB: the driver picks 64 KiB
    ("12.0", 50, 10000, 5, 64),
    ("10.0", 100, 10000, 16, 228),
])
def test_carveout(cc, carveout, smem, blocks, capacity_kib):
    result = occupancy(cc, 128, 32, smem, carveout=carveout)
    assert result.active_blocks_per_sm == blocks
    assert result.shared_mem_per_sm == capacity_kib * 1024


@pytest.mark.parametrize("cc", ["5.0", "5.2", "6.0", "6.1"])
def test_carveout_is_ignored_before_volta(cc):
    assert occupancy(cc, 128, 32, 10000, carveout=0) == dataclasses.replace(
        occupancy(cc, 128, 32, 10000), carveout=0)


def test_opt_in_caps_shared_memory_per_block():
    assert occupancy("8.0", 128, 32, 100 * 1024).active_blocks_per_sm == 1
    capped = occupancy("8.0", 128, 32, 100 * 1024, opt_in=False)
    assert not capped.valid and capped.active_blocks_per_sm == 0
    assert capped.limiting_factor == "shared_memory"
    assert "at most 49152 B plus the 1024 B reserve" in capped.reason
    assert ("with opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize) up to 166912 B"
            in capped.reason)
    assert occupancy("8.0", 128, 32, 163 * 1024).valid
    assert not occupancy("8.0", 128, 32, 163 * 1024 + 1).valid
    assert occupancy("7.0", 128, 32, 64 * 1024).active_blocks_per_sm == 1
    assert occupancy("7.5", 128, 32, 64 * 1024).active_blocks_per_sm == 1
    assert not occupancy("7.5", 128, 32, 64 * 1024 + 1).valid
    assert not occupancy("6.1", 128, 32, 48 * 1024 + 1).valid  # no opt-in before Volta


def test_pascal_gp100_two_partitions_and_gp10x_recheck():
    # 40 registers, 64 threads: 2 partitions floor to 50 warps, 4 partitions to 48.
    assert occupancy("6.0", 64, 40).active_blocks_per_sm == 25
    assert occupancy("6.1", 64, 40).active_blocks_per_sm == 24
    # 416 threads x 144 registers fits GP100's 2 partitions but not GP10x's 4: refused on 6.0 too.
    for cc in ("6.0", "6.1"):
        refused = occupancy(cc, 416, 144)
        assert refused.active_blocks_per_sm == 0 and refused.limiting_factor == "registers"
    assert "4-sub-partition Pascal SM" in occupancy("6.0", 416, 144).reason


def test_register_limits():
    assert occupancy("8.0", 32, 255).active_blocks_per_sm == 8  # 8192 registers per warp
    assert occupancy("8.0", 1024, 64).active_blocks_per_sm == 1
    too_many = occupancy("8.0", 1024, 65)
    assert too_many.reason == ("the block needs 73728 registers (32 warps x 2304) but a block can "
                               "have at most 65536")
    # 13 warps x 4608 = 59904 registers fits, but the hardware counts 16 warps.
    partitions = occupancy("7.0", 416, 144)
    assert not partitions.valid
    assert "rounded up to a multiple of 4 sub-partitions" in partitions.reason
    assert occupancy("8.0", 32, 256).reason == (
        "256 registers per thread exceeds the limit of 255")
    assert occupancy("8.0", 128, 0).block_limits["registers"] is None


def test_block_size_limits_and_whole_warps():
    too_big = occupancy("T4", 1025)
    assert not too_big.valid and too_big.limiting_factor == "warps"
    assert too_big.reason == "a block of 1025 threads exceeds the limit of 1024 threads per block"
    assert too_big.summary().startswith("0% occupancy: cannot launch, a block of 1025 threads")
    assert occupancy("8.0", 33).warps_per_block == 2
    assert occupancy("8.0", 1000).warps_per_block == 32


def test_limiting_factors_tie_in_order():
    result = occupancy("8.0", 256, 32)
    assert result.limiting_factors == ("warps", "registers")
    assert result.limiting_factor == "warps"
    assert result.block_limits == {"warps": 8, "registers": 8, "shared_memory": 164, "blocks": 32}
    assert occupancy("8.0", 32, 16).limiting_factor == "blocks"
    assert occupancy("7.0", 256, 32, 0).block_limits["shared_memory"] is None


@pytest.mark.parametrize("device", ["A100", "a100-40gb", get_profile("A100")])
def test_profiles_keep_their_name(device):
    result = occupancy(device, 256, 40, 4096)
    assert result.device == "A100 40GB" and result.compute_capability == (8, 0)
    assert result.summary() == "75% occupancy (48/64 warps), 6 blocks/SM, limited by registers"


@pytest.mark.parametrize("device", ["8.0", "sm_80", (8, 0), 8.0, COMPUTE_CAPABILITIES[(8, 0)]])
def test_compute_capabilities_as_device(device):
    result = occupancy(device, 256, 40, 4096)
    assert result.device == "CC 8.0"
    assert (result.active_blocks_per_sm, result.shared_mem_per_block) == (6, 5120)


def test_result_is_frozen_and_describes_itself():
    result = occupancy("A100", 256, 40, 4096)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.occupancy = 1.0
    assert hash(result) == hash(occupancy("A100", 256, 40, 4096))
    assert result.describe().splitlines() == [
        ("A100 40GB (CC 8.0): 256 threads/block, 40 registers/thread, 4096 B shared memory/block "
         "(carveout default, opt-in on)"),
        "  75% occupancy (48/64 warps), 6 blocks/SM, limited by registers",
        "  blocks/SM allowed by: warps 8, registers 6, shared memory 32, blocks per SM 32",
        "  allocated per block: 10240 registers, 5120 B shared memory (SM configured for 164 KiB)",
    ]
    assert occupancy("8.0", 32, 32).summary() == (
        "50% occupancy (32/64 warps), 32 blocks/SM, limited by blocks per SM")
    assert occupancy("8.0", 1024, 64).summary() == (
        "50% occupancy (32/64 warps), 1 block/SM, limited by registers")
    assert occupancy("8.6", 128, 32, 10000).percent() == "75%"
    assert occupancy("8.6", 160, 32).percent() == "93.8%"  # 45 of 48 warps


# -- errors ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, message", [
    ({"threads_per_block": 0}, OccupancyInputError,
     r"^threads_per_block must be a positive int, got 0$"),
    ({"threads_per_block": -32}, OccupancyInputError,
     r"^threads_per_block must be a positive int, got -32$"),
    ({"threads_per_block": 128.0}, OccupancyTypeError,
     r"^threads_per_block must be an int, got float 128\.0$"),
    ({"threads_per_block": True}, OccupancyTypeError,
     r"^threads_per_block must be an int, got bool True$"),
    ({"threads_per_block": 128, "regs_per_thread": -1}, OccupancyInputError,
     r"^regs_per_thread must be an int >= 0, got -1$"),
    ({"threads_per_block": 128, "shared_mem_bytes": -5}, OccupancyInputError,
     r"^shared_mem_bytes must be an int >= 0, got -5$"),
    ({"threads_per_block": 128, "shared_mem_bytes": "4k"}, OccupancyTypeError,
     r"^shared_mem_bytes must be an int, got str '4k'$"),
    ({"threads_per_block": 128, "carveout": 101}, OccupancyInputError,
     (r"^carveout is a percentage of the SM's shared memory, 0\.\.100 \(or None for the "
      r"default\), got 101$")),
    ({"threads_per_block": 128, "carveout": -1}, OccupancyInputError,
     r"^carveout must be an int >= 0, got -1$"),
    ({"threads_per_block": 128, "opt_in": "yes"}, OccupancyTypeError,
     r"^opt_in must be True or False, got 'yes'$"),
])
def test_bad_inputs_raise(kwargs, error, message):
    with pytest.raises(error, match=message) as info:
        occupancy("A100", **kwargs)
    assert isinstance(info.value, GpukitError)
    assert isinstance(info.value, TypeError if error is OccupancyTypeError else ValueError)


def test_bad_devices_raise():
    with pytest.raises(UnknownDeviceError, match=r"^unknown device 'GTX 280': not a profile \(T4"):
        occupancy("GTX 280", 128)
    with pytest.raises(UnknownDeviceError, match=r"compute capability 4\.0 is not in gpukit's"):
        occupancy((4, 0), 128)
    with pytest.raises(OccupancyTypeError, match=r"^device must be a profile name, .* not int$"):
        occupancy(80, 128)


def test_numpy_integers_are_accepted():
    np = pytest.importorskip("numpy")
    assert occupancy("7.0", np.int64(128), np.int32(37)).active_blocks_per_sm == 12


# -- properties ------------------------------------------------------------------------------------

ccs = st.sampled_from(list(COMPUTE_CAPABILITIES.values()))
threads = st.integers(1, 1100)
regs = st.integers(0, 255)
smem = st.integers(0, 240 * 1024)
carveouts = st.none() | st.integers(0, 100)


@settings(max_examples=400, deadline=None)
@given(cc=ccs, t=threads, r=regs, s=smem, c=carveouts, o=st.booleans())
def test_never_above_a_hardware_limit(cc, t, r, s, c, o):
    result = occupancy(cc, t, r, s, c, o)
    blocks = result.active_blocks_per_sm
    assert result.active_warps_per_sm == blocks * result.warps_per_block
    assert result.occupancy == result.active_warps_per_sm / cc.max_warps_per_sm <= 1.0
    assert blocks <= cc.max_blocks_per_sm
    assert result.active_warps_per_sm <= cc.max_warps_per_sm
    assert blocks * result.registers_per_block <= cc.registers_per_sm
    assert blocks * result.shared_mem_per_block <= result.shared_mem_per_sm <= cc.shared_mem_per_sm
    assert result.valid == (blocks > 0) == (result.reason is None)
    assert result.limiting_factor == result.limiting_factors[0]
    assert set(result.limiting_factors) == {f for f in FACTORS if result.block_limits[f] == blocks}
    if blocks:
        assert t <= cc.max_threads_per_block
        assert result.shared_mem_per_block <= cc.shared_mem_per_block_optin + 1024


@settings(max_examples=300, deadline=None)
@given(cc=ccs, t=threads, r=regs, s=smem, c=carveouts, o=st.booleans(), dr=st.integers(1, 64),
       ds=st.integers(1, 16 * 1024))
def test_never_rises_with_more_registers_or_shared_memory(cc, t, r, s, c, o, dr, ds):
    base = occupancy(cc, t, r, s, c, o).active_blocks_per_sm
    assert occupancy(cc, t, min(r + dr, 255), s, c, o).active_blocks_per_sm <= base
    assert occupancy(cc, t, r, s + ds, c, o).active_blocks_per_sm <= base


# -- curves and the best block size ----------------------------------------------------------------

def test_block_size_curve():
    curve = occupancy_vs_block_size("A100", 40, 4096)
    assert isinstance(curve, Curve) and curve.label == "Threads per block"
    assert curve.xs == tuple(range(32, 1025, 32)) and len(curve) == 32
    assert dict(curve)[256].active_blocks_per_sm == 6
    assert curve.best().threads_per_block == 64  # the first of the 75% points (24 blocks)
    assert max(curve.occupancies) == 0.75
    dynamic = occupancy_vs_block_size("A100", 32, lambda b: 16 * b, block_sizes=[64, 1024])
    assert [p.shared_mem_bytes for p in dynamic.points] == [1024, 16384]


def test_register_and_shared_memory_curves():
    regs_curve = occupancy_vs_registers("7.0", 128, current=37)
    assert regs_curve.xs == tuple(range(1, 256))
    assert regs_curve.current.active_blocks_per_sm == 12
    assert all(a >= b for a, b in zip(regs_curve.active_warps, regs_curve.active_warps[1:]))
    smem_curve = occupancy_vs_shared_memory("8.0", 128)
    assert smem_curve.xs[:3] == (0, 128, 256) and smem_curve.xs[-1] == 163 * 1024
    assert all(p.valid for p in smem_curve.points)
    assert len(occupancy_vs_shared_memory("8.0", 128, opt_in=False)) == 48 * 1024 // 128 + 1


def test_calculator_curves_mark_the_configuration():
    curves = calculator_curves("A100", 256, 40, 4096)
    assert list(curves) == ["threads_per_block", "regs_per_thread", "shared_mem_bytes"]
    for curve in curves.values():
        assert curve.current == occupancy("A100", 256, 40, 4096)


def test_best_block_size():
    assert best_block_size("A100", 40, 4096) == (2 * 108, 768)
    assert best_block_size("T4", 32) == (40, 1024)
    # 100 threads gives 16 blocks (1600 threads), 96 gives 21 (2016), 64 gives 32 (2048, full).
    assert best_block_size("A100", 32, max_block_size=100) == (32 * 108, 64)
    # Dynamic shared memory of 128 B per thread: 640 threads x 2 blocks is the most.
    assert best_block_size("A100", 32, lambda b: 128 * b) == (2 * 108, 640)
    # 1536 threads per SM on 8.6: two blocks of 768 fill it (one block of 1024 does not).
    assert best_block_size("RTX 3090", 32) == (2 * 82, 768)
    assert best_block_size("8.0", 32, sm_count=1) == (2, 1024)


def test_best_block_size_edge_cases():
    assert best_block_size("8.0", 255, 200 * 1024) == (0, 0)  # nothing can run
    assert best_block_size("8.6", 32) == best_block_size("RTX 3090", 32)  # one profile: its SMs
    with pytest.raises(OccupancyInputError, match=r"compute capability 8\.9 does not say how many "
                       r"SMs the device has \(RTX 4090: 128, L4: 58\); pass sm_count="):
        best_block_size("8.9", 32)
    with pytest.raises(OccupancyInputError, match=r"shared_mem_bytes\(1024\) must be an int >= 0"):
        best_block_size("T4", 32, lambda b: -1)


# -- NVIDIA's cuda_occupancy.h as the oracle -------------------------------------------------------

_HARNESS = r"""
#include <cstdio>
#include "cuda_occupancy.h"
static long per_thread = 0, base = 0;
static size_t smem_for(int block) { return (size_t)(base + per_thread * block); }
int main() {
    int mode, major, minor, tpsm, threads, regs, carveout, optin;
    long smem_sm, optin_b, reserved, smem;
    while (scanf("%d %d %d %d %ld %ld %ld %d %d %ld %ld %d %d", &mode, &major, &minor, &tpsm,
                 &smem_sm, &optin_b, &reserved, &threads, &regs, &smem, &per_thread, &carveout,
                 &optin) == 13) {
        cudaOccDeviceProp p;
        p.computeMajor = major; p.computeMinor = minor; p.maxThreadsPerBlock = 1024;
        p.maxThreadsPerMultiprocessor = tpsm; p.regsPerBlock = 65536;
        p.regsPerMultiprocessor = 65536; p.warpSize = 32; p.sharedMemPerBlock = 49152;
        p.sharedMemPerMultiprocessor = smem_sm; p.numSms = 1; p.sharedMemPerBlockOptin = optin_b;
        p.reservedSharedMemPerBlock = reserved;
        cudaOccFuncAttributes a;
        a.maxThreadsPerBlock = mode ? threads : 1024; a.numRegs = regs; a.sharedSizeBytes = 0;
        a.partitionedGCConfig = PARTITIONED_GC_OFF;
        a.shmemLimitConfig = optin ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
        a.maxDynamicSharedSizeBytes = optin ? optin_b : 49152;
        a.numBlockBarriers = 1;
        cudaOccDeviceState s;
        s.carveoutConfig = carveout;
        if (mode == 0) {
            cudaOccResult r;
            int e = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &a, &s, threads, smem);
            printf("%d %d %d %d %d %d %d %ld\n", e, r.activeBlocksPerMultiprocessor,
                   r.blockLimitWarps, r.blockLimitRegs, r.blockLimitSharedMem,
                   r.blockLimitBlocks, r.allocatedRegistersPerBlock,
                   (long)r.allocatedSharedMemPerBlock);
        } else {
            int grid = 0, block = 0;
            base = smem;
            int e = cudaOccMaxPotentialOccupancyBlockSize(&grid, &block, &p, &a, &s, smem_for, 0);
            printf("%d %d %d\n", e, grid, block);
        }
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def nvidia_header_oracle(tmp_path_factory):
    """A tiny C++ program around the cuda_occupancy.h of the nvidia-cuda-runtime-cu12 wheel."""
    compiler = shutil.which("g++") or shutil.which("clang++")
    spec = importlib.util.find_spec("nvidia.cuda_runtime")
    if compiler is None or spec is None:
        pytest.skip("needs a C++ compiler and the nvidia-cuda-runtime-cu12 wheel's header")
    include = Path(next(iter(spec.submodule_search_locations))) / "include"
    if not (include / "cuda_occupancy.h").is_file():
        pytest.skip("the nvidia-cuda-runtime-cu12 wheel has no cuda_occupancy.h")
    workdir = tmp_path_factory.mktemp("occupancy_oracle")
    (workdir / "oracle.cpp").write_text(_HARNESS)
    exe = workdir / "oracle"
    subprocess.run([compiler, "-O1", f"-I{include}", str(workdir / "oracle.cpp"), "-o", str(exe)],
                   check=True, capture_output=True)

    def run(lines):
        out = subprocess.run([str(exe)], input="".join(lines), capture_output=True, text=True,
                             check=True).stdout
        return [tuple(map(int, line.split())) for line in out.splitlines()]
    return run


def _oracle_line(mode, cc, t, r, s, per_thread, c, o):
    return (f"{mode} {cc.major} {cc.minor} {cc.max_threads_per_sm} {cc.shared_mem_per_sm} "
            f"{cc.shared_mem_per_block_optin} {cc.shared_mem_reserved_per_block} {t} {r} {s} "
            f"{per_thread} {-1 if c is None else c} {int(o)}\n")


def test_matches_nvidia_cuda_occupancy_header(nvidia_header_oracle):
    rng = random.Random(20240605)
    cases = []
    for cc in COMPUTE_CAPABILITIES.values():
        cap = cc.shared_mem_per_block_optin
        for _ in range(1500):
            t = rng.choice([rng.randint(1, 1100), rng.choice([32, 33, 96, 128, 320, 416, 512, 768,
                                                              992, 1000, 1024, 1025])])
            r = rng.choice([rng.randint(0, 255), rng.choice([0, 1, 32, 37, 64, 65, 144, 255])])
            s = rng.choice([0, rng.randint(0, cap + 2048), rng.randint(0, 4096),
                            rng.choice([1, 128, 1024, 48 * 1024, 48 * 1024 + 1, cap, cap + 1])])
            c = rng.choice([None, None, rng.randint(0, 100), 0, 50, 100])
            cases.append((cc, t, r, s, c, rng.random() < 0.8))
    answers = nvidia_header_oracle([_oracle_line(0, cc, t, r, s, 0, c, o)
                                    for cc, t, r, s, c, o in cases])
    unlimited = 2**31 - 1
    for (cc, t, r, s, c, o), answer in zip(cases, answers):
        result = occupancy(cc, t, r, s, c, o)
        limits = [unlimited if result.block_limits[f] is None else result.block_limits[f]
                  for f in FACTORS]
        ours = (0, result.active_blocks_per_sm, *limits, result.registers_per_block,
                result.shared_mem_per_block)
        assert ours == answer, (cc.name, t, r, s, c, o)


def test_best_block_size_matches_nvidia_header(nvidia_header_oracle):
    rng = random.Random(7)
    cases = []
    for cc in COMPUTE_CAPABILITIES.values():
        for _ in range(25):
            cases.append((cc, rng.choice([0, 100, 256, 1000, 1024]), rng.randint(0, 128),
                          rng.choice([0, 1024, 20000]), rng.choice([0, 0, 16, 128]),
                          rng.choice([None, 0, 50]), rng.random() < 0.8))
    answers = nvidia_header_oracle([_oracle_line(1, cc, limit or 1024, r, s, k, c, o)
                                    for cc, limit, r, s, k, c, o in cases])
    for (cc, limit, r, s, k, c, o), answer in zip(cases, answers):
        ours = best_block_size(cc, r, lambda b, s=s, k=k: s + k * b, limit, carveout=c, opt_in=o,
                               sm_count=1)
        assert (0, *ours) == answer, (cc.name, limit, r, s, k, c, o)
