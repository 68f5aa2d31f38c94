"""Launch geometry as data: which thread of which block handles which element, and which idle.

`plan_launch(n, threads_per_block)` (1D) or `plan_launch((rows, cols), (block_x, block_y))` (2D)
gives the grid a kernel needs to cover the data with one thread per element, how many threads are
launched and left idle, and the index formulas. Launch limits come from the check every backend
makes (`gpukit.backends.validate.check_launch`). Pure functions: nothing is drawn or launched here.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backends.base import Capabilities
from .backends.validate import check_launch
from .devices import DeviceProfile, get_profile
from .errors import LaunchConfigError
from .utils import ceil_div

__all__ = ["LaunchGeometry", "plan_launch"]


@dataclass(frozen=True)
class LaunchGeometry:
    """One thread per element of `shape`, blocks of `block` threads, as few blocks as cover it.

    `shape` is the data's numpy shape, (n,) or (rows, cols); `block` and `grid` are CUDA's
    (x, y) order, x running along a row (the contiguous axis, so neighbouring threads touch
    neighbouring elements). `valid` is False when the device cannot launch it (`reason` says why).
    """

    shape: tuple[int, ...]
    block: tuple[int, ...]
    grid: tuple[int, ...]
    device: str
    warp_size: int
    valid: bool
    reason: str | None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def threads_per_block(self) -> int:
        return int(np.prod(self.block))

    @property
    def blocks(self) -> int:
        return int(np.prod(self.grid))

    @property
    def threads(self) -> int:
        """Threads launched."""
        return self.blocks * self.threads_per_block

    @property
    def active_threads(self) -> int:
        """Threads that have an element to work on."""
        return int(np.prod(self.shape))

    @property
    def idle_threads(self) -> int:
        """Threads whose index falls outside the data: the kernel's bounds guard stops them."""
        return self.threads - self.active_threads

    @property
    def idle_fraction(self) -> float:
        return self.idle_threads / self.threads

    @property
    def warps_per_block(self) -> int:
        return ceil_div(self.threads_per_block, self.warp_size)

    @property
    def lanes_in_last_warp(self) -> int:
        """Threads in each block's last warp (the warp size when the block fills its warps)."""
        return self.threads_per_block - (self.warps_per_block - 1) * self.warp_size

    @property
    def launch(self) -> str:
        """The launch as written in Python: "kernel[4, 32]" or "kernel[(4, 3), (16, 8)]"."""
        if self.ndim == 1:
            return f"kernel[{self.grid[0]}, {self.block[0]}]"
        return f"kernel[{self.grid}, {self.block}]"

    def thread_of(self, index: int | tuple[int, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(blockIdx, threadIdx), in (x,) or (x, y), of the thread that handles element `index`."""
        if self.ndim == 1:
            i = int(index[0] if isinstance(index, tuple) else index)
            return (i // self.block[0],), (i % self.block[0],)
        row, col = index
        return ((col // self.block[0], row // self.block[1]),
                (col % self.block[0], row % self.block[1]))

    def active_mask(self) -> np.ndarray:
        """True where a launched thread has an element. 1D: shape (blocks, threads_per_block),
        one row per block; 2D: shape (grid_y * block_y, grid_x * block_x), laid over the data."""
        if self.ndim == 1:
            index = (np.arange(self.grid[0])[:, None] * self.block[0]
                     + np.arange(self.block[0])[None, :])
            return index < self.shape[0]
        rows = np.arange(self.grid[1] * self.block[1])[:, None]
        cols = np.arange(self.grid[0] * self.block[0])[None, :]
        return (rows < self.shape[0]) & (cols < self.shape[1])

    def formulas(self) -> list[str]:
        """The global index formula(s), the grid-size formula and the guard, worked out."""
        if self.ndim == 1:
            (n,), (b,) = self.shape, self.block
            return ["i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x   (= cuda.grid(1))",
                    f"blocks = (n + {b} - 1) // {b} = ({n} + {b - 1}) // {b} = {self.grid[0]}",
                    "guard: if i < n: ...   (threads with i >= n are idle)"]
        (rows, cols), (bx, by) = self.shape, self.block
        return ["col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x",
                ("row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y   "
                "(col, row = cuda.grid(2))"),
                (f"blocks: x = ceil(cols / {bx}) = ceil({cols} / {bx}) = {self.grid[0]}, "
                f"y = ceil(rows / {by}) = ceil({rows} / {by}) = {self.grid[1]}"),
                "guard: if row < rows and col < cols: ...   (other threads are idle)"]


def _positive_ints(value: Any, what: str, count: int) -> tuple[int, ...]:
    items = value if isinstance(value, (tuple, list)) else (value,)
    if len(items) != count or any(isinstance(v, bool) or not isinstance(v, numbers.Integral)
                                  for v in items):
        want = "an int" if count == 1 else f"a tuple of {count} ints"
        raise LaunchConfigError(f"{what} must be {want}, got {value!r}")
    if any(v < 1 for v in items):
        raise LaunchConfigError(f"{what} must be positive, got {value!r}")
    return tuple(int(v) for v in items)


def plan_launch(n: int | tuple[int, int], threads_per_block: int | tuple[int, int],
                device: str | DeviceProfile | None = None) -> LaunchGeometry:
    """The launch that gives one thread to each of `n` elements (or each of a (rows, cols) array).

    1D: `n` an int, `threads_per_block` an int. 2D: `n` the numpy shape (rows, cols),
    `threads_per_block` the block as CUDA's (x, y), x along a row. `device` (default T4) decides
    whether the launch is valid. Raises `LaunchConfigError` for sizes that are not positive ints.
    """
    profile = get_profile(device)
    ndim = 2 if isinstance(n, (tuple, list)) else 1
    shape = _positive_ints(n, "n (the data's shape)", ndim)
    block = _positive_ints(threads_per_block, "threads_per_block" + (" (x, y)" if ndim == 2
                                                                     else ""), ndim)
    if ndim == 1:
        grid: tuple[int, ...] = (ceil_div(shape[0], block[0]),)
    else:
        grid = (ceil_div(shape[1], block[0]), ceil_div(shape[0], block[1]))
    reason = None
    try:
        check_launch("kernel", grid, block, 0, Capabilities.from_profile(profile))
    except LaunchConfigError as exc:
        reason = str(exc)
    return LaunchGeometry(shape=shape, block=block, grid=grid, device=profile.name,
                          warp_size=profile.cc.warp_size, valid=reason is None, reason=reason)
