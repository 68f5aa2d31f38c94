"""Exercises 20-26 (gpukit.exercises.specs_reductions and specs_host): the official solutions pass, known-wrong
solutions are rejected with the verdict expected, the cases span one warp to 256 threads, and
host-function exercises (gpukit.exercises.host) are checked through check() like kernels.

The solutions are the code cells of notebooks/solutions/2*.ipynb (what learners see); the wrong
ones are in exercise_wrong_reductions.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest
from exercise_wrong_reductions import WRONG_REDUCTIONS

from gpukit.exercises import EXERCISES, ExerciseUsageError, check, get_spec
from gpukit.exercises.host import HostExerciseSpec
from gpukit.exercises.specs_host import HOST_EXERCISES
from gpukit.exercises.specs_reductions import REDUCTION_EXERCISES

ROOT = Path(__file__).resolve().parents[1]
NAMES = ["warp_reduce", "block_reduce_atomic", "scan_multiblock", "softmax", "layer_norm",
         "attention", "stream_overlap"]
NUMBERS = dict(zip(NAMES, range(20, 27)))
CHECK_CALL = re.compile(r'check\((\w+),\s*"(\w+)"\)')


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _solution(name: str, tmp_path: Path) -> object:
    path = ROOT / "notebooks" / "solutions" / f"{NUMBERS[name]}_{name}.ipynb"
    code = ["".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code"]
    body = next(c for c in code if c.startswith("# SOLUTION"))
    entry, exercise = CHECK_CALL.search(code[-1]).groups()
    assert exercise == name
    module_path = tmp_path / f"solution_{name}.py"
    module_path.write_text(code[0] + "\n\n" + body + "\n")
    spec = importlib.util.spec_from_file_location(module_path.stem, module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, entry)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_seven_exercises_are_registered_after_the_grid_exercises() -> None:
    names = list(EXERCISES)
    assert names[names.index("matmul_partial") + 1:][:7] == NAMES
    assert sorted(NAMES) == sorted(s.name for s in (*REDUCTION_EXERCISES, *HOST_EXERCISES))
    hosts = {n for n in NAMES if isinstance(get_spec(n), HostExerciseSpec)}
    assert hosts == {"scan_multiblock", "stream_overlap"}


@pytest.mark.parametrize("name", NAMES)
def test_cases_span_one_warp_to_256_threads_and_catch_lucky_sizes(name: str) -> None:
    spec = get_spec(name)
    cases = spec.cases()
    blocks = {int(np.prod(c.block)) for c in cases}
    assert min(blocks) <= 32 and max(blocks) >= 256
    assert any(c.blocks == 1 for c in cases) and any(c.blocks > 1 for c in cases)
    tags = set().union(*(c.tags for c in cases))
    assert {"partial_block", "whole_blocks"} <= tags
    assert len({c.params["TPB"] for c in cases}) >= 3
    for index, case in enumerate(cases):
        inputs = spec.inputs(np.random.default_rng(index), case)
        expected = spec.reference(inputs, case)
        assert set(expected) == set(spec.outputs)
        arrays = [v for v in inputs.values() if isinstance(v, np.ndarray) and v.size > 2]
        assert all(len(np.unique(v)) > 1 for v in arrays), "inputs must not be constant"
        assert all(np.isfinite(v).all() for v in expected.values())


def test_drawn_cases_depend_on_the_seed() -> None:
    for spec in (get_spec("scan_multiblock"), get_spec("stream_overlap")):
        draws = {spec.drawn(np.random.default_rng([seed, 0xCA5E]))[0].describe()
                 for seed in range(6)}
        assert len(draws) > 1


@pytest.mark.parametrize("name", NAMES)
def test_official_solution_passes(name: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture) -> None:
    result = check(_solution(name, tmp_path), name)
    assert result.passed, result.report
    assert len(result.runs) >= 2 * len(get_spec(name).cases())
    assert {r.schedule for r in result.runs} == {"ordered", "shuffle"}
    assert result.report in capsys.readouterr().out
    assert "PASSED" in result.report


@pytest.mark.parametrize(("name", "wrong", "kind", "phrase"), WRONG_REDUCTIONS,
                         ids=[f"{w[0]}-{w[1].__name__}" for w in WRONG_REDUCTIONS])
def test_wrong_solution_is_rejected_for_the_right_reason(name, wrong, kind, phrase) -> None:
    result = check(wrong, name, quiet=True)
    assert not result.passed
    assert result.main_failure.kind == kind, result.report
    assert phrase in _flat(result.report), result.report
    assert "FAILED" in result.report and "Hint:" in result.report


def test_at_least_three_wrong_solutions_per_exercise() -> None:
    for name in NAMES:
        assert sum(w[0] == name for w in WRONG_REDUCTIONS) >= 3, name
    names = " ".join(w[1].__name__ for w in WRONG_REDUCTIONS)
    for mistake in ("shuffles_only", "laneid", "syncwarp", "missing_barrier", "non_atomic",
                    "hardcoded", "no_max_subtraction", "one_stream", "one_pass_variance"):
        assert mistake in names, mistake


def test_host_exercise_refuses_a_kernel_and_a_wrong_signature() -> None:
    from exercise_wrong_reductions import _affine

    with pytest.raises(ExerciseUsageError, match="checks a host function, not a kernel"):
        check(_affine, "stream_overlap")

    def pipeline(backend, h_in, h_out, n):
        pass

    with pytest.raises(ExerciseUsageError, match=re.escape(
            "calls your function as stream_overlap(backend, h_in, h_out, n, TPB, CHUNKS), but "
            "yours takes 4 argument(s) (backend, h_in, h_out, n)")):
        check(pipeline, "stream_overlap")


def test_host_function_that_raises_or_does_nothing_is_reported() -> None:
    def broken(backend, a, out, n, TPB):
        raise KeyError("oops")

    result = check(broken, "scan_multiblock", quiet=True)
    assert result.main_failure.kind == "host_error"
    assert "your function raised KeyError: 'oops'" in result.report

    def skeleton(backend, a, out, n, TPB):
        pass

    result = check(skeleton, "scan_multiblock", quiet=True)
    assert result.main_failure.kind == "unwritten"
    assert "is it still the skeleton?" in result.report


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_have_the_conventions(name: str) -> None:
    stem = f"{NUMBERS[name]}_{name}.ipynb"
    exercise = _cells(ROOT / "notebooks" / "exercises" / stem)
    solution = _cells(ROOT / "notebooks" / "solutions" / stem)
    exercise_code = ["".join(c["source"]) for c in exercise if c["cell_type"] == "code"]
    assert any(c.startswith("# YOUR CODE HERE") for c in exercise_code)
    assert re.search(rf'check\(\w+, "{name}"\)', exercise_code[-1])
    entry = CHECK_CALL.search(exercise_code[-1]).group(1)
    for cells in (exercise, solution):
        text = "".join("".join(c["source"]) for c in cells)
        assert "NBVAL" not in text and f'show({entry}, "{name}")' in text
        assert all(c.get("outputs") for c in cells if c["cell_type"] == "code"
                   and "check(" in "".join(c["source"])), "committed with outputs"
    verdict = "".join("".join(o.get("text", "")) for o in solution[-1]["outputs"])
    assert "PASSED" in verdict


@pytest.mark.parametrize("name", [n for n in NAMES if not isinstance(get_spec(n),
                                                                     HostExerciseSpec)])
def test_kernel_solutions_are_real_numba_cuda_kernels(name: str, tmp_path: Path) -> None:
    """Each kernel solution compiles with numba-cuda for a T4 (PTX, no GPU needed)."""
    from gpukit import inspect as gi

    if gi.unavailable_reason() is not None:
        pytest.skip(f"compiling needs the inspect extra: {gi.unavailable_reason()}")
    spec = get_spec(name)
    case = spec.cases()[-1]
    inputs = spec.inputs(np.random.default_rng(0), case)
    expected = spec.reference(inputs, case)
    args = [expected[p] if p in spec.outputs else inputs[p] for p in spec.params]
    kernel = _solution(name, tmp_path)(*(case.params[p] for p in spec.factory))
    assert ".entry" in gi.ptx(kernel, gi.signature_from_args(args), "T4")
