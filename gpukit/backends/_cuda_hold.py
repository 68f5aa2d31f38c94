"""Event timing that measures the GPU, not the host: the stream waits while the work is queued.

CUDA events time what lies between them on the GPU. On an idle stream an event recorded before a
launch completes at once, and the launch starts only once the host has finished enqueuing it
(numba-cuda's dispatch takes tens of microseconds), so the event time of a short kernel is
mostly the host's: on an H200, 50 us for a 65,536-element kernel that runs in a few. `Hold`
first queues a one-thread kernel that sleeps (`cuda.nanosleep`, compute capability 7.0 and
later) for longer than the host needs to queue the timed work, so that the GPU meets that work
already queued and the events see it run back to back. Afterwards `held` says whether the sleep
outlasted the queuing; if it did not, the caller may try again with a longer one.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

MAX_HOLD_MS = 250.0  # the longest hold asked for (the whole timed batch must be queued in it)
_KERNELS: dict[int, Any] = {}


def _hold_kernel(cuda: Any) -> Any:
    """The sleeping kernel, compiled once per process (per numba.cuda module)."""
    kernel = _KERNELS.get(id(cuda))
    if kernel is None:
        @cuda.jit
        def gpukit_hold(ns):
            slept = 0
            while slept < ns:  # nanosleep sleeps about as long as asked, at most 1 ms a call
                cuda.nanosleep(1000)
                slept += 1000
        kernel = _KERNELS[id(cuda)] = gpukit_hold
    return kernel


def can_hold(backend: Any) -> bool:
    """Whether the GPU has nanosleep (compute capability 7.0 and later)."""
    return not backend.simulator and tuple(backend.compute_capability) >= (7, 0)


class Hold:
    """`with Hold(backend, stream, ms) as hold: <queue timed work>`, then `hold.held`."""

    def __init__(self, backend: Any, stream: Any, ms: float):
        self.backend, self.stream = backend, stream
        self.ms = min(max(ms, 0.05), MAX_HOLD_MS)
        self.held = False

    def __enter__(self) -> Hold:  # noqa: PYI034 - a final class in all but name
        cuda = self.backend.require_cuda()
        self._gate = cuda.event()
        with warnings.catch_warnings():  # one thread on purpose: no under-utilisation warning
            warnings.simplefilter("ignore")
            _hold_kernel(cuda)[1, 1, self.stream](int(self.ms * 1e6))
        self._gate.record(self.stream)
        return self

    def __exit__(self, *exc: object) -> None:
        # still waiting for the sleep to end: everything queued behind it runs back to back
        self.held = exc[0] is None and not self._gate.query()


PER_ITEM_MS = 0.2  # generous host time to queue one launch or copy (numba-cuda: 20-60 us)
HELD_NOTE = ""
UNHELD_NOTE = ("the host queued this work more slowly than the GPU ran it, so each time "
               "includes some of the host's enqueue latency")


def event_times(backend: Any, stream: Any, enqueue: Any, repeat: int, hold: bool = True
                ) -> tuple[list[float], str]:
    """(ms between CUDA events around each of `repeat` calls of `enqueue` on `stream`, a note):
    queued behind a `Hold` where the GPU has nanosleep and `hold` is asked for (tried once more,
    four times longer, if the first was too short); the note says when the times include the
    host's enqueue latency."""
    cuda = backend.require_cuda()
    holding = hold and can_hold(backend)
    for attempt in range(2 if holding else 1):
        events = [(cuda.event(), cuda.event()) for _ in range(repeat)]
        gate = Hold(backend, stream, (repeat * PER_ITEM_MS + 1.0) * 4 ** attempt) \
            if holding else contextlib.nullcontext()
        with gate:
            for begin, end in events:
                begin.record(stream)
                enqueue()
                end.record(stream)
        events[-1][1].synchronize()
        held = holding and gate.held
        if held:
            break
    samples = [float(begin.elapsed_time(end)) for begin, end in events]
    return samples, HELD_NOTE if held else UNHELD_NOTE
