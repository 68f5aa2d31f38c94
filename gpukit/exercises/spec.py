"""What an exercise is: its kernel's parameters, inputs, numpy reference, launches and budgets.

An `ExerciseSpec` is data plus small pure functions; `gpukit.exercises.check` runs a learner's
kernel against it. `Case` is one size with one launch shape. Budgets are enforced limits (an int,
or a function of the case), not advice. This module runs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..devices import WARP_SIZE
from ..utils import ceil_div

Limit = int | Callable[["Case"], int] | None
DRAW_STREAM = 0xCA5E  # the drawn cases' random stream, apart from the inputs' streams


@dataclass(frozen=True)
class Case:
    """One problem size launched one way.

    size: the problem's dimensions by name, such as {"n": 100}.
    grid, block: the launch, as (x, y, z).
    params: the factory arguments (such as {"TPB": 32}); empty for plain kernels.
    tags: facts about the case that a verdict may point at ("several_blocks", "square", ...).
    """

    size: dict[str, int]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    params: dict[str, int] = field(default_factory=dict)
    tags: frozenset[str] = frozenset()

    @property
    def threads(self) -> int:
        return int(np.prod(self.grid)) * int(np.prod(self.block))

    @property
    def blocks(self) -> int:
        return int(np.prod(self.grid))

    def describe(self) -> str:
        """Such as "n=100, TPB=32, grid=4, block=32" (trailing 1s of grid and block dropped)."""
        parts = [f"{k}={v}" for k, v in {**self.size, **self.params}.items()]
        return ", ".join([*parts, f"grid={_short(self.grid)}", f"block={_short(self.block)}"])


def _short(dim3: tuple[int, int, int]) -> str:
    dims = list(dim3)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return str(dims[0]) if len(dims) == 1 else "(" + ", ".join(map(str, dims)) + ")"


@dataclass(frozen=True)
class Budget:
    """Enforced limits. Reads, writes and atomics count elements of global memory.

    global_reads_per_thread / global_writes_per_thread: the most any single thread may do.
    global_atomics_per_block: the most atomic updates of global memory one block may make.
    min_shared_bytes / max_shared_bytes: shared memory per block (static plus dynamic) the
    kernel must use at least / may use at most.
    max_bank_conflict_ways: the most shared-memory bank conflicts one warp-wide shared access
    may have (1: conflict-free; 32: every lane in one bank).
    """

    global_reads_per_thread: Limit = None
    global_writes_per_thread: Limit = None
    global_atomics_per_block: Limit = None
    min_shared_bytes: Limit = None
    max_shared_bytes: Limit = None
    max_bank_conflict_ways: Limit = None

    def limits(self, case: Case) -> dict[str, int]:
        """The limits that apply to `case`, by field name."""
        out = {}
        for name in ("global_reads_per_thread", "global_writes_per_thread",
                     "global_atomics_per_block", "min_shared_bytes", "max_shared_bytes",
                     "max_bank_conflict_ways"):
            value = getattr(self, name)
            if value is not None:
                out[name] = int(value(case) if callable(value) else value)
        return out


@dataclass(frozen=True)
class ExerciseSpec:
    """One workshop exercise.

    params: the kernel's parameters in call order; each is an input, an output or a size name.
    inputs(rng, case) -> {name: array or scalar}: seeded, non-constant inputs for a case.
    reference(inputs, case) -> {output name: expected array}: the numpy answer.
    outputs: {output name: "uninitialized" (allocate) or "zeros"}.
    cases(): the fixed cases to try (sizes x launch shapes x factory arguments): the edges.
    drawn(rng) -> more cases drawn from check's seed, different each seed (sizes, block shapes),
        so that a kernel written for the fixed sizes only fails; None for none.
    factory: the arguments of the learner's `make_kernel(...)` (such as ("TPB",)), or () when
        the learner passes the kernel itself.
    hints: "general" and per-failure-kind hints ("OutOfBoundsError", "mismatch", "unwritten",
        "budget", ...), and tag texts under "tag:<name>" for the verdict's pattern line.
    """

    name: str
    title: str
    goal: str
    params: tuple[str, ...]
    inputs: Callable[[np.random.Generator, Case], dict[str, Any]]
    reference: Callable[[dict[str, Any], Case], dict[str, np.ndarray]]
    outputs: dict[str, str]
    cases: Callable[[], list[Case]]
    budget: Budget = Budget()
    factory: tuple[str, ...] = ()
    hints: dict[str, str] = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-5
    drawn: Callable[[np.random.Generator], list[Case]] | None = None

    def all_cases(self, seed: int = 0) -> list[Case]:
        """The fixed cases, then the cases drawn for `seed` (what `check(..., seed=seed)` runs)."""
        cases = list(self.cases())
        if self.drawn is not None:
            cases += [replace(c, tags=c.tags | {"drawn"})
                      for c in self.drawn(np.random.default_rng([int(seed), DRAW_STREAM]))]
        return [replace(c, tags=c.tags | {"several_warps" if np.prod(c.block) > WARP_SIZE
                                          else "one_warp"}) for c in cases]

    @property
    def call(self) -> str:
        """How check() calls the kernel, such as "kernel[grid, block](a, out, n)"."""
        return f"kernel[grid, block]({', '.join(self.params)})"


# -- input and case helpers shared by the spec modules -------------------------------------------
def small_ints(rng: np.random.Generator, shape: Any, lo: int = -9, hi: int = 10) -> np.ndarray:
    """Seeded small integers stored as float32: sums of them are exact in any order."""
    return rng.integers(lo, hi, size=shape).astype(np.float32)


def n_of(case: Case) -> int:
    """The case's size "n"."""
    return case.size["n"]


def tpb_of(case: Case) -> int:
    """The case's factory argument "TPB" (threads per block)."""
    return case.params["TPB"]


# -- launch-shape helpers ----------------------------------------------------------------------
def case_1d(n: int, block: int, grid: int | None = None, params: dict[str, int] | None = None,
            tags: tuple[str, ...] = (), **size: int) -> Case:
    """A 1D case over n elements; grid defaults to just enough blocks to cover them."""
    grid = ceil_div(n, block) if grid is None else grid
    auto = {"several_blocks" if grid > 1 else "one_block",
            "partial_block" if n % block else "whole_blocks"}
    if grid * block < n:
        auto.add("fewer_threads_than_elements")
    return Case({"n": n, **size}, (grid, 1, 1), (block, 1, 1), dict(params or {}),
                frozenset(auto | set(tags)))


def case_2d(rows: int, cols: int, bx: int, by: int, params: dict[str, int] | None = None,
            tags: tuple[str, ...] = (), **size: int) -> Case:
    """A 2D case over a rows x cols array with (bx, by) blocks, x along the columns."""
    grid = (ceil_div(cols, bx), ceil_div(rows, by), 1)
    auto = {"square" if rows == cols else "not_square",
            "several_blocks" if grid[0] * grid[1] > 1 else "one_block",
            "partial_block" if rows % by or cols % bx else "whole_blocks"}
    return Case({"rows": rows, "cols": cols, **size}, grid, (bx, by, 1), dict(params or {}),
                frozenset(auto | set(tags)))


TAG_TEXTS = {
    "one_block": "the launch has a single block",
    "several_blocks": "the launch has several blocks",
    "partial_block": "the size is not a multiple of the block size (the last block is partial)",
    "whole_blocks": "the size is a multiple of the block size",
    "fewer_threads_than_elements": "the grid has fewer threads than there are elements",
    "shuffle": "blocks and racing writes run in a shuffled order",
    "ordered": "blocks run in index order",
    "one_warp": "the block is one warp (32 threads) or less",
    "several_warps": "the block has several warps (more than 32 threads)",
    "drawn": "the size is one drawn for this seed, not a fixed one (sizes written into the "
    "kernel?)",
}
