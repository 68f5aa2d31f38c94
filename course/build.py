"""Build gpukit's exercises as an nbgrader course: `python course/build.py [--course DIR]`.

For every notebooks/solutions/NN_name.ipynb (with its notebooks/exercises/NN_name.ipynb) this
writes the nbgrader assignment source/NN_name/NN_name.ipynb: the exercise notebook's text and
cells, with
- each kernel cell (`# YOUR CODE HERE` in the exercise, `# SOLUTION` in the solution) a solution
  cell: the skeleton's lines and hints kept, the solution's code between `### BEGIN SOLUTION` and
  `### END SOLUTION`, so that nbgrader's release (with this course's `pass` stub) gives back the
  exercise's skeleton;
- the `check(...)` cell an autograded, locked test cell worth `--points`, which asserts that the
  check passed, and (hidden from learners) that it passes again with another seed;
- the markdown cells locked, and the pointer to the solutions notebook removed.
New exercises are picked up from the notebooks with nothing to add here. It writes only the
assignments it builds (and nbgrader_config.py when DIR has none); it runs no notebook.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTEBOOKS = HERE.parent / "notebooks"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
CODE_STUB = "pass"  # nbgrader_config.py's ClearSolutions.code_stub: the skeletons' `pass`
SKELETON_MARK, SOLUTION_MARK = "# YOUR CODE HERE", "# SOLUTION"
CHECK_CALL = re.compile(r"""\bcheck\(\s*(\w+)\s*,\s*["'](\w+)["']""")
ASSIGNED_CHECK = re.compile(r"""^(\w+)\s*=\s*check\(""", re.MULTILINE)
SOLUTION_POINTER = re.compile(r"[ \t]*\(Stuck\?.*?\)[ \t]*(?=\n|$)", re.DOTALL)
HIDDEN_SEED = 20261124


class CourseError(Exception):
    """A notebook pair that cannot become an nbgrader assignment, and why."""


def _source(cell: dict) -> str:
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


def _is_comment(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def release_of(source: str, stub: str = CODE_STUB) -> str:
    """What nbgrader's ClearSolutions makes of a solution cell (the stub, indented, per region)."""
    out, inside = [], False
    for line in source.split("\n"):
        if "BEGIN SOLUTION" in line:
            inside = True
            out.extend(_indent(line) + s for s in stub.split("\n"))
        elif "END SOLUTION" in line:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def solution_cell_source(skeleton: str, solution: str) -> str:
    """The skeleton with the solution's code as solution regions, where the two differ.

    Where the solution differs only in comments (the cell's first line), the skeleton's text
    stays. Elsewhere the skeleton's comments (the hints) stay, its code (the `pass`) goes, and the
    solution's lines follow between the markers. If nbgrader's release of that would not be valid
    Python, the whole solution becomes one region after the skeleton's comments.
    """
    old, new = skeleton.split("\n"), solution.split("\n")
    lines: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            lines += old[i1:i2]
            continue
        code = [ln for ln in new[j1:j2] if not _is_comment(ln)]
        if not code:  # a comment changed: keep the learner's wording
            lines += old[i1:i2]
            continue
        indent = min((_indent(ln) for ln in code), key=len)
        lines += [ln for ln in old[i1:i2] if _is_comment(ln) and ln.strip()]
        lines += [indent + BEGIN, *new[j1:j2], indent + END]
    merged = "\n".join(lines)
    try:
        ast.parse(release_of(merged))
        ast.parse(merged)
    except SyntaxError:
        header = [ln for ln in old if ln.startswith("#")][:2]
        body = [ln for ln in new if not ln.startswith(SOLUTION_MARK)]
        merged = "\n".join([*header, BEGIN, *body, END])
    return merged


def grade_cell_source(check_source: str, hidden_seed: int | None) -> str:
    """The check cell, asserting that the check passed (and, hidden, that it passes again)."""
    found = CHECK_CALL.findall(check_source)
    if not found:
        raise CourseError("no check(kernel, 'name') call in the check cell")
    entry, name = found[-1]
    assigned = ASSIGNED_CHECK.findall(check_source)
    lines = [check_source.rstrip()]
    if assigned:
        lines.append(f'assert {assigned[-1]}.passed, "check({name!r}) did not pass: see its '
                     'report above"')
    else:
        lines.append(f'assert check({entry}, {name!r}, quiet=True).passed, "check({name!r}) '
                     'did not pass"')
    if hidden_seed is not None:
        again = (f"assert check({entry}, {name!r}, seed={hidden_seed}, quiet=True).passed, "
                 f'"check({name!r}) did not pass with another seed (other sizes and orders)"')
        lines += [BEGIN_HIDDEN, again, END_HIDDEN]
    return "\n".join(lines)


def _nbgrader(grade_id: str, *, solution: bool = False, grade: bool = False,
              locked: bool = False, points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def _clean(cell: dict) -> dict:
    cell = copy.deepcopy(cell)
    cell["metadata"].pop("execution", None)
    if cell["cell_type"] == "code":
        cell["outputs"], cell["execution_count"] = [], None
    return cell


def build_assignment(solution_path: Path, exercise_path: Path, *, points: float = 1.0,
                     hidden_seed: int | None = HIDDEN_SEED) -> dict:
    """The nbgrader source notebook (a dict) of one exercise."""
    exercise = json.loads(exercise_path.read_text(encoding="utf-8"))
    solution = json.loads(solution_path.read_text(encoding="utf-8"))
    solutions = [_source(c) for c in solution["cells"]
                 if c["cell_type"] == "code" and _source(c).startswith(SOLUTION_MARK)]
    skeletons = [i for i, c in enumerate(exercise["cells"])
                 if c["cell_type"] == "code" and _source(c).startswith(SKELETON_MARK)]
    checks = [i for i, c in enumerate(exercise["cells"])
              if c["cell_type"] == "code" and CHECK_CALL.search(_source(c))]
    if not solutions or len(solutions) != len(skeletons):
        raise CourseError(f"{solution_path.name}: {len(solutions)} '{SOLUTION_MARK}' cell(s) in "
                          f"the solution but {len(skeletons)} '{SKELETON_MARK}' cell(s) in the "
                          "exercise; they must pair up")
    if not checks:
        raise CourseError(f"{exercise_path.name}: no check(kernel, 'name') cell")
    notebook = copy.deepcopy(exercise)
    cells = [_clean(c) for c in notebook["cells"]]
    for n, (index, solved) in enumerate(zip(skeletons, solutions)):
        cell = cells[index]
        cell["source"] = solution_cell_source(_source(cell), solved)
        cell["metadata"]["nbgrader"] = _nbgrader("kernel" if n == 0 else f"kernel-{n + 1}",
                                                 solution=True)
    grade = cells[checks[-1]]
    grade["source"] = grade_cell_source(_source(grade), hidden_seed)
    grade["metadata"]["nbgrader"] = _nbgrader("check", grade=True, locked=True, points=points)
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            cell["source"] = SOLUTION_POINTER.sub("", _source(cell))
            cell["metadata"]["nbgrader"] = _nbgrader(f"text-{index}", locked=True)
    notebook["cells"] = cells
    return notebook


def build(course: Path, notebooks: Path = NOTEBOOKS, only: list[str] | None = None,
          points: float = 1.0, hidden_seed: int | None = HIDDEN_SEED) -> list[str]:
    """Write course/source/<NN_name>/<NN_name>.ipynb for each solution notebook; their names."""
    course.mkdir(parents=True, exist_ok=True)
    if not (course / "nbgrader_config.py").exists():
        shutil.copy(HERE / "nbgrader_config.py", course / "nbgrader_config.py")
    paths = sorted((notebooks / "solutions").glob("*.ipynb"))
    if only:
        unknown = set(only) - {p.stem for p in paths}
        if unknown:
            raise CourseError(f"no solution notebook for {', '.join(sorted(unknown))}; the "
                              f"exercises are: {', '.join(p.stem for p in paths)}")
        paths = [p for p in paths if p.stem in only]
    built = []
    for path in paths:
        exercise = notebooks / "exercises" / path.name
        if not exercise.exists():
            raise CourseError(f"{path.name} has no exercise notebook {exercise}")
        notebook = build_assignment(path, exercise, points=points, hidden_seed=hidden_seed)
        target = course / "source" / path.stem / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
        built.append(path.stem)
    return built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python course/build.py",
        description="Write nbgrader source assignments from notebooks/solutions and "
        "notebooks/exercises.")
    parser.add_argument("--course", type=Path, default=HERE,
                        help="the nbgrader course directory (default: course/ beside this script)")
    parser.add_argument("--notebooks", type=Path, default=NOTEBOOKS,
                        help="the folder holding exercises/ and solutions/ (default: notebooks/)")
    parser.add_argument("--points", type=float, default=1.0,
                        help="points of each exercise's check cell (default: 1)")
    parser.add_argument("--no-hidden-tests", action="store_true",
                        help="do not re-check with another seed in a hidden test")
    parser.add_argument("only", nargs="*", metavar="NN_name",
                        help="build only these exercises (default: all)")
    args = parser.parse_args(argv)
    try:
        built = build(args.course, args.notebooks, args.only, args.points,
                      None if args.no_hidden_tests else HIDDEN_SEED)
    except CourseError as exc:
        print(f"build: error: {exc}", file=sys.stderr)
        return 1
    print(f"built {len(built)} assignment(s) in {args.course / 'source'}: {', '.join(built)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
