"""Metrics computed from a `Trace`: per-thread access counts, coalescing and bank conflicts.

Coalescing and bank conflicts follow Nsight Compute's definitions: a warp-wide request is one
execution of one access site by the active lanes of one warp. Global requests are served in
32-byte sectors (efficiency = the fewest sectors the distinct bytes requested could fit in /
the sectors touched); shared requests by 32 banks of 4-byte words, a bank serving one distinct
word per cycle (lanes reading the same word get a broadcast). It models no caches: every request
counts, as it does at L1. Allocations are taken as 256-byte aligned, as cudaMalloc's are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..devices import BANK_WIDTH_BYTES, SECTOR_BYTES, SHARED_MEM_BANKS, WARP_SIZE
from ..utils import ceil_div
from .recorder import KINDS, SPACES, Trace, TraceInputError, TraceTypeError, check_trace

BANKS = SHARED_MEM_BANKS
BANK_BYTES = BANK_WIDTH_BYTES
COUNTED = (("global", "read"), ("global", "write"), ("global", "atomic"),
           ("shared", "read"), ("shared", "write"), ("shared", "atomic"))


# -- per-thread counts ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class ThreadCounts:
    """Per thread of the launch (global linear thread id order): accesses by space and kind.

    Constant and local memory are not counted: exercises budget global and shared traffic.
    """

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    counts: dict[str, np.ndarray]  # "global_reads", ..., "shared_atomics" -> one int per thread
    _trace: Trace

    def __getitem__(self, name: str) -> np.ndarray:
        if not isinstance(name, str) or name not in self.counts:
            raise TraceInputError(f"no count {name!r}; the counts are: {', '.join(self.counts)}")
        return self.counts[name]

    def of(self, thread: Any, block: Any = (0, 0, 0)) -> dict[str, int]:
        """The counts of threadIdx `thread` in blockIdx `block`."""
        tid = self._trace.thread_id(thread, block)
        return {name: int(c[tid]) for name, c in self.counts.items()}

    def max(self) -> dict[str, int]:
        """The most any one thread did of each (what a budget of "at most N per thread" checks)."""
        return {name: int(c.max(initial=0)) for name, c in self.counts.items()}

    def total(self) -> dict[str, int]:
        return {name: int(c.sum()) for name, c in self.counts.items()}

    def summary(self) -> str:
        threads = len(next(iter(self.counts.values())))
        lines = [(f"Per-thread memory accesses of kernel '{self.kernel}' (grid {self.grid} x "
                  f"block {self.block}, {threads:,} threads):")]
        rows = []
        for name, c in self.counts.items():
            if name.endswith("atomics") and not c.any():
                continue
            low = int(c.min()) if c.size else 0  # min(initial=0) would always say 0
            rows.append([name.replace("_", " "), str(low), str(c.max(initial=0)),
                         f"{c.sum():,}"])
        lines += _table(["", "min", "max", "total"], rows, "lrrr")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ThreadCounts of '{self.kernel}': {self.max()}>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.summary())


def per_thread_counts(trace: Trace) -> ThreadCounts:
    """Global and shared reads, writes and atomics of every thread of the traced launch."""
    trace = check_trace(trace)
    space = trace.space_of_events()
    col = trace.columns
    counts = {}
    for space_name, kind in COUNTED:
        mask = (space == SPACES.index(space_name)) & (col["kind"] == KINDS.index(kind))
        counts[f"{space_name}_{kind}s"] = np.bincount(col["thread"][mask],
                                                      minlength=trace.threads)
    return ThreadCounts(trace.kernel, trace.grid, trace.block, counts, trace)


# -- warp requests ---------------------------------------------------------------------------------
class _Requests:
    """The warp-wide requests of one memory space: events grouped by (call, warp)."""

    def __init__(self, trace: Trace, space: str):
        self.events = np.flatnonzero(trace.space_of_events() == SPACES.index(space))
        col = trace.columns
        warps = trace.blocks * ceil_div(trace.threads_per_block, WARP_SIZE)
        warp = trace.warp_of_events()[self.events]
        key = col["call"][self.events] * warps + warp
        _, first, self.of_event = np.unique(key, return_index=True, return_inverse=True)
        self.of_event = self.of_event.reshape(-1)
        self.first = self.events[first]  # one event of each request, for its site, array, kind
        self.count = len(first)
        self.warp = warp[first]
        self.site = col["site"][self.first]
        self.array = col["array"][self.first]
        self.kind = col["kind"][self.first]
        itemsize = np.array([a.itemsize for a in trace.arrays] or [1], np.int64)
        self.itemsize = itemsize[self.array]
        self.address = col["address"][self.events]
        self.event_itemsize = itemsize[col["array"][self.events]]
        self.lanes = np.bincount(self.of_event, minlength=self.count)

    def distinct_units(self, unit_bytes: int) -> tuple[np.ndarray, np.ndarray]:
        """(request, unit) pairs, distinct, of the `unit_bytes`-sized units the bytes fall in."""
        first = self.address // unit_bytes
        last = (self.address + self.event_itemsize - 1) // unit_bytes
        span = last - first + 1
        req = np.repeat(self.of_event, span)
        starts = np.repeat(np.cumsum(span) - span, span)
        unit = np.repeat(first, span) + (np.arange(len(req)) - starts)
        return _distinct_pairs(req, unit)

    def distinct_bytes(self) -> np.ndarray:
        """Per request: the bytes of its distinct elements."""
        req, _ = _distinct_pairs(self.of_event, self.address)
        return np.bincount(req, minlength=self.count) * self.itemsize


def _distinct_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    keep = np.ones(len(a), bool)
    keep[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[keep], b[keep]


def _site_groups(trace: Trace, req: _Requests) -> list[tuple[tuple[int, int, int], np.ndarray]]:
    """Requests grouped by (site, kind, array), in source order."""
    keys: dict[tuple[int, int, int], list[int]] = {}
    for i, key in enumerate(zip(req.site.tolist(), req.kind.tolist(), req.array.tolist())):
        keys.setdefault(key, []).append(i)
    order = sorted(keys, key=lambda k: (trace.sites[k[0]].lineno, k[0], k[1], k[2]))
    return [(k, np.array(keys[k], np.int64)) for k in order]


@dataclass(frozen=True)
class SiteCoalescing:
    """Global memory requests of one access site (one subscript in the source)."""

    lineno: int
    text: str
    array: str
    kind: str
    requests: int
    sectors: int
    min_sectors: int

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests

    @property
    def min_sectors_per_request(self) -> float:
        return self.min_sectors / self.requests

    @property
    def efficiency(self) -> float:
        """Fewest sectors the requested bytes needed / sectors touched (1.0 = fully coalesced)."""
        return self.min_sectors / self.sectors if self.sectors else 1.0


class _Report:
    kernel: str
    sites: tuple

    def site(self, key: str | int) -> Any:
        """The summary of the access site whose text (e.g. "a[i]") or line number is `key`."""
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (str, int, np.integer)):
            raise TraceTypeError(f"a site is given by its text (such as 'a[i]') or its line "
                                 f"number, got {type(key).__name__} {key!r}")
        found = [s for s in self.sites if key in (s.text, s.lineno)]
        if len(found) == 1:
            return found[0]
        known = ", ".join(f"{s.text!r} (line {s.lineno})" for s in self.sites) or "none"
        what = "several sites match" if found else "no site matches"
        raise TraceInputError(f"{what} {key!r}; the sites are: {known}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of '{self.kernel}': {len(self.sites)} access sites>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.summary())

    def summary(self) -> str:  # pragma: no cover - defined by subclasses
        raise NotImplementedError


@dataclass(frozen=True, eq=False, repr=False)
class CoalescingReport(_Report):
    """Per warp request and per site: 32-byte sectors touched against the minimum."""

    kernel: str
    sites: tuple[SiteCoalescing, ...]
    requests: dict[str, np.ndarray]  # per request: site, array, kind, warp, lanes, bytes, ...

    @property
    def sectors(self) -> int:
        return int(self.requests["sectors"].sum())

    @property
    def min_sectors(self) -> int:
        return int(self.requests["min_sectors"].sum())

    @property
    def efficiency(self) -> float:
        return self.min_sectors / self.sectors if self.sectors else 1.0

    def summary(self) -> str:
        lines = [(f"Global memory coalescing of kernel '{self.kernel}' (32-byte sectors per "
                  "warp request):")]
        rows = [[str(s.lineno), s.text, s.kind, f"{s.requests:,}", f"{s.sectors_per_request:.1f}",
                 f"{s.min_sectors_per_request:.1f}", f"{s.efficiency:.1%}"] for s in self.sites]
        lines += _table(["line", "access", "kind", "requests", "sectors/req", "ideal/req",
                         "efficiency"], rows, "rllrrrr")
        if not self.sites:
            lines.append("  (no global memory accesses)")
        else:
            lines.append(f"overall: {self.sectors:,} sectors touched, {self.min_sectors:,} "
                         f"needed: {self.efficiency:.1%} efficient")
        return "\n".join(lines)


def coalescing(trace: Trace) -> CoalescingReport:
    """Sectors per warp-wide global access, and their efficiency, per request and per site."""
    trace = check_trace(trace)
    req = _Requests(trace, "global")
    pairs, _ = req.distinct_units(SECTOR_BYTES)
    sectors = np.bincount(pairs, minlength=req.count)
    nbytes = req.distinct_bytes()
    min_sectors = ceil_div(nbytes, SECTOR_BYTES)
    requests = {"site": req.site, "array": req.array, "kind": req.kind, "warp": req.warp,
                "lanes": req.lanes, "bytes": nbytes, "sectors": sectors,
                "min_sectors": min_sectors}
    sites = []
    for (site, kind, array), idx in _site_groups(trace, req):
        s = trace.sites[site]
        sites.append(SiteCoalescing(s.lineno, s.text, trace.arrays[array].label, KINDS[kind],
                                    len(idx), int(sectors[idx].sum()),
                                    int(min_sectors[idx].sum())))
    return CoalescingReport(trace.kernel, tuple(sites), requests)


# -- shared memory bank conflicts ---------------------------------------------------------------
@dataclass(frozen=True)
class SiteBankConflicts:
    """Shared memory requests of one access site.

    `max_ways` is the worst request's degree: the most distinct 4-byte words one bank had to
    serve (1 = no conflict for 4-byte data; 64-bit data needs 2 even without a conflict, which is
    why `extra_wavefronts`, the degree above the minimum summed over requests, counts conflicts).
    """

    lineno: int
    text: str
    array: str
    kind: str
    requests: int
    max_ways: int
    wavefronts: int
    ideal_wavefronts: int

    @property
    def mean_ways(self) -> float:
        return self.wavefronts / self.requests

    @property
    def extra_wavefronts(self) -> int:
        return self.wavefronts - self.ideal_wavefronts


@dataclass(frozen=True, eq=False, repr=False)
class BankConflictReport(_Report):
    """Per warp request and per site: the degree of shared memory bank conflicts."""

    kernel: str
    sites: tuple[SiteBankConflicts, ...]
    requests: dict[str, np.ndarray]  # per request: site, array, kind, warp, lanes, words, ways...

    @property
    def extra_wavefronts(self) -> int:
        """Bank conflicts as Nsight Compute counts them: wavefronts beyond the minimum."""
        return int((self.requests["ways"] - self.requests["ideal"]).sum())

    def summary(self) -> str:
        lines = [(f"Shared memory bank conflicts of kernel '{self.kernel}' (32 banks of 4 "
                  "bytes, per warp request):")]
        rows = [[str(s.lineno), s.text, s.kind, f"{s.requests:,}", str(s.max_ways),
                 f"{s.mean_ways:.2f}", f"{s.extra_wavefronts:,}"] for s in self.sites]
        lines += _table(["line", "access", "kind", "requests", "max ways", "mean ways",
                         "extra wavefronts"], rows, "rllrrrr")
        if not self.sites:
            lines.append("  (no shared memory accesses)")
        else:
            lines.append(f"total: {self.extra_wavefronts:,} extra wavefronts (bank conflicts) "
                         f"in {len(self.requests['ways']):,} requests")
        return "\n".join(lines)


def bank_conflicts(trace: Trace) -> BankConflictReport:
    """The degree of bank conflicts of each warp-wide shared access, per request and per site."""
    trace = check_trace(trace)
    req = _Requests(trace, "shared")
    pair_req, word = req.distinct_units(BANK_BYTES)
    words = np.bincount(pair_req, minlength=req.count)
    # distinct words per (request, bank): the pairs are distinct already, so count them
    per_bank = np.bincount(pair_req * BANKS + word % BANKS, minlength=req.count * BANKS)
    ways = per_bank.reshape(req.count, BANKS).max(axis=1, initial=0) if req.count \
        else np.zeros(0, np.int64)
    ideal = ceil_div(words, BANKS)
    requests = {"site": req.site, "array": req.array, "kind": req.kind, "warp": req.warp,
                "lanes": req.lanes, "words": words, "ways": ways, "ideal": ideal}
    sites = []
    for (site, kind, array), idx in _site_groups(trace, req):
        s = trace.sites[site]
        sites.append(SiteBankConflicts(s.lineno, s.text, trace.arrays[array].label, KINDS[kind],
                                       len(idx), int(ways[idx].max()), int(ways[idx].sum()),
                                       int(ideal[idx].sum())))
    return BankConflictReport(trace.kernel, tuple(sites), requests)


def _table(headers: list[str], rows: list[list[str]], align: str) -> list[str]:
    """Text table lines; `align` has an "l" or "r" per column."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    out = []
    for row in [headers] + rows:
        cells = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align)]
        out.append("  " + "  ".join(cells).rstrip())
    return out
