"""Streams, events, pinned memory, asynchronous copies and the launch log of the CUDA backend.

Functions of a `CUDABackend` over numba-cuda: `stream` returns numba's own stream (so it works
with every numba API) with `record_event()` added; `CUDAEvent.elapsed_ms` reads CUDA events. Under
Numba's CUDA simulator events carry no time (numba returns -1.0) and everything runs
synchronously, so events there keep the host clock instead and say so (kind "wall"). Nothing here
models a GPU: the simulator's model lives in `gpukit.timing.model` and `gpukit.sim.streams`.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError
from ..launches import LaunchRecord
from ..occupancy import occupancy
from ..utils import as_choice, as_int
from ._cuda_hold import event_times
from .validate import check_array_size, normalize_dtype, normalize_shape

_stream_ids = itertools.count(1)


def events_timed(backend: Any) -> bool:
    """Whether CUDA events measure GPU time here (False under Numba's simulator)."""
    return not backend.simulator


def event_kind(backend: Any) -> str:
    """The Timing kind of event-timed measurements: "cuda-events", or "wall" on the simulator."""
    return "cuda-events" if events_timed(backend) else "wall"


SIMULATOR_EVENT_NOTE = ("Numba's CUDA simulator: events carry no time, so this is the host's "
                        "wall time of the simulation")


class CUDAEvent:
    """A CUDA event recorded on a stream; `start.elapsed_ms(end)` is the time between them.

    On a GPU that is CUDA's event time (kind "cuda-events"); under Numba's simulator, which runs
    every operation synchronously and times no event, it is the host's clock (kind "wall").
    """

    def __init__(self, backend: Any, stream: Any = 0):
        cuda = backend.require_cuda()
        self.kind = event_kind(backend)
        self.note = "" if self.kind == "cuda-events" else SIMULATOR_EVENT_NOTE
        self.stream = stream
        with backend.device_scope():
            self.event = cuda.event()
            self.event.record(stream)
        self.host_ms = time.perf_counter() * 1e3

    def synchronize(self) -> None:
        """The host waits until the GPU reaches the event."""
        self.event.synchronize()

    def query(self) -> bool:
        return bool(self.event.query())

    def elapsed_ms(self, other: CUDAEvent) -> float:
        """Milliseconds from this event to `other` (waits for `other`)."""
        if not isinstance(other, CUDAEvent):
            raise ArgumentTypeError(f"elapsed_ms needs another CUDAEvent, got {type(other).__name__}")
        other.synchronize()
        if self.kind == "wall":
            return other.host_ms - self.host_ms
        return float(self.event.elapsed_time(other.event))

    elapsed_time = elapsed_ms  # numba's name

    def __repr__(self) -> str:
        return f"<gpukit CUDA event ({self.kind})>"


def record_event(backend: Any, stream: Any = 0) -> CUDAEvent:
    """A CUDAEvent recorded now on `stream` (0: the default stream)."""
    return CUDAEvent(backend, stream or 0)


def new_stream(backend: Any) -> Any:
    """A numba CUDA stream with `record_event()` and a `gpukit_id` added."""
    cuda = backend.require_cuda()
    with backend.device_scope():
        stream = cuda.stream()
    stream.gpukit_id = next(_stream_ids)
    stream.record_event = lambda: record_event(backend, stream)
    return stream


def stream_label(stream: Any) -> int | str:
    """0 for the default stream, else the gpukit id (or repr) of the stream."""
    if stream is None or (isinstance(stream, int) and stream == 0):
        return 0
    if isinstance(stream, (int, str)) and not isinstance(stream, bool):
        return stream  # already a label (launch records keep labels)
    return getattr(stream, "gpukit_id", None) or getattr(stream, "id", None) or repr(stream)


def pinned_array(backend: Any, shape: Any, dtype: Any = "float32") -> np.ndarray:
    """Page-locked host memory (numba's `cuda.pinned_array`): faster, asynchronous copies."""
    shape, dtype = normalize_shape(shape), normalize_dtype(dtype)
    check_array_size(shape, dtype, operation="pinned_array")
    cuda = backend.require_cuda()
    with backend.device_call():
        return cuda.pinned_array(shape, dtype)


def time_copies(backend: Any, direction: str, nbytes: int, pinned: bool,
                repeat: int) -> tuple[str, list[float]]:
    """(kind, samples) of `repeat` event-timed copies of `nbytes` (Backend.time_copies)."""
    as_choice("direction", direction, ("h2d", "d2h", "d2d"))
    nbytes, repeat = as_int("nbytes", nbytes, 1), as_int("repeat", repeat, 1)
    return event_kind(backend), timed_copy_ms(backend, direction, nbytes, bool(pinned), repeat)


def timed_copy_ms(backend: Any, direction: str, nbytes: int, pinned: bool, repeat: int,
                  warmup: int = 1) -> list[float]:
    """Event-timed copies of `nbytes` (kind `event_kind(backend)`): one sample per repeat,
    queued while the stream waits (`_cuda_hold`) except copies from pageable memory."""
    cuda = backend.require_cuda()
    with backend.device_scope():
        stream = cuda.stream()
        if direction == "d2d":
            host = None
            source = cuda.device_array(nbytes, np.uint8)
        else:
            host = cuda.pinned_array(nbytes, np.uint8) if pinned else np.ones(nbytes, np.uint8)
        device = cuda.device_array(nbytes, np.uint8)

        def copy() -> None:
            if direction == "h2d":
                device.copy_to_device(host, stream=stream)
            elif direction == "d2h":
                device.copy_to_host(host, stream=stream)
            else:
                device.copy_to_device(source, stream=stream)

        for _ in range(warmup):
            copy()
        stream.synchronize()
        if not events_timed(backend):
            samples = []
            for _ in range(repeat):
                start = record_event(backend, stream)
                copy()
                samples.append(start.elapsed_ms(record_event(backend, stream)))
            return samples
        # a copy from pageable memory is staged by the host as it is queued: holding the
        # stream would only make the host wait, so those are timed as queued
        samples, _ = event_times(backend, stream, copy, repeat,
                                 hold=direction == "d2d" or pinned)
    return samples


# -- the launch log ----------------------------------------------------------------------------
def launch_record(backend: Any, kernel: Any, grid: tuple[int, int, int],
                  block: tuple[int, int, int], stream: Any, shared_bytes: int) -> LaunchRecord:
    """The `LaunchRecord` of one launch (timings are filled in by gpukit.timing.time_kernel)."""
    dispatcher = kernel.dispatcher

    def occupancy() -> tuple[Any, str | None]:
        occ = launch_occupancy(backend, dispatcher, block, shared_bytes)
        return occ, (None if occ is None else "numba")

    return LaunchRecord(kernel.name, tuple(grid), tuple(block), int(shared_bytes or 0),
                        stream_label(stream), backend=backend.name, occupancy_of=occupancy)


def launch_occupancy(backend: Any, dispatcher: Any, block: tuple[int, int, int],
                     dynamic_shared_bytes: int) -> Any:
    """Theoretical occupancy (an Occupancy) from the compiled kernel's registers and shared
    memory, or None (under Numba's simulator, or when that is not known)."""
    if backend.simulator or dispatcher is None:
        return None
    try:  # pragma: no cover - needs a GPU
        overloads = list(getattr(dispatcher, "overloads", {}).values())
        if len(overloads) != 1:
            return None
        compiled = overloads[0]
        return occupancy(backend.compute_capability, block[0] * block[1] * block[2],
                         compiled.regs_per_thread,
                         compiled.shared_mem_per_block + dynamic_shared_bytes)
    except Exception:  # noqa: BLE001 - the log reports None where occupancy is unknown
        return None
