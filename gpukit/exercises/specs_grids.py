"""Exercises 13-19: 2-D and 3-D grids: stencils, transposes, a 2-D convolution, partial matmul.

Like the first twelve (specs.py), each `ExerciseSpec` tries several block shapes (32 to 256
threads, 2-D or 3-D), sizes that are and are not multiples of the block and of the tile, and one
and several blocks, so that an answer right only by luck fails somewhere. Inputs are small seeded
integers stored as float32, so every sum is exact in any order. The notebooks in
notebooks/exercises (13_stencil_2d ... 19_matmul_partial) explain each exercise in full.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .spec import Budget, Case, ExerciseSpec, ceil_div
from .spec import small_ints as _vals

F32 = np.float32


def _pick(rng: np.random.Generator, options: Any) -> Any:
    return options[int(rng.integers(len(options)))]


def _past(rng: np.random.Generator, step: int, most: int = 3) -> int:
    """A size between one and `most` steps, usually not a multiple of the step."""
    return int(rng.integers(step + 1, most * step))


def _rc(case: Case) -> tuple[int, int]:
    return case.size["rows"], case.size["cols"]


def _case_2d(rows: int, cols: int, block: tuple[int, int], tile: int | None = None,
             params: dict[str, int] | None = None) -> Case:
    """A 2-D case: x runs along the columns, y along the rows. Each block covers a tile x tile
    square when `tile` is given (its threads loop over the tile's rows), else its own shape."""
    bx, by = block
    tx, ty = (tile, tile) if tile else (bx, by)
    grid = (ceil_div(cols, tx), ceil_div(rows, ty), 1)
    tags = {"square" if rows == cols else "not_square",
            "several_blocks" if grid[0] * grid[1] > 1 else "one_block",
            "partial_block" if rows % ty or cols % tx else "whole_blocks"}
    return Case({"rows": rows, "cols": cols}, grid, (bx, by, 1), dict(params or {}),
                frozenset(tags))


_BLOCKS_2D = ((8, 4), (8, 8), (16, 16), (32, 8))  # 32 to 256 threads


def _drawn_2d(rng: np.random.Generator) -> list[Case]:
    bx, by = _pick(rng, _BLOCKS_2D)
    return [_case_2d(_past(rng, by), _past(rng, bx), (bx, by))]


_TAGS_2D = {"tag:square": "the array is square (rows == cols)",
            "tag:not_square": "the array is not square"}


# -- 13. stencil_2d ------------------------------------------------------------------------------
def _stencil_2d(a: np.ndarray) -> np.ndarray:
    p = np.pad(a, 1)
    return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - F32(4) * a).astype(F32)


STENCIL_2D = ExerciseSpec(
    drawn=_drawn_2d,
    name="stencil_2d", title="2D stencil (5 points)",
    goal="out[r, c] = a[r - 1, c] + a[r + 1, c] + a[r, c - 1] + a[r, c + 1] - 4 * a[r, c] (the "
    "discrete Laplacian), where neighbours outside the array count as 0. One thread per element "
    "on a 2D grid (x along the columns, y along the rows).",
    params=("a", "out"),
    inputs=lambda rng, c: {"a": _vals(rng, _rc(c))},
    reference=lambda x, c: {"out": _stencil_2d(x["a"])},
    outputs={"out": "uninitialized"},
    cases=lambda: [_case_2d(8, 8, (8, 8)), _case_2d(1, 9, (8, 4)), _case_2d(5, 13, (8, 4)),
                   _case_2d(16, 16, (8, 8)), _case_2d(16, 16, (16, 16)),
                   _case_2d(20, 37, (32, 8)), _case_2d(33, 17, (16, 16))],
    budget=Budget(global_atomics_per_block=0,
                  global_reads_per_thread=5, global_writes_per_thread=1),
    hints={**_TAGS_2D,
           "general": "col, row = cuda.grid(2); each thread computes one element of out.",
           "OutOfBoundsError": "Two kinds of guard: the thread's own (row < a.shape[0] and col < "
           "a.shape[1], else do nothing) and one per neighbour (read a[row - 1, col] only if "
           "row > 0, a[row + 1, col] only if row + 1 < a.shape[0], and so on; a neighbour "
           "outside the array counts as 0). Remember x is the column, y the row.",
           "unwritten": "Every element has an output, the edge elements too: do not skip the "
           "first and last rows and columns; give their missing neighbours the value 0.",
           "pattern:not_square": "x and y are probably swapped: `col, row = cuda.grid(2)` (x is "
           "the column, the last index); guard rows with a.shape[0] and columns with "
           "a.shape[1]."},
)


# -- 14. stencil_3d ------------------------------------------------------------------------------
def _case_3d(depth: int, rows: int, cols: int, block: tuple[int, int, int]) -> Case:
    bx, by, bz = block
    grid = (ceil_div(cols, bx), ceil_div(rows, by), ceil_div(depth, bz))
    tags = {"several_blocks" if np.prod(grid) > 1 else "one_block",
            "partial_block" if cols % bx or rows % by or depth % bz else "whole_blocks",
            "cube" if depth == rows == cols else "not_cube"}
    return Case({"depth": depth, "rows": rows, "cols": cols}, grid, block, {}, frozenset(tags))


_BLOCKS_3D = ((4, 4, 2), (8, 4, 4), (8, 8, 4))  # 32 to 256 threads


def _drawn_3d(rng: np.random.Generator) -> list[Case]:
    bx, by, bz = _pick(rng, _BLOCKS_3D)
    return [_case_3d(_past(rng, bz, 2), _past(rng, by, 2), _past(rng, bx, 2), (bx, by, bz))]


def _stencil_3d(a: np.ndarray) -> np.ndarray:
    p = np.pad(a, 1)
    c = p[1:-1, 1:-1, 1:-1]
    return (p[:-2, 1:-1, 1:-1] + p[2:, 1:-1, 1:-1] + p[1:-1, :-2, 1:-1] + p[1:-1, 2:, 1:-1]
            + p[1:-1, 1:-1, :-2] + p[1:-1, 1:-1, 2:] - F32(6) * c).astype(F32)


STENCIL_3D = ExerciseSpec(
    drawn=_drawn_3d,
    name="stencil_3d", title="3D stencil (7 points)",
    goal="out[z, y, x] = the sum of a's six face neighbours of (z, y, x) - 6 * a[z, y, x], where "
    "neighbours outside the array count as 0. One thread per element on a 3D grid: "
    "`x, y, z = cuda.grid(3)`, x along the last axis (columns), z along the first (depth).",
    params=("a", "out"),
    inputs=lambda rng, c: {"a": _vals(rng, (c.size["depth"], c.size["rows"], c.size["cols"]))},
    reference=lambda x, c: {"out": _stencil_3d(x["a"])},
    outputs={"out": "uninitialized"},
    cases=lambda: [_case_3d(2, 4, 4, (4, 4, 2)), _case_3d(4, 4, 4, (4, 4, 2)),
                   _case_3d(5, 6, 7, (4, 4, 2)),
                   _case_3d(4, 8, 8, (8, 8, 4)), _case_3d(6, 10, 9, (8, 8, 4)),
                   _case_3d(8, 8, 16, (8, 4, 4)), _case_3d(3, 5, 20, (8, 4, 4))],
    budget=Budget(global_atomics_per_block=0,
                  global_reads_per_thread=7, global_writes_per_thread=1),
    hints={"tag:cube": "the array is a cube (depth == rows == cols)",
           "tag:not_cube": "the array is not a cube",
           "pattern:not_cube": "The axes are probably mixed up: `x, y, z = cuda.grid(3)` and "
           "the element is a[z, y, x] (x is the last index); guard z with a.shape[0], y with "
           "a.shape[1] and x with a.shape[2].",
           "OutOfBoundsError": "Guard the thread's own element on all three axes (z < "
           "a.shape[0], y < a.shape[1], x < a.shape[2]), and each neighbour on its axis (read "
           "a[z - 1, y, x] only if z > 0, a[z + 1, y, x] only if z + 1 < a.shape[0], ...).",
           "unwritten": "Every element has an output, the faces of the box too: give missing "
           "neighbours the value 0 instead of skipping the element."},
)


# -- 15. transpose_naive -------------------------------------------------------------------------
TRANSPOSE_NAIVE = ExerciseSpec(
    drawn=_drawn_2d,
    name="transpose_naive", title="Transpose (naive)",
    goal="out = a.T for a of shape (rows, cols): out[c, r] = a[r, c]. One thread per element of "
    "a on a 2D grid that covers a (x along a's columns, y along its rows).",
    params=("a", "out"),
    inputs=lambda rng, c: {"a": _vals(rng, _rc(c))},
    reference=lambda x, c: {"out": np.ascontiguousarray(x["a"].T)},
    outputs={"out": "uninitialized"},
    cases=lambda: [_case_2d(8, 8, (8, 8)), _case_2d(4, 8, (8, 4)), _case_2d(13, 5, (8, 4)),
                   _case_2d(16, 16, (8, 8)), _case_2d(20, 37, (32, 8)),
                   _case_2d(40, 33, (16, 16))],
    budget=Budget(global_atomics_per_block=0,
                  global_reads_per_thread=1, global_writes_per_thread=1),
    hints={**_TAGS_2D,
           "general": "col, row = cuda.grid(2) is the element of a; it goes to out[col, row].",
           "pattern:not_square": "On a non-square array the two shapes differ: a is (rows, "
           "cols), out is (cols, rows). Take col, row = cuda.grid(2) (x is a's column), guard "
           "with row < a.shape[0] and col < a.shape[1], and write out[col, row] = a[row, col].",
           "OutOfBoundsError": "Guard with a's shape (row < a.shape[0] and col < a.shape[1]) "
           "and swap the indices only when writing out: out[col, row] = a[row, col]."},
)


# -- 16, 17. transpose_tiled, transpose_padded ---------------------------------------------------
def _case_tile(rows: int, cols: int, tile: int, rows_per_pass: int) -> Case:
    case = _case_2d(rows, cols, (tile, rows_per_pass), tile, {"TILE": tile, "ROWS": rows_per_pass})
    passes = "several_passes" if rows_per_pass < tile else "one_pass"
    return dataclasses.replace(case, tags=case.tags | {passes})


def _tile_cases() -> list[Case]:
    return [_case_tile(rows, cols, tile, rows_per_pass)
            for rows, cols, tile, rows_per_pass in (
                (8, 8, 8, 4), (13, 5, 8, 4), (16, 24, 8, 8), (16, 16, 16, 16),
                (33, 20, 16, 16), (32, 32, 32, 8), (40, 33, 32, 8))]


def _drawn_tiles(rng: np.random.Generator) -> list[Case]:
    tile, rows_per_pass = _pick(rng, ((8, 4), (8, 8), (16, 16), (32, 8)))
    return [_case_tile(_past(rng, tile), _past(rng, tile), tile, rows_per_pass)]


def _passes(case: Case) -> int:
    return ceil_div(case.params["TILE"], case.params["ROWS"])


_TILED_GOAL = (
    "out = a.T for a of shape (rows, cols). Each block of TILE x ROWS threads (x along the "
    "columns) moves one TILE x TILE tile: its threads read the tile's rows of a, coalesced, into "
    "shared memory (thread (tx, ty) handles rows ty, ty + ROWS, ...), wait at a barrier, and write "
    "the tile's columns as rows of out, coalesced too.")

_TILED_HINTS = {
    **_TAGS_2D,
    "tag:several_passes": "ROWS < TILE (each thread moves several rows of the tile)",
    "tag:one_pass": "ROWS = TILE (each thread moves one element)",
    "pattern:several_passes": "With ROWS < TILE the block has fewer rows of threads than the "
    "tile has rows: loop `for j in range(0, TILE, ROWS)` over rows ty + j, both when loading "
    "and when storing.",
    "budget": "Each thread may read TILE / ROWS elements of a and write TILE / ROWS of out: "
    "stage the tile in cuda.shared.array and read from there what you write.",
    "unwritten": "Each thread moves TILE / ROWS elements: loop `for j in range(0, TILE, ROWS)` "
    "over rows ty + j of the tile, both when loading and when storing.",
    "OutOfBoundsError": "Guard every global access with the shape of the array it touches: "
    "loading, y < a.shape[0] and x < a.shape[1]; storing, with out's shape (which is a's, "
    "swapped). The block's tile origin swaps too: it reads from (blockIdx.y * TILE, blockIdx.x * "
    "TILE) of a and writes to (blockIdx.x * TILE, blockIdx.y * TILE) of out.",
    "RaceConditionError": "The threads write out what other threads loaded: every load must be "
    "finished, by the whole block, before any thread reads the tile. That takes "
    "cuda.syncthreads(); cuda.syncwarp() orders one warp only.",
    "pattern:partial_block": "Where the tile hangs over the edge of a, load nothing and store "
    "nothing for the missing elements: guard the load with a's shape and the store with out's.",
}

TRANSPOSE_TILED = ExerciseSpec(
    drawn=_drawn_tiles,
    name="transpose_tiled", title="Transpose through a shared-memory tile",
    goal=_TILED_GOAL,
    params=("a", "out"),
    factory=("TILE", "ROWS"),
    inputs=lambda rng, c: {"a": _vals(rng, _rc(c))},
    reference=lambda x, c: {"out": np.ascontiguousarray(x["a"].T)},
    outputs={"out": "uninitialized"},
    cases=_tile_cases,
    budget=Budget(global_atomics_per_block=0,
                  global_reads_per_thread=_passes, global_writes_per_thread=_passes,
                  min_shared_bytes=lambda c: c.params["TILE"] ** 2 * 4),
    hints=_TILED_HINTS,
)

TRANSPOSE_PADDED = ExerciseSpec(
    drawn=_drawn_tiles,
    name="transpose_padded", title="Transpose through a padded tile (no bank conflicts)",
    goal=_TILED_GOAL + " Pad the tile by one column, cuda.shared.array((TILE, TILE + 1), ...), so "
    "that a warp reading a column of the tile touches 32 different banks.",
    params=("a", "out"),
    factory=("TILE", "ROWS"),
    inputs=lambda rng, c: {"a": _vals(rng, _rc(c))},
    reference=lambda x, c: {"out": np.ascontiguousarray(x["a"].T)},
    outputs={"out": "uninitialized"},
    cases=_tile_cases,
    budget=Budget(global_atomics_per_block=0,
                  global_reads_per_thread=_passes, global_writes_per_thread=_passes,
                  min_shared_bytes=lambda c: c.params["TILE"] * (c.params["TILE"] + 1) * 4,
                  max_bank_conflict_ways=2),
    hints={**_TILED_HINTS,
           "budget": "Declare the tile with one extra column, cuda.shared.array((TILE, TILE + 1), "
           "numba.float32), and keep indexing it tile[row, col]: a column of the tile then "
           "spreads over all 32 banks. Padding the rows, (TILE + 1, TILE), does not help.",
           },
)


# -- 18. conv2d ----------------------------------------------------------------------------------
def _conv2d(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    k = w.shape[0]
    p = np.pad(a, k // 2)
    out = np.zeros_like(a)
    for i in range(k):
        for j in range(k):
            out += w[i, j] * p[i:i + a.shape[0], j:j + a.shape[1]]
    return out.astype(F32)


def _conv_reads(case: Case) -> int:
    bx, by, k = case.params["BX"], case.params["BY"], case.params["K"]
    return ceil_div(by + k - 1, by) * ceil_div(bx + k - 1, bx) + 1


def _conv_cases() -> list[Case]:
    return [_case_2d(rows, cols, (bx, by), None, {"BX": bx, "BY": by, "K": k})
            for rows, cols, bx, by, k in (
                (8, 8, 8, 8, 5), (5, 13, 8, 4, 3), (16, 16, 8, 8, 5), (8, 32, 32, 8, 3),
                (20, 37, 32, 8, 3), (16, 16, 16, 16, 5), (9, 30, 16, 16, 5))]


def _drawn_conv(rng: np.random.Generator) -> list[Case]:
    bx, by, k = _pick(rng, ((8, 4, 3), (8, 8, 5), (32, 8, 3), (16, 16, 5)))
    return [_case_2d(_past(rng, by), _past(rng, bx), (bx, by), None, {"BX": bx, "BY": by, "K": k})]


CONV2D = ExerciseSpec(
    drawn=_drawn_conv,
    name="conv2d", title="2D convolution with a shared tile and halo",
    goal="out[r, c] = sum over i, j < K of a[r + i - K // 2, c + j - K // 2] * w[i, j] (K odd; "
    "elements outside a count as 0). Blocks of BX x BY threads (x along the columns): each "
    "block loads its (BY + K - 1) x (BX + K - 1) tile of a, its elements plus a halo of K // 2 "
    "on every side, and the K x K weights into shared memory, waits, and computes from there.",
    params=("a", "w", "out"),
    factory=("BX", "BY", "K"),
    inputs=lambda rng, c: {"a": _vals(rng, _rc(c)),
                           "w": _vals(rng, (c.params["K"], c.params["K"]), -3, 4)},
    reference=lambda x, c: {"out": _conv2d(x["a"], x["w"])},
    outputs={"out": "uninitialized"},
    cases=_conv_cases,
    budget=Budget(global_atomics_per_block=0,
                  global_reads_per_thread=_conv_reads, global_writes_per_thread=1,
                  min_shared_bytes=lambda c: 4 * (c.params["BY"] + c.params["K"] - 1)
                  * (c.params["BX"] + c.params["K"] - 1)),
    hints={**_TAGS_2D,
           "tag:K=3": "K = 3", "tag:K=5": "K = 5",
           "budget": "Read each element of a once per block: the block's threads fill the "
           "(BY + K - 1) x (BX + K - 1) shared tile in a loop (rows i = ty, ty + BY, ...; "
           "columns j = tx, tx + BX, ...), 0 outside a; the first K * K threads (flat index "
           "ty * BX + tx) load one weight each into a shared K x K array.",
           "OutOfBoundsError": "The halo reaches K // 2 elements past every edge of the block: "
           "store 0 in the tile where the global row or column is < 0 or >= the shape, and "
           "guard the final write with out's shape.",
           "UninitializedMemoryError": "Every slot of the tile, the halo included, and every "
           "weight must be written before the barrier (0 outside a): loop over the whole "
           "(BY + K - 1) x (BX + K - 1) tile, not only over the block's own elements, and do "
           "not return early: threads past the edge of a still load their share.",
           "pattern:partial_block": "Threads past the edge of a have no output but must still "
           "help fill the tile and reach the barrier: guard only the final write."},
)


# -- 19. matmul_partial --------------------------------------------------------------------------
def _case_mm(m: int, k: int, n: int, bx: int, by: int, tk: int) -> Case:
    grid = (ceil_div(n, bx), ceil_div(m, by), 1)
    tags = {"several_blocks" if grid[0] * grid[1] > 1 else "one_block",
            "partial_block" if m % by or n % bx or k % tk else "whole_blocks",
            "several_k_tiles" if k > tk else "one_k_tile",
            "square_block" if bx == by == tk else "rectangular_tiles"}
    return Case({"M": m, "K": k, "N": n}, grid, (bx, by, 1), {"BX": bx, "BY": by, "TK": tk},
                frozenset(tags))


def _mm_reads(case: Case) -> int:
    bx, by, tk = case.params["BX"], case.params["BY"], case.params["TK"]
    return ceil_div(case.size["K"], tk) * (ceil_div(tk, bx) + ceil_div(tk, by))


def _drawn_mm(rng: np.random.Generator) -> list[Case]:
    bx, by, tk = _pick(rng, ((8, 4, 8), (32, 8, 8), (16, 16, 16), (8, 8, 4)))
    return [_case_mm(_past(rng, by), _past(rng, tk), _past(rng, bx), bx, by, tk)]


MATMUL_PARTIAL = ExerciseSpec(
    drawn=_drawn_mm,
    name="matmul_partial", title="Tiled matmul with partial, rectangular tiles",
    goal="out = a @ b for a of shape (M, K) and b of shape (K, N), none of them a multiple of "
    "anything. Blocks of BX x BY threads (x along the columns of out); the K axis is walked in "
    "tiles of TK: a_tile is BY x TK, b_tile is TK x BX, filled by the block's threads in loops "
    "(a thread may load several elements or none), with 0 where a tile hangs over the edge.",
    params=("a", "b", "out"),
    factory=("BX", "BY", "TK"),
    inputs=lambda rng, c: {"a": _vals(rng, (c.size["M"], c.size["K"]), -5, 6),
                           "b": _vals(rng, (c.size["K"], c.size["N"]), -5, 6)},
    reference=lambda x, c: {"out": (x["a"] @ x["b"]).astype(F32)},
    outputs={"out": "uninitialized"},
    cases=lambda: [_case_mm(8, 8, 8, 8, 8, 4), _case_mm(5, 7, 3, 8, 4, 8),
                   _case_mm(13, 20, 37, 32, 8, 8), _case_mm(16, 32, 16, 16, 16, 16),
                   _case_mm(33, 17, 20, 16, 16, 16), _case_mm(1, 5, 40, 32, 8, 8),
                   _case_mm(24, 9, 8, 8, 8, 4)],
    budget=Budget(global_atomics_per_block=0,
                  global_reads_per_thread=_mm_reads, global_writes_per_thread=1,
                  min_shared_bytes=lambda c: 4 * c.params["TK"] * (c.params["BX"]
                                                                   + c.params["BY"])),
    hints={"tag:several_k_tiles": "K spans several tiles (K > TK)",
           "tag:one_k_tile": "K fits in one tile (K <= TK)",
           "tag:square_block": "BX = BY = TK (square tiles)",
           "tag:rectangular_tiles": "the tiles are not square (BX, BY and TK differ)",
           "pattern:rectangular_tiles": "a_tile is BY x TK and b_tile TK x BX: fill a_tile with "
           "`for k in range(tx, TK, BX)` (row ty) and b_tile with `for k in range(ty, TK, BY)` "
           "(column tx), and sum over k < TK, never over BX or BY.",
           "pattern:several_k_tiles": "Before the next tile is loaded, every thread must have "
           "finished with the current one: end each tile step with a second cuda.syncthreads().",
           "budget": "Per tile of K, each thread may read ceil(TK / BX) elements of a and "
           "ceil(TK / BY) of b: load the tiles into shared memory in loops and compute from "
           "there.",
           "UninitializedMemoryError": "Every slot of a_tile (BY x TK) and of b_tile (TK x BX) "
           "must be written in every tile step, before the barrier: when TK differs from BX or "
           "BY, one element per thread is too few or too many; loop over the tile's width "
           "(k = tx, tx + BX, ... < TK) and height (k = ty, ty + BY, ... < TK).",
           "OutOfBoundsError": "Past the end of a or b: where a tile hangs over the edge (row "
           ">= M, column >= N, or k >= K), store 0 in the shared tile instead of reading; guard "
           "only the final write with out's shape.",
           "oob:shared": "Past the end of a_tile or b_tile: a_tile is BY x TK and b_tile TK x "
           "BX, so index a_tile[ty, k] and b_tile[k, tx] with k < TK, never with tx or ty "
           "alone.",
           "pattern:partial_block": "Where a tile hangs over the edge of a or b, store 0 in the "
           "shared tile instead of reading past the end, and guard only the final write."},
)

GRID_EXERCISES: tuple[ExerciseSpec, ...] = (
    STENCIL_2D, STENCIL_3D, TRANSPOSE_NAIVE, TRANSPOSE_TILED, TRANSPOSE_PADDED, CONV2D,
    MATMUL_PARTIAL)
