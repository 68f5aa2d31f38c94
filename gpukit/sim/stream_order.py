"""What CUDA orders between streams, and the data races between streams it leaves.

The simulator runs each copy and kernel when the host issues it, in program order, so a
program that needs two operations on different streams to run one after the other gets the
right answer here even when nothing makes them: on a GPU they may run at the same time, and its
answer then depends on timing. `StreamOrder` follows the order CUDA guarantees (happens-before)
with a vector clock per stream (Lamport; Fidge and Mattern) and reports an operation that
touches memory another operation touches, at least one of them writing, where neither is
ordered before the other. The rules (CUDA Programming Guide, "Streams" and "Events"; CUDA
Runtime API, "Stream synchronization behavior"):

- operations on one stream run in the order they were issued;
- the legacy default stream (stream 0) waits for the work issued before on every stream, and
  work issued after, on any stream, waits for it (gpukit's streams are blocking streams); an
  event record or wait on it counts as such work;
- an event recorded on stream A and waited on by stream B (`stream_b.wait_event(event)`,
  `event.wait(stream_b)`) orders the work on A before the record before the work on B after
  the wait;
- the host waits in the device's, a stream's and an event's `synchronize()`, and in copies
  that block it (without a stream, or from or to pageable memory): what it issues afterwards
  runs after what it waited for.

Memory is compared by allocation and the elements each view covers (`numpy.shares_memory`), so
chunks of one array on different streams do not race. A kernel touches the device arrays it is
given (arrays in tuples too), writing those its code may write (`SimKernel.param_usage`);
arrays it reaches otherwise (captured globals, raw pointers) are not followed, nor is host code
reading or writing pinned memory a copy still in flight uses (the host's accesses are plain
numpy). Operations already ordered before all later work are forgotten; of the others, the
latest `MAX_PENDING` of each stream are kept.
"""

from __future__ import annotations

from collections import deque
from typing import Any, NamedTuple

import numpy as np

from ..errors import StreamRaceError

MAX_PENDING = 1024


class Access(NamedTuple):
    """A device array (a view) that an operation reads or writes; `role` names it in messages
    ("argument 'y'", "its source"; "" for a copy's device array)."""

    array: Any  # a gpukit.sim.device_array.DeviceArray
    writes: bool
    role: str = ""


class Operation(NamedTuple):
    stream: int
    seq: int  # its number among the operations issued on its stream, from 1
    what: str  # "kernel 'affine'", "a host-to-device copy"
    accesses: tuple[Access, ...]


class StreamOrder:
    """Happens-before between the operations issued on one simulated device's streams.

    Only operations on streams other than the default one can be pending (not yet ordered
    before all later work): an operation on the default stream is ordered after everything
    issued before it and before everything issued after it. When none is pending, nothing
    issued so far can race with anything issued later, and the clocks start empty again, so a
    program that synchronizes keeps no state but a counter per stream.
    """

    def __init__(self) -> None:
        self.latest: dict[int, int] = {}  # stream -> the seq of its latest operation
        self.clocks: dict[int, dict[int, int]] = {}  # stream -> what its next work follows
        self.host: dict[int, int] = {}  # what the host has waited for
        self.pending: dict[int, deque[Operation]] = {}  # stream -> its pending operations

    def issue(self, stream: int, what: str, accesses: list[Access] | tuple[Access, ...] = (), *,
              check: bool = True, blocking: bool = False) -> None:
        """An operation issued on `stream`: raises StreamRaceError when it races with an
        earlier one (`check`), and then starts afresh, as after a synchronize, so that one bug
        is reported once; `blocking`: the host waits for it."""
        seq = self.latest[stream] = self.latest.get(stream, 0) + 1
        if stream == 0:  # after all earlier work, before all later work
            self._forget_all()
            return
        if check and accesses:
            try:
                self._compare(stream, what, accesses)
            except StreamRaceError:
                self._forget_all()
                raise
        if accesses:
            ops = self.pending.setdefault(stream, deque(maxlen=MAX_PENDING))
            ops.append(Operation(stream, seq, what, tuple(accesses)))
        if blocking:
            self.host_waits(self._through(stream))

    def _compare(self, stream: int, what: str, accesses: list[Access] | tuple) -> None:
        """Check an operation on `stream` against the other streams' pending operations it
        does not follow (each stream's from the latest down to those it follows)."""
        clock = self._clock(stream)
        for other, ops in self.pending.items():
            if other == stream:  # in issue order
                continue
            ordered = clock.get(other, 0)
            for op in reversed(ops):
                if op.seq <= ordered:
                    break
                _check(op, stream, what, accesses)

    def record(self, stream: int) -> dict[int, int]:
        """An event recorded on `stream`: the work ordered before it. (The record is work on
        the stream: on the default stream, after all earlier work and before all later work.)"""
        if stream == 0:
            self._forget_all()
            return dict(self.latest)
        return self._through(stream)

    def wait(self, stream: int, recorded: dict[int, int]) -> None:
        """`stream` waits for an event: its later work runs after what the event follows. (The
        wait is work on the stream: on the default stream, after all earlier work.)"""
        if stream == 0:
            self._forget_all()
        elif self.pending:
            _join(self._clock(stream), recorded)

    def host_waits(self, recorded: dict[int, int]) -> None:
        """The host waits for an event."""
        _join(self.host, recorded)
        self._retire()

    def synchronize(self, stream: int | None = None) -> None:
        """The host waits for one stream, or (None, or the legacy default stream 0, as the
        modeled timeline has it) for all of them."""
        if stream is None or stream == 0:
            self._forget_all()
        else:
            self.host_waits(self._through(stream))

    def _clock(self, stream: int) -> dict[int, int]:
        """What work issued on `stream` now follows, besides its own earlier work and what the
        host waited for (which `_retire` has dropped from `pending`): the events it waited on."""
        return self.clocks.setdefault(stream, {})

    def _through(self, stream: int) -> dict[int, int]:
        """The work ordered before the end of what `stream` has been given so far."""
        return {**self._clock(stream), stream: self.latest.get(stream, 0)}

    def _retire(self) -> None:
        """Forget the operations the host waited for (every later operation follows them)."""
        for stream, ops in list(self.pending.items()):
            done = self.host.get(stream, 0)
            while ops and ops[0].seq <= done:
                ops.popleft()
            if not ops:
                del self.pending[stream]
        if not self.pending:
            self._forget_all()

    def _forget_all(self) -> None:
        """Everything issued so far is ordered before what comes next."""
        self.pending.clear()
        self.clocks.clear()
        self.host.clear()


def _join(into: dict[int, int], other: dict[int, int]) -> None:
    for stream, seq in other.items():
        if into.get(stream, 0) < seq:
            into[stream] = seq


def _check(earlier: Operation, stream: int, what: str, accesses: list[Access]) -> None:
    for mine in accesses:
        for theirs in earlier.accesses:
            if not (mine.writes or theirs.writes):
                continue
            span = _shared_bytes(mine.array, theirs.array)
            if span is None:
                continue
            first = "writes" if mine.writes else "reads"
            second = "writes" if theirs.writes else "reads"
            lo, hi = span
            raise StreamRaceError(
                f"data race between streams: {what} on stream {stream} {first} "
                f"{_named(mine)}, and {earlier.what} on stream {earlier.stream}, issued "
                f"before it, {second} {_named(theirs)}: they share bytes {lo:,}-{hi - 1:,} of one "
                f"allocation and nothing orders the two, so on a GPU they may run at the same "
                f"time. Issue both on one stream, make the second's stream wait for an event "
                f"recorded after the first (s2.wait_event(s1.record_event()); in numba-cuda "
                f"ev = cuda.event(); ev.record(s1); ev.wait(s2)), or synchronize between them",
                other_stream=earlier.stream, stream=stream)


def _extent(array: Any) -> tuple[int, int]:
    """The bytes of its allocation an array's elements span: [lo, hi)."""
    lo = hi = array.offset_bytes
    for n, stride in zip(array.shape, array.strides):
        step = (n - 1) * stride
        lo, hi = (lo + step, hi) if step < 0 else (lo, hi + step)
    return lo, hi + array.itemsize


def _shared_bytes(a: Any, b: Any) -> tuple[int, int] | None:
    """The byte range of their allocation two arrays both cover, or None where they share no
    element (of different or freed allocations, apart, or interleaved)."""
    if a.alloc is not b.alloc or a.is_freed or a.size == 0 or b.size == 0:
        return None
    (alo, ahi), (blo, bhi) = _extent(a), _extent(b)
    lo, hi = max(alo, blo), min(ahi, bhi)
    if lo >= hi:
        return None
    try:
        shared = np.shares_memory(a.host_view(), b.host_view(), max_work=100_000)
    except np.exceptions.TooHardError:
        shared = True  # too costly to tell: assume they share an element
    return (lo, hi) if shared else None


def _named(access: Access) -> str:
    """An access's array as a message names it: "argument 'y', a (1024,) float32 device
    array"."""
    array = access.array
    view = " (a view of a larger one)" if array.is_view else ""
    described = f"a {array.shape} {array.dtype} device array{view}"
    return f"{access.role}, {described}" if access.role else described
