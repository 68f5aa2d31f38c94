"""The analytical terms of a kernel's modeled time, from `LaunchFacts` and a `DeviceProfile`.

Each term is a time in ms (see MODEL.md in benchmarks/ for the derivations and sources):

- launch: the profile's launch overhead (added).
- dram: bytes from DRAM / bandwidth. DRAM bytes are the distinct sectors touched, plus the
  re-read sectors the L2 cannot hold (none while the touched footprint fits in L2).
- l2: every sector requested (coalescing: a strided warp touches up to 32 of them per request)
  / L2 bandwidth.
- latency: Little's law. A wave of resident warps keeps (sectors per request x 32 B x loads in
  flight) per warp outstanding; bytes / (bytes in flight / DRAM latency) is the time latency
  allows. Low occupancy or a small grid leave too few bytes in flight to cover the latency.
- The memory time sums, wave by wave (full waves, then the grid's tail), the largest of those
  three: the tail wave has fewer warps resident, so less latency hidden.
- shared: the SM's L1/shared-memory data stage, one wavefront per clock: shared-memory
  wavefronts (bank conflicts multiply them) plus one per 128-byte line of each global request.
- atomics: the larger of the L2 atomic units' throughput and same-address serialisation
  (updates of one address proceed one at a time).
- compute: declared flops / peak FP32 (nothing without declared flops), and issue of memory
  instructions (one warp instruction per sub-partition per clock).
- barriers: each barrier costs its block some cycles, overlapped across resident blocks (added).
- overlap: the limits overlap imperfectly: the non-binding ones are added, divided by the work
  resident to hide them (warps; only blocks when barriers split a block into phases): a tile
  transpose with one block per SM pays its bank conflicts on top of its memory time.

SM-level terms (shared, compute, issue, barriers) are divided over the SMs the grid keeps busy,
rounded to whole waves of SMs (a grid of 41 blocks on 40 SMs takes two rounds).
"""

from __future__ import annotations

from typing import Any

from ..devices import (
    ATOMIC_SAME_ADDRESS_CYCLES,
    ATOMIC_UNITS,
    BARRIER_CYCLES,
    DRAM_LATENCY_CYCLES,
    L2_BANDWIDTH_FACTOR,
    SECTOR_BYTES,
    SHARED_WAVEFRONTS_PER_CLOCK,
    DeviceProfile,
)
from ..utils import ceil_div
from .breakdown import Breakdown, Term
from .facts import LaunchFacts

__all__ = ["kernel_terms"]


def kernel_terms(profile: DeviceProfile, facts: LaunchFacts, blocks_per_sm: int,
                 flops: float | None) -> Breakdown:
    """The modeled terms of one launch; `blocks_per_sm` from the occupancy calculator."""
    clock = profile.sm_clock_mhz * 1e6
    sms = profile.sm_count
    blocks = max(facts.blocks, 1)
    per_sm = max(blocks_per_sm, 1)
    slots = sms * per_sm
    waves = ceil_div(blocks, slots)
    tail = blocks - (waves - 1) * slots
    sm_rounds = ceil_div(blocks, sms)  # SM-level work: blocks spread over SMs, whole rounds
    sm_share = blocks / (sm_rounds * sms)  # fraction of the SMs' time the grid keeps busy

    bandwidth = profile.memory_bandwidth_gb_s * 1e9
    l2_bandwidth = bandwidth * L2_BANDWIDTH_FACTOR
    latency_s = DRAM_LATENCY_CYCLES.get(profile.compute_capability[0], 480) / clock
    requested = facts.sectors * SECTOR_BYTES
    footprint = facts.unique_sectors * SECTOR_BYTES
    reread = max(requested - footprint, 0)
    miss = 0.0 if footprint <= profile.l2_bytes else 1.0 - profile.l2_bytes / footprint
    dram_bytes = footprint + reread * miss
    in_flight_per_warp = facts.sectors_per_request * SECTOR_BYTES * facts.loads_in_flight

    dram = l2 = latency = memory = 0.0
    for wave_blocks, count in ((slots, waves - 1), (tail, 1)):
        if count == 0 or facts.sectors == 0:
            continue
        share = wave_blocks / blocks
        d = dram_bytes * share / bandwidth
        c = requested * share / l2_bandwidth
        warps = wave_blocks * facts.warps_per_block
        lat = requested * share / (warps * in_flight_per_warp / latency_s) \
            if in_flight_per_warp else 0.0
        dram, l2, latency = dram + d * count, l2 + c * count, latency + lat * count
        memory += max(d, c, lat) * count

    # L1 and shared memory are one unit per SM (Volta on): its data stage serves a wavefront per
    # clock, a shared request's wavefronts plus one per 128-byte line a global request touches.
    l1_wavefronts = facts.shared_wavefronts + ceil_div(facts.sectors, 4)
    shared = l1_wavefronts / (SHARED_WAVEFRONTS_PER_CLOCK * sms * clock * sm_share)
    atomic_rate = facts.atomics / (ATOMIC_UNITS * clock)
    serial = facts.max_same_address_atomics * ATOMIC_SAME_ADDRESS_CYCLES / clock
    atomics = max(atomic_rate, serial)
    compute = 0.0 if flops is None else flops / (profile.fp32_tflops * 1e12 * sm_share)
    issue = (facts.global_requests + facts.shared_requests) / (
        profile.cc.sub_partitions * sms * clock * sm_share)
    concurrent = min(blocks, slots)
    barriers = facts.barriers * BARRIER_CYCLES / (concurrent * clock)
    # Overlap is imperfect: what is not the binding limit still stalls the warps doing it, and
    # only other resident work hides the stall: other warps where warps run independently,
    # only other blocks where barriers split a block's work into phases run one after another.
    limits = sorted((memory, shared, atomics, compute, issue), reverse=True)
    hiders = per_sm if facts.barriers else per_sm * facts.warps_per_block
    phases = sum(limits[1:]) / max(hiders, 1)

    ms = 1e3
    values = (("launch", profile.launch_overhead_us * 1e-3, "added"), ("memory", memory * ms, "sum"),
              ("dram", dram * ms, "limit"), ("l2", l2 * ms, "limit"),
              ("latency", latency * ms, "limit"), ("shared", shared * ms, "limit"),
              ("atomics", atomics * ms, "limit"), ("compute", compute * ms, "limit"),
              ("issue", issue * ms, "limit"), ("barriers", barriers * ms, "added"),
              ("overlap", phases * ms, "added"))
    terms = tuple(Term(name, value, role) for name, value, role in values)

    def texts() -> dict[str, str]:  # words for each term, built only when someone reads them
        return {
            "launch": f"launch overhead of the {profile.name}",
            "memory": f"global memory, wave by wave: the largest of dram, l2 and latency in "
                      f"each of {waves} wave(s) of {slots} blocks ({per_sm} per SM)",
            "dram": f"{dram_bytes:,.0f} B from DRAM at {profile.memory_bandwidth_gb_s:g} GB/s "
                    f"({facts.unique_sectors:,} distinct sectors; L2 "
                    f"{profile.l2_bytes // 2**20} MiB)",
            "l2": f"{facts.sectors:,} sectors requested ({facts.sectors_per_request:.1f} per "
                  "warp request) through L2",
            "latency": f"Little's law: {in_flight_per_warp:,.0f} B in flight per warp x "
                       f"{facts.warps_per_block * min(blocks, slots):,} resident warps against "
                       f"{latency_s * 1e9:.0f} ns DRAM latency",
            "shared": f"{facts.shared_wavefronts:,} shared wavefronts for "
                      f"{facts.shared_requests:,} requests + {ceil_div(facts.sectors, 4):,} "
                      "global L1 wavefronts, one per SM per clock",
            "atomics": f"{facts.atomics:,} atomics, at most {facts.max_same_address_atomics:,} "
                       "on one address (serialised)",
            "compute": "flops not declared" if flops is None else
                       f"{flops:,.0f} flops at {profile.fp32_tflops:g} TFLOP/s",
            "issue": f"{facts.global_requests + facts.shared_requests:,} warp memory "
                     "instructions issued",
            "barriers": f"{facts.barriers:,} block barriers x {BARRIER_CYCLES} cycles",
            "overlap": "the non-binding limits, hidden only by other resident "
                       + ("blocks (barriers split each block into phases)" if facts.barriers
                          else "warps"),
        }

    info: dict[str, Any] = {
        "waves": waves, "tail_blocks": tail, "blocks_per_sm": per_sm, "sm_share": sm_share,
        "dram_bytes": dram_bytes, "sectors_per_request": facts.sectors_per_request,
        "observed": facts.observed, "source": facts.source}
    return Breakdown(terms, info, texts)
