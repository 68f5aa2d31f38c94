"""Recording a simulated launch: every global, shared, local and constant access, per thread.

The simulator calls `Recorder.record` for each array access of each group of lock-step lanes
(one call = one dynamic execution of one source site); `Recorder.finish` turns the recording into
a `Trace`, a set of numpy columns, one row per thread access. The recording is bounded by
`max_events`: a launch that makes more accesses stops with `TraceTooLargeError`. It does not
record registers, arithmetic or warp intrinsics, only memory accesses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..devices import WARP_SIZE
from ..errors import (
    ArgumentTypeError,
    GpukitError,
    InvalidArgumentError,
    InvalidOptionError,
    LaunchConfigError,
    OptionTypeError,
)
from ..utils import ceil_div
from .columns import element_numbers, group_ids, local_groups

KINDS = ("read", "write", "atomic")
SPACES = ("global", "shared", "local", "const")
DEFAULT_MAX_EVENTS = 1_000_000
BYTES_PER_EVENT = 45  # host memory one recorded access takes (the columns of `Trace`)


class TraceError(GpukitError):
    """A trace was asked for where there is none, or of a backend that cannot trace."""


class TraceInputError(TraceError, InvalidArgumentError):
    """A trace function was given an impossible value: an unknown space or array name, a
    thread or block outside the launch, a negative phase, ..."""


class TraceTypeError(TraceInputError, ArgumentTypeError):
    """A trace function was given a value of the wrong type (not a Trace, a float thread, ...)."""


class TraceTooLargeError(TraceError, LaunchConfigError):
    """A traced launch makes more memory accesses than the recorder's `max_events`.

    It derives from LaunchConfigError (the launch is too large for tracing), which the simulator
    passes through from inside a kernel unchanged.
    """


@dataclass(frozen=True)
class ArrayInfo:
    """One array the traced kernel touched: its name in the kernel, memory space, shape, dtype."""

    label: str
    space: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def itemsize(self) -> int:
        return int(self.dtype.itemsize)


@dataclass(frozen=True)
class Access:
    """One memory access of one thread (a row of a `Trace`, readable)."""

    thread: tuple[int, int, int]
    block: tuple[int, int, int]
    array: str
    space: str
    index: tuple[int, ...]
    kind: str
    phase: int
    lineno: int
    text: str

    def __str__(self) -> str:
        where = f"{self.array}[{', '.join(map(str, self.index))}]"
        return (f"thread {self.thread} of block {self.block}: {self.kind} {where} "
                f"({self.space}, phase {self.phase}, line {self.lineno}: {self.text})")


class Recorder:
    """Collects one launch's accesses; pass as `launch_kernel(..., trace=recorder)`.

    `max_events` bounds the number of thread accesses recorded (about 45 bytes each).
    `sample_blocks` (an int) records a sample instead of the whole launch: about that many blocks
    spread evenly over the grid (every k-th block), and a sample that reaches `max_events` stops
    recording instead of stopping the launch. `gpukit.timing.time_kernel` samples this way so the
    timing model sees the kernel's coalescing, bank conflicts and contention at little cost.
    """

    def __init__(self, max_events: int = DEFAULT_MAX_EVENTS, sample_blocks: int | None = None):
        self.max_events = _positive_int("max_events", max_events)
        self.sample_blocks = (None if sample_blocks is None
                              else _positive_int("sample_blocks", sample_blocks))
        self._trace: Trace | None = None

    @classmethod
    def from_option(cls, option: Any, max_events: int = DEFAULT_MAX_EVENTS) -> Any:
        """The recorder a launch's `trace=` option asks for: None for None/False.

        True makes a Recorder, an int a Recorder with that max_events; a Recorder is used as
        it is.
        """
        if option is None or option is False:
            return None
        if option is True:
            return cls(max_events)
        if isinstance(option, (int, np.integer)) and not isinstance(option, (bool, np.bool_)):
            return cls(int(option))
        if isinstance(option, Recorder):
            return option
        raise InvalidOptionError(f"trace must be True, False, a max_events int or a "
                                 f"gpukit.trace.Recorder, got {option!r}")

    @property
    def capacity(self) -> int:
        return self.max_events

    @property
    def sample(self) -> int:
        """Blocks to sample, 0 for the whole launch (the simulator's `trace_sample`)."""
        return self.sample_blocks or 0

    def too_large(self, name: str, grid: tuple, block: tuple) -> TraceTooLargeError:
        """The error for a launch that made more accesses than `max_events`."""
        threads = int(np.prod(grid)) * int(np.prod(block))
        return TraceTooLargeError(
            f"kernel '{name}' launched with grid {tuple(grid)} x block {tuple(block)} "
            f"({threads:,} threads) makes more than {self.max_events:,} memory accesses, the "
            f"trace's limit (max_events={self.max_events:,}); the launch stopped partway, so its "
            "outputs are incomplete. Trace a smaller launch (a smaller problem or fewer blocks: "
            "the views look at one block or warp at a time), or raise the limit with "
            "gpukit.trace.tracing(backend, max_events=...) or "
            f"trace=gpukit.trace.Recorder(max_events=...) (about {BYTES_PER_EVENT} bytes of host "
            "memory per access)")

    # -- after the launch --------------------------------------------------------------------
    def collect(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                events: np.ndarray, slots: list, sites: Any, traced_blocks: int | None = None,
                complete: bool = True) -> Trace:
        """Build the `Trace` from the simulator's event rows (thread, site, slot, element in
        the slot, kind, phase, execution number) and its slot descriptions; `traced_blocks` and
        `complete` say how much of the launch a sampled trace holds."""
        events = np.asarray(events, np.int64).reshape(-1, 7)
        thread, site, slot, elem, kind, phase, seq = (events[:, k] for k in range(7))
        tpb = int(np.prod(block))
        arrays: list[ArrayInfo] = []
        number = np.zeros(len(events), np.int32)
        element = np.zeros(len(events), np.int64)
        address = np.zeros(len(events), np.int64)
        groups = []  # (selection, label, space, shape, dtype, element, address)
        for k in np.unique(slot):
            sel = slot == k
            info = slots[int(k)]
            e = elem[sel]
            if info.space == "local":
                groups += local_groups(info, sel, e, thread % tpb)
                continue
            if info.space == "global" and info.array is not None:
                arr = info.array
                size = arr.itemsize
                rel = e - arr.offset_bytes // size
                element[sel] = element_numbers(rel, tuple(arr.shape),
                                               tuple(s // size for s in arr.strides))
                address[sel] = e * size
                shape, dtype = tuple(arr.shape), np.dtype(arr.dtype)
            elif info.space == "shared" and len(info.shape) and info.dtype.itemsize \
                    and info.shape != (0,):
                element[sel] = e
                address[sel] = e * info.dtype.itemsize
                shape, dtype = tuple(info.shape), np.dtype(info.dtype)
            else:  # byte-tracked memory (dynamic shared)
                element[sel] = e
                address[sel] = e
                shape, dtype = (max(int(e.max()) + 1, 1),), np.dtype(np.uint8)
            groups.append((sel, info.label, info.space, shape, dtype, element[sel], address[sel]))
        firsts = [int(np.argmax(g[0])) for g in groups]
        for order in np.argsort(firsts, kind="stable"):  # arrays in the order they were touched
            sel, label, space, shape, dtype, el, ad = groups[order]
            number[sel], element[sel], address[sel] = len(arrays), el, ad
            arrays.append(ArrayInfo(label, space, shape, dtype))
        warp = (thread // tpb) * -(-tpb // 32) + (thread % tpb) // 32
        call = group_ids(site, seq, warp)  # a site's k-th execution, warp by warp
        columns = {
            "thread": thread.astype(np.int64), "array": number,
            "kind": kind.astype(np.int8), "element": element, "address": address,
            "phase": phase.astype(np.int32), "site": site.astype(np.int32),
            "call": np.asarray(call, np.int64).reshape(-1),
        }
        site_map = {int(s): sites[int(s)] for s in np.unique(site)}
        self._trace = Trace(name, tuple(grid), tuple(block), tuple(arrays), site_map, columns,
                            traced_blocks=traced_blocks, complete=complete)
        return self._trace

    def finish(self, launch_record: Any = None) -> Trace:
        """The `Trace` of the recorded launch."""
        if self._trace is None:
            raise TraceError("this recorder has recorded no launch; pass it as "
                             "launch_kernel(..., trace=recorder) and call finish() after")
        return self._trace


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise OptionTypeError(f"{name} must be a positive int, got {type(value).__name__} "
                              f"{value!r}")
    if value < 1:
        raise InvalidOptionError(f"{name} must be a positive int, got {value!r}")
    return int(value)


class Trace:
    """Every memory access of one launch, as numpy columns with one row per thread access.

    Columns: `thread` (global linear thread id: block number * threads per block + linear
    threadIdx, x fastest), `array` (a number into `arrays`), `kind` (into KINDS), `element`
    (row-major element number within the array), `address` (byte offset: from the allocation's
    start for global memory, from the block's or thread's copy for shared and local arrays),
    `phase` (barrier phase: syncthreads calls the block had passed), `site` (a source site,
    see `sites`), `call` (which dynamic execution of a site, shared by the lanes executing it).
    """

    def __init__(self, kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                 arrays: tuple[ArrayInfo, ...], sites: dict[int, Any],
                 columns: dict[str, np.ndarray], traced_blocks: int | None = None,
                 complete: bool = True):
        self.kernel = kernel
        self.grid = grid
        self.block = block
        self.arrays = arrays
        self.sites = sites
        self.columns = columns
        self.threads_per_block = block[0] * block[1] * block[2]
        self.blocks = grid[0] * grid[1] * grid[2]
        self.threads = self.threads_per_block * self.blocks
        # a sample (Recorder(sample_blocks=...)) holds some blocks, maybe not all their accesses
        self.traced_blocks = self.blocks if traced_blocks is None else traced_blocks
        self.complete = complete

    @property
    def sampled(self) -> bool:
        """True when the trace holds only part of the launch."""
        return self.traced_blocks < self.blocks or not self.complete

    def __len__(self) -> int:
        return len(self.columns["thread"])

    # -- coordinates ---------------------------------------------------------------------------
    def thread_id(self, thread: Any, block: Any = (0, 0, 0)) -> int:
        """The global linear thread id of threadIdx `thread` in blockIdx `block`."""
        t, b = xyz(thread, "thread"), xyz(block, "block")
        for what, value, limit in (("thread", t, self.block), ("block", b, self.grid)):
            if any(not 0 <= v < n for v, n in zip(value, limit)):
                raise TraceInputError(f"{what} {value} is outside this launch's "
                                      f"{'block' if what == 'thread' else 'grid'} {limit}")
        bx, by, _ = self.block
        gx, gy, _ = self.grid
        ltid = t[0] + bx * (t[1] + by * t[2])
        blk = b[0] + gx * (b[1] + gy * b[2])
        return blk * self.threads_per_block + ltid

    def coordinates(self, tid: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(threadIdx, blockIdx) of a global linear thread id."""
        if isinstance(tid, (bool, np.bool_)) or not isinstance(tid, (int, np.integer)):
            raise TraceTypeError(f"a thread id must be an int, got {type(tid).__name__} {tid!r}")
        if not 0 <= tid < self.threads:
            raise TraceInputError(f"thread id {tid} is outside this launch's {self.threads:,} "
                                  f"threads (0 to {self.threads - 1})")
        blk, t = divmod(int(tid), self.threads_per_block)
        bx, by, _ = self.block
        gx, gy, _ = self.grid
        return ((t % bx, (t // bx) % by, t // (bx * by)),
                (blk % gx, (blk // gx) % gy, blk // (gx * gy)))

    def space_of_events(self) -> np.ndarray:
        """Each event's memory space as a number into SPACES."""
        codes = np.array([SPACES.index(a.space) for a in self.arrays] or [0], np.int8)
        return codes[self.columns["array"]]

    def warp_of_events(self) -> np.ndarray:
        """Each event's warp, numbered across the launch (32 consecutive linear threads)."""
        tpb = self.threads_per_block
        per_block = ceil_div(tpb, WARP_SIZE)
        thread = self.columns["thread"]
        return (thread // tpb) * per_block + (thread % tpb) // WARP_SIZE

    # -- reading it ---------------------------------------------------------------------------
    def accesses(self, thread: Any = None, block: Any = None, space: str | None = None,
                 array: str | None = None) -> list[Access]:
        """The accesses, in order, of one thread (`thread` and `block`), one block, or all."""
        mask = np.ones(len(self), bool)
        if thread is not None:
            mask &= self.columns["thread"] == self.thread_id(thread, block or (0, 0, 0))
        elif block is not None:
            first = self.thread_id((0, 0, 0), block)
            mask &= self.columns["thread"] // self.threads_per_block \
                == first // self.threads_per_block
        if space is not None:
            mask &= self.space_of_events() == SPACES.index(check_space(space))
        if array is not None:
            if not isinstance(array, str):
                raise TraceTypeError(f"array must be the name of an array in the kernel, got "
                                     f"{type(array).__name__} {array!r}")
            numbers = [i for i, a in enumerate(self.arrays) if a.label == array]
            if not numbers:
                raise TraceInputError(f"no array {array!r} in this trace; its arrays are: "
                                 f"{', '.join(sorted({a.label for a in self.arrays}))}")
            mask &= np.isin(self.columns["array"], numbers)
        out = []
        col = self.columns
        for i in np.flatnonzero(mask):
            info = self.arrays[col["array"][i]]
            site = self.sites[int(col["site"][i])]
            t, b = self.coordinates(col["thread"][i])
            index = tuple(int(v) for v in np.unravel_index(int(col["element"][i]), info.shape))
            out.append(Access(t, b, info.label, info.space, index, KINDS[col["kind"][i]],
                              int(col["phase"][i]), site.lineno, site.text))
        return out

    def summary(self) -> str:
        """A few lines: the launch, and per array how many reads, writes and atomics."""
        lines = [(f"Trace of kernel '{self.kernel}': grid {self.grid} x block {self.block} "
                  f"({self.threads:,} threads), {len(self):,} memory accesses")]
        counts = np.zeros((max(len(self.arrays), 1), len(KINDS)), np.int64)
        np.add.at(counts, (self.columns["array"], self.columns["kind"]), 1)
        for number, info in enumerate(self.arrays):
            done = ", ".join(f"{counts[number, k]:,} {kind}s" for k, kind in enumerate(KINDS)
                             if counts[number, k])
            lines.append(f"  {info.label} ({info.space} {info.dtype.name} {info.shape}): {done}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Trace of '{self.kernel}': {len(self):,} accesses by {self.threads:,} threads, "
                f"grid {self.grid}, block {self.block}>")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.summary())


def xyz(value: Any, what: str) -> tuple[int, int, int]:
    """A thread or block index given as an int or a tuple of 1 to 3 ints, as (x, y, z)."""
    items = (value,) if isinstance(value, (int, np.integer)) else value
    if not isinstance(items, (tuple, list)) or not 1 <= len(items) <= 3 or any(
            isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))
            for v in items):
        raise TraceTypeError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    full = [int(v) for v in items] + [0] * (3 - len(items))
    return full[0], full[1], full[2]


def check_space(space: Any) -> str:
    """`space` if it is one of SPACES."""
    if not isinstance(space, str) or space not in SPACES:
        raise TraceInputError(f"space must be one of {', '.join(SPACES)}, got {space!r}")
    return space


def check_trace(trace: Any) -> Trace:
    """`trace` if it is a Trace (a launch's `record.trace`, or `tracing(...).trace`)."""
    if not isinstance(trace, Trace):
        raise TraceTypeError(
            f"expected a gpukit.trace.Trace (record.trace of a launch made with trace=True), got "
            f"{type(trace).__name__}")
    return trace
