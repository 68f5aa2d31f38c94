"""The notebooks' structure: exercises hold skeletons, not solutions; every exercise ends with a
check(...) cell; exercise and solution notebooks are twins; notebooks import only gpukit's public
API, numpy, numba and math, and are committed executed, without errors; nbval's markers are cell
tags, not comments; every lesson's "Next" link names the next lesson, and every link to a notebook
leads to one.

Executing them is nbval's job (pytest --nbval notebooks/); these tests only read the files.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from gpukit.exercises import EXERCISES

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
EXERCISE_DIR, SOLUTION_DIR = NOTEBOOKS / "exercises", NOTEBOOKS / "solutions"
SKELETON_MARK, SOLUTION_MARK = "# YOUR CODE HERE", "# SOLUTION"
CHECK_CELL = re.compile(r'^result = check\((\w+), "(\w+)"\)$')
ALLOWED_IMPORTS = {"gpukit", "numpy", "numba", "math", "matplotlib"}  # matplotlib: plots
# Lines a skeleton may share with a solution without giving anything away.
TRIVIAL = {"pass", "else:", "return", "cuda.syncthreads()"}

EXERCISE_FILES = sorted(p.name for p in EXERCISE_DIR.glob("*.ipynb"))
ALL_NOTEBOOKS = sorted(NOTEBOOKS.rglob("*.ipynb"))


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def _code(path: Path) -> list[str]:
    """The code cells as Python: IPython magics (`%load_ext gpukit`) become `pass`."""
    return ["\n".join("pass" if line.lstrip().startswith(("%", "!")) else line
                      for line in _source(c).splitlines())
            for c in _cells(path) if c["cell_type"] == "code"]


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _outputs(cell: dict) -> str:
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))


def _statements(code: str) -> set[str]:
    """Code lines without comments and blanks, stripped."""
    lines = (line.split("#", 1)[0].strip() for line in code.splitlines())
    return {line for line in lines if line}


def test_twelve_exercises_with_solution_twins() -> None:
    assert len(EXERCISE_FILES) >= 12
    assert EXERCISE_FILES == sorted(p.name for p in SOLUTION_DIR.glob("*.ipynb"))
    names = [re.fullmatch(r"\d\d_(\w+)\.ipynb", f).group(1) for f in EXERCISE_FILES]
    assert sorted(names) == sorted(EXERCISES)


@pytest.mark.parametrize("name", EXERCISE_FILES)
def test_exercise_and_solution_end_with_a_check_cell(name: str) -> None:
    exercise = re.fullmatch(r"\d\d_(\w+)\.ipynb", name).group(1)
    for path in (EXERCISE_DIR / name, SOLUTION_DIR / name):
        last = _cells(path)[-1]
        assert last["cell_type"] == "code", f"{path} must end with its check(...) cell"
        match = CHECK_CELL.match(_source(last).strip())
        assert match and match.group(2) == exercise, _source(last)
        assert match.group(1) in "".join(_code(path)[:-1]), "check() gets the kernel defined above"


@pytest.mark.parametrize("name", EXERCISE_FILES)
def test_exercise_holds_a_skeleton_and_no_solution(name: str) -> None:
    exercise_code, solution_code = _code(EXERCISE_DIR / name), _code(SOLUTION_DIR / name)
    skeletons = [i for i, c in enumerate(exercise_code) if c.startswith(SKELETON_MARK)]
    solutions = [i for i, c in enumerate(solution_code) if c.startswith(SOLUTION_MARK)]
    assert len(skeletons) == 1 and skeletons == solutions, "one marked kernel cell, same place"
    k = skeletons[0]
    # The twins differ only in the kernel cell.
    assert exercise_code[:k] + exercise_code[k + 1:] == solution_code[:k] + solution_code[k + 1:]
    assert SOLUTION_MARK not in "".join(exercise_code)
    answer = _statements(solution_code[k]) - _statements(exercise_code[k]) - TRIVIAL
    assert answer, "the solution must add code to the skeleton"
    everything = set().union(*(_statements(c) for c in exercise_code))
    leaked = answer & everything
    assert not leaked, f"solution lines in the exercise notebook: {sorted(leaked)}"


@pytest.mark.parametrize("name", EXERCISE_FILES)
def test_stored_verdicts_fail_the_skeleton_and_pass_the_solution(name: str) -> None:
    exercise = _outputs(_cells(EXERCISE_DIR / name)[-1])
    solution = _outputs(_cells(SOLUTION_DIR / name)[-1])
    assert "FAILED" in exercise and "PASSED" not in exercise, exercise
    assert "PASSED all" in solution, solution


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOKS)))
def test_notebook_is_executed_without_errors(path: Path) -> None:
    for cell in _cells(path):
        if cell["cell_type"] != "code":
            continue
        assert cell.get("execution_count"), f"unexecuted cell: {_source(cell)[:60]!r}"
        if "raises-exception" in _tags(cell):
            continue  # nbval expects it to raise
        kinds = {o["output_type"] for o in cell.get("outputs", [])}
        assert "error" not in kinds, f"cell raised: {_source(cell)[:60]!r}"
        if "nbval-ignore-output" in _tags(cell):
            continue  # may show a warning on purpose: its text names a varying path
        streams = {o.get("name") for o in cell.get("outputs", []) if o["output_type"] == "stream"}
        assert "stderr" not in streams, f"cell wrote to stderr: {_source(cell)[:60]!r}"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOKS)))
def test_notebook_imports_only_the_public_api(path: Path) -> None:
    for code in _code(path):
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            for module in modules:
                assert module.split(".")[0] in ALLOWED_IMPORTS, module
                assert not any(part.startswith("_") for part in module.split(".")), module
                assert not module.startswith("gpukit.sim"), "the simulator's internals"


# -- every lesson runs on either backend -----------------------------------------------------------
# Errors only the simulator raises: a GPU does not check these (it faults, or computes garbage).
SIMULATOR_ERRORS = {"OutOfBoundsError", "RaceConditionError", "BarrierError",
                    "UninitializedMemoryError", "KernelArithmeticError", "KernelTimeoutError",
                    "HostMemoryBudgetError", "TraceTooLargeError"}


def _contract_members() -> set[str]:
    from gpukit.backends.base import Backend
    return {name for name in dir(Backend) if not name.startswith("_")}


def _auto_backends(tree: ast.AST) -> set[str]:
    """Names bound to gpukit.get_backend() or get_backend("auto"): CUDA on a GPU machine."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            args = [a.value for a in node.value.args if isinstance(a, ast.Constant)]
            if called == "get_backend" and args in ([], ["auto"]):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _uses(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOKS)))
def test_lessons_use_only_the_contract_on_the_auto_backend(path: Path) -> None:
    """What a notebook asks of `gpukit.get_backend()` exists on both backends, and it expects
    simulator-only errors (and traces) only from `get_backend("cpu")`."""
    tree = ast.parse("\n".join(_code(path)))
    auto = _auto_backends(tree) or {"backend"}
    members, problems = _contract_members(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in auto and node.attr not in members:
            problems.append(f"line {node.lineno}: {node.value.id}.{node.attr} is not in the "
                            "Backend contract")
        if isinstance(node, ast.Try) and any(_uses(stmt, auto) for stmt in node.body):
            caught = {n.id for h in node.handlers for n in ast.walk(h.type or ast.Name("_"))
                      if isinstance(n, ast.Name)}
            problems += [f"line {node.lineno}: expects {name} from the auto backend"
                         for name in sorted(caught & SIMULATOR_ERRORS)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and _uses(node.func.value, auto) \
                and any(k.arg == "trace" for k in node.keywords):
            problems.append(f"line {node.lineno}: traces a launch on the auto backend")
    assert problems == []


# -- nbval markers are tags; links lead somewhere ---------------------------------------------------
NBVAL_COMMENT = re.compile(r"#\s*NBVAL_[A-Z_]+")
NBVAL_TAGS = {"nbval-ignore-output", "nbval-check-output", "nbval-skip", "raises-exception",
              "nbval-raises-exception"}
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
NEXT_LINK = re.compile(r"Next: \[\*\*(?P<text>[^*]+)\*\*\]\((?P<target>[^)]+)\)")
LINK = re.compile(r"\]\((?P<target>[^)#\s]+\.ipynb)(#[^)]*)?\)")


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOKS)))
def test_nbval_markers_are_cell_tags_not_comments(path: Path) -> None:
    """Learners do not see `# NBVAL_IGNORE_OUTPUT`: the marker is the cell tag
    `nbval-ignore-output` (and `raises-exception`, `nbval-skip`), which nbval honours."""
    for cell in _cells(path):
        if cell["cell_type"] == "code":
            assert not NBVAL_COMMENT.search(_source(cell)), _source(cell)[:80]
        unknown = {t for t in _tags(cell) if t.startswith("nbval") or "exception" in t}
        assert unknown <= NBVAL_TAGS, unknown


def test_every_next_link_names_the_next_lesson() -> None:
    assert [p.name[:2] for p in LESSONS] == [f"{k:02}" for k in range(len(LESSONS))]
    following = [*LESSONS[1:], EXERCISE_DIR / EXERCISE_FILES[0]]
    for lesson, nxt in zip(LESSONS, following):
        links = [m for c in _cells(lesson) if c["cell_type"] == "markdown"
                 for m in NEXT_LINK.finditer(_source(c))]
        assert len(links) == 1, f"{lesson.name}: one 'Next: [**...**](...)' link, not {links}"
        text, target = links[0].group("text"), links[0].group("target")
        assert (lesson.parent / target).resolve() == nxt, f"{lesson.name}: Next -> {target}"
        title = _source(_cells(nxt)[0]).splitlines()[0].lstrip("# ")
        number = nxt.name[:2]
        assert text.startswith(f"{number} · ") or text == f"exercises/{nxt.stem}", text
        if nxt.parent == NOTEBOOKS:
            assert title.startswith(text), f"{lesson.name}: {text!r} is not {title!r}"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOKS)))
def test_links_to_notebooks_lead_to_one(path: Path) -> None:
    for cell in _cells(path):
        if cell["cell_type"] == "markdown":
            for match in LINK.finditer(_source(cell)):
                assert (path.parent / match.group("target")).is_file(), match.group(0)


# -- the learner install (`pip install -e ".[lab]"`) has everything the lessons use ----------------
# gpukit modules that need an extra's wheels to do what the lessons do with them.
NEEDS_EXTRA = {"gpukit.inspect": "inspect", "gpukit.occupancy.resources": "inspect",
               "gpukit.occupancy.ptxas": "inspect", "gpukit.ptxas": "inspect"}


def _requirement_name(requirement: str) -> str:
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)
    return re.sub(r"[-_.]+", "-", name).lower()


def _learner_install() -> tuple[set[str], dict[str, set[str]]]:
    """(the distributions core + lab name, extra -> the distributions it names)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((NOTEBOOKS.parent / "pyproject.toml").read_text())["project"]
    extras = {name: {_requirement_name(r) for r in reqs}
              for name, reqs in project["optional-dependencies"].items()}
    return {_requirement_name(r) for r in project["dependencies"]} | extras["lab"], extras


def _imported_modules(path: Path) -> set[str]:
    modules = set()
    for code in _code(path):
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                modules |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules.add(node.module)
    return modules


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lessons_import_only_what_the_learner_install_installs(path: Path) -> None:
    import importlib.metadata
    import sys
    installed, extras = _learner_install()
    providers = importlib.metadata.packages_distributions()
    for module in sorted(_imported_modules(path)):
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top == "gpukit":
            pass
        else:
            names = {_requirement_name(d) for d in providers.get(top, [])}
            assert names & installed, f"{module} comes from {names or '?'}, not in core + lab"
        for prefix, extra in NEEDS_EXTRA.items():
            if module == prefix or module.startswith(prefix + "."):
                missing = extras[extra] - installed
                assert not missing, f"{module} needs the {extra} extra: lab lacks {missing}"
    if "%load_ext" in "".join(_source(c) for c in _cells(path)):
        assert "jupyterlab" in installed   # IPython comes with it
