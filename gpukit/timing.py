"""Honest timing: CUDA events on GPUs, wall time plus a labelled model on the simulator.

Every result is a `Timing` whose `kind` says what it is: "cuda-events" (GPU time between CUDA
events, on a real GPU), "wall" (the host's clock: on the CPU simulator, the time the simulation
took on this CPU, which says nothing about a GPU; under Numba's CUDA simulator, whose events carry
no time, the same) or "modeled" (computed from the device profile, never measured).
`time_kernel` excludes warm-up launches and reports the first launch (which compiles the kernel)
apart; `timer` times any region; `launch_log` lists launches with their timings.

The simulator's model (`Timing.modeled`, `gpukit.sim.streams`) is a roofline: a kernel takes
    launch overhead + max(bytes moved / memory bandwidth, flops / peak FP32)
with the global-memory bytes counted by the simulator per access, flops declared by the kernel's
caller (`flops=`; the ops declare theirs) or left out, and the profile's launch overhead,
bandwidth and peak. Copies take PCIe latency + size / effective link bandwidth (pinned faster than
pageable; `gpukit.backends.cpu.modeled_copy_ms`), and streams overlap on a modeled timeline.
Its limits: no caches (every global access is DRAM traffic, re-reads included), no coalescing
penalty (a strided access costs its bytes only), no occupancy, latency, wave or clock effects (so
the modeled time does not depend on the block size), no compute time without declared flops. For
kernels that touch each byte once it is a lower bound on a real GPU's time; kernels that re-read
global memory a GPU would cache can come out slower than real. It compares transfers against
kernels and memory-bound against compute-bound work; it does not predict a measurement.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .backends import _cuda_streams as cuda_streams
from .sim.streams import KernelModel, TimelineEvent, model_kernel, model_launch
from .timing_plots import plot_bandwidth, plot_timeline
from .transfers import BandwidthRow, bandwidth_sweep

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "KINDS", "BandwidthRow", "KernelModel", "LaunchLogEntry", "TimelineEvent", "Timer", "Timing",
    "bandwidth_sweep", "launch_log", "model_kernel", "plot_bandwidth", "plot_timeline",
    "time_kernel", "timer",
]

KINDS = ("cuda-events", "wall", "modeled")
_KIND_TEXT = {
    "cuda-events": "GPU time from CUDA events",
    "wall": "host wall-clock time",
    "modeled": "modeled from the device profile, not measured",
}
_SIM_WALL_NOTE = "the simulation's wall time on this CPU, not a GPU time"
_CUDASIM_NOTE = ("Numba's CUDA simulator: events carry no time, so this is the host's wall time "
                 "of the simulation")


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
        if self.kind not in KINDS:
            raise ValueError(f"Timing kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        samples = tuple(float(s) for s in self.samples)
        if not samples:
            raise ValueError("a Timing needs at least one sample")
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


def _backend_of(kernel: Any, backend: Any) -> Any:
    if backend is not None:
        return backend
    owner = getattr(kernel, "backend", None)  # a simulator kernel knows its backend
    if owner is not None:
        return owner
    from .backends import current_backend
    return current_backend()


def _kind_of(backend: Any) -> str:
    """"sim" (gpukit's simulator), "cuda" (CUDABackend, GPU or Numba's simulator) or "other"."""
    if hasattr(backend, "_timeline") and hasattr(backend, "profile"):
        return "sim"
    if getattr(backend, "name", None) == "cuda" and hasattr(backend, "simulator"):
        return "cuda"
    return "other"


def _check_counts(repeat: int, warmup: int) -> None:
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an int >= 1, got {repeat!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")


def _model_details(profile: Any, model: KernelModel) -> dict[str, Any]:
    return {"device": profile.name, "bytes_moved": model.bytes_moved, "flops": model.flops,
            "launch_ms": model.launch_ms, "memory_ms": model.memory_ms,
            "compute_ms": model.compute_ms, "bound": model.bound}


def time_kernel(kernel: Any, grid: Any, block: Any, *args: Any, repeat: int | None = None,
                warmup: int = 1, backend: Any = None, stream: Any = None,
                flops: float | None = None, dynamic_shared_bytes: int = 0) -> Timing:
    """Launch `kernel[grid, block](*args)` `warmup` + `repeat` times and time the last `repeat`.

    CUDA: one CUDA-event sample per launch, each synchronised (kind "cuda-events"). The
    simulator: the wall time of each simulated launch (kind "wall") and, as `.modeled`, the
    roofline time of each (kind "modeled"; `flops` feeds its compute term). `first_launch_ms` is
    the first warm-up launch, which includes compiling the kernel. `repeat` defaults to 20 on a
    GPU and 3 on simulators.
    """
    be = _backend_of(kernel, backend)
    kind = _kind_of(be)
    if repeat is None:
        repeat = 20 if kind == "cuda" and cuda_streams.events_timed(be) else 3
    _check_counts(repeat, warmup)
    options: dict[str, Any] = {"dynamic_shared_bytes": dynamic_shared_bytes}
    if stream is not None:
        options["stream"] = stream
    if kind == "sim":
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
    if kind == "cuda":
        return _time_cuda(be, compiled, name, grid, block, args, options, stream, repeat, first_ms)
    samples, models = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        record = be.launch_kernel(compiled, grid, block, *args, **options)
        sync()
        samples.append((time.perf_counter() - t0) * 1e3)
        if kind == "sim":
            models.append(model_launch(be.profile, record, flops))
    modeled = None
    if models:
        modeled = Timing(tuple(m.ms for m in models), "modeled", be.name, name,
                         note=f"roofline on the {be.profile.name}: {models[-1].describe()}",
                         details=_model_details(be.profile, models[-1]))
    note = _SIM_WALL_NOTE if kind == "sim" else ""
    return Timing(tuple(samples), "wall", be.name, name, first_ms, modeled, note)


def _time_cuda(be: Any, compiled: Any, name: str, grid: Any, block: Any, args: tuple,
               options: dict[str, Any], stream: Any, repeat: int, first_ms: float | None
               ) -> Timing:
    kind = cuda_streams.event_kind(be)
    samples = []
    for _ in range(repeat):
        begin = cuda_streams.record_event(be, stream)
        be.launch_kernel(compiled, grid, block, *args, **options)
        ms = begin.elapsed_ms(cuda_streams.record_event(be, stream))
        samples.append(ms)
        log = getattr(be, "launches", None)
        if log:
            log[-1].timings[kind] = ms
    note = "" if kind == "cuda-events" else _CUDASIM_NOTE
    return Timing(tuple(samples), kind, be.name, name, first_ms, None, note)


class Timer:
    """`with timer(backend) as t: ...` then `t.timing`: the region's time on `backend`.

    CUDA: events recorded on `stream` (default stream: all work) at entry and exit. The
    simulator: the wall time, with `.modeled` the modeled timeline's time between the two points.
    """

    def __init__(self, backend: Any = None, stream: Any = None, label: str = "region"):
        self.backend = _backend_of(None, backend)
        self.stream, self.label = stream, label
        self._timing: Timing | None = None
        self._kind = _kind_of(self.backend)

    def _event(self) -> Any:
        if self._kind == "sim":
            timeline = self.backend._timeline
            return timeline.record_event(timeline.stream_id(self.stream))
        if self._kind == "cuda":
            return cuda_streams.record_event(self.backend, self.stream)
        self.backend.synchronize()
        return None

    def __enter__(self) -> Self:
        self._timing = None
        self._begin = self._event()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        end = self._event()
        wall_ms = (time.perf_counter() - self._t0) * 1e3
        be = self.backend
        if self._kind == "cuda":
            kind = end.kind
            ms = self._begin.elapsed_ms(end)
            note = "" if kind == "cuda-events" else _CUDASIM_NOTE
            self._timing = Timing((ms,), kind, be.name, self.label, note=note)
        elif self._kind == "sim":
            end.synchronize()
            modeled = Timing((self._begin.elapsed_ms(end),), "modeled", be.name, self.label,
                             note=f"modeled timeline of the {be.profile.name}, not measured")
            self._timing = Timing((wall_ms,), "wall", be.name, self.label, modeled=modeled,
                                  note=_SIM_WALL_NOTE)
        else:
            self._timing = Timing((wall_ms,), "wall", be.name, self.label)

    @property
    def timing(self) -> Timing:
        if self._timing is None:
            raise RuntimeError("the timing is available after the `with timer(...)` block ends")
        return self._timing


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


def _sim_occupancy(rec: Any, compute: bool) -> tuple[float | None, str | None]:
    if not compute and "occupancy" not in rec.extra:
        return None, None
    try:
        occ = rec.occupancy if hasattr(type(rec), "occupancy") else rec.extra["occupancy"]
        source = rec.extra.get("occupancy_source")
    except Exception:  # noqa: BLE001 - the log reports None where occupancy is unknown
        return None, None
    occ = getattr(occ, "occupancy", occ)  # an Occupancy result or a fraction
    return (None, None) if occ is None else (float(occ), source)


def launch_log(backend: Any = None, *, occupancy: bool = True) -> list[LaunchLogEntry]:
    """The launches of `backend` (default: the current one), oldest first.

    The simulator: timings "wall" (the simulation) and "modeled" (the roofline). CUDA:
    "cuda-events" timings of the launches `time_kernel` made. Occupancy is the theoretical one
    (registers from ptxas or the GPU; the simulator falls back to stated defaults and says so in
    `occupancy_source`); computing it compiles each kernel once, `occupancy=False` skips that.
    """
    be = _backend_of(None, backend)
    kind = _kind_of(be)
    entries = []
    for rec in list(getattr(be, "launches", [])):
        if kind == "sim":
            model = model_launch(be.profile, rec)
            occ, source = _sim_occupancy(rec, occupancy)
            entries.append(LaunchLogEntry(
                be.name, rec.kernel, rec.grid, rec.block, occ,
                {"wall": rec.wall_ms, "modeled": model.ms}, be._timeline.stream_id(rec.stream),
                rec.dynamic_shared_bytes, model.bytes_moved, source, rec))
        elif kind == "cuda":
            occ = cuda_streams.launch_occupancy(be, rec) if occupancy else None
            entries.append(LaunchLogEntry(
                be.name, rec.kernel, rec.grid, rec.block, occ, dict(rec.timings), rec.stream,
                rec.dynamic_shared_bytes, None, None if occ is None else "numba", rec))
        else:
            entries.append(LaunchLogEntry(
                be.name, str(getattr(rec, "kernel", rec)), tuple(getattr(rec, "grid", ())),
                tuple(getattr(rec, "block", ())), None, dict(getattr(rec, "timings", {})),
                record=rec))
    return entries
