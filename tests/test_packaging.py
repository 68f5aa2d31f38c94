"""Packaging: pyproject.toml and environment.yml agree, and numba-cuda's CUDA libraries come from
the installed wheels rather than from a system-wide CUDA toolkit (which CI machines have)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


# -- pyproject.toml and environment.yml name the same packages -----------------------------------
def _load_toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 "
                                                      "needs tomli")
    return tomllib.loads(path.read_text())


def _load_environment(path: Path) -> dict:
    try:
        import yaml
    except ModuleNotFoundError:
        return _parse_simple_yaml(path.read_text())
    return yaml.safe_load(path.read_text())


def _parse_simple_yaml(text: str) -> dict:
    """Just enough YAML for environment.yml: `key: value`, `key:` lists, and a nested `- pip:`."""
    result: dict = {}
    current: list = []
    pip: list | None = None
    pip_indent = 0
    for raw in text.splitlines():
        line = raw.split(" #")[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        item = line.strip()
        if indent == 0:
            key, _, value = item.partition(":")
            pip = None
            if value.strip():
                result[key] = value.strip()
            else:
                current = result[key] = []
        elif item == "- pip:":
            pip, pip_indent = [], indent
            current.append({"pip": pip})
        elif item.startswith("- "):
            in_pip = pip is not None and indent > pip_indent
            (pip if in_pip else current).append(item[2:].strip())
    return result


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement ("NumPy>=1.2" -> "numpy")."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)
    return re.sub(r"[-_.]+", "-", name).lower()


def _specifiers(requirements: list[str]) -> dict[str, str]:
    """Name -> version constraint, e.g. {"numpy": ">=1.24"}, ignoring extras and markers."""
    result = {}
    for requirement in requirements:
        rest = re.sub(r"^\s*[A-Za-z0-9._-]+(\[[^\]]*\])?", "", requirement.split(";")[0])
        result[_name(requirement)] = rest.replace(" ", "")
    return result


def _pyproject_requirements() -> list[str]:
    project = _load_toml(ROOT / "pyproject.toml")["project"]
    extras = project["optional-dependencies"]
    # what `pytest` needs in that environment: nbval (notebooks) and pytest-xdist (addopts' -n)
    runner = [r for r in extras["test"] if _name(r) in ("nbval", "pytest-xdist")]
    return [*project["dependencies"], *extras["cuda"], *extras["lab"], *runner]


def _environment_requirements() -> tuple[list[str], list[str]]:
    """(conda packages, pip packages) of environment.yml, without python, pip and gpukit itself."""
    conda, pip = [], []
    for entry in _load_environment(ROOT / "environment.yml")["dependencies"]:
        if isinstance(entry, dict):
            pip.extend(entry["pip"])
        else:
            conda.append(entry)
    conda = [r for r in conda if _name(r) not in ("python", "pip")]
    return conda, pip


def _is_self(requirement: str) -> bool:
    return requirement.replace(" ", "") in ("-e.", ".", "-e.[lab]", ".[lab]")


def test_environment_installs_gpukit_itself():
    _, pip = _environment_requirements()
    assert any(_is_self(r) for r in pip), f"environment.yml's pip section lacks '-e .': {pip}"


def test_pyproject_and_environment_name_the_same_packages():
    conda, pip = _environment_requirements()
    in_environment = {_name(r) for r in conda + pip if not _is_self(r)}
    in_pyproject = {_name(r) for r in _pyproject_requirements()}
    assert in_environment == in_pyproject, (
        f"only in environment.yml: {sorted(in_environment - in_pyproject)}; "
        f"only in pyproject.toml: {sorted(in_pyproject - in_environment)}")


def test_pyproject_and_environment_ask_for_the_same_versions():
    conda, pip = _environment_requirements()
    in_environment = _specifiers([r for r in conda + pip if not _is_self(r)])
    in_pyproject = _specifiers(_pyproject_requirements())
    differing = {name: (in_pyproject[name], spec) for name, spec in in_environment.items()
                 if name in in_pyproject and in_pyproject[name] != spec}
    assert not differing, f"(pyproject.toml, environment.yml) constraints differ: {differing}"


def test_simple_yaml_parser_reads_environment_yml():
    """The fallback parser (for machines without PyYAML) reads the file as PyYAML does."""
    yaml = pytest.importorskip("yaml", reason="compares the fallback parser with PyYAML")
    text = (ROOT / "environment.yml").read_text()
    assert _parse_simple_yaml(text) == yaml.safe_load(text)


# -- the CUDA libraries numba-cuda loads come from the wheels -------------------------------------
# Runs in a fresh interpreter: imports numba.cuda (which loads the CUDA runtime) and, when the
# `inspect` extra's NVVM and NVRTC wheels are installed, compiles a kernel to PTX (which loads
# them), then reports every libcudart/libnvvm/libnvrtc mapped into the process.
PROBE = r"""
import importlib.metadata, json, re, sys, sysconfig
report = {"prefix": sys.prefix, "errors": [],
          "site_dirs": sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")})}
def installed(name):
    try:
        importlib.metadata.version(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False
report["expected"] = ["cudart"] + [lib for lib, wheel in (("nvvm", "nvidia-cuda-nvcc-cu12"),
                                   ("nvrtc", "nvidia-cuda-nvrtc-cu12")) if installed(wheel)]
try:
    from numba import cuda
    if "nvvm" in report["expected"]:
        def add_one(a):
            i = cuda.grid(1)
            if i < a.size:
                a[i] += 1
        cuda.compile_ptx(add_one, "void(float32[:])", cc=(7, 5))
except Exception as exc:
    report["errors"].append(f"{type(exc).__name__}: {exc}")
with open("/proc/self/maps") as maps:
    paths = {line.split()[-1] for line in maps if "/" in line}
report["libraries"] = sorted(p for p in paths
                             if re.search(r"/lib(cudart|nvvm|nvrtc)[.-]", p))
print(json.dumps(report))
"""


def _probe_cuda_libraries(prelude: str = "") -> dict:
    proc = subprocess.run([sys.executable, "-c", prelude + PROBE], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"the probe failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _library_problems(report: dict) -> list[str]:
    """What is wrong with where the CUDA libraries came from; empty when all is well."""
    problems = [f"loading failed: {error}" for error in report["errors"]]
    site_dirs = [d.rstrip("/") + "/" for d in report["site_dirs"]]
    prefix = report["prefix"].rstrip("/") + "/"
    for path in report["libraries"]:
        if path.startswith("/usr/local/cuda"):
            problems.append(f"{path} is the system CUDA toolkit's, not a wheel's")
        elif not any(path.startswith(d) and d.startswith(prefix) for d in site_dirs):
            problems.append(f"{path} is not under site-packages of {report['prefix']}")
    for lib in report["expected"]:
        if not any(re.search(rf"/lib{lib}[.-]", path) for path in report["libraries"]):
            problems.append(f"lib{lib} was not loaded at all")
    return problems


needs_proc_maps = pytest.mark.skipif(not Path("/proc/self/maps").exists(),
                                     reason="reads /proc/self/maps, which only Linux has")


@needs_proc_maps
def test_cuda_libraries_come_from_the_installed_wheels():
    report = _probe_cuda_libraries()
    problems = _library_problems(report)
    assert not problems, "\n".join(["CUDA libraries not from the wheels:", *problems,
                                    json.dumps(report, indent=1)])
    assert any("libcudart" in path for path in report["libraries"])


@needs_proc_maps
def test_the_library_check_notices_libraries_from_elsewhere():
    """With the wheels hidden (site-packages not searched), the same check must complain: either
    the system toolkit's libraries are loaded or nothing is. This keeps the test above honest."""
    hide_wheels = "import site\nsite.getsitepackages = lambda *args, **kwargs: []\n"
    assert _library_problems(_probe_cuda_libraries(hide_wheels)) != []


def test_library_problems_reads_paths():
    site = "/env/lib/python3.11/site-packages/"
    report = {"prefix": "/env", "site_dirs": [site], "errors": [], "expected": ["cudart", "nvvm"],
              "libraries": [site + "nvidia/cuda_runtime/lib/libcudart.so.12",
                            "/usr/local/cuda-13.0/lib/libnvvm.so.4"]}
    assert _library_problems(report) == [
        "/usr/local/cuda-13.0/lib/libnvvm.so.4 is the system CUDA toolkit's, not a wheel's"]
    report["libraries"] = ["/opt/lib/libcudart.so.12"]
    assert _library_problems(report) == [
        "/opt/lib/libcudart.so.12 is not under site-packages of /env",
        "libnvvm was not loaded at all"]



def test_import_gpukit_needs_only_numpy():
    """DESIGN.md section 2: numba, CuPy, matplotlib and ipywidgets load where they are used."""
    code = ("import sys, gpukit; heavy = {'numba', 'cupy', 'matplotlib', 'ipywidgets'}; "
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


# -- CI runs what the README says ------------------------------------------------------------------
def test_ci_runs_the_readmes_test_command():
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"^# Set up, lint and run the tests.*\n(.+)$", readme, re.MULTILINE)
    assert command is not None
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command.group(1) in ci_lines
    assert "ruff check ." in command.group(1).split("&&")[2]  # lint after install, before tests
