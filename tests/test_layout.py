"""The package's layout: every module imports, no import cycles, old import paths still work,
no module borrows another's private names, facts and docstrings stay where they belong.

The import graph is built from the AST of each module's top-level imports (those under
`if TYPE_CHECKING:` included). Imports inside functions are not edges; outside the simulator they
must say why they are lazy (`# lazy: ...` on the line or the line above).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import gpukit

ROOT = Path(gpukit.__file__).parent
SIM = "gpukit.sim"  # the simulator is being rewritten as a leaf package; its own checks come then


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(module: str, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".")
    if MODULES[module].name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(module: str) -> list[tuple[str, bool, int, str]]:
    """(imported gpukit module, inside a function, line, imported name) for each import."""
    found = []

    def visit(nodes: list[ast.stmt], in_function: bool) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(node.body, True)
                continue
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                    and node.test.id == "TYPE_CHECKING":
                continue  # for type checkers only: never imported at run time
            if isinstance(node, ast.Import):
                found.extend((a.name, in_function, node.lineno, a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, node.level, node.module)
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    found.append((full if full in MODULES else target, in_function, node.lineno,
                                  alias.name))
            for field in ("body", "orelse", "finalbody", "handlers"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    visit(children, in_function)

    visit(ast.parse(MODULES[module].read_text()).body, False)
    return [entry for entry in found if entry[0].split(".")[0] == "gpukit"]


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, lazy, _, _ in _imports(m) if not lazy and t in MODULES and t != m}
            for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module):
    importlib.import_module(module)


def test_no_import_cycles_between_gpukit_modules():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_lazy_imports_say_why():
    undocumented = []
    for module, path in MODULES.items():
        if module.startswith(SIM):
            continue
        lines = path.read_text().splitlines()
        for target, lazy, lineno, _ in _imports(module):
            if lazy and not any("# lazy:" in lines[i] for i in (lineno - 2, lineno - 1)):
                undocumented.append(f"{module}:{lineno} imports {target}")
    assert undocumented == []


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_imports_another_modules_private_names():
    borrowed = []
    for module, path in MODULES.items():
        if module.startswith(SIM):
            continue
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for target, _, lineno, name in _imports(module):
            if _private(name) and not target.endswith(f".{name}"):
                borrowed.append(f"{module}:{lineno} imports {name} from {target}")
            private_module = any(_private(part) for part in target.split("."))
            if private_module and target.rpartition(".")[0] != package:
                borrowed.append(f"{module}:{lineno} imports the private module {target}")
    assert borrowed == []


# -- the old import paths ------------------------------------------------------------------------
@pytest.mark.parametrize(("old", "new"), [
    ("gpukit.inspect", "gpukit.occupancy.resources"),
    ("gpukit.ptxas", "gpukit.occupancy.ptxas"),
    ("gpukit.occupancy_curves", "gpukit.occupancy.curves"),
    ("gpukit.transfers", "gpukit.timing.transfers"),
    ("gpukit.timing_plots", "gpukit.timing.plots"),
])
def test_old_module_paths_re_export_the_same_objects(old, new):
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    assert old_module.__all__ and set(old_module.__all__) == set(new_module.__all__)
    for name in old_module.__all__:
        assert getattr(old_module, name) is getattr(new_module, name), name


@pytest.mark.parametrize(("module", "names"), [
    ("gpukit.occupancy", ["occupancy", "best_block_size", "calculator_curves", "Curve",
                          "Occupancy", "OccupancyInputError", "OccupancyTypeError", "FACTORS",
                          "occupancy_vs_block_size", "occupancy_vs_registers",
                          "occupancy_vs_shared_memory", "resolve_device"]),
    ("gpukit.timing", ["KINDS", "BandwidthRow", "KernelModel", "LaunchLogEntry", "TimelineEvent",
                       "Timer", "Timing", "bandwidth_sweep", "launch_log", "model_kernel",
                       "plot_bandwidth", "plot_timeline", "time_kernel", "timer"]),
    ("gpukit.backends.cpu", ["CPUBackend", "modeled_copy_ms"]),
    ("gpukit.backends.cuda", ["CUDABackend", "SIMULATOR_ONLY_OPTIONS",
                              "cuda_unavailable_reason"]),
])
def test_public_names_keep_their_paths(module, names):
    imported = importlib.import_module(module)
    assert [n for n in names if not hasattr(imported, n)] == []


def test_one_launch_record_type_for_both_backends():
    records = [(module, name) for module, path in MODULES.items() if not module.startswith(SIM)
               for name in re.findall(r"^class (\w*Launch(?:Record)?)\b", path.read_text(),
                                      re.MULTILINE)]
    assert records == [("gpukit.launches", "LaunchRecord")]


# -- where things live ---------------------------------------------------------------------------
def test_docstrings_point_only_inside_the_repository():
    outside = []
    for module, path in MODULES.items():
        for match in re.finditer(r"\.\./|(?<!static )shared/|reference/|gpu-facts",
                                 path.read_text()):
            outside.append(f"{module}: {match.group(0)}")
    assert outside == []


FACTS = re.compile(r"48 \* 1024|49152|48 \* KiB|\b0\.80\b|\b0\.45\b|WARP\w*\s*=\s*32\b|"
                   r"(SECTOR|BANK)\w*\s*=\s*(32|4)\b|PCIE_LATENCY_US\s*=")


def test_device_facts_are_written_only_in_devices():
    # the simulator's intrinsics and warps keep theirs until the new engine takes them as values
    exempt = {"gpukit.devices", "gpukit.sim.intrinsics", "gpukit.sim.warps"}
    found = [f"{module}:{n}: {line.strip()}" for module, path in MODULES.items()
             if module not in exempt
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if FACTS.search(line.split("#")[0])]
    assert found == []


def test_modules_stay_small():
    big = {module: n for module, path in MODULES.items()
           if not module.startswith(SIM) and (n := len(path.read_text().splitlines())) > 420}
    assert big == {}
