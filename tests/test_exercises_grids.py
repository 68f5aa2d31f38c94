"""Exercises 13-19 (2-D and 3-D grids): the official solutions pass, every known-wrong solution is
rejected for the reason given, and the specs try launches that catch lucky answers.

The solutions are the kernels of notebooks/solutions/13_*.ipynb ... 19_*.ipynb (the code learners
see), imported from their cells; the wrong ones are below, each with the kind of failure and a
phrase the verdict must contain.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
from pathlib import Path

import numba
import numpy as np
import pytest
from numba import cuda

from gpukit.exercises import EXERCISES, check, get_spec
from gpukit.exercises.specs_grids import GRID_EXERCISES

NAMES = [s.name for s in GRID_EXERCISES]
SOLUTIONS_DIR = Path(__file__).resolve().parents[1] / "notebooks" / "solutions"
EXERCISES_DIR = SOLUTIONS_DIR.parent / "exercises"
CHECK_CALL = re.compile(r'check\((\w+),\s*"(\w+)"\)')


def _flat(text: str) -> str:
    return " ".join(text.split())


def _cells(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "code"]


def _load(path: Path, tmp: Path) -> tuple[str, object]:
    """(exercise name, kernel or factory) from a solution notebook's setup and solution cells."""
    cells = _cells(path)
    kernel_cell = next(c for c in cells if c.startswith("# SOLUTION"))
    entry, name = CHECK_CALL.search(cells[-1]).groups()
    module_path = tmp / f"solution_{path.stem}.py"
    module_path.write_text(cells[0] + "\n\n" + kernel_cell + "\n")
    spec = importlib.util.spec_from_file_location(module_path.stem, module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return name, getattr(module, entry)


@pytest.fixture(scope="module")
def solutions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("grid_solutions")
    paths = sorted(SOLUTIONS_DIR.glob("1[3-9]_*.ipynb"))
    found = dict(_load(p, tmp) for p in paths)
    assert list(found) == NAMES, "exercises 13-19 each need a solution notebook, in order"
    return found


# -- the specs -----------------------------------------------------------------------------------
def test_grid_exercises_are_registered_in_workshop_order() -> None:
    assert NAMES == ["stencil_2d", "stencil_3d", "transpose_naive", "transpose_tiled",
                     "transpose_padded", "conv2d", "matmul_partial"]
    names = list(EXERCISES)
    assert names[names.index("stencil_2d"):names.index("stencil_2d") + 7] == NAMES
    assert all(EXERCISES[n] is s for n, s in zip(NAMES, GRID_EXERCISES))


def _all_cases(spec) -> list:
    drawn = getattr(spec, "drawn", None)
    return spec.cases() + (drawn(np.random.default_rng([0, 0xCA5E])) if drawn else [])


@pytest.mark.parametrize("name", NAMES)
def test_specs_try_launches_that_catch_lucky_answers(name: str) -> None:
    spec = get_spec(name)
    cases = spec.cases()
    assert len(cases) >= 6
    threads = [int(np.prod(c.block)) for c in cases]
    assert min(threads) == 32 and max(threads) >= 256  # one warp to eight
    assert all(sum(d > 1 for d in c.block) >= 2 for c in cases)  # 2-D (or 3-D) blocks
    assert len({c.block for c in cases}) >= 3
    assert any(c.blocks == 1 for c in cases) and any(c.blocks > 1 for c in cases)
    tags = set().union(*(c.tags for c in cases))
    assert {"partial_block", "whole_blocks"} <= tags
    for index, case in enumerate(_all_cases(spec)):
        inputs = spec.inputs(np.random.default_rng(index), case)
        expected = spec.reference(inputs, case)
        assert set(expected) == set(spec.outputs)
        arrays = [v for v in inputs.values() if isinstance(v, np.ndarray) and v.size > 2]
        assert all(len(np.unique(v)) > 1 for v in arrays), "inputs must not be constant"
        assert all(v.dtype == np.float32 and np.array_equal(v, np.round(v)) for v in arrays)


@pytest.mark.parametrize("name", NAMES)
def test_drawn_cases_vary_with_the_seed_and_stay_small(name: str) -> None:
    from gpukit.exercises import specs_grids

    drawn = {"stencil_2d": specs_grids._drawn_2d, "stencil_3d": specs_grids._drawn_3d,
             "transpose_naive": specs_grids._drawn_2d, "transpose_tiled": specs_grids._drawn_tiles,
             "transpose_padded": specs_grids._drawn_tiles, "conv2d": specs_grids._drawn_conv,
             "matmul_partial": specs_grids._drawn_mm}[name]
    if hasattr(get_spec(name), "drawn"):
        assert get_spec(name).drawn is drawn
    sizes = {tuple(c.size.values()) for seed in range(8)
             for c in drawn(np.random.default_rng([seed, 0xCA5E]))}
    assert len(sizes) > 1
    cases = [c for seed in range(20) for c in drawn(np.random.default_rng(seed))]
    assert max(c.threads for c in cases) <= 4096
    assert any("partial_block" in c.tags for c in cases)


def test_reference_stencils_and_convolution_agree() -> None:
    """conv2d with the Laplacian mask is stencil_2d: the references check each other."""
    conv, stencil = get_spec("conv2d"), get_spec("stencil_2d")
    case = conv.cases()[3]
    x = conv.inputs(np.random.default_rng(1), case)
    x["w"] = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)
    np.testing.assert_array_equal(conv.reference(x, case)["out"],
                                  stencil.reference(x, case)["out"])
    a = np.zeros((3, 3, 3), np.float32)
    a[1, 1, 1] = 1
    out = get_spec("stencil_3d").reference({"a": a}, None)["out"]
    assert out[1, 1, 1] == -6 and out.sum() == 0 and out[0, 1, 1] == 1


# -- the official solutions ----------------------------------------------------------------------
def test_solutions_pass_every_case_with_two_schedules(solutions: dict[str, object]) -> None:
    for name, kernel in solutions.items():
        result = check(kernel, name, quiet=True)
        assert result.passed, result.report
        assert len(result.runs) >= 2 * len(get_spec(name).cases())
        assert "PASSED" in result.report


def test_solutions_pass_the_drawn_cases_of_several_seeds(solutions: dict[str, object]) -> None:
    from gpukit.exercises import specs_grids

    draws = {"stencil_2d": specs_grids._drawn_2d, "stencil_3d": specs_grids._drawn_3d,
             "transpose_naive": specs_grids._drawn_2d, "transpose_tiled": specs_grids._drawn_tiles,
             "transpose_padded": specs_grids._drawn_tiles, "conv2d": specs_grids._drawn_conv,
             "matmul_partial": specs_grids._drawn_mm}
    for name, kernel in solutions.items():
        cases = [c for seed in range(3) for c in draws[name](np.random.default_rng([seed, 7]))]
        spec = dataclasses.replace(get_spec(name), cases=lambda cases=cases: cases)
        if hasattr(spec, "drawn"):
            spec = dataclasses.replace(spec, drawn=None)
        result = check(kernel, spec, quiet=True)
        assert result.passed, result.report


def test_exercise_notebooks_hold_a_skeleton_that_is_reported_unwritten() -> None:
    for path in sorted(EXERCISES_DIR.glob("1[3-9]_*.ipynb")):
        cells = _cells(path)
        assert any(c.startswith("# YOUR CODE HERE") for c in cells), path.name
        assert CHECK_CALL.search(cells[-1]).group(2) in NAMES
        outputs = json.loads(path.read_text())["cells"][-1]["outputs"]
        text = "".join("".join(o.get("text", "")) for o in outputs)
        assert "FAILED" in text and "unwritten" in text, path.name


def test_padded_tile_has_no_bank_conflicts_and_the_unpadded_one_has(
        solutions: dict[str, object]) -> None:
    from gpukit.backends.cpu import CPUBackend
    from gpukit.trace import bank_conflicts

    backend = CPUBackend()
    a = np.arange(40 * 33, dtype=np.float32).reshape(40, 33)
    ways = {}
    for name in ("transpose_tiled", "transpose_padded"):
        kernel = backend.compile_kernel(solutions[name](32, 8))
        out = backend.allocate((33, 40), np.float32)
        record = backend.launch_kernel(kernel, (2, 2), (32, 8), backend.to_device(a), out,
                                       trace=True)
        assert np.array_equal(backend.to_host(out), a.T)
        ways[name] = int(bank_conflicts(record.trace).requests["ways"].max())
    assert ways == {"transpose_tiled": 32, "transpose_padded": 1}


# -- known-wrong solutions -----------------------------------------------------------------------
# stencil_2d
@cuda.jit
def stencil_2d_missing_guard(a, out):
    col, row = cuda.grid(2)
    out[row, col] = (a[row - 1, col] + a[row + 1, col] + a[row, col - 1] + a[row, col + 1]
                     - 4 * a[row, col])


@cuda.jit
def stencil_2d_skips_edges(a, out):
    col, row = cuda.grid(2)
    if 0 < row < a.shape[0] - 1 and 0 < col < a.shape[1] - 1:
        out[row, col] = (a[row - 1, col] + a[row + 1, col] + a[row, col - 1]
                         + a[row, col + 1] - 4 * a[row, col])


@cuda.jit
def stencil_2d_swapped_axes(a, out):
    row, col = cuda.grid(2)
    rows, cols = a.shape
    if row < rows and col < cols:
        total = -4 * a[row, col]
        if row > 0:
            total += a[row - 1, col]
        if row + 1 < rows:
            total += a[row + 1, col]
        if col > 0:
            total += a[row, col - 1]
        if col + 1 < cols:
            total += a[row, col + 1]
        out[row, col] = total


@cuda.jit
def stencil_2d_off_by_one(a, out):
    col, row = cuda.grid(2)
    rows, cols = a.shape
    if row < rows and col < cols:
        total = -4 * a[row, col]
        if row > 0:
            total += a[row - 1, col]
        if row + 1 <= rows:
            total += a[row + 1, col]
        if col > 0:
            total += a[row, col - 1]
        if col + 1 <= cols:
            total += a[row, col + 1]
        out[row, col] = total


# stencil_3d
@cuda.jit
def stencil_3d_swapped_axes(a, out):
    z, y, x = cuda.grid(3)
    depth, rows, cols = a.shape
    if z < depth and y < rows and x < cols:
        total = -6 * a[z, y, x]
        if z > 0:
            total += a[z - 1, y, x]
        if z + 1 < depth:
            total += a[z + 1, y, x]
        if y > 0:
            total += a[z, y - 1, x]
        if y + 1 < rows:
            total += a[z, y + 1, x]
        if x > 0:
            total += a[z, y, x - 1]
        if x + 1 < cols:
            total += a[z, y, x + 1]
        out[z, y, x] = total


@cuda.jit
def stencil_3d_skips_faces(a, out):
    x, y, z = cuda.grid(3)
    depth, rows, cols = a.shape
    if 0 < z < depth - 1 and 0 < y < rows - 1 and 0 < x < cols - 1:
        out[z, y, x] = (a[z - 1, y, x] + a[z + 1, y, x] + a[z, y - 1, x] + a[z, y + 1, x]
                        + a[z, y, x - 1] + a[z, y, x + 1] - 6 * a[z, y, x])


@cuda.jit
def stencil_3d_local_index(a, out):
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    z = cuda.threadIdx.z
    depth, rows, cols = a.shape
    if z < depth and y < rows and x < cols:
        total = -6 * a[z, y, x]
        if z > 0:
            total += a[z - 1, y, x]
        if z + 1 < depth:
            total += a[z + 1, y, x]
        if y > 0:
            total += a[z, y - 1, x]
        if y + 1 < rows:
            total += a[z, y + 1, x]
        if x > 0:
            total += a[z, y, x - 1]
        if x + 1 < cols:
            total += a[z, y, x + 1]
        out[z, y, x] = total


@cuda.jit
def stencil_3d_missing_guard(a, out):
    x, y, z = cuda.grid(3)
    depth, rows, cols = a.shape
    total = -6 * a[z, y, x]
    if z > 0:
        total += a[z - 1, y, x]
    if z + 1 < depth:
        total += a[z + 1, y, x]
    if y > 0:
        total += a[z, y - 1, x]
    if y + 1 < rows:
        total += a[z, y + 1, x]
    if x > 0:
        total += a[z, y, x - 1]
    if x + 1 < cols:
        total += a[z, y, x + 1]
    out[z, y, x] = total


# transpose_naive
@cuda.jit
def transpose_naive_missing_guard(a, out):
    col, row = cuda.grid(2)
    out[col, row] = a[row, col]


@cuda.jit
def transpose_naive_guard_with_out_shape(a, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[col, row] = a[row, col]


@cuda.jit
def transpose_naive_copies(a, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = a[row, col]


@cuda.jit
def transpose_naive_swapped_axes(a, out):
    row, col = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[col, row] = a[row, col]


# transpose_tiled and transpose_padded
def _tiled(TILE, ROWS, warp_barrier=False, passes=True, transposed_read=True, padded=False,
           pad_rows=False):
    SHAPE_R = TILE + 1 if pad_rows else TILE
    SHAPE_C = TILE + 1 if padded else TILE
    STEP = ROWS if passes else TILE

    @cuda.jit
    def transpose_kernel(a, out):
        tile = cuda.shared.array((SHAPE_R, SHAPE_C), numba.float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        col = cuda.blockIdx.x * TILE + tx
        for j in range(0, TILE, STEP):
            row = cuda.blockIdx.y * TILE + ty + j
            if row < a.shape[0] and col < a.shape[1]:
                tile[ty + j, tx] = a[row, col]
        if warp_barrier:
            cuda.syncwarp()
        else:
            cuda.syncthreads()
        col = cuda.blockIdx.y * TILE + tx
        for j in range(0, TILE, STEP):
            row = cuda.blockIdx.x * TILE + ty + j
            if row < out.shape[0] and col < out.shape[1]:
                if transposed_read:
                    out[row, col] = tile[tx, ty + j]
                else:
                    out[row, col] = tile[ty + j, tx]

    return transpose_kernel


def _no_barrier(TILE, ROWS, PAD):
    WIDTH = TILE + PAD

    @cuda.jit
    def transpose_kernel(a, out):
        tile = cuda.shared.array((TILE, WIDTH), numba.float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        col = cuda.blockIdx.x * TILE + tx
        for j in range(0, TILE, ROWS):
            row = cuda.blockIdx.y * TILE + ty + j
            if row < a.shape[0] and col < a.shape[1]:
                tile[ty + j, tx] = a[row, col]
        col = cuda.blockIdx.y * TILE + tx
        for j in range(0, TILE, ROWS):
            row = cuda.blockIdx.x * TILE + ty + j
            if row < out.shape[0] and col < out.shape[1]:
                out[row, col] = tile[tx, ty + j]

    return transpose_kernel


def tiled_missing_barrier(TILE, ROWS):
    return _no_barrier(TILE, ROWS, 0)


def tiled_syncwarp_instead_of_syncthreads(TILE, ROWS):
    return _tiled(TILE, ROWS, warp_barrier=True)


def tiled_hardcoded_one_pass(TILE, ROWS):
    return _tiled(TILE, ROWS, passes=False)


def tiled_wrong_tile_indexing(TILE, ROWS):
    return _tiled(TILE, ROWS, transposed_read=False)


def tiled_no_shared_memory(TILE, ROWS):
    @cuda.jit
    def transpose_kernel(a, out):
        col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
        for j in range(0, TILE, ROWS):
            row = cuda.blockIdx.y * TILE + cuda.threadIdx.y + j
            if row < a.shape[0] and col < a.shape[1]:
                out[col, row] = a[row, col]

    return transpose_kernel


def tiled_store_guarded_with_a_shape(TILE, ROWS):
    @cuda.jit
    def transpose_kernel(a, out):
        tile = cuda.shared.array((TILE, TILE), numba.float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        col = cuda.blockIdx.x * TILE + tx
        for j in range(0, TILE, ROWS):
            row = cuda.blockIdx.y * TILE + ty + j
            if row < a.shape[0] and col < a.shape[1]:
                tile[ty + j, tx] = a[row, col]
        cuda.syncthreads()
        col = cuda.blockIdx.y * TILE + tx
        for j in range(0, TILE, ROWS):
            row = cuda.blockIdx.x * TILE + ty + j
            if row < a.shape[0] and col < a.shape[1]:
                out[row, col] = tile[tx, ty + j]

    return transpose_kernel


def padded_unpadded_tile(TILE, ROWS):
    return _tiled(TILE, ROWS)


def padded_missing_barrier(TILE, ROWS):
    return _no_barrier(TILE, ROWS, 1)


def padded_syncwarp_instead_of_syncthreads(TILE, ROWS):
    return _tiled(TILE, ROWS, warp_barrier=True, padded=True)


def padded_hardcoded_one_pass(TILE, ROWS):
    return _tiled(TILE, ROWS, passes=False, padded=True)


def padded_pads_the_rows(TILE, ROWS):
    return _tiled(TILE, ROWS, pad_rows=True)


# conv2d
def conv2d_no_shared_memory(BX, BY, K):
    R = K // 2

    @cuda.jit
    def conv_kernel(a, w, out):
        col, row = cuda.grid(2)
        if row < out.shape[0] and col < out.shape[1]:
            acc = 0.0
            for i in range(K):
                for j in range(K):
                    r = row + i - R
                    c = col + j - R
                    if 0 <= r < a.shape[0] and 0 <= c < a.shape[1]:
                        acc += a[r, c] * w[i, j]
            out[row, col] = acc

    return conv_kernel


def _conv(BX, BY, K, halo_loop=True, barrier_once=False, early_exit=False, k_fixed=None):
    KK = K if k_fixed is None else k_fixed
    R = KK // 2
    H = BY + KK - 1
    W = BX + KK - 1

    @cuda.jit
    def conv_kernel(a, w, out):
        tile = cuda.shared.array((H, W), numba.float32)
        weights = cuda.shared.array((KK, KK), numba.float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * BY + ty
        col = cuda.blockIdx.x * BX + tx
        if early_exit and (row >= out.shape[0] or col >= out.shape[1]):
            return
        row0 = cuda.blockIdx.y * BY - R
        col0 = cuda.blockIdx.x * BX - R
        if halo_loop:
            for i in range(ty, H, BY):
                for j in range(tx, W, BX):
                    r = row0 + i
                    c = col0 + j
                    if 0 <= r < a.shape[0] and 0 <= c < a.shape[1]:
                        tile[i, j] = a[r, c]
                    else:
                        tile[i, j] = 0.0
        else:  # each thread loads the one element at its own place in the tile: no halo
            if row < a.shape[0] and col < a.shape[1]:
                tile[ty + R, tx + R] = a[row, col]
            else:
                tile[ty + R, tx + R] = 0.0
        if barrier_once:  # the barrier only after the tile, before the weights are loaded
            cuda.syncthreads()
        for t in range(ty * BX + tx, KK * KK, BX * BY):
            weights[t // KK, t % KK] = w[t // KK, t % KK]
        if not barrier_once:
            cuda.syncthreads()
        if row < out.shape[0] and col < out.shape[1]:
            acc = 0.0
            for i in range(KK):
                for j in range(KK):
                    acc += tile[ty + i, tx + j] * weights[i, j]
            out[row, col] = acc

    return conv_kernel


def conv2d_no_halo(BX, BY, K):
    return _conv(BX, BY, K, halo_loop=False)


def conv2d_barrier_before_the_weights(BX, BY, K):
    return _conv(BX, BY, K, barrier_once=True)


def conv2d_early_return(BX, BY, K):
    return _conv(BX, BY, K, early_exit=True)


def conv2d_hardcoded_k(BX, BY, K):
    return _conv(BX, BY, K, k_fixed=3)


# matmul_partial
def matmul_partial_naive(BX, BY, TK):
    @cuda.jit
    def matmul_kernel(a, b, out):
        col, row = cuda.grid(2)
        if row < out.shape[0] and col < out.shape[1]:
            acc = 0.0
            for k in range(a.shape[1]):
                acc += a[row, k] * b[k, col]
            out[row, col] = acc

    return matmul_kernel


def _mm(BX, BY, TK, guard=True, whole_tiles_only=False):
    @cuda.jit
    def matmul_kernel(a, b, out):
        a_tile = cuda.shared.array((BY, TK), numba.float32)
        b_tile = cuda.shared.array((TK, BX), numba.float32)
        col, row = cuda.grid(2)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        acc = 0.0
        stop = a.shape[1] // TK * TK if whole_tiles_only else a.shape[1]
        for start in range(0, stop, TK):
            for k in range(tx, TK, BX):
                if not guard or (row < a.shape[0] and start + k < a.shape[1]):
                    a_tile[ty, k] = a[row, start + k]
                else:
                    a_tile[ty, k] = 0.0
            for k in range(ty, TK, BY):
                if not guard or (col < b.shape[1] and start + k < b.shape[0]):
                    b_tile[k, tx] = b[start + k, col]
                else:
                    b_tile[k, tx] = 0.0
            cuda.syncthreads()
            for k in range(TK):
                acc += a_tile[ty, k] * b_tile[k, tx]
            cuda.syncthreads()
        if row < out.shape[0] and col < out.shape[1]:
            out[row, col] = acc

    return matmul_kernel


def matmul_partial_missing_guard(BX, BY, TK):
    return _mm(BX, BY, TK, guard=False)


def matmul_partial_missing_second_barrier(BX, BY, TK):
    @cuda.jit
    def matmul_kernel(a, b, out):
        a_tile = cuda.shared.array((BY, TK), numba.float32)
        b_tile = cuda.shared.array((TK, BX), numba.float32)
        col, row = cuda.grid(2)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        acc = 0.0
        for start in range(0, a.shape[1], TK):
            for k in range(tx, TK, BX):
                if row < a.shape[0] and start + k < a.shape[1]:
                    a_tile[ty, k] = a[row, start + k]
                else:
                    a_tile[ty, k] = 0.0
            for k in range(ty, TK, BY):
                if col < b.shape[1] and start + k < b.shape[0]:
                    b_tile[k, tx] = b[start + k, col]
                else:
                    b_tile[k, tx] = 0.0
            cuda.syncthreads()
            for k in range(TK):
                acc += a_tile[ty, k] * b_tile[k, tx]
        if row < out.shape[0] and col < out.shape[1]:
            out[row, col] = acc

    return matmul_kernel


def matmul_partial_drops_the_last_k_tile(BX, BY, TK):
    return _mm(BX, BY, TK, whole_tiles_only=True)


def matmul_partial_square_tiles_assumed(BX, BY, TK):
    """Exercise 11's kernel: a_tile[ty, tx], b_tile[ty, tx], as if BX == BY == TK."""
    @cuda.jit
    def matmul_kernel(a, b, out):
        a_tile = cuda.shared.array((BY, TK), numba.float32)
        b_tile = cuda.shared.array((TK, BX), numba.float32)
        col, row = cuda.grid(2)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        acc = 0.0
        for start in range(0, a.shape[1], TK):
            if row < a.shape[0] and start + tx < a.shape[1]:
                a_tile[ty, tx] = a[row, start + tx]
            else:
                a_tile[ty, tx] = 0.0
            if col < b.shape[1] and start + ty < b.shape[0]:
                b_tile[ty, tx] = b[start + ty, col]
            else:
                b_tile[ty, tx] = 0.0
            cuda.syncthreads()
            for k in range(TK):
                acc += a_tile[ty, k] * b_tile[k, tx]
            cuda.syncthreads()
        if row < out.shape[0] and col < out.shape[1]:
            out[row, col] = acc

    return matmul_kernel


# (exercise, kernel or factory, kind of the main failure, phrase the verdict must contain)
WRONG = [
    ("stencil_2d", stencil_2d_missing_guard, "OutOfBoundsError", "one per neighbour"),
    ("stencil_2d", stencil_2d_skips_edges, "unwritten", "was never written"),
    ("stencil_2d", stencil_2d_swapped_axes, "unwritten", "the array is not square"),
    ("stencil_2d", stencil_2d_off_by_one, "OutOfBoundsError", "row + 1 < a.shape[0]"),
    ("stencil_3d", stencil_3d_swapped_axes, "unwritten", "the array is not a cube"),
    ("stencil_3d", stencil_3d_skips_faces, "unwritten",
     "whatever condition guards your writes is false"),
    ("stencil_3d", stencil_3d_local_index, "unwritten", "several blocks"),
    ("stencil_3d", stencil_3d_missing_guard, "OutOfBoundsError", "all three axes"),
    ("transpose_naive", transpose_naive_missing_guard, "OutOfBoundsError", "Guard with a's shape"),
    ("transpose_naive", transpose_naive_guard_with_out_shape, "OutOfBoundsError",
     "Guard with a's shape"),
    ("transpose_naive", transpose_naive_copies, "OutOfBoundsError",
     "swap the indices only when writing out"),
    ("transpose_naive", transpose_naive_swapped_axes, "unwritten", "was never written"),
    ("transpose_tiled", tiled_missing_barrier, "RaceConditionError", "cuda.syncthreads()"),
    ("transpose_tiled", tiled_syncwarp_instead_of_syncthreads, "RaceConditionError",
     "a block has several warps"),
    ("transpose_tiled", tiled_hardcoded_one_pass, "UninitializedMemoryError",
     "the kernel fails exactly when ROWS < TILE"),
    ("transpose_tiled", tiled_wrong_tile_indexing, "UninitializedMemoryError",
     "'tile[ty + j, tx]' reads"),
    ("transpose_tiled", tiled_no_shared_memory, "budget", "shared memory per block"),
    ("transpose_tiled", tiled_store_guarded_with_a_shape, "UninitializedMemoryError",
     "guard the load with a's shape and the store with out's"),
    ("transpose_padded", padded_unpadded_tile, "budget", "shared memory per block"),
    ("transpose_padded", padded_missing_barrier, "RaceConditionError", "cuda.syncthreads()"),
    ("transpose_padded", padded_syncwarp_instead_of_syncthreads, "RaceConditionError",
     "cuda.syncwarp() waits for one warp"),
    ("transpose_padded", padded_hardcoded_one_pass, "UninitializedMemoryError",
     "loop `for j in range(0, TILE, ROWS)`"),
    ("conv2d", conv2d_no_shared_memory, "budget", "global reads per thread"),
    ("conv2d", conv2d_no_halo, "UninitializedMemoryError", "halo"),
    ("conv2d", conv2d_barrier_before_the_weights, "RaceConditionError", "weights"),
    ("conv2d", conv2d_early_return, "UninitializedMemoryError", "do not return early"),
    ("conv2d", conv2d_hardcoded_k, "mismatch", "K = 3"),
    ("matmul_partial", matmul_partial_naive, "budget", "global reads per thread"),
    ("matmul_partial", matmul_partial_missing_guard, "OutOfBoundsError", "store 0"),
    ("matmul_partial", matmul_partial_missing_second_barrier, "RaceConditionError",
     "second cuda.syncthreads()"),
    ("matmul_partial", matmul_partial_drops_the_last_k_tile, "mismatch", "expected"),
    ("matmul_partial", matmul_partial_square_tiles_assumed, "OutOfBoundsError",
     "a_tile is BY x TK and b_tile TK x BX"),
]


@pytest.mark.parametrize(("name", "kernel", "kind", "phrase"), WRONG,
                         ids=[f"{w[0]}-{w[1].__name__}" for w in WRONG])
def test_wrong_solutions_are_rejected_for_the_right_reason(name, kernel, kind, phrase) -> None:
    result = check(kernel, name, quiet=True)
    assert not result.passed
    assert result.main_failure.kind == kind, result.report
    assert phrase in _flat(result.report), result.report
    assert "FAILED" in result.report and "Hint:" in result.report


def test_every_grid_exercise_has_three_wrong_solutions() -> None:
    per = {n: sum(w[0] == n for w in WRONG) for n in NAMES}
    assert min(per.values()) >= 3, per
    names = {w[1].__name__ for w in WRONG}
    for mistake in ("missing_guard", "missing_barrier", "syncwarp", "hardcoded", "swapped_axes",
                    "wrong_tile_indexing", "unpadded", "no_halo", "square_tiles_assumed"):
        assert any(mistake in n for n in names), mistake


def test_a_tile_padded_the_wrong_way_is_rejected_where_bank_conflicts_are_budgeted() -> None:
    """(TILE + 1, TILE) has the padded tile's size but keeps every conflict: the bank-conflict
    budget sees it."""
    result = check(padded_pads_the_rows, "transpose_padded", quiet=True)
    assert not result.passed and result.main_failure.kind == "budget"
    assert "TILE=32" in _flat(result.report) or "TILE=16" in _flat(result.report)
