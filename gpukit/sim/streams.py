"""The simulator's streams, events and pinned host memory, and the modeled timeline they build.

Kernels and copies really run at once, in program order, on the CPU; what this module adds is a
*modeled* schedule of the same work on the emulated device, from durations the backend gives
(the roofline and link model of `gpukit.timing.model`). Each copy or kernel gets a start and
end in modeled milliseconds on its stream: work on one stream runs in order, work on different
streams overlaps where the device's engines allow (one compute engine; `profile.copy_engines`
copy engines: with two or more, host-to-device and device-to-host copies have one each, with one
they share it). The legacy default stream (stream 0) waits for all streams and all streams wait
for it. The host issues work instantly and waits only where CUDA makes it wait: synchronous
copies, copies from or to pageable memory, and synchronisations. Nothing here is measured, and
caches, coalescing, occupancy and clocks are not modeled (see `gpukit.timing`).

The timeline also keeps what CUDA orders between its streams (`gpukit.sim.stream_order`): a copy
or kernel that touches memory another one on another stream touches, one of them writing, with
nothing ordering the two, raises StreamRaceError (the `races` check).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError
from .log import RecordLog
from .memory import DeviceMemory, TransferRecord
from .stream_order import Access, StreamOrder

MAX_TIMELINE_EVENTS = 100_000  # the oldest events are dropped beyond this
COPY_KINDS = ("h2d", "d2h", "d2d")
COPY_NAMES = {"h2d": "a host-to-device copy", "d2h": "a device-to-host copy",
              "d2d": "a device-to-device copy"}


# -- pinned host memory ------------------------------------------------------------------------
class PinnedArray(np.ndarray):
    """Host memory the simulator treats as pinned (page-locked): a numpy array, marked.

    Views of it are pinned too; results of arithmetic on it are new, ordinary (pageable) arrays.
    """

    _gpukit_pinned_root = False

    def __array_wrap__(self, obj: Any, context: Any = None, return_scalar: bool = False) -> Any:
        if return_scalar:  # numpy >= 2 asks for a scalar result this way
            return obj[()]
        if not isinstance(obj, np.ndarray):
            return obj
        if (obj.ctypes.data, obj.shape, obj.strides) == (self.ctypes.data, self.shape,
                                                         self.strides):
            return self  # an in-place operation (a += 1, out=a): still the pinned array
        return obj.view(np.ndarray)


def pinned_array(shape: tuple[int, ...], dtype: np.dtype) -> PinnedArray:
    """A zeroed host array that transfers treat as pinned (like numba's cuda.pinned_array)."""
    array = np.zeros(shape, dtype).view(PinnedArray)
    array._gpukit_pinned_root = True
    return array


def is_pinned(array: Any) -> bool:
    """Whether `array` is (a view of) memory from `pinned_array`."""
    while isinstance(array, np.ndarray):
        if isinstance(array, PinnedArray) and array._gpukit_pinned_root:
            return True
        array = array.base
    return False


# -- the timeline ------------------------------------------------------------------------------
@dataclass(frozen=True)
class TimelineEvent:
    """One operation on the modeled timeline (times in modeled milliseconds, never measured)."""

    kind: str             # "h2d", "d2h", "d2d" or "kernel"
    stream: int           # 0: the default stream
    engine: str           # "compute", "copy", "copy h2d" or "copy d2h"
    start_ms: float
    end_ms: float
    nbytes: int | None = None
    kernel: str | None = None
    pinned: bool | None = None
    label: str = "modeled"

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms


class SimEvent:
    """A point on a stream's modeled timeline; `a.elapsed_ms(b)` is modeled time from a to b."""

    kind = "modeled"
    note = "the modeled timeline of the simulated device, not measured"

    def __init__(self, timeline: Timeline, stream: int, time_ms: float,
                 clock: dict[int, int] | None = None):
        self.timeline, self.stream, self.time_ms = timeline, stream, time_ms
        self.clock = clock or {}  # the work ordered before it (StreamOrder.record)

    def elapsed_ms(self, other: SimEvent) -> float:
        if not isinstance(other, SimEvent) or other.timeline is not self.timeline:
            raise ArgumentTypeError("elapsed_ms needs another event recorded on the same backend")
        return other.time_ms - self.time_ms

    elapsed_time = elapsed_ms  # numba's name

    def synchronize(self) -> None:
        """The host waits until the event's modeled time."""
        self.timeline.host_ms = max(self.timeline.host_ms, self.time_ms)
        self.timeline.order.host_waits(self.clock)

    def query(self) -> bool:
        """Simulated work has always finished (it ran when it was issued)."""
        return True

    def __repr__(self) -> str:
        return f"<gpukit simulated event on stream {self.stream} at {self.time_ms:.4g} ms modeled>"


class SimStream:
    """A simulated CUDA stream: pass it as `stream=` to copies and launches, or k[g, b, s]."""

    external = False  # True for one made from a handle (numba-cuda's `cuda.external_stream`)

    def __init__(self, timeline: Timeline, stream_id: int, handle: int | None = None):
        self.timeline, self.id = timeline, stream_id
        self._handle = stream_id if handle is None else handle

    def synchronize(self) -> None:
        """The host waits for the stream's modeled work to end."""
        self.timeline.synchronize(self.id)

    def record_event(self) -> SimEvent:
        return self.timeline.record_event(self.id)

    def wait_event(self, event: SimEvent) -> None:
        """Later work on this stream starts after `event` (a cross-stream dependency)."""
        self.timeline.wait_event(self.id, event)

    @contextmanager
    def auto_synchronize(self) -> Iterator[SimStream]:
        yield self
        self.synchronize()

    def add_callback(self, callback: Any, arg: Any = None) -> None:
        """numba-cuda's host callback, `callback(stream, status, arg)`: simulated work is done
        when it is issued, so it runs now (status None: no error)."""
        callback(self, None, arg)

    def async_done(self) -> Any:
        """An asyncio future that is already done (simulated work finishes when issued)."""
        import asyncio
        future = asyncio.get_event_loop().create_future()
        future.set_result(self)
        return future

    @property
    def handle(self) -> int:
        """A stand-in for the CUstream handle: the stream's number (0: the default stream), or
        the handle an external stream was made from."""
        return self._handle

    def __int__(self) -> int:
        return self._handle

    def __repr__(self) -> str:
        return f"<gpukit simulated stream {self.id}>"


class SimCudaEvent:
    """numba-cuda's `cuda.event()`: made first, then recorded on a stream; times are modeled.

    `record(stream)` places it at the end of the work issued so far on `stream` on the modeled
    timeline; `elapsed_time(end)` is the modeled milliseconds between two recorded events.
    """

    kind = "modeled"
    note = SimEvent.note

    def __init__(self, timeline: Timeline, timing: bool = True):
        self.timeline, self.timing = timeline, bool(timing)
        self.point: SimEvent | None = None

    def record(self, stream: Any = 0) -> None:
        self.point = self.timeline.record_event(self.timeline.stream_id(stream or None))

    def synchronize(self) -> None:
        if self.point is not None:
            self.point.synchronize()

    def wait(self, stream: Any = 0) -> None:
        """Later work on `stream` starts after this event."""
        if self.point is not None:
            self.timeline.wait_event(self.timeline.stream_id(stream or None), self.point)

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: SimCudaEvent) -> float:
        """Modeled milliseconds from this event to `end` (both recorded, with timing)."""
        if not isinstance(end, SimCudaEvent) or end.timeline is not self.timeline:
            raise ArgumentTypeError("elapsed_time needs another event of the same simulated "
                                    "device (cuda.event())")
        for event in (self, end):
            if not event.timing:
                raise ArgumentTypeError("elapsed_time: this event was made with timing=False; "
                                        "make it with cuda.event(timing=True)")
            if event.point is None:
                raise ArgumentTypeError("elapsed_time: an event was never recorded; call "
                                        "event.record() (or record(stream)) first")
        return end.point.time_ms - self.point.time_ms

    def __repr__(self) -> str:
        where = "not recorded" if self.point is None else f"at {self.point.time_ms:.4g} ms modeled"
        return f"<gpukit simulated event, {where}>"


class Timeline:
    """The modeled schedule of one simulated device's copies and kernels."""

    def __init__(self, profile: Any, max_events: int = MAX_TIMELINE_EVENTS):
        self.profile = profile
        self.events = RecordLog(limit=max_events)  # the latest events' fields (see `listed`)
        self.streams_made = 0  # streams are numbered 1, 2, ... in the order they are made
        self.foreign: dict[int, int] = {}  # external streams' handles -> their numbers
        self._held: list[tuple] | None = None
        self.order = StreamOrder()  # kept across reset(): it is not the modeled clock
        self.check_races = True  # the backend's `races` check, for copies
        self.reset()

    def reset(self) -> None:
        """Forget all events and start the modeled clock at 0 (streams stay valid)."""
        self.events.clear()
        self.host_ms = 0.0
        self.tails: dict[int, float] = {}
        self.engine_free: dict[str, float] = {}

    def new_stream(self) -> SimStream:
        self.streams_made += 1
        return SimStream(self, self.streams_made)

    def external_stream(self, handle: int) -> SimStream:
        """A stream from a handle (`int(stream)`, as the CUDA Array Interface passes it): the
        same stream when one of this timeline's streams has that number (or was made from that
        handle), else a new one that keeps the handle (numba-cuda's `cuda.external_stream`)."""
        handle = int(handle)
        if 0 < handle <= self.streams_made:
            stream = SimStream(self, handle)
        else:
            if handle not in self.foreign:
                self.foreign[handle] = self.new_stream().id
            stream = SimStream(self, self.foreign[handle], handle)
        stream.external = True
        return stream

    def stream_id(self, stream: Any) -> int:
        """0 for the default stream (None or 0), the id of one of this timeline's streams."""
        if stream is None or (isinstance(stream, int) and not isinstance(stream, bool)
                              and stream == 0):
            return 0
        if isinstance(stream, SimStream) and stream.timeline is self:
            return stream.id
        if isinstance(stream, SimStream):
            raise ArgumentTypeError("this stream belongs to another simulated device; use "
                            "backend.stream() of the backend you launch or copy on")
        raise ArgumentTypeError(f"stream must be backend.stream() or 0 (the default stream), got "
                        f"{type(stream).__name__}")

    def engine(self, kind: str) -> str:
        if kind in ("kernel", "d2d"):  # device-to-device copies use the SMs and device memory
            return "compute"
        return f"copy {kind}" if self.profile.copy_engines >= 2 else "copy"

    def _ready_ms(self, stream: int) -> float:
        """When work issued now on `stream` may start (stream order, default-stream rules)."""
        ready = max(self.host_ms, self.tails.get(stream, 0.0))
        if stream == 0:
            return max([ready, *self.tails.values()])
        return max(ready, self.tails.get(0, 0.0))

    def _tail(self, stream: int) -> float:
        return max([0.0, *self.tails.values()]) if stream == 0 else self.tails.get(stream, 0.0)

    def schedule(self, kind: str, stream: int, duration_ms: float, *, blocking: bool,
                 nbytes: int | None = None, kernel: str | None = None,
                 pinned: bool | None = None) -> None:
        """Place one operation; `blocking`: the host waits for it to end."""
        engine = self.engine(kind)
        start = max(self._ready_ms(stream), self.engine_free.get(engine, 0.0))
        end = start + duration_ms
        self.engine_free[engine] = end
        self.tails[stream] = end
        if blocking:
            self.host_ms = end
        # kept as a plain tuple, a TimelineEvent's fields: the garbage collector stops tracking
        # a tuple of plain values at its first collection, where an object it tracks for good
        # (10,000 kept) adds to the time of every full collection
        self.events.append((kind, stream, engine, start, end, nbytes, kernel, pinned))

    def listed(self) -> list[TimelineEvent]:
        """The kept events, oldest first."""
        return [TimelineEvent(*event) for event in self.events]

    def copy(self, record: TransferRecord, stream: Any = None,
             accesses: tuple[Access, ...] = ()) -> None:
        """A transfer; synchronous without a stream or from/to pageable memory (CUDA stages it).
        `accesses`: the device arrays it reads and writes, checked against other streams' work."""
        sid = self.stream_id(stream)
        blocking = record.direction != "d2d" and (stream is None or sid == 0 or not record.pinned)
        self.order.issue(sid, COPY_NAMES[record.direction], accesses,
                         check=self.check_races, blocking=blocking)
        args = (record.direction, sid, record.modeled_ms)
        fields = {"nbytes": record.nbytes, "pinned": record.pinned}
        if self._held is not None and record.direction == "d2h":
            self._held.append((args, blocking, fields))  # copied back after the kernel runs
        else:
            self.schedule(*args, blocking=blocking, **fields)

    def issue_kernel(self, name: str, stream: int, accesses: list[Access],
                     check: bool) -> None:
        """A kernel about to run on stream number `stream`: checked against other streams'
        work (StreamRaceError)."""
        self.order.issue(stream, f"kernel '{name}'", accesses, check=check)

    def kernel(self, name: str, stream: Any, duration_ms: float) -> None:
        """A kernel launch: asynchronous for the host."""
        self.schedule("kernel", self.stream_id(stream), duration_ms, blocking=False,
                             kernel=name)

    @contextmanager
    def launching(self) -> Iterator[None]:
        """Hold the device-to-host copies made during a launch until the kernel is placed."""
        self._held = []
        try:
            yield
        finally:
            held, self._held = self._held, None
            for args, blocking, fields in held:
                self.schedule(*args, blocking=blocking, **fields)

    def record_event(self, stream: int) -> SimEvent:
        return SimEvent(self, stream, max(self.host_ms, self._tail(stream)),
                        self.order.record(stream))

    def wait_event(self, stream: int, event: SimEvent) -> None:
        if not isinstance(event, SimEvent) or event.timeline is not self:
            raise ArgumentTypeError("wait_event needs an event recorded on the same backend")
        self.tails[stream] = max(self.tails.get(stream, 0.0), event.time_ms)
        self.order.wait(stream, event.clock)

    def synchronize(self, stream: int | None = None) -> None:
        """The host waits for one stream (0: the default stream, hence all) or the device."""
        self.host_ms = max(self.host_ms, self._tail(0 if stream is None else stream))
        self.order.synchronize(stream)


class TimelineMemory(DeviceMemory):
    """DeviceMemory whose transfers also go on the modeled timeline (on `stream`, if given)."""

    def __init__(self, *args: Any, timeline: Timeline, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.timeline = timeline

    def record_transfer(self, direction: str, nbytes: int, pinned: bool = False,
                        implicit: bool = False, stream: Any = None,
                        accesses: tuple[Access, ...] = ()) -> TransferRecord:
        """Log a copy and place it on the timeline; `accesses`: the device arrays it read
        and wrote (StreamRaceError where another stream's work touches them unordered)."""
        self.timeline.stream_id(stream)  # refuse a foreign stream before recording anything
        record = super().record_transfer(direction, nbytes, pinned, implicit)
        self.timeline.copy(record, stream, accesses)
        return record
