"""The workshop's exercises: inputs, numpy references, launch shapes, budgets and hints.

Each `ExerciseSpec` tries sizes that are and are not multiples of the block size, one and
several blocks, and (for kernels built by a factory) several block sizes, so that an answer that
is right only by luck fails somewhere. Inputs are small seeded integers stored as floats, so sums
are exact in any order. The notebooks in notebooks/exercises explain each exercise in full.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .spec import Budget, Case, ExerciseSpec, case_1d, ceil_div
from .specs_reductions import REDUCTION_EXERCISES

F32 = np.float32


def _vals(rng: np.random.Generator, shape: Any, lo: int = -9, hi: int = 10) -> np.ndarray:
    return rng.integers(lo, hi, size=shape).astype(F32)


def _n(case: Case) -> int:
    return case.size["n"]


def _tpb(case: Case) -> int:
    return case.params["TPB"]


def _shared_tpb(case: Case) -> int:
    return _tpb(case) * 4


# -- 1. map ------------------------------------------------------------------------------------
MAP = ExerciseSpec(
    name="map", title="Map",
    goal="out[i] = a[i] + 10, one thread per element, in a single block of exactly n threads.",
    params=("a", "out"),
    inputs=lambda rng, c: {"a": _vals(rng, _n(c))},
    reference=lambda x, c: {"out": x["a"] + F32(10)},
    outputs={"out": "uninitialized"},
    cases=lambda: [case_1d(n, n) for n in (1, 7, 32, 100)],
    budget=Budget(global_reads_per_thread=1, global_writes_per_thread=1),
    hints={"general": "Thread cuda.threadIdx.x handles element i = cuda.threadIdx.x.",
           "OutOfBoundsError": "With exactly n threads, thread i may touch only element i: "
           "check for an off-by-one such as a[i + 1]."},
)

# -- 2. guards ---------------------------------------------------------------------------------
GUARDS = ExerciseSpec(
    name="guards", title="Guards",
    goal="out[i] = a[i] * a[i] for i < n, on a grid of whole blocks that usually has more "
    "threads than elements.",
    params=("a", "out", "n"),
    inputs=lambda rng, c: {"a": _vals(rng, _n(c)), "n": _n(c)},
    reference=lambda x, c: {"out": x["a"] * x["a"]},
    outputs={"out": "uninitialized"},
    cases=lambda: [case_1d(5, 32), case_1d(32, 32), case_1d(100, 32), case_1d(100, 64),
                   case_1d(40, 32, grid=3), case_1d(257, 128)],
    budget=Budget(global_reads_per_thread=1, global_writes_per_thread=1),
    hints={"OutOfBoundsError": "Threads past the end must do nothing: wrap the work in "
           "`if i < n:` (and compare with <, not <=)."},
)


# -- 3. map_2d ---------------------------------------------------------------------------------
def _case_2d(rows: int, cols: int, bx: int, by: int) -> Case:
    grid = (ceil_div(cols, bx), ceil_div(rows, by), 1)
    tags = {"square" if rows == cols else "not_square",
            "several_blocks" if grid[0] * grid[1] > 1 else "one_block",
            "partial_block" if rows % by or cols % bx else "whole_blocks"}
    return Case({"rows": rows, "cols": cols}, grid, (bx, by, 1), {}, frozenset(tags))


MAP_2D = ExerciseSpec(
    name="map_2d", title="2D map",
    goal="out[row, col] = a[row, col] + b[col] (add b to every row of a), on a 2D grid where x "
    "runs along columns and y along rows.",
    params=("a", "b", "out"),
    inputs=lambda rng, c: {"a": _vals(rng, (c.size["rows"], c.size["cols"])),
                           "b": _vals(rng, c.size["cols"])},
    reference=lambda x, c: {"out": x["a"] + x["b"][None, :]},
    outputs={"out": "uninitialized"},
    cases=lambda: [_case_2d(8, 8, 8, 8), _case_2d(16, 16, 8, 8), _case_2d(8, 16, 8, 4),
                   _case_2d(5, 13, 8, 4), _case_2d(20, 6, 4, 8), _case_2d(33, 17, 16, 16)],
    budget=Budget(global_reads_per_thread=2, global_writes_per_thread=1),
    hints={"tag:square": "the array is square (rows == cols)",
           "tag:not_square": "the array is not square",
           "pattern:not_square": "x and y are probably swapped: `col, row = cuda.grid(2)` (x is "
           "the column, the last index) and guard with row < a.shape[0], col < a.shape[1].",
           "OutOfBoundsError": "Guard both axes: row < a.shape[0] and col < a.shape[1]. "
           "Remember x is the column, y the row."},
)

# -- 4. blocks: grid-stride loops ----------------------------------------------------------------
BLOCKS = ExerciseSpec(
    name="blocks", title="Blocks and grid-stride loops",
    goal="out[i] = alpha * x[i] + y[i] (saxpy) for every i < n, whatever the grid: when the grid "
    "has fewer threads than elements, each thread loops over i, i + gridsize, ...",
    params=("x", "y", "out", "alpha", "n"),
    inputs=lambda rng, c: {"x": _vals(rng, _n(c)), "y": _vals(rng, _n(c)),
                           "alpha": float(rng.integers(1, 4)) + 0.5, "n": _n(c)},
    reference=lambda x, c: {"out": F32(x["alpha"]) * x["x"] + x["y"]},
    outputs={"out": "uninitialized"},
    cases=lambda: [case_1d(100, 32), case_1d(7, 32, grid=2), case_1d(100, 32, grid=1),
                   case_1d(1000, 64, grid=3), case_1d(256, 64, grid=2)],
    budget=Budget(global_reads_per_thread=lambda c: 2 * ceil_div(_n(c), c.threads),
                  global_writes_per_thread=lambda c: ceil_div(_n(c), c.threads)),
    hints={"unwritten": "Elements beyond the grid's threads were never written: loop "
           "`for i in range(start, n, stride)` with start = cuda.grid(1) and stride = "
           "cuda.gridsize(1)."},
)


# -- 5. shared memory: reverse ---------------------------------------------------------------------
def _cases_tpb(pairs: tuple[tuple[int, int], ...], **params: int) -> list[Case]:
    return [case_1d(n, tpb, params={"TPB": tpb, **params}) for n, tpb in pairs]


SHARED_MEMORY = ExerciseSpec(
    name="shared_memory", title="Shared memory: reverse an array",
    goal="out = a reversed (out[n - 1 - i] = a[i]). Each block loads its TPB elements of a into "
    "shared memory, waits at a barrier, and writes them reversed, so that both the global reads "
    "and the global writes of neighbouring threads touch neighbouring addresses.",
    params=("a", "out", "n"),
    factory=("TPB",),
    inputs=lambda rng, c: {"a": _vals(rng, _n(c)), "n": _n(c)},
    reference=lambda x, c: {"out": x["a"][::-1].copy()},
    outputs={"out": "uninitialized"},
    cases=lambda: _cases_tpb(((8, 8), (21, 8), (5, 32), (64, 32), (100, 32))),
    budget=Budget(global_reads_per_thread=1, global_writes_per_thread=1,
                  min_shared_bytes=_shared_tpb),
    hints={"budget": "Stage the block's elements in cuda.shared.array(TPB, numba.float32): thread "
           "t stores a[i] in tile[t], and after cuda.syncthreads() writes tile[TPB - 1 - t].",
           "pattern:partial_block": "In the last, partial block the element tile[TPB - 1 - t] "
           "was loaded only if its index j = blockIdx.x * TPB + TPB - 1 - t is < n: guard the "
           "write with that j, and write out[n - 1 - j]."},
)

# -- 6. pooling ----------------------------------------------------------------------------------
POOLING = ExerciseSpec(
    name="pooling", title="Pooling with shared memory",
    goal="out[i] = a[i - 2] + a[i - 1] + a[i] (terms before the start count as 0). Each element "
    "is needed by three threads: load it once into shared memory, with a halo of the two "
    "elements before the block, instead of reading global memory three times.",
    params=("a", "out", "n"),
    factory=("TPB",),
    inputs=lambda rng, c: {"a": _vals(rng, _n(c)), "n": _n(c)},
    reference=lambda x, c: {"out": np.convolve(x["a"], np.ones(3, F32))[:len(x["a"])]},
    outputs={"out": "uninitialized"},
    cases=lambda: _cases_tpb(((6, 8), (8, 8), (30, 8), (64, 32), (100, 32))),
    budget=Budget(global_reads_per_thread=2, global_writes_per_thread=1,
                  min_shared_bytes=_shared_tpb),
    hints={"budget": "Each thread reads its own a[i] into shared memory; only threads 0 and 1 "
           "also read one halo element each (a[start - 2], a[start - 1], or 0 before the start)."},
)


# -- 7. dot product ------------------------------------------------------------------------------
DOT = ExerciseSpec(
    name="dot", title="Dot product",
    goal="out[0] = sum(a[i] * b[i]). Each block multiplies its elements, adds them up in shared "
    "memory with a tree reduction (TPB is a power of two), and thread 0 adds the block's total "
    "to out[0] with one cuda.atomic.add. out starts at 0.",
    params=("a", "b", "out", "n"),
    factory=("TPB",),
    inputs=lambda rng, c: {"a": _vals(rng, _n(c)), "b": _vals(rng, _n(c)), "n": _n(c)},
    reference=lambda x, c: {"out": np.array([np.dot(x["a"], x["b"])], F32)},
    outputs={"out": "zeros"},
    cases=lambda: _cases_tpb(((5, 8), (8, 8), (50, 8), (100, 32), (300, 32))),
    budget=Budget(global_reads_per_thread=2, global_atomics_per_block=1,
                  min_shared_bytes=_shared_tpb),
    hints={"budget": "Add up the block's products in shared memory first (halve the active "
           "threads each step, with cuda.syncthreads() between steps); then only thread 0 calls "
           "cuda.atomic.add(out, 0, total).",
           "pattern:partial_block": "Threads past n must still put 0 in their shared slot and "
           "take part in every barrier."},
)

# -- 8. 1D convolution ---------------------------------------------------------------------------
CONV1D = ExerciseSpec(
    name="conv1d", title="1D convolution",
    goal="out[i] = sum over j < K of a[i + j] * w[j], where a[i + j] counts as 0 past the end. "
    "Load the block's TPB elements plus a halo of K - 1 elements after them, and the K weights, "
    "into shared memory (K <= TPB).",
    params=("a", "w", "out", "n"),
    factory=("TPB", "K"),
    inputs=lambda rng, c: {"a": _vals(rng, _n(c)), "w": _vals(rng, c.params["K"], -3, 4),
                           "n": _n(c)},
    reference=lambda x, c: {"out": np.correlate(
        np.concatenate([x["a"], np.zeros(len(x["w"]) - 1, F32)]), x["w"], "valid").astype(F32)},
    outputs={"out": "uninitialized"},
    cases=lambda: [case_1d(6, 8, params={"TPB": 8, "K": 3}),
                   case_1d(20, 8, params={"TPB": 8, "K": 3}),
                   case_1d(17, 8, params={"TPB": 8, "K": 5}),
                   case_1d(64, 32, params={"TPB": 32, "K": 4}),
                   case_1d(100, 32, params={"TPB": 32, "K": 4})],
    budget=Budget(global_reads_per_thread=3, global_writes_per_thread=1,
                  min_shared_bytes=_shared_tpb),
    hints={"budget": "Read each a element once into a shared tile of TPB + K - 1 elements (the "
           "first K - 1 threads also load one halo element each) and the weights into a shared "
           "array of K (the first K threads load one each)."},
)


# -- 9. prefix sum -------------------------------------------------------------------------------
def _block_scan(a: np.ndarray, tpb: int) -> np.ndarray:
    out = np.empty_like(a)
    for start in range(0, len(a), tpb):
        out[start:start + tpb] = np.cumsum(a[start:start + tpb])
    return out


PREFIX_SUM = ExerciseSpec(
    name="prefix_sum", title="Prefix sum within each block",
    goal="Each block computes the inclusive prefix sum of its TPB elements: out[i] = a[s] + ... + "
    "a[i], where s is the first index of i's block. Use shared memory and the Hillis-Steele "
    "scan: for offsets 1, 2, 4, ... each thread adds the value offset places to its left.",
    params=("a", "out", "n"),
    factory=("TPB",),
    inputs=lambda rng, c: {"a": _vals(rng, _n(c)), "n": _n(c)},
    reference=lambda x, c: {"out": _block_scan(x["a"], _tpb(c))},
    outputs={"out": "uninitialized"},
    cases=lambda: _cases_tpb(((5, 8), (8, 8), (20, 8), (64, 32), (100, 32))),
    budget=Budget(global_reads_per_thread=1, global_writes_per_thread=1,
                  min_shared_bytes=_shared_tpb),
    hints={"RaceConditionError": "In each step a thread reads a slot that another thread "
           "updates in the same step: read the value into a register, cuda.syncthreads(), then "
           "add and write, then cuda.syncthreads() again before the next step."},
)


# -- 10. axis sum --------------------------------------------------------------------------------
def _case_rows(rows: int, cols: int, tpb: int) -> Case:
    tags = {"several_blocks" if rows > 1 else "one_block",
            "cols_exceed_block" if cols > tpb else "cols_fit_block"}
    return Case({"rows": rows, "cols": cols}, (rows, 1, 1), (tpb, 1, 1), {"TPB": tpb},
                frozenset(tags))


AXIS_SUM = ExerciseSpec(
    name="axis_sum", title="Sum along an axis",
    goal="out[row] = sum of a[row, :]. One block per row (row = cuda.blockIdx.x): its TPB "
    "threads stride over the columns, each keeping a partial sum, then reduce the partial sums "
    "in shared memory (TPB is a power of two) and thread 0 writes out[row].",
    params=("a", "out"),
    factory=("TPB",),
    inputs=lambda rng, c: {"a": _vals(rng, (c.size["rows"], c.size["cols"]))},
    reference=lambda x, c: {"out": x["a"].sum(axis=1, dtype=F32)},
    outputs={"out": "uninitialized"},
    cases=lambda: [_case_rows(1, 5, 8), _case_rows(3, 8, 8), _case_rows(4, 20, 8),
                   _case_rows(5, 32, 32), _case_rows(3, 100, 32)],
    budget=Budget(global_reads_per_thread=lambda c: ceil_div(c.size["cols"], _tpb(c)),
                  global_writes_per_thread=1, min_shared_bytes=_shared_tpb),
    hints={"tag:cols_exceed_block": "a row has more columns than the block has threads",
           "tag:cols_fit_block": "a row fits in one block",
           "pattern:cols_exceed_block": "Each thread must loop over the columns col = t, t + TPB, "
           "t + 2 * TPB, ... and add them up before the shared-memory reduction."},
)


# -- 11. matmul ----------------------------------------------------------------------------------
def _case_mm(m: int, k: int, n: int, tpb: int) -> Case:
    grid = (ceil_div(n, tpb), ceil_div(m, tpb), 1)
    tags = {"several_blocks" if grid[0] * grid[1] > 1 else "one_block",
            "partial_block" if m % tpb or n % tpb or k % tpb else "whole_blocks",
            "several_k_tiles" if k > tpb else "one_k_tile"}
    return Case({"M": m, "K": k, "N": n}, grid, (tpb, tpb, 1), {"TPB": tpb}, frozenset(tags))


MATMUL = ExerciseSpec(
    name="matmul", title="Tiled matrix multiply",
    goal="out = a @ b for a of shape (M, K) and b of shape (K, N), with TPB x TPB blocks (x along "
    "the columns of out). Walk over K in tiles: each thread loads one element of a's tile and "
    "one of b's into shared memory, the block waits, every thread adds TPB products, the block "
    "waits again.",
    params=("a", "b", "out"),
    factory=("TPB",),
    inputs=lambda rng, c: {"a": _vals(rng, (c.size["M"], c.size["K"]), -5, 6),
                           "b": _vals(rng, (c.size["K"], c.size["N"]), -5, 6)},
    reference=lambda x, c: {"out": (x["a"] @ x["b"]).astype(F32)},
    outputs={"out": "uninitialized"},
    cases=lambda: [_case_mm(4, 4, 4, 4), _case_mm(12, 3, 10, 4), _case_mm(5, 7, 3, 4),
                   _case_mm(10, 9, 13, 4), _case_mm(16, 16, 16, 8), _case_mm(9, 20, 6, 8)],
    budget=Budget(global_reads_per_thread=lambda c: 2 * ceil_div(c.size["K"], _tpb(c)),
                  global_writes_per_thread=1),
    hints={"tag:several_k_tiles": "K spans several tiles (K > TPB)",
           "tag:one_k_tile": "K fits in one tile (K <= TPB)",
           "pattern:several_k_tiles": "Before the next tile is loaded, every thread must have "
           "finished with the current one: end each tile step with a second cuda.syncthreads().",
           "budget": "Each thread may read only one element of a and one of b per tile of K: "
           "load tiles into two cuda.shared.array((TPB, TPB), numba.float32) arrays and compute "
           "from those.",
           "pattern:partial_block": "Where a tile hangs over the edge of a or b, store 0 in the "
           "shared tile instead of reading past the end, and guard only the final write."},
)

# -- 12. histogram -------------------------------------------------------------------------------
HISTOGRAM = ExerciseSpec(
    name="histogram", title="Histogram with privatised bins",
    goal="out[v] = how many elements of a equal v, for v < BINS (out starts at 0). Each block "
    "counts into its own BINS counters in shared memory with shared-memory atomics, then adds "
    "each counter to out with at most one global atomic per bin.",
    params=("a", "out", "n"),
    factory=("TPB", "BINS"),
    inputs=lambda rng, c: {"a": rng.integers(0, c.params["BINS"], _n(c)).astype(np.int32),
                           "n": _n(c)},
    reference=lambda x, c: {"out": np.bincount(x["a"], minlength=c.params["BINS"]).astype(
        np.int32)},
    outputs={"out": "zeros"},
    cases=lambda: [case_1d(5, 8, params={"TPB": 8, "BINS": 4}),
                   case_1d(30, 8, params={"TPB": 8, "BINS": 4}),
                   case_1d(40, 8, params={"TPB": 8, "BINS": 16}),
                   case_1d(100, 32, params={"TPB": 32, "BINS": 10}),
                   case_1d(300, 32, params={"TPB": 32, "BINS": 10})],
    budget=Budget(global_reads_per_thread=1,
                  global_atomics_per_block=lambda c: c.params["BINS"],
                  min_shared_bytes=lambda c: c.params["BINS"] * 4),
    hints={"budget": "Give each block BINS counters in shared memory: zero them (threads loop "
           "over the bins when BINS > TPB), cuda.syncthreads(), count with cuda.atomic.add on "
           "the shared counters, cuda.syncthreads(), then add each counter to out once.",
           "RaceConditionError": "out[v] += 1 from many threads loses counts: use "
           "cuda.atomic.add."},
)

EXERCISES: dict[str, ExerciseSpec] = {s.name: s for s in (
    MAP, GUARDS, MAP_2D, BLOCKS, SHARED_MEMORY, POOLING, DOT, CONV1D, PREFIX_SUM, AXIS_SUM,
    MATMUL, HISTOGRAM)}
EXERCISES.update({s.name: s for s in REDUCTION_EXERCISES})  # exercises 20-26
