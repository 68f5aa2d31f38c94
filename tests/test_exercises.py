"""gpukit.exercises: the solutions pass, known-wrong solutions fail for the right reason, budgets
are enforced, and misusing check() raises a clear ExerciseUsageError.

The solutions are the kernels of notebooks/solutions (the code learners see), imported from their
cells; the wrong ones live in exercise_wrong_solutions.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest
from exercise_wrong_solutions import WRONG
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

from gpukit.backends.cpu import CPUBackend
from gpukit.errors import GpukitError
from gpukit.exercises import (
    EXERCISES,
    AccessCounter,
    Budget,
    Case,
    ExerciseUsageError,
    check,
    get_spec,
    list_exercises,
)
from gpukit.exercises.budgets import judge
from gpukit.exercises.spec import case_1d

SOLUTIONS_DIR = Path(__file__).resolve().parents[1] / "notebooks" / "solutions"
CHECK_CALL = re.compile(r'check\((\w+),\s*"(\w+)"\)')


def _solution(path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, object]:
    """(exercise name, kernel or factory) from a solution notebook's cells."""
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
             if c["cell_type"] == "code"]
    kernel_cell = next(c for c in cells if c.startswith("# SOLUTION"))
    entry, name = CHECK_CALL.search(cells[-1]).groups()
    module_path = tmp_path_factory.mktemp("solutions") / f"solution_{path.stem}.py"
    module_path.write_text(cells[0] + "\n\n" + kernel_cell + "\n")
    spec = importlib.util.spec_from_file_location(module_path.stem, module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return name, getattr(module, entry)


@pytest.fixture(scope="module")
def solutions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    found = dict(_solution(p, tmp_path_factory) for p in sorted(SOLUTIONS_DIR.glob("*.ipynb")))
    assert sorted(found) == sorted(EXERCISES), "every exercise needs a solution notebook"
    # 13-26 run in tests/test_exercises_grids.py and tests/test_exercises_reductions.py
    return {name: found[name] for name in FIRST_TWELVE}


FIRST_TWELVE = ["map", "guards", "map_2d", "blocks", "shared_memory", "pooling", "dot", "conv1d",
                "prefix_sum", "axis_sum", "matmul", "histogram"]


def _flat(text: str) -> str:
    return " ".join(text.split())


# -- the exercises -------------------------------------------------------------------------------
def test_the_first_twelve_exercises_come_first_in_workshop_order() -> None:
    # 13-26 are tested in tests/test_exercises_grids.py and tests/test_exercises_reductions.py
    assert list_exercises()[:12] == FIRST_TWELVE
    assert len(list_exercises()) >= 24


@pytest.mark.parametrize("name", list(EXERCISES))
def test_specs_try_sizes_that_catch_lucky_answers(name: str) -> None:
    spec = get_spec(name)
    cases = spec.all_cases(0)
    assert len(cases) >= 4
    threads = [int(np.prod(c.block)) for c in cases]
    assert min(threads) <= 32 and max(threads) >= 256, "from one warp to eight warps or more"
    assert spec.drawn is not None and any("drawn" in c.tags for c in cases)
    is_3d = any(c.block[2] > 1 for c in cases)  # stencil_3d: 3-D blocks, its own shapes
    if spec.cases()[0].size.keys() >= {"rows", "cols"} and not spec.factory and not is_3d:
        shapes = {c.block[:2] for c in cases}
        assert {(8, 8), (16, 16), (32, 8)} <= shapes
    if name != "map":  # map is the one-block warm-up
        assert any(c.blocks > 1 for c in cases)
        assert any(c.blocks == 1 for c in cases)
    tags = set().union(*(c.tags for c in cases))
    if name not in ("map", "axis_sum"):  # a row per block: axis_sum varies the row length
        assert {"partial_block", "whole_blocks"} <= tags
    if "TPB" in spec.factory:
        assert len({c.params["TPB"] for c in cases}) >= 2
    for index, case in enumerate(cases):
        inputs = spec.inputs(np.random.default_rng(index), case)
        expected = spec.reference(inputs, case)
        assert set(expected) == set(spec.outputs)
        arrays = [v for v in inputs.values() if isinstance(v, np.ndarray) and v.size > 2]
        assert all(len(np.unique(v)) > 1 for v in arrays), "inputs must not be constant"


def test_solutions_pass_with_two_schedules_per_case(solutions: dict[str, object],
                                                     capsys: pytest.CaptureFixture) -> None:
    for name, kernel in solutions.items():
        result = check(kernel, name)
        assert result.passed, result.report
        assert len(result.runs) == 2 * len(get_spec(name).all_cases(0))
        assert {r.schedule for r in result.runs} == {"ordered", "shuffle"}
        assert result.report in capsys.readouterr().out
        assert f"check('{name}', seed=0)" in result.report and "PASSED" in result.report


def test_solutions_are_real_numba_cuda_kernels(solutions: dict[str, object]) -> None:
    """Each solution compiles with numba-cuda for a T4 (PTX, no GPU needed), as learners' must."""
    from gpukit import inspect as gi

    if gi.unavailable_reason() is not None:
        pytest.skip(f"compiling needs the inspect extra: {gi.unavailable_reason()}")
    for name, kernel in solutions.items():
        spec = get_spec(name)
        case = spec.cases()[-1]
        inputs = spec.inputs(np.random.default_rng(0), case)
        expected = spec.reference(inputs, case)
        args = [expected[p] if p in spec.outputs else inputs[p] for p in spec.params]
        if spec.factory:
            kernel = kernel(*(case.params[p] for p in spec.factory))
        assert ".entry" in gi.ptx(kernel, gi.signature_from_args(args), "T4"), name


@pytest.mark.parametrize(("name", "kernel", "kind", "phrase"), WRONG,
                         ids=[f"{w[0]}-{w[1].__name__}" for w in WRONG])
def test_wrong_solutions_are_rejected_for_the_right_reason(name, kernel, kind, phrase) -> None:
    result = check(kernel, name, quiet=True)
    assert not result.passed
    assert result.main_failure.kind == kind, result.report
    assert phrase in _flat(result.report), result.report
    assert "FAILED" in result.report and "Hint:" in result.report


def test_wrong_solutions_cover_the_classic_mistakes() -> None:
    names = {w[1].__name__ for w in WRONG}
    for mistake in ("missing_guard", "missing_barrier", "race", "off_by_one", "local_index",
                    "swapped_axes", "no_stride_loop", "hardcoded_block",
                    # the tricks that fooled one-warp checks and fixed sizes (issue 15)
                    "syncwarp", "laneid", "shuffle_only", "three_tiles", "hardcoded_k",
                    "unused", "atomic_read", "atomic_halo", "every_thread_loops"):
        assert any(mistake in n for n in names), mistake
    per_exercise = {name: sum(w[0] == name for w in WRONG) for name in FIRST_TWELVE}
    assert min(per_exercise.values()) >= 3, per_exercise


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_verdicts_do_not_depend_on_the_seed(seed: int, solutions: dict[str, object]) -> None:
    assert check(solutions["dot"], "dot", seed=seed, quiet=True).passed
    assert check(solutions["histogram"], "histogram", seed=seed, quiet=True).passed
    wrong = {w[1].__name__: w[1] for w in WRONG}
    race = check(wrong["histogram_race"], "histogram", seed=seed, quiet=True)
    assert race.main_failure.kind == "RaceConditionError"


def test_drawn_sizes_follow_the_seed_and_the_report_names_it() -> None:
    spec = get_spec("guards")
    assert spec.all_cases(5) == spec.all_cases(5)
    drawn = {seed: [c for c in spec.all_cases(seed) if "drawn" in c.tags] for seed in range(4)}
    assert len({tuple(c.size["n"] for c in cases) for cases in drawn.values()}) > 1
    kernel = {w[1].__name__: w[1] for w in WRONG}["guards_hardcoded_block"]
    result = check(kernel, "guards", seed=5, quiet=True)
    assert result.report.startswith("check('guards', seed=5) · Guards")
    assert result.seed == 5 and [r.case for r in result.runs][::2] == spec.all_cases(5)
    assert "(drawn)" in result.report


def test_report_is_reproducible_and_has_no_file_paths() -> None:
    kernel = {w[1].__name__: w[1] for w in WRONG}["guards_missing_guard"]
    first = check(kernel, "guards", quiet=True).report
    assert first == check(kernel, "guards", quiet=True).report
    assert "exercise_wrong_solutions" not in first and ".py" not in first
    assert "line " in first and "thread (" in first


# -- budgets -------------------------------------------------------------------------------------
@cuda.jit
def _reads_twice(a, out):
    i = cuda.grid(1)
    if i + 1 < a.size:
        out[i] = a[i] * a[i] + a[i + 1]


def test_counter_counts_distinct_global_elements_per_thread() -> None:
    backend = CPUBackend()
    case = case_1d(8, 8)
    a = backend.to_device(np.arange(8, dtype=np.float32))
    out = backend.to_device(np.zeros(8, np.float32))
    record = backend.launch_kernel(_reads_twice, 1, 8, a, out, trace=True)
    counter = AccessCounter(case, record.trace)
    np.testing.assert_array_equal(counter.reads, [2] * 7 + [0])
    np.testing.assert_array_equal(counter.writes, [1] * 7 + [0])
    checks = judge({"global_reads_per_thread": 1, "max_shared_bytes": 0}, counter, 0, case)
    assert [c.ok for c in checks] == [False, True]
    assert checks[0].used == 2 and checks[0].where == "thread (0, 0, 0) of block (0, 0, 0)"


@cuda.jit
def _atomic_reads(a, out):
    i = cuda.grid(1)
    out[i] = cuda.atomic.add(a, i, 0) + a[i]  # one element, read plainly and atomically


def test_counter_counts_an_atomic_as_a_read_and_a_write() -> None:
    backend = CPUBackend()
    case = case_1d(4, 4)
    a = backend.to_device(np.arange(4, dtype=np.float32))
    out = backend.to_device(np.zeros(4, np.float32))
    record = backend.launch_kernel(_atomic_reads, 1, 4, a, out, trace=True)
    counter = AccessCounter(case, record.trace)
    np.testing.assert_array_equal(counter.reads, [1] * 4)  # a[i], however it was read
    np.testing.assert_array_equal(counter.writes, [2] * 4)  # out[i], and a[i] by the atomic
    np.testing.assert_array_equal(counter.per_block_atomics(), [4])


@cuda.jit
def _shared_half_used(a, out):
    t = cuda.threadIdx.x
    used = cuda.shared.array(4, np.float32)
    written = cuda.shared.array(16, np.float32)
    cuda.shared.array(64, np.float32)  # declared, never touched
    used[t] = a[t]
    written[t] = a[t]
    cuda.syncthreads()
    out[t] = used[3 - t]


def test_min_shared_bytes_counts_only_shared_arrays_written_and_read() -> None:
    backend = CPUBackend()
    case = case_1d(4, 4)
    a = backend.to_device(np.arange(4, dtype=np.float32))
    out = backend.allocate(4, np.float32)
    record = backend.launch_kernel(_shared_half_used, 1, 4, a, out, trace=True)
    counter = AccessCounter(case, record.trace)
    assert counter.shared_used_bytes == 16 and counter.shared_unused == ["written"]
    declared = record.stats.static_shared_bytes
    assert declared == 16 + 64 + 256
    (check_,) = judge({"min_shared_bytes": 32}, counter, declared, case)
    assert not check_.ok and check_.used == 16
    assert check_.describe() == ("shared memory per block written and read (bytes, at least): "
                                 "16 (needs >= 32; 336 declared)")


def test_budget_limits_may_depend_on_the_case() -> None:
    budget = Budget(global_reads_per_thread=lambda c: c.size["n"] // 10, min_shared_bytes=4)
    assert budget.limits(case_1d(100, 32)) == {"global_reads_per_thread": 10,
                                               "min_shared_bytes": 4}


def test_budget_is_enforced_even_when_the_answer_is_right() -> None:
    @cuda.jit
    def copy_twice(a, out):  # right answer, reads two elements per thread
        i = cuda.grid(1)
        if i < a.size:
            out[i] = a[i] + 10 + 0 * a[(i + 1) % a.size]

    result = check(copy_twice, "map", quiet=True)
    assert not result.passed and result.main_failure.kind == "budget"
    assert "global reads per thread: 2 (limit 1)" in _flat(result.report)


# -- wrong kernels are reported, not raised -------------------------------------------------------
def test_factory_that_returns_nothing_is_reported() -> None:
    def make_kernel(TPB):
        @cuda.jit
        def dot_kernel(a, b, out, n):
            pass

    result = check(make_kernel, "dot", quiet=True)
    assert result.main_failure.kind == "factory"
    assert "make_kernel(TPB=32) returned None instead of a kernel" in _flat(result.report)


def test_kernel_with_the_wrong_parameters_is_reported() -> None:
    @cuda.jit
    def guard_kernel(a, out):
        pass

    result = check(guard_kernel, "guards", quiet=True)
    assert result.main_failure.kind == "signature"
    assert ("your kernel takes (a, out) but this exercise calls it as "
            "kernel[grid, block](a, out, n)") in _flat(result.report)


def test_unsupported_python_in_a_kernel_is_reported() -> None:
    @cuda.jit
    def map_kernel(a, out):
        try:
            out[0] = a[0]
        except IndexError:
            pass

    result = check(map_kernel, "map", quiet=True)
    assert result.main_failure.kind == "KernelTypingError"  # numba-cuda rejects try/except too
    assert "numba-cuda would not compile kernel 'map_kernel'" in result.report


def test_a_kernel_that_hangs_stops_the_check_early() -> None:
    @cuda.jit
    def map_kernel(a, out):
        i = cuda.threadIdx.x
        while i >= 0:
            out[i] = 1.0

    result = check(map_kernel, "map", quiet=True, watchdog_s=0.2)
    # whichever comes first: the watchdog, or the trace of its endless writes filling up
    assert result.main_failure.kind in ("KernelTimeoutError", "TraceTooLargeError")
    assert len(result.runs) == 1  # the first run did not end: no point in trying the others
    assert "never end" in result.report


def test_a_kernel_that_writes_its_input_is_reported() -> None:
    @cuda.jit
    def map_kernel(a, out):
        i = cuda.threadIdx.x
        a[i] = a[i] + 10
        out[i] = a[i]

    result = check(map_kernel, "map", quiet=True)
    assert result.main_failure.kind == "input_modified"
    assert "your kernel changed its input 'a'" in result.report


def test_a_skeleton_is_told_it_wrote_nothing() -> None:
    @cuda.jit
    def map_kernel(a, out):
        pass

    result = check(map_kernel, "map", quiet=True)
    assert "the kernel wrote none of the 1 elements of 'out' (is it still the skeleton?)" in \
        _flat(result.report)
    assert result.main_failure.cause == "unwritten:skeleton"


def test_a_skeleton_of_an_exercise_whose_output_starts_at_zero_is_told_so() -> None:
    def make_kernel(TPB):
        @cuda.jit
        def dot_kernel(a, b, out, n):
            pass
        return dot_kernel

    report = _flat(check(make_kernel, "dot", quiet=True).report)
    assert "'out' is still all 0.0, as it started (is it still the skeleton?)" in report


# -- hints come from what happened, never from a guess that can be backwards ----------------------
def _wrong(name: str):
    return {w[1].__name__: w[1] for w in WRONG}[name]


def test_an_off_by_one_guard_is_not_called_a_skeleton() -> None:
    result = check(_wrong("map_guard_off_by_one"), "map", quiet=True)
    report = _flat(result.report)
    assert "skeleton" not in report
    assert ("the kernel wrote none of the 1 elements of 'out', though it writes 'out' in other "
            "cases") in report
    assert result.main_failure.cause == "unwritten:untouched"
    assert "a guard such as `if i < n - 1:`" in report


def test_shared_memory_indexed_with_the_global_index_is_told_to_use_threadidx() -> None:
    result = check(_wrong("scan_global_index_in_shared"), "prefix_sum", quiet=True)
    report = _flat(result.report)
    assert result.main_failure.cause == "oob:shared"
    assert "index it with cuda.threadIdx.x" in report
    assert "compute the global index" not in report


def test_a_loop_every_thread_runs_is_told_to_go_not_to_get_a_barrier() -> None:
    result = check(_wrong("dot_every_thread_loops"), "dot", quiet=True)
    report = _flat(result.report)
    assert result.main_failure.cause == "race:same_element"
    assert "remove the loop" in report and "put cuda.syncthreads()" not in report.split(
        "Hint:")[1]


def test_a_missing_barrier_between_two_lines_is_told_to_add_one() -> None:
    result = check(_wrong("shared_missing_barrier"), "shared_memory", quiet=True)
    assert result.main_failure.cause == "race:two_lines"
    assert "put cuda.syncthreads()" in _flat(result.report).split("Hint:")[1]


def test_wrong_elements_and_unwritten_elements_are_told_apart() -> None:
    @cuda.jit
    def map_kernel(a, out):
        i = cuda.threadIdx.x
        if i > 0:
            out[i] = a[i] + 1  # wrong where written, and out[0] never written

    result = check(map_kernel, "map", quiet=True)
    run = next(r for r in result.runs if r.case.size["n"] == 7)
    assert run.kind == "unwritten" and run.facts["unwritten"] == 1 and run.facts["wrong"] == 6
    assert run.message.startswith("out[0] was never written; expected ")
    assert "(6 of the 6 elements it wrote are wrong)" in run.message


# -- misuse raises -------------------------------------------------------------------------------
@cuda.jit
def _plain(a, out, n):
    pass


def _factory(TPB):
    return _plain


def test_unknown_exercise_suggests_the_closest_name() -> None:
    with pytest.raises(ExerciseUsageError,
                       match=r"unknown exercise 'mapp'; did you mean 'map'\? the exercises are: "
                             r"map, guards, "):
        check(_plain, "mapp")


@pytest.mark.parametrize(("kernel", "exercise", "message"), [
    ("guards", _plain, (r"check's arguments are the other way round: call check\(your_kernel, "
                        r"'exercise_name'\)")),
    (_plain, 42, r"the exercise must be a name such as 'map', got int"),
    (42, "guards", (r"check expects your kernel function \(or a kernel factory\) as its first "
                    r"argument, got int")),
    (_plain, "pooling", (r"exercise 'pooling' needs a kernel factory, not a kernel: pass "
                         r"make_kernel\(TPB\)")),
    (_factory, "conv1d", (r"exercise 'conv1d' calls your factory as make_kernel\(TPB, K\), but "
                          r"yours takes 1 argument\(s\) \(TPB\)")),
    (_factory, "guards", r"exercise 'guards' takes the kernel itself, not a factory"),
])
def test_misuse_raises_a_clear_error(kernel, exercise, message) -> None:
    with pytest.raises(ExerciseUsageError, match=message):
        check(kernel, exercise)


def test_usage_errors_are_gpukit_value_errors() -> None:
    assert issubclass(ExerciseUsageError, GpukitError) and issubclass(ExerciseUsageError,
                                                                      ValueError)
    with pytest.raises(ExerciseUsageError, match="seed must be an int >= 0, got 'x'"):
        check(_plain, "guards", seed="x")


def test_case_describes_itself() -> None:
    case = Case({"rows": 5, "cols": 7}, (2, 3, 1), (4, 2, 1), {"TPB": 4})
    assert case.describe() == "rows=5, cols=7, TPB=4, grid=(2, 3), block=(4, 2)"
    assert case.threads == 48 and case.blocks == 6
