"""Execution traces of simulated launches, and the views built on them.

Trace a launch with `backend.launch_kernel(k, grid, block, *args, trace=True)` (the trace is then
`record.extra["trace"]`) or with `with gpukit.trace.tracing(backend) as t: k[grid, block](...)`
(then `t.trace`). A `Trace` holds every global, shared, local and constant memory access of every
thread. Views: `per_thread_counts`, `coalescing`, `bank_conflicts` (each with `.summary()`), and
`plot_block` / `block_summary`. Only the simulator (CPUBackend) can trace: a real GPU's accesses
are not observable from Python. Imports numpy only; matplotlib loads in `plot_block`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..backends import current_backend
from ..backends.base import Backend
from .metrics import (
    BankConflictReport,
    CoalescingReport,
    SiteBankConflicts,
    SiteCoalescing,
    ThreadCounts,
    bank_conflicts,
    coalescing,
    per_thread_counts,
)
from .plots import block_summary, plot_block, thread_colors
from .recorder import (
    DEFAULT_MAX_EVENTS,
    KINDS,
    SPACES,
    Access,
    ArrayInfo,
    Recorder,
    Trace,
    TraceError,
    TraceTooLargeError,
)

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "DEFAULT_MAX_EVENTS", "KINDS", "SPACES", "Access", "ArrayInfo", "BankConflictReport",
    "CoalescingReport", "Recorder", "SiteBankConflicts", "SiteCoalescing", "ThreadCounts",
    "Trace", "TraceError", "TraceTooLargeError", "Tracing", "bank_conflicts", "block_summary",
    "coalescing", "per_thread_counts", "plot_block", "thread_colors", "tracing",
]


class Tracing:
    """While active (a `with` block), every launch on `backend` is traced into `traces`.

    It wraps this one backend object's `launch_kernel` (the method `kernel[grid, block](...)`
    calls) and puts it back on exit; other backends and other code are untouched.
    """

    def __init__(self, backend: Any, max_events: int = DEFAULT_MAX_EVENTS):
        if not isinstance(backend, Backend) or not backend.is_simulated:
            raise TraceError(
                f"tracing records what the simulator executes; backend "
                f"'{getattr(backend, 'name', type(backend).__name__)}' runs kernels where their "
                "accesses cannot be observed. Trace the same kernel on the simulator: "
                "gpukit.get_backend('cpu')")
        Recorder(max_events)  # validates max_events now, not at the first launch
        self.backend = backend
        self.max_events = max_events
        self.traces: list[Trace] = []
        self.records: list[Any] = []
        self._saved: Any = None
        self._active = False

    @property
    def trace(self) -> Trace:
        """The trace of the last launch traced."""
        if not self.traces:
            raise TraceError("no kernel was launched on this backend inside the `with "
                             "gpukit.trace.tracing(backend)` block, so there is no trace")
        return self.traces[-1]

    def __enter__(self) -> Self:
        if self._active:
            raise TraceError("this tracing(...) block is already active")
        self._saved = self.backend.__dict__.get("launch_kernel")
        original = self.backend.launch_kernel

        def launch_kernel(kernel: Any, grid: Any, block: Any, *args: Any, **options: Any) -> Any:
            recorder = Recorder.from_option(options.pop("trace", True), self.max_events)
            if recorder is not None:
                options["trace"] = recorder
            record = original(kernel, grid, block, *args, **options)
            if recorder is not None:
                trace = record.extra.get("trace")
                if trace is None and callable(getattr(recorder, "finish", None)):
                    trace = record.extra["trace"] = recorder.finish(record)
                if trace is not None:
                    self.traces.append(trace)
                    self.records.append(record)
            return record

        self.backend.launch_kernel = launch_kernel
        self._active = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is None:
            del self.backend.launch_kernel
        else:
            self.backend.launch_kernel = self._saved
        self._active = False

    def summary(self) -> str:
        if not self.traces:
            return "no launch traced"
        return "\n".join(t.summary() for t in self.traces)


def tracing(backend: Any = None, max_events: int = DEFAULT_MAX_EVENTS) -> Tracing:
    """A context manager tracing every launch on `backend` (default: the current backend)."""
    if backend is None:
        backend = current_backend()
    return Tracing(backend, max_events)
