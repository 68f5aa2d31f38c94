"""Exercises 20-25: reductions, row-wise kernels and attention (22 and 26 are in specs_host.py).

warp_reduce, block_reduce_atomic, softmax, layer_norm and attention are kernel factories checked
like the first twelve.
Every exercise tries blocks from one warp (32 threads) to 256 threads, sizes that are and are not
multiples of the block, and one and several blocks. Integer-valued inputs make the sums exact;
softmax, layer norm and attention compare with a float64 numpy reference within a tolerance, on
inputs chosen so that the classic numerical mistakes (no max-subtraction, one-pass variance) fail.
The notebooks in notebooks/exercises explain each exercise in full.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..devices import WARP_SIZE
from .spec import Budget, Case, ExerciseSpec, case_1d, ceil_div
from .spec import n_of as _n
from .spec import small_ints as _vals
from .spec import tpb_of as _tpb

F32 = np.float32
def _cases(triples: tuple[tuple[int, ...], ...]) -> list[Case]:
    """case_1d(n, TPB) per (n, TPB) or (n, TPB, grid)."""
    out = []
    for n, tpb, *grid in triples:
        out.append(case_1d(n, tpb, grid=grid[0] if grid else None, params={"TPB": tpb}))
    return out


COMMON_TAGS = {
    "tag:TPB=32": "the block is a single warp (TPB=32)",
}


def _draw_1d(tpbs: tuple[int, ...], most_blocks: int, fewer_threads: bool = False):
    """A drawn 1-D case: a block size from `tpbs`, several blocks, usually a partial one."""
    def drawn(rng: np.random.Generator) -> list[Case]:
        tpb = int(rng.choice(tpbs))
        n = int(rng.integers(tpb + 1, most_blocks * tpb))
        grid = int(rng.integers(1, ceil_div(n, tpb) + 1)) if fewer_threads else None
        return [case_1d(n, tpb, grid=grid, params={"TPB": tpb})]
    return drawn


# -- 20. warp_reduce -----------------------------------------------------------------------------
WARP_REDUCE = ExerciseSpec(
    name="warp_reduce", title="Warp-shuffle reduction",
    goal="out[b] = the sum of block b's elements a[b * TPB], ..., a[b * TPB + TPB - 1] (those "
    "< n). Add up within each warp with cuda.shfl_down_sync (no shared memory), then lane 0 of "
    "each warp puts its warp's total in a shared array of TPB // 32 floats, the block waits, and "
    "warp 0 adds those up with shuffles again. TPB is a multiple of 32, at most 1024.",
    params=("a", "out", "n"),
    factory=("TPB",),
    inputs=lambda rng, c: {"a": _vals(rng, _n(c)), "n": _n(c)},
    reference=lambda x, c: {"out": np.add.reduceat(
        x["a"], np.arange(0, len(x["a"]), _tpb(c))).astype(F32)},
    outputs={"out": "uninitialized"},
    drawn=_draw_1d((64, 128, 256), 5),
    cases=lambda: _cases(((5, 32), (96, 32), (64, 64), (200, 64), (300, 128), (1000, 256))),
    budget=Budget(global_reads_per_thread=1, global_writes_per_thread=1,
                  min_shared_bytes=4, max_shared_bytes=WARP_SIZE * 4),
    hints={**COMMON_TAGS,
           "general": "Within a warp: v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset) for offset "
           "16, 8, 4, 2, 1 leaves the warp's total in lane 0.",
           "pattern:several_blocks": "Each block writes its own total to out[cuda.blockIdx.x], "
           "and reads its own elements (the global index, cuda.grid(1)).",
           "pattern:TPB=32": "With one warp per block it works; with several, every warp's total "
           "must be added: lane 0 of each warp writes it to shared memory, cuda.syncthreads() "
           "(the whole block, not cuda.syncwarp()), then warp 0 adds them up.",
           "budget": "Reduce with shuffles, not a shared-memory tree: shared memory holds only "
           "one float per warp (at most 32 floats).",
           "mismatch": "Check that every warp's total reaches the final sum: lane 0 of warp w "
           "stores it in shared[w] (w = threadIdx.x // 32, lane = threadIdx.x % 32), and the "
           "index of an element is the global one, cuda.grid(1), not the lane."},
)


# -- 21. block_reduce_atomic -----------------------------------------------------------------------
BLOCK_REDUCE_ATOMIC = ExerciseSpec(
    name="block_reduce_atomic", title="Grid reduction: a block tree, then one atomic per block",
    goal="out[0] = sum(a) (out starts at 0), on a grid that may have fewer threads than "
    "elements. Each thread adds up its elements with a grid-stride loop, the block adds up its "
    "threads' sums with a tree in shared memory (TPB is a power of two), and thread 0 adds the "
    "block's total to out[0] with one cuda.atomic.add.",
    params=("a", "out", "n"),
    factory=("TPB",),
    inputs=lambda rng, c: {"a": _vals(rng, _n(c)), "n": _n(c)},
    reference=lambda x, c: {"out": np.array([x["a"].sum(dtype=np.float64)], F32)},
    outputs={"out": "zeros"},
    drawn=_draw_1d((64, 128, 256), 9, fewer_threads=True),
    cases=lambda: _cases(((5, 32), (256, 256), (300, 32), (1000, 64, 4), (2048, 128, 4),
                          (777, 256, 2))),
    # + 1: thread 0's atomic counts as a read of out[0] (helper A's budget semantics)
    budget=Budget(global_reads_per_thread=lambda c: ceil_div(_n(c), c.threads) + 1,
                  global_atomics_per_block=1, min_shared_bytes=lambda c: _tpb(c) * 4),
    hints={**COMMON_TAGS,
           "budget": "Add up in registers and shared memory first: each thread loops over "
           "i, i + cuda.gridsize(1), ... into one sum, the block reduces those sums in "
           "cuda.shared.array(TPB, numba.float32), and only thread 0 calls "
           "cuda.atomic.add(out, 0, total).",
           "RaceConditionError": "Blocks run in any order and at once: out[0] += total from "
           "several blocks loses updates. Use cuda.atomic.add(out, 0, total); inside the block, "
           "end each tree step with cuda.syncthreads().",
           "pattern:partial_block": "Threads with no element must still put 0 in their shared "
           "slot and reach every barrier.",
           "pattern:TPB=32": "The tree must start at TPB // 2 (use TPB, not a number) and halve "
           "down to 1, with cuda.syncthreads() (not cuda.syncwarp()) after each step."},
)


# -- row-wise exercises: one block per row -------------------------------------------------------
def _case_rows(rows: int, cols: int, tpb: int) -> Case:
    tags = {"several_blocks" if rows > 1 else "one_block",
            "partial_block" if cols % tpb else "whole_blocks",
            "cols_exceed_block" if cols > tpb else "cols_fit_block"}
    return Case({"rows": rows, "cols": cols}, (rows, 1, 1), (tpb, 1, 1), {"TPB": tpb},
                frozenset(tags))


ROW_CASES = ((1, 5, 32), (3, 32, 32), (4, 100, 32), (2, 64, 64), (5, 300, 128), (3, 256, 256),
             (2, 1000, 256))


def _rows_drawn(rng: np.random.Generator) -> list[Case]:
    tpb = int(rng.choice((64, 128, 256)))
    return [_case_rows(int(rng.integers(1, 5)), int(rng.integers(tpb // 2, 3 * tpb)), tpb)]


ROW_TAGS = {
    "tag:cols_exceed_block": "a row has more columns than the block has threads",
    "tag:cols_fit_block": "a row fits in one block",
    "tag:partial_block": "the row length is not a multiple of the block size",
    "tag:whole_blocks": "the row length is a multiple of the block size",
    "pattern:cols_exceed_block": "Each thread must loop over the columns col = t, t + TPB, "
    "t + 2 * TPB, ... in every pass (max, sum, write).",
    "pattern:partial_block": "Threads with no column must put the neutral value in their "
    "shared slot (-inf for a max, 0 for a sum) and still reach every barrier.",
}


def _row_inputs(rng: np.random.Generator, case: Case, offset: float, spread: float) -> np.ndarray:
    """Rows shifted by +-(0.9 to 1) x offset, alternately up and down (row 0 up)."""
    rows, cols = case.size["rows"], case.size["cols"]
    signs = np.where(np.arange(rows) % 2 == 0, 1.0, -1.0)[:, None]
    shift = signs * rng.uniform(0.9 * offset, offset, size=(rows, 1))
    return (shift + rng.uniform(-spread, spread, size=(rows, cols))).astype(F32)


def _row_budget(per_col: int) -> Budget:
    return Budget(global_reads_per_thread=lambda c: per_col * ceil_div(c.size["cols"], _tpb(c)),
                  global_writes_per_thread=lambda c: ceil_div(c.size["cols"], _tpb(c)),
                  min_shared_bytes=lambda c: _tpb(c) * 4)


def _softmax(a: np.ndarray) -> np.ndarray:
    x = a.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# -- 23. softmax ---------------------------------------------------------------------------------
SOFTMAX = ExerciseSpec(
    name="softmax", title="Row-wise softmax",
    goal="out[r, c] = exp(a[r, c] - m) / sum over c' of exp(a[r, c'] - m), with m = max of row "
    "r. One block per row (row = cuda.blockIdx.x); its TPB threads (a power of two) stride over "
    "the columns: a max-reduction in shared memory, then a sum-reduction of the exponentials, "
    "then each thread writes its columns. Rows hold values near +-100, where exp overflows "
    "without the max subtracted.",
    params=("a", "out"),
    factory=("TPB",),
    inputs=lambda rng, c: {"a": _row_inputs(rng, c, 100.0, 5.0)},
    reference=lambda x, c: {"out": _softmax(x["a"]).astype(F32)},
    outputs={"out": "uninitialized"},
    drawn=_rows_drawn,
    cases=lambda: [_case_rows(*t) for t in ROW_CASES],
    budget=_row_budget(1),
    rtol=1e-4, atol=1e-6,
    hints={**COMMON_TAGS, **ROW_TAGS,
           "mismatch": "If you see nan or inf, exp overflowed: subtract the row's maximum "
           "before exp (exp(a - m) <= 1). Otherwise compare your formula with the goal.",
           "budget": "Read each element of your columns once per pass is fine (it counts "
           "once); more means some thread reads columns that are not its own: stride by TPB."},
)


# -- 24. layer_norm ------------------------------------------------------------------------------
EPS = 1e-5


def _layer_norm(x: dict[str, Any], c: Case) -> dict[str, np.ndarray]:
    a = x["a"].astype(np.float64)
    mean = a.mean(axis=1, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=1, keepdims=True)
    out = (a - mean) / np.sqrt(var + EPS) * x["gamma"] + x["beta"]
    return {"out": out.astype(F32)}


LAYER_NORM = ExerciseSpec(
    name="layer_norm", title="Layer normalisation",
    goal="out[r, c] = (a[r, c] - mean_r) / sqrt(var_r + 1e-5) * gamma[c] + beta[c], where mean_r "
    "and var_r are the mean and the (biased, divide by cols) variance of row r. One block per "
    "row; TPB threads (a power of two) stride over the columns; reduce in shared memory: first "
    "the sum (for the mean), then the sum of squared differences from the mean (two passes: "
    "rows have large offsets, where the one-pass E[x^2] - E[x]^2 loses every digit).",
    params=("a", "gamma", "beta", "out"),
    factory=("TPB",),
    inputs=lambda rng, c: {"a": _row_inputs(rng, c, 2000.0, 2.0),
                           "gamma": rng.uniform(0.5, 2.0, c.size["cols"]).astype(F32),
                           "beta": rng.uniform(-1.0, 1.0, c.size["cols"]).astype(F32)},
    reference=_layer_norm,
    outputs={"out": "uninitialized"},
    drawn=_rows_drawn,
    cases=lambda: [_case_rows(*t) for t in ROW_CASES],
    budget=_row_budget(3),
    rtol=1e-3, atol=2e-3,
    hints={**COMMON_TAGS, **ROW_TAGS,
           "mismatch": "Check the variance: two passes (mean first, then the mean of (x - mean) "
           "** 2), divided by cols (not cols - 1), and eps = 1e-5 inside the square root.",
           "budget": "Each thread may read its own columns of a, gamma and beta (they count "
           "once each): stride by TPB."},
)


# -- 25. attention -------------------------------------------------------------------------------
def _case_attn(m: int, length: int, d: int, tpb: int, scale: float) -> Case:
    tags = {"several_blocks" if m > 1 else "one_block",
            "partial_block" if length % tpb else "whole_blocks",
            "keys_exceed_block" if length > tpb else "keys_fit_block",
            "large_scores" if scale > 1 else "small_scores"}
    return Case({"M": m, "D": d, "scale": int(scale)}, (m, 1, 1), (tpb, 1, 1),
                {"TPB": tpb, "L": length}, frozenset(tags))


ATTN_CASES = ((1, 5, 4, 32, 1), (3, 40, 8, 32, 1), (4, 64, 16, 64, 200), (2, 100, 8, 128, 200),
              (3, 300, 32, 256, 200), (2, 256, 16, 256, 1))


def _attn_drawn(rng: np.random.Generator) -> list[Case]:
    """M, D and the scale drawn; (TPB, L) drawn among the fixed cases' (each new pair is a new
    kernel for the simulator to compile, which takes seconds)."""
    _, length, _, tpb, _ = ATTN_CASES[int(rng.integers(len(ATTN_CASES)))]
    return [_case_attn(int(rng.integers(1, 4)), length, int(rng.choice((4, 8, 16))), tpb,
                       float(rng.choice((1, 200))))]


def _attention(x: dict[str, Any], c: Case) -> dict[str, np.ndarray]:
    q, k, v = (x[n].astype(np.float64) for n in ("q", "k", "v"))
    p = _softmax(q @ k.T / math.sqrt(q.shape[1]))
    return {"out": (p @ v).astype(F32)}


def _attn_inputs(rng: np.random.Generator, c: Case) -> dict[str, np.ndarray]:
    m, length, d = c.size["M"], c.params["L"], c.size["D"]
    return {"q": (rng.uniform(-1, 1, (m, d)) * c.size["scale"]).astype(F32),
            "k": rng.uniform(-2, 2, (length, d)).astype(F32),
            "v": rng.uniform(-3, 3, (length, d)).astype(F32)}


ATTENTION = ExerciseSpec(
    name="attention", title="Single-head attention",
    goal="out = softmax(q @ k.T / sqrt(D)) @ v for q of shape (M, D) and k, v of shape (L, D), "
    "the softmax along each row. One block per query row i: its TPB threads (a power of two) "
    "stride over the L keys and store scores[j] = q[i] . k[j] / sqrt(D) in a shared array of L "
    "floats; the block reduces their maximum and the sum of exp(scores - max) in shared memory; "
    "then the threads stride over the D columns: out[i, c] = sum over j of exp(scores[j] - max) "
    "* v[j, c] / sum.",
    params=("q", "k", "v", "out"),
    factory=("TPB", "L"),
    inputs=_attn_inputs,
    reference=_attention,
    outputs={"out": "uninitialized"},
    drawn=_attn_drawn,
    cases=lambda: [_case_attn(*t) for t in ATTN_CASES],
    budget=Budget(global_reads_per_thread=lambda c: (
        c.size["D"] * (1 + ceil_div(c.params["L"], _tpb(c)))
        + c.params["L"] * ceil_div(c.size["D"], _tpb(c))),
        global_writes_per_thread=lambda c: ceil_div(c.size["D"], _tpb(c)),
        min_shared_bytes=lambda c: c.params["L"] * 4),
    rtol=1e-3, atol=1e-4,
    hints={**COMMON_TAGS,
           "tag:keys_exceed_block": "there are more keys than the block has threads (L > TPB)",
           "tag:keys_fit_block": "the keys fit in one block (L <= TPB)",
           "tag:large_scores": "the scores are large (q scaled up)",
           "tag:small_scores": "the scores are small",
           "pattern:keys_exceed_block": "Stride over the keys: j = t, t + TPB, ... when filling "
           "scores and in the reductions.",
           "pattern:large_scores": "exp of a large score overflows to inf: subtract the row's "
           "maximum score before exp.",
           "mismatch": "Check the scaling (divide the dot products by sqrt(D), the length of a "
           "query), the max-subtraction, and that v is indexed v[j, c].",
           "budget": "Each thread may read the query row once, the keys of its own scores, and "
           "the column of v it writes: keep the scores in shared memory instead of recomputing "
           "them for every output column."},
)


REDUCTION_EXERCISES = (WARP_REDUCE, BLOCK_REDUCE_ATOMIC, SOFTMAX, LAYER_NORM, ATTENTION)
