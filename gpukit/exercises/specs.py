"""The workshop's exercises: inputs, numpy references, launch shapes, budgets and hints.

Each `ExerciseSpec` tries fixed edge cases and cases drawn from check's seed: block sizes from
one warp (32 threads, some smaller) to 256 threads or more (2D shapes such as (8, 8), (16, 16),
(32, 8) and (16, 32) for 2D exercises), sizes that are and are not multiples of the block and
tile, one and several blocks. So a kernel that is right only by luck (a warp-wide barrier or
lane index where a block-wide one belongs, sizes hard-coded to the fixed cases, an unused shared
array) fails somewhere. Inputs are small seeded integers stored as floats, so sums are exact in
any order. The notebooks in notebooks/exercises explain each exercise in full.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .spec import Budget, Case, ExerciseSpec, case_1d, case_2d, ceil_div
from .spec import n_of as _n
from .spec import small_ints as _vals
from .spec import tpb_of as _tpb
from .specs_grids import GRID_EXERCISES
from .specs_host import SCAN_MULTIBLOCK, STREAM_OVERLAP
from .specs_reductions import ATTENTION, BLOCK_REDUCE_ATOMIC, LAYER_NORM, SOFTMAX, WARP_REDUCE

F32 = np.float32
WARP_TO_256 = (32, 64, 128, 256)  # block sizes the drawn cases of plain kernels pick from
BLOCKS_2D = ((8, 8), (16, 16), (32, 8), (8, 32), (16, 32))


def _pick(rng: np.random.Generator, choices: tuple) -> Any:
    return choices[int(rng.integers(len(choices)))]


def _int(rng: np.random.Generator, lo: int, hi: int) -> int:
    """A number in lo..hi (both included)."""
    return int(rng.integers(lo, hi + 1))


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
    cases=lambda: [case_1d(n, n) for n in (1, 7, 32, 100, 256)],
    drawn=lambda rng: [case_1d(n, n) for n in (_int(rng, 33, 255), _int(rng, 257, 1024))],
    budget=Budget(global_reads_per_thread=1, global_writes_per_thread=1,
                  global_atomics_per_block=0),
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
                   case_1d(40, 32, grid=3), case_1d(257, 128), case_1d(256, 256),
                   case_1d(300, 256)],
    drawn=lambda rng: [case_1d(_int(rng, 1, 5 * (t := _pick(rng, WARP_TO_256))), t),
                       case_1d(_int(rng, 257, 1000), 256)],
    budget=Budget(global_reads_per_thread=1, global_writes_per_thread=1,
                  global_atomics_per_block=0),
    hints={"OutOfBoundsError": "Threads past the end must do nothing: wrap the work in "
           "`if i < n:` (and compare with <, not <=)."},
)


# -- 3. map_2d ---------------------------------------------------------------------------------
_case_2d = case_2d


def _drawn_2d(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(2):
        bx, by = _pick(rng, BLOCKS_2D)
        cases.append(case_2d(_int(rng, 1, 3 * by), _int(rng, 1, 3 * bx), bx, by))
    return cases


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
                   _case_2d(5, 13, 8, 4), _case_2d(20, 6, 4, 8), _case_2d(33, 17, 16, 16),
                   _case_2d(16, 16, 16, 16), _case_2d(24, 64, 32, 8), _case_2d(40, 20, 16, 32)],
    drawn=_drawn_2d,
    budget=Budget(global_reads_per_thread=2, global_writes_per_thread=1,
                  global_atomics_per_block=0),
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
                   case_1d(1000, 64, grid=3), case_1d(256, 64, grid=2),
                   case_1d(1000, 256, grid=1), case_1d(2000, 128, grid=3),
                   case_1d(512, 256, grid=2)],
    drawn=lambda rng: [case_1d(_int(rng, 1, 5 * (g := _int(rng, 1, 4)) * (t := _pick(
        rng, WARP_TO_256))), t, grid=g) for _ in range(2)],
    budget=Budget(global_reads_per_thread=lambda c: 2 * ceil_div(_n(c), c.threads),
                  global_writes_per_thread=lambda c: ceil_div(_n(c), c.threads),
                  global_atomics_per_block=0),
    hints={"unwritten": "Elements beyond the grid's threads were never written: loop "
           "`for i in range(start, n, stride)` with start = cuda.grid(1) and stride = "
           "cuda.gridsize(1)."},
)


# -- 5. shared memory: reverse ---------------------------------------------------------------------
def _cases_tpb(pairs: tuple[tuple[int, int], ...], **params: int) -> list[Case]:
    return [case_1d(n, tpb, params={"TPB": tpb, **params}) for n, tpb in pairs]


FIXED_TPB = ((5, 32), (64, 32), (100, 32), (256, 256), (300, 256), (1000, 256))
"""(n, TPB) of the 1D factory exercises: one-warp and eight-warp blocks, whole and partial, one
block and several. Every new TPB compiles the learner's kernel once more (seconds), so the drawn
cases draw sizes for these two block sizes."""
FACTORY_TPB = (32, 256)


def _drawn_tpb(rng: np.random.Generator) -> list[Case]:
    """An eight-warp block over several blocks, and any block over a size up to a few blocks."""
    any_ = _pick(rng, FACTORY_TPB)
    return _cases_tpb(((_int(rng, 257, 1024), 256), (_int(rng, 1, 3 * any_), any_)))


def _drawn_pairs(fixed: list[Case], rng: np.random.Generator, k: int = 2) -> list[Case]:
    """k cases with factory arguments of the fixed cases (no new compile) and a drawn n."""
    out = []
    for _ in range(k):
        params = fixed[int(rng.integers(len(fixed)))].params
        out.append(case_1d(_int(rng, 1, 4 * params["TPB"]), params["TPB"], params=params))
    return out


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
    cases=lambda: _cases_tpb(((21, 32), *FIXED_TPB)),
    drawn=_drawn_tpb,
    budget=Budget(global_reads_per_thread=1, global_writes_per_thread=1,
                  global_atomics_per_block=0, min_shared_bytes=_shared_tpb),
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
    cases=lambda: _cases_tpb(((2, 32), (32, 32), *FIXED_TPB)),
    drawn=_drawn_tpb,
    budget=Budget(global_reads_per_thread=2, global_writes_per_thread=1,
                  global_atomics_per_block=0, min_shared_bytes=_shared_tpb),
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
    cases=lambda: _cases_tpb(((32, 32), (300, 32), *FIXED_TPB)),
    drawn=_drawn_tpb,
    # thread 0's atomic reads and writes out[0]: 3 reads (a[i], b[i], out[0]) and 1 write
    budget=Budget(global_reads_per_thread=3, global_writes_per_thread=1,
                  global_atomics_per_block=1, min_shared_bytes=_shared_tpb),
    hints={"budget": "Add up the block's products in shared memory first (halve the active "
           "threads each step, with cuda.syncthreads() between steps); then only thread 0 calls "
           "cuda.atomic.add(out, 0, total).",
           "pattern:partial_block": "Threads past n must still put 0 in their shared slot and "
           "take part in every barrier."},
)

# -- 8. 1D convolution ---------------------------------------------------------------------------
def _conv_cases() -> list[Case]:
    return [case_1d(n, tpb, params={"TPB": tpb, "K": k}) for n, tpb, k in (
        (6, 32, 3), (32, 32, 3), (70, 32, 3), (100, 32, 5), (256, 256, 5), (700, 256, 5))]


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
    cases=lambda: _conv_cases(),
    drawn=lambda rng: _drawn_pairs(_conv_cases(), rng),
    budget=Budget(global_reads_per_thread=3, global_writes_per_thread=1,
                  global_atomics_per_block=0, min_shared_bytes=_shared_tpb),
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
    cases=lambda: _cases_tpb(((32, 32), *FIXED_TPB)),
    drawn=_drawn_tpb,
    budget=Budget(global_reads_per_thread=1, global_writes_per_thread=1,
                  global_atomics_per_block=0, min_shared_bytes=_shared_tpb),
    hints={"race:same_statement": "In each step a thread reads a slot that another thread "
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
    cases=lambda: [_case_rows(1, 5, 32), _case_rows(3, 32, 32), _case_rows(4, 70, 32),
                   _case_rows(3, 100, 32), _case_rows(1, 256, 256), _case_rows(2, 40, 256),
                   _case_rows(3, 1000, 256)],
    drawn=lambda rng: [_case_rows(_int(rng, 1, 4), _int(rng, 1, 4 * (t := _pick(
        rng, FACTORY_TPB))), t) for _ in range(2)],
    budget=Budget(global_reads_per_thread=lambda c: ceil_div(c.size["cols"], _tpb(c)),
                  global_writes_per_thread=1, global_atomics_per_block=0,
                  min_shared_bytes=_shared_tpb),
    hints={"tag:cols_exceed_block": "a row has more columns than the block has threads",
           "tag:cols_fit_block": "a row fits in one block",
           "pattern:cols_exceed_block:mismatch": "Each thread must loop over the columns col = t, "
           "t + TPB, t + 2 * TPB, ... and add them up before the shared-memory reduction."},
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
                   _case_mm(10, 9, 13, 4), _case_mm(16, 16, 16, 16), _case_mm(40, 37, 20, 16),
                   _case_mm(8, 64, 24, 16)],
    drawn=lambda rng: [_case_mm(_int(rng, 1, 3 * (t := _pick(rng, (4, 16)))),
                                _int(rng, 1, 5 * t), _int(rng, 1, 3 * t), t) for _ in range(2)],
    budget=Budget(global_reads_per_thread=lambda c: 2 * ceil_div(c.size["K"], _tpb(c)),
                  global_writes_per_thread=1, global_atomics_per_block=0,
                  min_shared_bytes=lambda c: 2 * _tpb(c) ** 2 * 4),
    hints={"tag:several_k_tiles": "K spans several tiles (K > TPB)",
           "tag:one_k_tile": "K fits in one tile (K <= TPB)",
           "pattern:several_k_tiles:RaceConditionError": "Before the next tile is loaded, every thread must have "
           "finished with the current one: end each tile step with a second cuda.syncthreads().",
           "budget": "Each thread may read only one element of a and one of b per tile of K: "
           "load tiles into two cuda.shared.array((TPB, TPB), numba.float32) arrays and compute "
           "from those.",
           "pattern:partial_block": "Where a tile hangs over the edge of a or b, store 0 in the "
           "shared tile instead of reading past the end, and guard only the final write."},
)

# -- 12. histogram -------------------------------------------------------------------------------
def _bins_per_thread(case: Case) -> int:
    return ceil_div(case.params["BINS"], _tpb(case))


def _histogram_cases() -> list[Case]:
    return [case_1d(n, tpb, params={"TPB": tpb, "BINS": bins}) for n, tpb, bins in (
        (5, 32, 4), (30, 32, 4), (100, 32, 40), (300, 32, 40), (256, 256, 7), (1000, 256, 7))]


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
    cases=lambda: _histogram_cases(),
    drawn=lambda rng: _drawn_pairs(_histogram_cases(), rng),
    # a thread reads a[i], and its atomics read and write the bins it adds (v = t, t + TPB, ...)
    budget=Budget(global_reads_per_thread=lambda c: 1 + _bins_per_thread(c),
                  global_writes_per_thread=_bins_per_thread,
                  global_atomics_per_block=lambda c: c.params["BINS"],
                  min_shared_bytes=lambda c: c.params["BINS"] * 4),
    hints={"budget": "Give each block BINS counters in shared memory: zero them (threads loop "
           "over the bins when BINS > TPB), cuda.syncthreads(), count with cuda.atomic.add on "
           "the shared counters, cuda.syncthreads(), then add each counter to out once.",
           **dict.fromkeys(("RaceConditionError", "race:same_statement", "race:blocks",
                            "race:same_element"),
                           "out[v] += 1 from many threads loses counts: use cuda.atomic.add.")},
)

EXERCISES: dict[str, ExerciseSpec] = {s.name: s for s in (
    MAP, GUARDS, MAP_2D, BLOCKS, SHARED_MEMORY, POOLING, DOT, CONV1D, PREFIX_SUM, AXIS_SUM,
    MATMUL, HISTOGRAM)}
EXERCISES.update({s.name: s for s in GRID_EXERCISES})  # 13-19: 2-D and 3-D grids
EXERCISES.update({s.name: s for s in (  # 20-26: reductions, scans, row-wise kernels, streams
    WARP_REDUCE, BLOCK_REDUCE_ATOMIC, SCAN_MULTIBLOCK, SOFTMAX, LAYER_NORM, ATTENTION,
    STREAM_OVERLAP)})
