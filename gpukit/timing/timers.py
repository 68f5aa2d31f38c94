"""Timers: CUDA events on GPUs, wall time plus a labelled model on the simulator.

Every result is a `Timing` whose `kind` says what it is: "cuda-events" (GPU time between CUDA
events, on a real GPU), "wall" (the host's clock: on the CPU simulator, the time the simulation
took on this CPU, which says nothing about a GPU; under Numba's CUDA simulator, whose events carry
no time, the same) or "modeled" (computed from the device profile, never measured).
`time_kernel` excludes warm-up launches and reports the first launch (which compiles the kernel)
apart; `timer` times any region; `launch_log` lists launches with their timings.

The simulator's model (`Timing.modeled`, `gpukit.timing.model`) is analytical: from what each
launch did (global sectors touched, their reuse in L2, shared-memory wavefronts, atomics and the
most updates of one address, barriers), its occupancy and the device profile, it models DRAM and
L2 traffic, the latency resident warps can hide (Little's law, wave by wave, so a grid's tail
and low occupancy cost time), shared-memory bank conflicts, atomic contention, declared flops and
launch overhead; `details["breakdown"]` shows every term and which limit binds. Coalescing, bank
conflicts and contention are observed on traced launches (`trace=True`, or the sample of blocks
`time_kernel` traces by default) and assumed ideal otherwise. Copies take PCIe latency + size / effective link bandwidth (pinned faster than
pageable; `gpukit.timing.model.modeled_copy_ms`), and streams overlap on a modeled timeline.
It is a model for teaching which limit binds and why, with approximate constants (see
benchmarks/MODEL.md); it does not predict a measurement to the percent.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..backends import current_backend
from ..backends.base import Backend
from ..errors import ArgumentTypeError, InvalidArgumentError
from ..launches import LaunchRecord
from ..trace.recorder import Recorder
from ..utils import as_int, as_number
from .model import KernelModel, model_launch

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["KINDS", "LaunchLogEntry", "Timer", "Timing", "launch_log", "time_kernel", "timer"]

KINDS = ("cuda-events", "wall", "modeled")
_KIND_TEXT = {
    "cuda-events": "GPU time from CUDA events",
    "wall": "host wall-clock time",
    "modeled": "modeled from the device profile, not measured",
}
_SIM_WALL_NOTE = "the simulation's wall time on this CPU, not a GPU time"


@dataclass(frozen=True)
class Timing:
    """Timing samples in milliseconds with what they are (`kind`) and where they come from."""

    samples: tuple[float, ...]
    kind: str
    backend: str
    label: str = ""
    first_launch_ms: float | None = None  # the first launch, compilation included; not a sample
    modeled: Timing | None = None          # the simulator's modeled GPU time of the same work
    note: str = ""
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise InvalidArgumentError(
                f"Timing kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if isinstance(self.samples, (str, bytes)) or not hasattr(self.samples, "__iter__"):
            raise ArgumentTypeError(f"Timing samples must be a sequence of milliseconds, got "
                                    f"{type(self.samples).__name__}")
        samples = tuple(as_number("a Timing sample", s) for s in self.samples)
        if not samples:
            raise InvalidArgumentError("a Timing needs at least one sample")
        object.__setattr__(self, "samples", samples)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples)

    @property
    def min_ms(self) -> float:
        return min(self.samples)

    @property
    def max_ms(self) -> float:
        return max(self.samples)

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.samples)

    def summary(self) -> str:
        what = f"{self.label}: " if self.label else ""
        text = (f"{what}median {self.median_ms:.4g} ms, min {self.min_ms:.4g} ms of "
                f"{len(self.samples)} ({self.kind}: {self.note or _KIND_TEXT[self.kind]}")
        if self.first_launch_ms is not None:
            text += f"; first launch {self.first_launch_ms:.4g} ms with compilation"
        text += ")"
        if self.modeled is not None:
            text += f"\n  modeled: {self.modeled.summary()}"
        return text

    __str__ = summary


def _backend_of(kernel: Any, backend: Any) -> Backend:
    if backend is None:
        owner = getattr(kernel, "backend", None)  # a simulator kernel knows its backend
        backend = owner if isinstance(owner, Backend) else current_backend()
    if not isinstance(backend, Backend):
        raise ArgumentTypeError(f"backend must be a gpukit backend (gpukit.get_backend()), got "
                                f"{type(backend).__name__}")
    return backend


MAX_REPEAT = 10_000  # timed launches in one call; more would only take long
SAMPLE_BLOCKS = 4  # time_kernel's default trace on the simulator: this many blocks of each launch
SAMPLE_EVENTS = 50_000  # and at most this many of their accesses (about 2 MB)


def _check_counts(repeat: Any, warmup: Any) -> tuple[int, int]:
    return as_int("repeat", repeat, 1, MAX_REPEAT), as_int("warmup", warmup, 0, MAX_REPEAT)


def _model_details(profile: Any, model: KernelModel) -> dict[str, Any]:
    return {"device": profile.name, "bytes_moved": model.bytes_moved, "flops": model.flops,
            "launch_ms": model.launch_ms, "memory_ms": model.memory_ms,
            "compute_ms": model.compute_ms, "bound": model.bound, "breakdown": model.breakdown}


def time_kernel(kernel: Any, grid: Any, block: Any, *args: Any, repeat: int | None = None,
                warmup: int = 1, backend: Any = None, stream: Any = None,
                flops: float | None = None, dynamic_shared_bytes: int = 0,
                trace: bool | str = "sample") -> Timing:
    """Launch `kernel[grid, block](*args)` `warmup` + `repeat` times and time the last `repeat`.

    CUDA: one CUDA-event sample per launch, the events recorded right around the enqueue
    (gpukit's checks and the kernel's compilation stay outside; kind "cuda-events"). The
    simulator: the wall time of each simulated launch (kind "wall") and, as `.modeled`, the
    modeled GPU time of each (kind "modeled"; `flops` feeds its compute term). So that the model
    sees the kernel's coalescing, bank conflicts and atomic contention instead of assuming them
    ideal, each timed launch records a sample of its accesses (`trace="sample"`, the default:
    SAMPLE_BLOCKS blocks spread over the grid, scaled to the launch); `trace=True` records every
    access (exact, slower), `trace=False` none (the model then assumes them ideal).
    Other backends:
    their events (`backend.record_event`). `first_launch_ms` is the first warm-up launch, which
    includes compiling the kernel. `repeat` defaults to 20 on a GPU and 3 on simulators.
    """
    be = _backend_of(kernel, backend)
    if repeat is None:
        repeat = 20 if be.event_kind == "cuda-events" else 3
    repeat, warmup = _check_counts(repeat, warmup)
    options: dict[str, Any] = {}
    if as_int("dynamic_shared_bytes", dynamic_shared_bytes, 0):  # the backend checks the limit
        options["dynamic_shared_bytes"] = dynamic_shared_bytes
    if stream is not None:
        options["stream"] = stream
    if flops is not None:
        as_number("flops", flops)  # checked before anything runs; launches keep it as given
        options["flops"] = flops

    def sync() -> None:
        (stream or be).synchronize()

    start = time.perf_counter()
    compiled = be.compile_kernel(kernel)
    first_ms = None
    for i in range(warmup):
        be.launch_kernel(compiled, grid, block, *args, **options)
        if i == 0:
            sync()
            first_ms = (time.perf_counter() - start) * 1e3
    sync()
    name = getattr(compiled, "name", getattr(kernel, "__name__", "kernel"))
    if not be.is_simulated:
        # the backend times each launch itself: on CUDA, events around the enqueue alone, with
        # the kernel compiled for these arguments first (so warmup=0 does not time the JIT)
        kind, samples, note = be.time_launches(compiled, grid, block, *args, repeat=repeat,
                                               **options)
        return Timing(tuple(samples), kind, be.name, name, first_ms, None, note)
    if trace == "sample":
        options["trace"] = Recorder(SAMPLE_EVENTS, sample_blocks=SAMPLE_BLOCKS)
    elif trace is True:
        options["trace"] = True
    elif trace is not False:
        raise InvalidArgumentError(f"trace must be 'sample', True or False, got {trace!r}")
    samples, models = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        record = be.launch_kernel(compiled, grid, block, *args, **options)
        sync()
        samples.append((time.perf_counter() - t0) * 1e3)
        models.append(model_launch(be.profile, record, flops))
    modeled = Timing(tuple(m.ms for m in models), "modeled", be.name, name,
                     note=f"model of the {be.profile.name}: {models[-1].describe()}",
                     details=_model_details(be.profile, models[-1]))
    return Timing(tuple(samples), "wall", be.name, name, first_ms, modeled, _SIM_WALL_NOTE)


class Timer:
    """`with timer(backend) as t: ...` then `t.timing`: the region's time on `backend`.

    CUDA: events recorded on `stream` (default stream: all work) at entry and exit. The
    simulator: the wall time, with `.modeled` the modeled timeline's time between the two points.
    Other backends: their events (the host's clock after synchronising, by default).
    """

    def __init__(self, backend: Any = None, stream: Any = None, label: str = "region"):
        self.backend = _backend_of(None, backend)
        if not isinstance(label, str):
            raise ArgumentTypeError(f"label must be a string, got {type(label).__name__}")
        self.backend.stream_label(stream)  # a stream of another backend is refused now
        self.stream, self.label = stream, label
        self._timing: Timing | None = None

    def __enter__(self) -> Self:
        self._timing = None
        self._begin = self.backend.record_event(self.stream)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        end = self.backend.record_event(self.stream)
        wall_ms = (time.perf_counter() - self._t0) * 1e3
        be = self.backend
        if be.is_simulated:
            end.synchronize()
            modeled = Timing((self._begin.elapsed_ms(end),), "modeled", be.name, self.label,
                             note=f"modeled timeline of the {be.profile.name}, not measured")
            self._timing = Timing((wall_ms,), "wall", be.name, self.label, modeled=modeled,
                                  note=_SIM_WALL_NOTE)
        else:
            self._timing = Timing((self._begin.elapsed_ms(end),), end.kind, be.name,
                                  self.label, note=end.note)

    @property
    def timing(self) -> Timing:
        if self._timing is None:
            raise TimerNotFinishedError(
                "the timing is available after the `with timer(...)` block ends")
        return self._timing


class TimerNotFinishedError(InvalidArgumentError, RuntimeError):
    """`Timer.timing` was read before its `with` block ended."""


def timer(backend: Any = None, *, stream: Any = None, label: str = "region") -> Timer:
    """A context manager timing the work issued inside it: `with timer(be) as t: ...; t.timing`."""
    return Timer(backend, stream, label)


# -- the launch log ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LaunchLogEntry:
    """One launch as notebooks and widgets read it; `timings` maps a Timing kind to ms."""

    backend: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    occupancy: float | None  # theoretical, 0..1; None where unknown
    timings: dict[str, float]
    stream: int | str = 0
    dynamic_shared_bytes: int = 0
    bytes_moved: int | None = None
    occupancy_source: str | None = None
    record: Any = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        occ = "occupancy unknown" if self.occupancy is None else f"occupancy {self.occupancy:.0%}"
        times = ", ".join(f"{kind} {ms:.4g} ms" for kind, ms in self.timings.items()) or \
            "not timed"
        return (f"{self.kernel}[{self.grid}, {self.block}] on stream {self.stream}: {occ}, "
                f"{times}")


def _occupancy(record: LaunchRecord, compute: bool) -> tuple[float | None, str | None]:
    if not compute and "occupancy" not in record.extra:
        return None, None
    try:
        occ, source = record.occupancy, record.occupancy_source
    except Exception:  # noqa: BLE001 - the log reports None where occupancy is unknown
        return None, None
    occ = getattr(occ, "occupancy", occ)  # an Occupancy result or a fraction
    return (None, None) if occ is None else (float(occ), source)


def launch_log(backend: Any = None, *, occupancy: bool = True) -> list[LaunchLogEntry]:
    """The launches of `backend` (default: the current one), oldest first.

    The simulator: timings "wall" (the simulation) and "modeled" (`gpukit.timing.model`). CUDA:
    "cuda-events" timings of the launches `time_kernel` made. Occupancy is the theoretical one
    (registers from ptxas or the GPU; the simulator falls back to stated defaults and says so in
    `occupancy_source`); computing it compiles each kernel once, `occupancy=False` skips that.
    """
    be = _backend_of(None, backend)
    if not isinstance(occupancy, bool):
        raise ArgumentTypeError(f"occupancy must be True or False, got {occupancy!r}")
    entries = []
    for rec in list(be.launches):
        timings, bytes_moved = dict(rec.timings), None
        if be.is_simulated and rec.stats is not None:
            model = model_launch(be.profile, rec)
            timings["modeled"], bytes_moved = model.ms, model.bytes_moved
        occ, source = _occupancy(rec, occupancy)
        entries.append(LaunchLogEntry(
            be.name, rec.kernel, rec.grid, rec.block, occ, timings, be.stream_label(rec.stream),
            rec.dynamic_shared_bytes, bytes_moved, source, rec))
    return entries
