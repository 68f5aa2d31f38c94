"""What the timing model knows about one simulated launch: `LaunchFacts`.

From a launch record (`gpukit.launches.LaunchRecord`) of the simulator: its geometry, its counted
traffic (`record.stats`), and, when the launch was traced (`trace=True`), the exact warp-level
facts of its trace: 32-byte sectors per global request (coalescing), distinct sectors (reuse an
L2 can serve), shared-memory wavefronts (bank conflicts) and the most updates of one address by
atomics (contention). Without a trace those four are *assumed* ideal (coalesced, no reuse, no
conflict, no contention) from the per-site counts, and `observed` is False: trace the launch to
see them. Nothing here times anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..devices import (
    BANK_WIDTH_BYTES,
    MAX_LOADS_IN_FLIGHT,
    SECTOR_BYTES,
    SHARED_MEM_BANKS,
    WARP_SIZE,
)
from ..utils import ceil_div

__all__ = ["LaunchFacts", "launch_facts"]


@dataclass(frozen=True)
class LaunchFacts:
    """One launch as the timing model reads it (counts summed over the whole launch)."""

    blocks: int
    threads_per_block: int
    shared_bytes_per_block: int       # static + dynamic
    global_bytes: int                 # bytes the threads asked for (loads + stores)
    global_requests: int              # warp-wide global accesses
    sectors: int                      # 32-byte sectors those requests touched
    unique_sectors: int               # distinct sectors: what must come from DRAM at least once
    shared_wavefronts: int            # shared-memory wavefronts (bank conflicts add some)
    shared_requests: int
    atomics: int
    max_same_address_atomics: int     # updates of the most-updated global address
    barriers: int                     # block barriers passed, summed over blocks
    loads_in_flight: int              # independent global loads per warp (memory parallelism)
    observed: bool                    # True: sectors, wavefronts and contention from a trace
    traced_blocks: int = 0            # blocks that trace recorded (fewer than `blocks`: a sample)

    @property
    def warps_per_block(self) -> int:
        return ceil_div(self.threads_per_block, WARP_SIZE)

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.global_requests if self.global_requests else 0.0

    @property
    def source(self) -> str:
        if not self.observed:
            return ("assumed coalesced, conflict-free, uncontended, without reuse (not traced; "
                    "launch with trace=True, or time it with gpukit.timing.time_kernel, to "
                    "observe them)")
        if self.traced_blocks < self.blocks:
            return (f"observed in a sample of {self.traced_blocks:,} of {self.blocks:,} blocks "
                    "and scaled to the whole launch")
        return "observed in the launch's trace"


def launch_facts(record: Any) -> LaunchFacts:
    """The facts of a simulated launch; exact where `record.trace` exists, assumed otherwise.

    Cached in `record.model_facts`.
    """
    cached = getattr(record, "model_facts", None)
    if cached is not None:
        return cached
    facts = _facts(record)
    record.model_facts = facts
    return facts


# the facts of untraced launches, by what they are made of: a loop of launches repeats them
_ASSUMED: dict[tuple, LaunchFacts] = {}
_ASSUMED_LIMIT = 4096


def _facts(record: Any) -> LaunchFacts:
    stats = record.stats
    if record.extra.get("trace") is None:
        key = (record.grid, record.block, stats.static_shared_bytes, stats.dynamic_shared_bytes,
               stats.global_load_bytes + stats.global_store_bytes, stats.atomics, stats.barriers,
               stats.sites)
        facts = _ASSUMED.get(key)
        if facts is None:
            if len(_ASSUMED) >= _ASSUMED_LIMIT:
                _ASSUMED.clear()
            facts = _ASSUMED[key] = _counted(record)
        return facts
    return _counted(record)


def _counted(record: Any) -> LaunchFacts:
    """The facts from the record's counts, observed from its trace where it has one."""
    stats = record.stats
    gx, gy, gz = record.grid
    bx, by, bz = record.block
    tpb = bx * by * bz
    lanes = min(WARP_SIZE, tpb)
    global_requests = shared_requests = sectors = wavefronts = 0
    read_sites = 0
    for _site, kind, itemsize, global_execs, shared_execs in stats.sites:
        if global_execs:
            requests = ceil_div(global_execs, lanes)
            global_requests += requests
            sectors += requests * ceil_div(lanes * itemsize, SECTOR_BYTES)
            read_sites += kind == "read"
        if shared_execs:
            requests = ceil_div(shared_execs, lanes)
            shared_requests += requests
            wavefronts += requests * ceil_div(lanes * itemsize,
                                              SHARED_MEM_BANKS * BANK_WIDTH_BYTES)
    facts = {
        "blocks": gx * gy * gz, "threads_per_block": tpb,
        "shared_bytes_per_block": stats.static_shared_bytes + stats.dynamic_shared_bytes,
        "global_bytes": stats.global_load_bytes + stats.global_store_bytes,
        "global_requests": global_requests, "sectors": sectors, "unique_sectors": sectors,
        "shared_wavefronts": wavefronts, "shared_requests": shared_requests, "atomics": stats.atomics,
        "max_same_address_atomics": min(stats.atomics, 1), "barriers": stats.barriers,
        "loads_in_flight": max(1, min(read_sites, MAX_LOADS_IN_FLIGHT)), "observed": False}
    trace = record.extra.get("trace")
    if trace is not None:
        facts.update(_observed(trace, stats))
    return LaunchFacts(**facts)


def _observed(trace: Any, stats: Any) -> dict[str, Any]:
    """Sectors, reuse, wavefronts and contention measured on the trace.

    A whole-launch trace gives them exactly. A sample (some blocks, see
    `gpukit.trace.Recorder(sample_blocks=...)`) gives them per access: each is scaled by the
    launch's counted accesses over the sample's; `unique_sectors` is extrapolated from how many
    new sectors each sampled block adds to the others' (see `_unique_in_launch`).
    """
    # lazy: gpukit.trace imports the backends, which import this module
    from ..trace import KINDS, SPACES, bank_conflicts, coalescing

    out: dict[str, Any] = {"observed": True, "traced_blocks": trace.traced_blocks}
    col = trace.columns
    space = trace.space_of_events()
    is_global = space == SPACES.index("global")
    atomic = is_global & (col["kind"] == KINDS.index("atomic"))
    scale_global = scale_shared = scale_atomic = 1.0
    if trace.sampled:
        counted_global = sum(site[3] for site in stats.sites)
        counted_shared = sum(site[4] for site in stats.sites)
        traced_shared = int((space == SPACES.index("shared")).sum())
        traced_global = int(is_global.sum() + (space == SPACES.index("const")).sum())
        scale_global = counted_global / max(traced_global, 1)
        scale_shared = counted_shared / max(traced_shared, 1)
        scale_atomic = stats.atomics / max(int(atomic.sum()), 1)
    coal = coalescing(trace).requests
    if len(coal["sectors"]):
        out["global_requests"] = round(len(coal["sectors"]) * scale_global)
        out["sectors"] = round(int(coal["sectors"].sum()) * scale_global)
    banks = bank_conflicts(trace).requests
    if len(banks["ways"]):
        out["shared_requests"] = round(len(banks["ways"]) * scale_shared)
        out["shared_wavefronts"] = round(int(banks["ways"].sum()) * scale_shared)
    array = col["array"][is_global].astype(np.int64)
    sector = col["address"][is_global] // SECTOR_BYTES
    if len(array):
        key = (array << 40) | sector
        unique = len(np.unique(key))
        if trace.sampled:
            unique = _unique_in_launch(trace, key, col["thread"][is_global], unique,
                                       scale_global)
        out["unique_sectors"] = min(unique, out.get("sectors", unique))
    if atomic.any():
        key = (col["array"][atomic].astype(np.int64) << 40) | col["element"][atomic]
        most = int(np.unique(key, return_counts=True)[1].max())
        out["max_same_address_atomics"] = min(round(most * scale_atomic), stats.atomics)
    else:
        out["max_same_address_atomics"] = 0
    return out


def _unique_in_launch(trace: Any, key: np.ndarray, thread: np.ndarray, unique: int,
                      scale: float) -> int:
    """Distinct global sectors of the whole launch, estimated from a sample of its blocks.

    With k >= 2 whole blocks sampled: each block beyond the first adds, on average, the sectors
    the sample's union has beyond one block, over k - 1 (blocks that read the same rows add none,
    blocks with disjoint data add a block's worth); the other blocks are assumed to add as many.
    Otherwise (one block, or a sample that filled up): the sample's count scaled by accesses.
    """
    k = trace.traced_blocks
    if k < 2 or not trace.complete:
        return round(unique * scale)
    block = thread // trace.threads_per_block
    per_block = np.mean([len(np.unique(key[block == b])) for b in np.unique(block)])
    added = (unique - per_block) / (k - 1)
    return round(unique + added * (trace.blocks - k))
