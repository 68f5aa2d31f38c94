"""The nbgrader course (course/build.py): every exercise becomes a source assignment whose release
is the exercise's skeleton, and nbgrader's own commands (generate_assignment, autograde,
generate_feedback) give a correct submission full points and wrong ones none.

The autograde test runs nbgrader in a temporary course directory: two assignments, five
submissions: about a minute of CPU time (106 s of wall time on 2 cores shared with other jobs,
300 s when the load average was 11); nbgrader's start-up and the notebook kernels are most of it.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = sorted((NOTEBOOKS / "solutions").glob("*.ipynb"))
# The first twelve exercises follow the pattern exactly: the release is the skeleton, line for
# line (the one exception, 01_map, gains a `pass` after its hint).
ORIGINAL = ["01_map", "02_guards", "03_map_2d", "04_blocks", "05_shared_memory", "06_pooling",
            "07_dot", "08_conv1d", "09_prefix_sum", "10_axis_sum", "11_matmul", "12_histogram"]


def _load_build():
    spec = importlib.util.spec_from_file_location("course_build", ROOT / "course" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _load_build()


def _src(cell: dict) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def _nbg(cell: dict) -> dict:
    return cell["metadata"].get("nbgrader", {})


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("course")
    built = build.build(root)
    assert built == [p.stem for p in SOLUTIONS]
    return root


def _source_notebook(course: Path, name: str) -> dict:
    return json.loads((course / "source" / name / f"{name}.ipynb").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", [p.stem for p in SOLUTIONS])
def test_every_exercise_becomes_an_assignment(course: Path, name: str):
    notebook = _source_notebook(course, name)
    exercise = json.loads((NOTEBOOKS / "exercises" / f"{name}.ipynb").read_text())
    assert len(notebook["cells"]) == len(exercise["cells"])
    solutions = [c for c in notebook["cells"] if _nbg(c).get("solution")]
    grades = [c for c in notebook["cells"] if _nbg(c).get("grade")]
    assert solutions and len(grades) == 1
    (grade,) = grades
    assert _nbg(grade) == {"grade": True, "grade_id": "check", "locked": True, "points": 1.0,
                           "schema_version": 3, "solution": False, "task": False}
    assert re.search(r"^assert \w+\.passed, ", _src(grade), re.MULTILINE)
    assert "### BEGIN HIDDEN TESTS\nassert check(" in _src(grade)
    skeletons = [c for c in exercise["cells"] if _src(c).startswith(build.SKELETON_MARK)]
    for cell, skeleton in zip(solutions, skeletons):
        source, released = _src(cell), build.release_of(_src(cell))
        ast.parse(source)
        ast.parse(released)
        assert source.count(build.BEGIN) == source.count(build.END) >= 1
        hints = [ln for ln in _src(skeleton).split("\n") if ln.strip().startswith("#")]
        assert [ln for ln in released.split("\n") if ln.strip().startswith("#")] == hints
        if name in ORIGINAL:
            def code(text: str) -> list[str]:
                return [ln for ln in text.split("\n") if ln.strip() != "pass"]
            assert code(released) == code(_src(skeleton))
    for cell in notebook["cells"]:
        assert cell.get("outputs", []) == [] and "execution" not in cell["metadata"]
        if cell["cell_type"] == "markdown":
            assert _nbg(cell)["locked"] is True
            assert "../solutions/" not in _src(cell)


def test_merge_keeps_the_skeleton_around_the_solution():
    skeleton = "# YOUR CODE HERE\ndef f(x):\n    y = 1\n    # add y to x\n    pass\n"
    solution = "# SOLUTION\ndef f(x):\n    y = 1\n    return x + y\n"
    merged = build.solution_cell_source(skeleton, solution)
    assert merged == ("# YOUR CODE HERE\ndef f(x):\n    y = 1\n    # add y to x\n"
                      "    ### BEGIN SOLUTION\n    return x + y\n    ### END SOLUTION\n")
    assert build.release_of(merged) == skeleton


def test_merge_falls_back_to_one_region_when_regions_would_not_parse():
    skeleton = "# YOUR CODE HERE\nif True:\n    x = 1\nelse:\n    x = 2\n"
    solution = "# SOLUTION\nif False:\n    x = 3\nelse:\n    x = 4\n"
    merged = build.solution_cell_source(skeleton, solution)
    ast.parse(build.release_of(merged))
    assert merged.startswith("# YOUR CODE HERE\n### BEGIN SOLUTION\nif False:")
    assert build.release_of(merged) == "# YOUR CODE HERE\npass"


def test_pointer_to_the_solution_is_removed_and_paragraphs_kept():
    text = ("says what to try. (Stuck? A solution is in\n[`../solutions/05_x.ipynb`]"
            "(../solutions/05_x.ipynb); try first!)\n\nNext paragraph.")
    assert build.SOLUTION_POINTER.sub("", text) == "says what to try.\n\nNext paragraph."


def test_build_errors(tmp_path: Path):
    with pytest.raises(build.CourseError, match=r"^no solution notebook for 99_nope; the "
                       r"exercises are: 01_map, "):
        build.build(tmp_path / "c", only=["99_nope"])
    notebooks = tmp_path / "nb"
    (notebooks / "solutions").mkdir(parents=True)
    (notebooks / "exercises").mkdir()
    (notebooks / "solutions" / "01_x.ipynb").write_text("{}")
    with pytest.raises(build.CourseError, match=r"^01_x.ipynb has no exercise notebook "):
        build.build(tmp_path / "c", notebooks)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": "result = 1"}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    for kind in ("solutions", "exercises"):
        (notebooks / kind / "01_x.ipynb").write_text(json.dumps(notebook))
    with pytest.raises(build.CourseError, match=r"^01_x.ipynb: 0 '# SOLUTION' cell\(s\) in the "
                       r"solution but 0 '# YOUR CODE HERE' cell\(s\) in the exercise; they must "
                       "pair up$"):
        build.build(tmp_path / "c", notebooks)
    with pytest.raises(build.CourseError, match="^no check"):
        build.grade_cell_source("result = 1", None)
    assert build.main(["--course", str(tmp_path / "c"), "99_nope"]) == 1


def test_check_cell_without_assignment_still_asserts():
    text = build.grade_cell_source('check(k, "map", show=True)', None)
    assert text == ('check(k, "map", show=True)\nassert check(k, \'map\', quiet=True).passed, '
                    '"check(\'map\') did not pass"')


# -- nbgrader's own commands ---------------------------------------------------------------------

WRONG = {  # a known-wrong kernel cell per assignment, and the verdict it earns in the report
    "01_map": ("@cuda.jit\ndef map_kernel(a, out):\n    i = cuda.threadIdx.x\n    out[i] = a[i] + 1\n",
               "mismatch"),
    "05_shared_memory": (
        ("def make_kernel(TPB):\n    @cuda.jit\n    def reverse_kernel(a, out, n):\n"
        "        tile = cuda.shared.array(TPB, numba.float32)\n        t = cuda.threadIdx.x\n"
        "        i = cuda.blockIdx.x * TPB + t\n        if i < n:\n            tile[t] = a[i]\n"
        "        j = cuda.blockIdx.x * TPB + TPB - 1 - t\n        if j < n:\n"
        "            out[n - 1 - j] = tile[TPB - 1 - t]\n\n    return reverse_kernel\n"),
        "RaceConditionError"),  # the barrier forgotten
}


def _nbgrader(course: Path, *args: str) -> str:
    def path(*first: str, name: str) -> str:
        return os.pathsep.join(filter(None, [*first, os.environ.get(name)]))

    # nbgrader runs `alembic` from PATH: this environment's scripts come first
    env = {**os.environ, "PYTHONPATH": path(str(ROOT), name="PYTHONPATH"),
           "PATH": path(str(Path(sys.executable).parent), name="PATH")}
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _solution_code(name: str) -> str:
    notebook = json.loads((NOTEBOOKS / "solutions" / f"{name}.ipynb").read_text())
    return next(_src(c) for c in notebook["cells"] if _src(c).startswith(build.SOLUTION_MARK))


@pytest.mark.slow
def test_nbgrader_grades_right_and_wrong_submissions(tmp_path: Path):
    pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install -e .[test])")
    from nbgrader.api import Gradebook

    assert build.main(["--course", str(tmp_path), *WRONG]) == 0
    submissions = {}
    for name, (wrong, _) in WRONG.items():
        _nbgrader(tmp_path, "generate_assignment", name)
        released = json.loads((tmp_path / "release" / name / f"{name}.ipynb").read_text())
        code = [_src(c) for c in released["cells"] if c["cell_type"] == "code"]
        exercise = json.loads((NOTEBOOKS / "exercises" / f"{name}.ipynb").read_text())
        assert code[:-1] == [_src(c) for c in exercise["cells"]
                             if c["cell_type"] == "code"][:-1] or name == "01_map"
        assert "HIDDEN" not in code[-1] and "BEGIN SOLUTION" not in "".join(code)
        kernels = {"right": _solution_code(name), "wrong": wrong}
        if name == "05_shared_memory":
            kernels["unedited"] = None  # the release handed in as it was
        for student, kernel in kernels.items():
            notebook = json.loads(json.dumps(released))
            for cell in notebook["cells"]:
                if _nbg(cell).get("solution") and kernel is not None:
                    cell["source"] = kernel
            folder = tmp_path / "submitted" / student / name
            folder.mkdir(parents=True)
            (folder / f"{name}.ipynb").write_text(json.dumps(notebook))
            submissions[name, student] = folder
    for name in WRONG:
        _nbgrader(tmp_path, "autograde", name)
        _nbgrader(tmp_path, "generate_feedback", name)
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gradebook:
        scores = {key: (gradebook.find_submission(key[0], key[1]).score,
                        gradebook.find_submission(key[0], key[1]).max_score)
                  for key in submissions}
    assert scores == {("01_map", "right"): (1.0, 1.0), ("01_map", "wrong"): (0.0, 1.0),
                      ("05_shared_memory", "right"): (1.0, 1.0),
                      ("05_shared_memory", "wrong"): (0.0, 1.0),
                      ("05_shared_memory", "unedited"): (0.0, 1.0)}
    for (name, student) in submissions:
        graded = json.loads((tmp_path / "autograded" / student / name / f"{name}.ipynb")
                            .read_text())
        check_cell = next(c for c in graded["cells"] if _nbg(c).get("grade"))
        text = "".join("".join(o.get("text", "")) for o in check_cell["outputs"])
        assert ("PASSED all" in text) == (student == "right"), text
        if student == "wrong":
            assert f": {WRONG[name][1]}" in text, text
        feedback = tmp_path / "feedback" / student / name / f"{name}.html"
        score = "1.0 / 1.0" if student == "right" else "0.0 / 1.0"
        assert f"Score: {score}" in feedback.read_text(encoding="utf-8")


def test_instructors_guide_lists_every_exercise_and_command():
    from gpukit.exercises import EXERCISES

    guide = (NOTEBOOKS / "INSTRUCTORS.md").read_text(encoding="utf-8")
    missing = [name for name in EXERCISES if f"`{name}`" not in guide]
    assert not missing, f"notebooks/INSTRUCTORS.md does not list {missing}"
    for command in ("python course/build.py", "nbgrader generate_assignment 05_shared_memory",
                    "nbgrader autograde 05_shared_memory",
                    "nbgrader generate_feedback 05_shared_memory"):
        assert command in guide
