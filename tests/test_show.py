"""gpukit.exercises.show (the picture of a learner's kernel) and plot_block at real sizes.

The figures' structure is asserted (panels, titles, which thread touched which element, error
titles, font sizes, no overlapping text), never their pixels.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import json
import re
import sys
from pathlib import Path

import matplotlib
import numba
import numpy as np
import pytest
from numba import cuda

matplotlib.use("Agg")

import gpukit.trace as gt
from gpukit.backends.cpu import CPUBackend
from gpukit.exercises import EXERCISES, ExerciseUsageError, check, show
from gpukit.exercises.show import MIN_FONT, ShowInfo, pick_case
from gpukit.exercises.spec import Budget, Case, ExerciseSpec, case_1d

SOLUTIONS_DIR = Path(__file__).resolve().parents[1] / "notebooks" / "solutions"
CHECK_CALL = re.compile(r'check\((\w+),\s*"(\w+)"')


# -- kernels ---------------------------------------------------------------------------------------
@cuda.jit
def map_kernel(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i] + 10


@cuda.jit
def map_off_by_one(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i + 1] + 10


@cuda.jit
def map_2d_kernel(a, b, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col] + b[col]


def make_reverse(TPB):
    @cuda.jit
    def reverse_kernel(a, out, n):
        tile = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * TPB + t
        if i < n:
            tile[t] = a[i]
        cuda.syncthreads()
        j = cuda.blockIdx.x * TPB + TPB - 1 - t
        if j < n:
            out[n - 1 - j] = tile[TPB - 1 - t]

    return reverse_kernel


def make_reverse_racy(TPB):
    @cuda.jit
    def reverse_kernel(a, out, n):
        tile = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * TPB + t
        if i < n:
            tile[t] = a[i]
        j = cuda.blockIdx.x * TPB + TPB - 1 - t  # no barrier: reads what others still write
        if j < n:
            out[n - 1 - j] = tile[TPB - 1 - t]

    return reverse_kernel


def make_nothing(TPB):
    return None


# -- helpers ---------------------------------------------------------------------------------------
def _texts(fig):
    """Every text drawn: the figure's, the axes' texts and titles, and where an axes shows its
    axis, its tick labels and axis labels."""
    texts = list(fig.texts)  # the suptitle among them
    for ax in fig.axes:
        texts += [*ax.texts, ax.title, ax._left_title, ax._right_title]
        if ax.axison:
            for axis in (ax.xaxis, ax.yaxis):
                texts += [*axis.get_ticklabels(), axis.label]
    return [t for t in texts if t.get_visible() and t.get_text()]


def _overlaps(fig):
    """Pairs of visible texts whose drawn boxes overlap (shrunk by half a point each side)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer).padded(-0.5)) for t in _texts(fig)]
    return [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)]


def _readable(fig):
    sizes = [t.get_fontsize() for t in _texts(fig)]
    assert min(sizes) >= MIN_FONT
    return sizes


def _touched(info: ShowInfo, phase: int, array: str, kind: str) -> dict[int, set]:
    (panel,) = [p for p in info.panels if p.phase == phase]
    return panel.threads_of(array, kind)


# -- show: 1-D, 2-D, shared memory -------------------------------------------------------------------
def test_show_map_draws_one_panel_with_thread_i_on_element_i():
    fig = show(map_kernel, "map")
    info = fig.gpukit_show
    assert info.case.describe() == "n=7, grid=1, block=7"  # the smallest case with >= 4 threads
    assert info.phases == [0] and len(fig.axes) == 1 and info.error is None
    assert info.title == "Map: kernel 'map_kernel', n=7, grid=1, block=7"
    assert fig.axes[0].get_title(loc="left") == ("phase 0, before the first cuda.syncthreads(): a[i], "
                                       "out[i]")
    assert _touched(info, 0, "a", "read") == {i: {(i,)} for i in range(7)}
    assert _touched(info, 0, "out", "write") == {i: {(i,)} for i in range(7)}
    assert info.colour_by == "thread"
    (cells,) = [c for c in fig.axes[0].collections if c.get_gid() == "out"]
    assert len(np.unique(cells.get_facecolor(), axis=0)) == 7  # a colour per thread
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"a (input, 7)", "out (output, 7)", "t0", "t6"} <= texts
    _readable(fig)
    assert _overlaps(fig) == []
    assert fig._repr_png_().startswith(b"\x89PNG")


def test_show_map_2d_labels_threads_by_x_and_y():
    fig = show(map_2d_kernel, "map_2d", rows=5, cols=13)
    info = fig.gpukit_show
    assert info.case.describe() == "rows=5, cols=13, grid=(2, 2), block=(8, 4)"
    assert info.phases == [0] and info.colour_by == "block"
    writes = _touched(info, 0, "out", "write")
    reads = _touched(info, 0, "b", "read")
    trace_block = info.case.block
    for tid, elements in writes.items():
        blk, t = divmod(tid, 32)
        bx, by = blk % 2, blk // 2
        col, row = bx * trace_block[0] + t % 8, by * trace_block[1] + t // 8
        assert elements == {(row, col)}
        assert reads[tid] == {(col,)}
    assert len(writes) == 5 * 13  # every element, each by its own thread
    assert "1,2" in {t.get_text() for t in fig.axes[0].texts}  # threadIdx (x, y)
    _readable(fig)
    assert _overlaps(fig) == []


# three blocks of 8 threads, the last partial: small enough to assert every access
REVERSE_21 = case_1d(21, 8, params={"TPB": 8})


def test_show_shared_memory_has_a_panel_per_phase_and_a_tile_per_block():
    fig = show(make_reverse, "shared_memory", case=REVERSE_21)
    info = fig.gpukit_show
    assert info.case.describe() == "n=21, TPB=8, grid=3, block=8"
    assert info.phases == [0, 1] and len(fig.axes) == 2
    assert [ax.get_title(loc="left") for ax in fig.axes] == [
        "phase 0, before the first cuda.syncthreads(): a[i], tile[t]",
        "phase 1, after the 1st cuda.syncthreads(): tile[TPB - 1 - t], out[n - 1 - j]"]
    n, tpb = 21, 8
    # phase 0: thread i = b * 8 + t reads a[i] and writes its block's tile[t]
    assert _touched(info, 0, "a", "read") == {i: {(i,)} for i in range(n)}
    assert _touched(info, 0, "tile", "write") == {i: {(i % tpb,)} for i in range(n)}
    assert _touched(info, 0, "out", "write") == {}
    # phase 1: thread t of block b writes out[n - 1 - j] with j = b * 8 + 7 - t
    writes = _touched(info, 1, "out", "write")
    expected = {}
    for tid in range(3 * tpb):
        b, t = divmod(tid, tpb)
        j = b * tpb + tpb - 1 - t
        if j < n:
            expected[tid] = {(n - 1 - j,)}
    assert writes == expected
    panel = info.panels[1]
    blocks = {blk for (name, blk, _) in panel.touches if name == "tile"}
    assert blocks == {(0, 0, 0), (1, 0, 0), (2, 0, 0)}
    headings = {t.get_text() for t in fig.axes[0].texts}
    assert {"tile, block 0", "tile, block 1", "tile, block 2"} <= headings
    _readable(fig)
    assert _overlaps(fig) == []


def test_show_sizes_pick_the_case_and_unknown_sizes_are_refused():
    spec = EXERCISES["shared_memory"]
    assert pick_case(spec)[1].describe() == "n=64, TPB=32, grid=2, block=32"  # 2-4 blocks
    assert pick_case(spec, n=21)[1].describe() == "n=21, TPB=32, grid=1, block=32"
    assert pick_case(spec, case=1)[1].describe() == "n=5, TPB=32, grid=1, block=32"
    own = case_1d(12, 4, params={"TPB": 4})
    assert pick_case(spec, case=own) == (-1, own)
    with pytest.raises(ExerciseUsageError, match=r"^exercise 'shared_memory' has no case with "
                       r"n=9; its cases are: n=21, TPB=32, grid=1, block=32; "):
        show(make_reverse, "shared_memory", n=9)
    with pytest.raises(ExerciseUsageError, match=r"^case must be a gpukit.exercises.Case or an "
                       r"index from 0 to 6 into the exercise's cases, got 7$"):
        show(make_reverse, "shared_memory", case=7)
    fig = show(make_reverse, "shared_memory", case=own)
    assert fig.gpukit_show.case == own and fig.gpukit_show.phases == [0, 1]


def _solutions() -> list:
    """(notebook, exercise name, setup source, kernel source, entry) of each solution notebook."""
    found = []
    for path in sorted(SOLUTIONS_DIR.glob("*.ipynb")):
        cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                 if c["cell_type"] == "code"]
        kernel = next((c for c in cells if c.startswith("# SOLUTION")), None)
        call = CHECK_CALL.search(cells[-1]) if cells else None
        if kernel is not None and call is not None:
            found.append(pytest.param(path, *call.groups()[::-1], cells[0], kernel,
                                      id=path.stem))
    return found


@pytest.mark.parametrize("path, name, entry, setup, source", _solutions())
def test_show_draws_every_official_solution_readably(path, name, entry, setup, source,
                                                     tmp_path):
    """Generic over the exercises: every solution notebook's kernel (those added later too)."""
    module_path = tmp_path / f"show_solution_{path.stem}.py"
    module_path.write_text(setup + "\n\n" + source + "\n")
    spec = importlib.util.spec_from_file_location(module_path.stem, module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fig = show(getattr(module, entry), name)
    info = fig.gpukit_show
    assert info.error is None, info.error
    assert len(fig.axes) == len(info.panels) == len(info.phases) >= 1
    assert all(p.touches for p in info.panels)  # every phase drawn has accesses
    written = set().union(*(set(p.threads_of(a, "write")) | set(p.threads_of(a, "atomic"))
                            for p in info.panels for a in {k[0] for k in p.touches}))
    assert written  # some thread wrote something
    _readable(fig)
    assert _overlaps(fig) == []


# -- failing kernels -------------------------------------------------------------------------------
def test_a_kernel_out_of_bounds_is_drawn_with_the_error_in_the_title():
    fig = show(map_off_by_one, "map")
    info = fig.gpukit_show
    assert info.error.startswith("OutOfBoundsError: 'a[i + 1]' indexes global array a (shape "
                                 "(7,)) at 7, outside 0..6")
    heading = " ".join(t.get_text() for t in fig.texts if t.get_gid() == "heading")
    assert "✗ OutOfBoundsError: 'a[i + 1]' indexes global array a" in heading
    assert len(fig.axes) == len(info.panels) >= 1
    # the accesses before the error, where the simulator keeps them (coord/engine_bugs.md 15C-1)
    reads = _touched(info, 0, "a", "read")
    assert all(elements == {(tid + 1,)} for tid, elements in reads.items())
    assert bool(reads) == (info.note == "")
    _readable(fig)
    assert _overlaps(fig) == []


def test_a_racing_kernel_is_drawn_up_to_the_phase_of_the_race():
    fig = show(make_reverse_racy, "shared_memory", case=REVERSE_21)
    info = fig.gpukit_show
    assert info.error.startswith("RaceConditionError: data race on tile[")
    assert info.phases == [0]  # the race is in phase 0: nothing after it
    # the accesses up to the race are there (all of phase 0 from a re-run with the race check
    # off, or those before the error where the simulator keeps them): thread i wrote tile[i % 8]
    writes = _touched(info, 0, "tile", "write")
    assert writes and all(elements == {(tid % 8,)} for tid, elements in writes.items())
    heading = " ".join(t.get_text() for t in fig.texts if t.get_gid() == "heading")
    assert "✗ RaceConditionError" in heading
    assert _overlaps(fig) == []


def test_a_factory_that_fails_is_drawn_with_its_message():
    fig = show(make_nothing, "shared_memory", case=REVERSE_21)
    assert fig.gpukit_show.error == ("make_kernel(TPB=8) returned None instead of a kernel; end "
                                     "the factory with `return <your kernel>`")
    assert fig.gpukit_show.panels[0].touches == {}
    assert fig.gpukit_show.title.startswith("Shared memory: reverse an array: kernel "
                                            "'make_nothing', n=21")
    assert {"a (input, 21)", "out (output, 21)"} <= {t.get_text() for t in fig.axes[0].texts}
    assert _overlaps(fig) == []


# -- generic: a spec that is not one of the twelve (2-D shared tiles, a case(rng) signature) ------
def make_tile_sum(TPB):
    @cuda.jit
    def tile_sum(a, out):
        tile = cuda.shared.array((TPB, TPB), numba.float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        col, row = cuda.grid(2)
        tile[ty, tx] = a[row, col]
        cuda.syncthreads()
        if tx == 0:
            s = 0.0
            for k in range(TPB):
                s += tile[ty, k]
            out[row, cuda.blockIdx.x] = s

    return tile_sum


def _tile_cases(rng):
    assert isinstance(rng, np.random.Generator)
    return [Case({"rows": 4, "cols": 8}, (2, 1, 1), (4, 4, 1), {"TPB": 4}, frozenset()),
            Case({"rows": 8, "cols": 8}, (2, 2, 1), (4, 4, 1), {"TPB": 4}, frozenset())]


TILE_SUM = ExerciseSpec(
    name="tile_sum", title="Row sums of tiles", goal="out[r, b] = sum of a[r, b*TPB:(b+1)*TPB]",
    params=("a", "out"), factory=("TPB",),
    inputs=lambda rng, c: {"a": rng.integers(-9, 10, (c.size["rows"], c.size["cols"])).astype(
        np.float32)},
    reference=lambda x, c: {"out": x["a"].reshape(c.size["rows"], -1, 4).sum(axis=2)},
    outputs={"out": "uninitialized"}, cases=_tile_cases, budget=Budget())


def test_show_is_generic_over_specs_with_2d_shared_tiles():
    fig = show(make_tile_sum, TILE_SUM)
    info = fig.gpukit_show
    assert info.case.describe() == "rows=4, cols=8, TPB=4, grid=2, block=(4, 4)"
    assert info.phases == [0, 1]
    writes = _touched(info, 0, "tile", "write")
    assert writes == {tid: {((tid % 16) // 4, tid % 4)} for tid in range(32)}
    reads = _touched(info, 1, "tile", "read")
    assert set(reads) == {tid for tid in range(32) if tid % 4 == 0}  # threads with tx == 0
    assert reads[4] == {(1, k) for k in range(4)}
    _readable(fig)
    assert _overlaps(fig) == []


# -- check(..., show=True) -------------------------------------------------------------------------
def test_check_with_show_draws_the_picture_before_the_verdict(monkeypatch, capsys):
    drawn = []
    module = sys.modules["gpukit.exercises.show"]  # the attribute is the function show
    monkeypatch.setattr(module, "display",
                        lambda fig: drawn.append((fig, capsys.readouterr().out)))
    result = check(map_kernel, "map", show=True)
    assert result.passed
    ((fig, printed_before),) = drawn
    assert printed_before == ""  # the picture came first
    assert fig.gpukit_show.exercise == "map"
    assert "map" in capsys.readouterr().out
    with pytest.raises(ExerciseUsageError, match=r"^show must be True or False, got 'yes'$"):
        check(map_kernel, "map", show="yes")


# -- plot_block at a real size ---------------------------------------------------------------------
@cuda.jit
def stage_and_reduce(a, out, n):
    tile = cuda.shared.array(256, numba.float32)
    t = cuda.threadIdx.x
    acc = 0.0
    for i in range(cuda.blockIdx.x * 256 + t, n, 256 * cuda.gridDim.x):
        acc += a[i]
    tile[t] = acc
    cuda.syncthreads()
    s = 128
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        out[cuda.blockIdx.x] = tile[0]


def test_plot_block_aggregates_a_256_thread_block_over_4096_elements():
    be = CPUBackend(checks=True)
    a = be.to_device(np.ones(4096, np.float32))
    out = be.allocate(2, np.float32)
    trace = be.launch_kernel(stage_and_reduce, 2, 256, a, out, 4096, trace=True).trace
    fig = gt.plot_block(trace, block=0)
    phases = sorted(set(trace.columns["phase"][trace.columns["thread"] < 256].tolist()))
    assert phases == list(range(10))  # the load, eight halvings, the write of out
    arrays = 3  # a, tile, out: a column each
    assert len(fig.axes) == len(phases) * arrays
    assert fig.get_suptitle().startswith("kernel 'stage_and_reduce', block (0, 0, 0): 256 "
                                         "threads in 8 warps, 3,071 accesses")
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[:3] == ["phase 0 · a (global): 2,048 reads",
                          "phase 0 · tile (shared): 256 writes",
                          "phase 0 · out (global): not touched"]
    assert titles[4] == "phase 1 · tile (shared): 256 reads, 128 writes"
    assert titles[-1] == "phase 9 · out (global): 1 write"
    assert {ax.get_gid() for ax in fig.axes} == {f"phase {p}" for p in phases}
    # per-warp rows: warp w's row of the 'a' heatmap is coloured where its threads read
    image = fig.axes[0].images[0].get_array()
    assert image.shape[:2] == (8, 512)  # 8 warps x 4096 elements in 512 columns of 8
    touched = (np.asarray(image)[..., :3] < 0.999).any(axis=2)
    assert touched.all(axis=1).sum() == 0 and touched.any(axis=1).all()
    width, height = fig.get_size_inches()
    assert width <= 15 and height <= 0.9 + 2.3 * len(phases) + 1e-9
    _readable(fig)
    assert _overlaps(fig) == []


def test_plot_block_heatmap_of_a_2d_launch_and_the_view_argument():
    be = CPUBackend(checks=True)

    @cuda.jit
    def transpose(a, out):
        x, y = cuda.grid(2)
        if y < a.shape[0] and x < a.shape[1]:
            out[x, y] = a[y, x]

    a = be.to_device(np.ones((64, 64), np.float32))
    out = be.allocate((64, 64), np.float32)
    trace = be.launch_kernel(transpose, (2, 2), (32, 8), a, out, trace=True).trace
    fig = gt.plot_block(trace, block=(1, 1))
    assert [ax.get_title() for ax in fig.axes] == ["phase 0 · a (global): 256 reads",
                                                   "phase 0 · out (global): 256 writes"]
    assert fig.axes[0].get_ylabel() == "row (grey: several warps)"
    assert fig.axes[0].images[0].get_array().shape[:2] == (8, 32)  # the block's 8 x 32 tile
    _readable(fig)
    assert _overlaps(fig) == []
    with pytest.raises(gt.TraceError, match=r"^view must be one of auto, cells, heatmap, got "
                       r"'grid'$"):
        gt.plot_block(trace, view="grid")
    cells = gt.plot_block(trace, block=(1, 1), view="cells", max_cells=8192)
    assert [c for c in cells.axes[0].collections if c.get_gid() == "threads"]


def test_plot_block_cells_view_has_a_panel_per_phase():
    be = CPUBackend(checks=True)
    a = be.to_device(np.arange(16, dtype=np.float32))
    out = be.allocate(16, np.float32)
    trace = be.launch_kernel(make_reverse(8), 2, 8, a, out, 16, trace=True).trace
    fig = gt.plot_block(trace, block=1)  # 8 threads: the cells view
    assert [ax.get_title() for ax in fig.axes] == [
        "kernel 'reverse_kernel', block (1, 0, 0), phase 0",
        "kernel 'reverse_kernel', block (1, 0, 0), phase 1"]
    for ax in fig.axes:
        assert [c for c in ax.collections if c.get_gid() == "threads"]
    assert _overlaps(fig) == []


def test_show_uses_the_trace_the_simulator_attaches_to_a_kernel_error(monkeypatch):
    """The contract asked of the engine (coord/engine_bugs.md, 15C-1): a KernelError from a
    traced launch carries `.trace`, the accesses made before it; show draws them."""
    from gpukit.errors import OutOfBoundsError

    be = CPUBackend(checks=True)
    a = be.to_device(np.arange(7, dtype=np.float32))
    out = be.allocate(7, np.float32)
    partial = be.launch_kernel(map_kernel, 1, 7, a, out, trace=True).trace
    original = CPUBackend.launch_kernel

    def failing(self, kernel, grid, block, *args, **options):
        original(self, kernel, grid, block, *args, **options)
        error = OutOfBoundsError("'a[i + 1]' indexes global array a (shape (7,)) at 7",
                                 kernel="map_kernel", thread=(6, 0, 0), block=(0, 0, 0),
                                 lineno=3)
        error.trace = partial
        raise error

    monkeypatch.setattr(CPUBackend, "launch_kernel", failing)
    fig = show(map_kernel, "map")
    info = fig.gpukit_show
    assert info.error.startswith("OutOfBoundsError: 'a[i + 1]' indexes global array a")
    assert info.note == ""  # no re-run, no apology: the accesses are the simulator's
    assert _touched(info, 0, "out", "write") == {i: {(i,)} for i in range(7)}


# -- exercises answered by host code (a spec with `host` and a `harness`, as the multi-block scan)
@dataclasses.dataclass(frozen=True)
class _HostSpec(ExerciseSpec):
    harness: object = None
    host: bool = True


def _reverse_harness(func, backend, inputs, case):
    a = backend.to_device(inputs["a"])
    out = backend.allocate(inputs["a"].shape, np.float32)
    func(backend, a, out, inputs["n"])
    return {"out": (backend.to_host(out), None)}


HOST_REVERSE = _HostSpec(
    name="host_reverse", title="Reverse twice", goal="out = a, by reversing twice",
    params=("a", "out", "n"),
    inputs=lambda rng, c: {"a": np.arange(c.size["n"], dtype=np.float32), "n": c.size["n"]},
    reference=lambda x, c: {"out": x["a"].copy()},
    outputs={"out": "uninitialized"},
    cases=lambda: [case_1d(12, 8), case_1d(16, 8)], harness=_reverse_harness)


def reverse_twice(backend, a, out, n):
    kernel = backend.compile_kernel(make_reverse(8))
    middle = backend.allocate(n, np.float32)
    kernel[(n + 7) // 8, 8](a, middle, n)
    kernel[(n + 7) // 8, 8](middle, out, n)


def test_show_draws_each_launch_of_a_host_function():
    fig = show(reverse_twice, HOST_REVERSE)
    info = fig.gpukit_show
    assert info.title == "Reverse twice: your function 'reverse_twice', n=12, grid=2, block=8"
    assert info.note == "2 launches, each drawn with the arrays it touched"
    assert [(p.launch, p.phase) for p in info.panels] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert fig.axes[2].get_title(loc="left").startswith(
        "launch 2: 'reverse_kernel', grid=2, block=8; phase 0, before the first")
    assert info.panels[0].threads_of("a", "read") == {i: {(i,)} for i in range(12)}
    # arrays are named as the kernel names its parameters: launch 2 reads `middle` as `a`
    assert info.panels[2].threads_of("a", "read") == {i: {(i,)} for i in range(12)}
    assert info.panels[3].threads_of("out", "write") == info.panels[1].threads_of("out", "write")
    _readable(fig)
    assert _overlaps(fig) == []
    only = show(reverse_twice, HOST_REVERSE, phases=[1])
    assert [(p.launch, p.phase) for p in only.gpukit_show.panels] == [(1, 1), (2, 1)]


def test_phases_picks_the_panels_drawn():
    fig = show(make_reverse, "shared_memory", phases=1)
    assert fig.gpukit_show.phases == [1] and len(fig.axes) == 1
    with pytest.raises(ExerciseUsageError, match=r"^phases must be barrier phase numbers \(ints "
                       r">= 0, such as range\(3\)\), got \[-1\]$"):
        show(make_reverse, "shared_memory", phases=[-1])
