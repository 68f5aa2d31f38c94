"""The state of one simulated launch and of the group of blocks running in lock-step.

A launch runs its blocks in groups; each group is one set of numpy vectors with a lane per
thread, ordered block by block and, inside a block, by linear thread index (x fastest), so the
lanes of a warp are contiguous. This module maps lanes to (thread, block) coordinates, keeps the
per-block barrier phase and the exited lanes, and builds located errors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from ..errors import KernelError, KernelTimeoutError
from .transform import SITES, Site

CHECKS = ("launch_limits", "bounds", "races", "barriers", "uninitialized", "division_by_zero")


@dataclass
class LaunchStats:
    """What a launch did, counted by the simulator (inputs to the timing model and the log)."""

    global_load_bytes: int = 0
    global_store_bytes: int = 0
    shared_load_bytes: int = 0
    shared_store_bytes: int = 0
    atomics: int = 0
    barriers: int = 0  # block-level barriers passed (one per block per syncthreads)
    static_shared_bytes: int = 0
    dynamic_shared_bytes: int = 0
    implicit_transfers: list[str] = field(default_factory=list)


class Dim3:
    """threadIdx, blockIdx, blockDim or gridDim: x, y, z as scalars or lane vectors."""

    __slots__ = ("x", "y", "z")

    def __init__(self, x: Any, y: Any, z: Any):
        self.x, self.y, self.z = x, y, z

    def __iter__(self):
        return iter((self.x, self.y, self.z))


class Launch:
    """One kernel launch: geometry, options, source sites and running counters."""

    def __init__(self, name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
                 checks: dict[str, bool], profile: Any, rng: Any,
                 watchdog_s: float | None, dynamic_shared_bytes: int, trace: Any = None):
        self.name = name
        self.grid = grid
        self.block = block
        self.tpb = block[0] * block[1] * block[2]
        self.nblocks = grid[0] * grid[1] * grid[2]
        self.checks = checks
        self.profile = profile
        self.rng = rng  # None for the ordered schedule
        self.watchdog_s = watchdog_s
        self.deadline = time.perf_counter() + watchdog_s if watchdog_s else None
        self.ticks = 0
        self.dynamic_shared_bytes = dynamic_shared_bytes
        self.stats = LaunchStats(dynamic_shared_bytes=dynamic_shared_bytes)
        self.trace = trace
        self.global_states: dict[int, Any] = {}  # allocation id -> GlobalState
        self.tid_dtype = np.int32 if self.nblocks * self.tpb < 2**31 - 1 else np.int64

    def site(self, index: int) -> Site:
        return SITES[index]


def _split(index: np.ndarray, extent: tuple[int, int, int]) -> Dim3:
    """(x, y, z) of linear indices in an x-fastest box; dimensions of size 1 give a scalar 0."""
    ex, ey, ez = extent
    x = index % ex if ey * ez > 1 else index
    y = (index // ex) % ey if ey > 1 else 0
    z = index // (ex * ey) if ez > 1 else 0
    return Dim3(x, y, z)


@lru_cache(maxsize=16)
def _lane_layout(nb: int, tpb: int) -> tuple[np.ndarray, np.ndarray]:
    """(group-local block, linear thread index) of every lane; shared by groups of one shape."""
    lane_block = np.repeat(np.arange(nb, dtype=np.int64), tpb)
    ltid = np.tile(np.arange(tpb, dtype=np.int64), nb)
    lane_block.flags.writeable = ltid.flags.writeable = False
    return lane_block, ltid


class Group:
    """A set of blocks executed together: lane vectors and per-block barrier state."""

    def __init__(self, launch: Launch, blocks: np.ndarray):
        self.launch = launch
        self.blocks = blocks  # global linear block ids, one per group block
        self.nb = len(blocks)
        self.size = self.nb * launch.tpb
        self.lane_block, self.ltid = _lane_layout(self.nb, launch.tpb)
        self.phase = np.zeros(self.nb, np.int32)
        self._lane_phase: np.ndarray | None = None
        self.exited: Any = False  # False or a bool vector of lanes that returned from the kernel
        self.shared: dict[Any, Any] = {}
        self.static_shared_bytes = 0
        self.blockDim = Dim3(*launch.block)
        self.gridDim = Dim3(*launch.grid)

    # -- coordinates (computed when a kernel first asks) -------------------------------------
    @cached_property
    def consecutive(self) -> bool:
        """Whether the group's blocks are consecutive ids (the ordered schedule)."""
        b = self.blocks
        return bool(b[-1] - b[0] == self.nb - 1 and (self.nb < 3 or np.all(np.diff(b) == 1)))

    @cached_property
    def gblk(self) -> np.ndarray:
        """The global linear block id of each lane."""
        if self.consecutive:
            return self.lane_block + self.blocks[0]
        return self.blocks[self.lane_block]

    @cached_property
    def gtid(self) -> np.ndarray:
        """A launch-wide thread id per lane: block id * threads per block + thread index."""
        tpb, dtype = self.launch.tpb, self.launch.tid_dtype
        if self.consecutive:
            start = int(self.blocks[0]) * tpb
            return np.arange(start, start + self.size, dtype=dtype)
        return (self.gblk * tpb + self.ltid).astype(dtype)

    @cached_property
    def threadIdx(self) -> Dim3:
        return _split(self.ltid, self.launch.block)

    @cached_property
    def blockIdx(self) -> Dim3:
        if self.nb == 1:  # one block: its coordinates are uniform scalars
            return _split(np.int64(self.blocks[0]), self.launch.grid)
        return _split(self.gblk, self.launch.grid)

    @property
    def laneid(self) -> np.ndarray:
        return self.ltid % 32

    def lane_phase(self, lanes: np.ndarray | None) -> np.ndarray:
        """The barrier phase of each lane's block (cached until the next barrier)."""
        ph = self._lane_phase
        if ph is None:
            ph = self._lane_phase = self.phase[self.lane_block]
        return ph if lanes is None else ph[lanes]

    def advance_phase(self, blocks: Any = None) -> None:
        """Blocks (all, or those selected by a bool vector) passed a barrier."""
        if blocks is None:
            self.phase += 1
        else:
            self.phase[blocks] += 1
        self._lane_phase = None

    def thread_of(self, lane: int) -> tuple[int, int, int]:
        bx, by, _ = self.launch.block
        t = int(self.ltid[lane])
        return (t % bx, (t // bx) % by, t // (bx * by))

    def block_of(self, lane: int) -> tuple[int, int, int]:
        gx, gy, _ = self.launch.grid
        b = int(self.gblk[lane])
        return (b % gx, (b // gx) % gy, b // (gx * gy))

    def live(self) -> Any:
        """Lanes that have not returned from the kernel (True when none has)."""
        return True if self.exited is False else ~self.exited

    # -- errors ----------------------------------------------------------------------------
    def error(self, cls: type[KernelError], message: str, lane: int | None, site: int | None,
              **extra: Any) -> KernelError:
        s = self.launch.site(site) if site is not None else None
        return cls(message, kernel=self.launch.name,
                   thread=self.thread_of(lane) if lane is not None else None,
                   block=self.block_of(lane) if lane is not None else None,
                   lineno=s.lineno if s else None, filename=s.filename if s else None, **extra)

    def tick(self, site: int) -> None:
        launch = self.launch
        launch.ticks += 1
        if launch.deadline is not None and not launch.ticks & 1023 \
                and time.perf_counter() > launch.deadline:
            raise self.error(
                KernelTimeoutError,
                f"the watchdog stopped kernel '{launch.name}' after {launch.watchdog_s:g} s in "
                f"the loop '{launch.site(site).text}'. Either the loop never ends for some "
                "thread, or threads spin waiting for a value another thread sets (a spin lock): "
                "the simulator runs threads in lock-step, where such waits deadlock as on "
                "pre-Volta GPUs. Fix the loop, or raise the limit with watchdog_s=...",
                None, site)


class _State:
    """The group now running (kernels cannot launch kernels, so one at a time suffices)."""

    group: Group | None = None


STATE = _State()


def current() -> Group:
    group = STATE.group
    if group is None:
        raise RuntimeError(
            "numba.cuda intrinsics of gpukit's simulator were called outside a running kernel")
    return group
