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
    return found


def _flat(text: str) -> str:
    return " ".join(text.split())


# -- the exercises -------------------------------------------------------------------------------
def test_twelve_exercises_in_workshop_order() -> None:
    assert list_exercises() == [
        "map", "guards", "map_2d", "blocks", "shared_memory", "pooling", "dot", "conv1d",
        "prefix_sum", "axis_sum", "matmul", "histogram"]


@pytest.mark.parametrize("name", list(EXERCISES))
def test_specs_try_sizes_that_catch_lucky_answers(name: str) -> None:
    spec = get_spec(name)
    cases = spec.cases()
    assert len(cases) >= 4
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
        assert len(result.runs) == 2 * len(get_spec(name).cases())
        assert {r.schedule for r in result.runs} == {"ordered", "shuffle"}
        assert result.report in capsys.readouterr().out
        assert f"check('{name}')" in result.report and "PASSED" in result.report


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
                    "swapped_axes", "no_stride_loop", "hardcoded_block"):
        assert any(mistake in n for n in names), mistake
    assert {w[0] for w in WRONG} == set(EXERCISES)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_verdicts_do_not_depend_on_the_seed(seed: int, solutions: dict[str, object]) -> None:
    assert check(solutions["dot"], "dot", seed=seed, quiet=True).passed
    assert check(solutions["histogram"], "histogram", seed=seed, quiet=True).passed
    wrong = {w[1].__name__: w[1] for w in WRONG}
    race = check(wrong["histogram_race"], "histogram", seed=seed, quiet=True)
    assert race.main_failure.kind == "RaceConditionError"


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
    assert "make_kernel(TPB=8) returned None instead of a kernel" in _flat(result.report)


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
    assert result.main_failure.kind == "KernelTimeoutError"
    assert len(result.runs) == 1  # the first run timed out: no point in trying the others


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
