"""The one record of a kernel launch, kept by every backend in `backend.launches`.

A `LaunchRecord` says what was launched (kernel, grid, block, dynamic shared memory, stream) and
what is known about it: on the simulator the wall time of the simulation, what the launch did
(`stats`), the checks and schedule it ran with and its trace; on a GPU the times `time_kernel`
measured (`timings`). Theoretical occupancy is computed when first asked for, by the function
the backend attached. Nothing here runs or times anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LaunchRecord"]


@dataclass
class LaunchRecord:
    """One launch in a backend's log (`backend.launches`), on any backend.

    `grid` and `block` are (x, y, z). `stream` is the stream given at launch (0: the default
    stream). `wall_ms`, `stats` (a `LaunchStats`: bytes moved, atomics, barriers, shared memory),
    `checks` and `schedule` are the simulator's, None or empty on a GPU. `timings` maps a timing
    kind ("wall", "cuda-events", ...) to milliseconds. `extra` holds what callers declared
    (`flops`, `op`), what was computed on demand (`occupancy`, `trace`) and, on the simulator,
    `host_threads`: the CPU threads that ran the launch's blocks, and `host_blocks`: how many
    blocks each of them ran. `modeled` is the
    simulator's modeled GPU time (a `gpukit.timing.KernelModel`: `.ms`, `.bound`, `.breakdown`),
    None on a GPU: computed at launch with the occupancy calculator's default registers;
    `gpukit.timing.model_launch(profile, record)` redoes it (with ptxas occupancy once
    `record.occupancy` has been asked for). `model_facts` are what the model read of the launch.
    `signature` holds the Numba types of the arguments the simulator ran the kernel with (empty
    on a GPU).
    """

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int = 0
    stream: Any = 0
    wall_ms: float | None = None
    stats: Any = None
    checks: dict[str, bool] = field(default_factory=dict)
    schedule: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    backend: str = ""
    signature: tuple = field(default=(), repr=False, compare=False)
    # () -> (Occupancy or None, source): how this launch's theoretical occupancy is worked out
    occupancy_of: Callable[[], tuple[Any, str | None]] | None = field(
        default=None, repr=False, compare=False)
    # the simulator's modeled GPU time (a gpukit.timing.KernelModel), and the facts it read
    modeled: Any = field(default=None, repr=False, compare=False)
    model_facts: Any = field(default=None, repr=False, compare=False)

    @property
    def threads(self) -> int:
        """Threads launched: blocks in the grid times threads per block."""
        gx, gy, gz = self.grid
        bx, by, bz = self.block
        return gx * gy * gz * bx * by * bz

    @property
    def occupancy(self) -> Any:
        """Theoretical occupancy of this launch (a `gpukit.occupancy.Occupancy`), or None where
        the backend cannot tell. Computed when first asked for, then kept in `extra`.

        On the simulator, registers and static shared memory come from ptxas where the `inspect`
        extra is installed, otherwise from stated defaults; `occupancy_source` says which.
        """
        if "occupancy" not in self.extra:
            occupancy, source = (None, None) if self.occupancy_of is None else \
                self.occupancy_of()
            self.extra["occupancy"], self.extra["occupancy_source"] = occupancy, source
        return self.extra["occupancy"]

    @property
    def occupancy_source(self) -> str | None:
        """"ptxas", "numba", "defaults: <why>", or None where occupancy is unknown."""
        self.occupancy  # noqa: B018 - computes and caches both
        return self.extra["occupancy_source"]

    @property
    def trace(self) -> Any:
        """The execution trace of a launch made with trace=True (gpukit.trace.Trace), or None."""
        return self.extra.get("trace")
