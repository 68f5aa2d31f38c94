"""Run one generated case on gpukit's simulator and on the oracle, and compare (`run_case`).

A case is written out as two modules in a directory (the simulator reads kernels' source, which
needs a real file):

- the kernel module: the device functions (`@cuda.jit(device=True)`), `thread` (the kernel's
  body returning its results, which numba-cuda types: its result types choose the output
  arrays' dtypes, so that the kernel stores every result without a conversion) and `kernel`;
- the oracle module: the same functions under `numba.njit(error_model="numpy")` (numba-cuda's
  error model without debug), `thread` taking the thread index `i` as a parameter,
  `cuda.local.array` as `np.empty`, `math.f` as `ORACLE_MATH["f"]` and `round` as `ORACLE_ROUND`
  (see diff_oracle).

Then: numba-cuda types `thread`. If it rejects it, gpukit must reject the kernel with
`KernelTypingError`. Otherwise the oracle's types must equal numba-cuda's (else the oracle is
wrong, not the simulator), and every output element must be bit for bit the oracle's (NaN equal
to any NaN). No tolerance: both compile the same code with Numba's CPU target.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from diff_gen import Program, kind_of_dtype
from diff_oracle import CudaTypingError, cuda_typing, oracle_operators
from diff_program import Case, indent
from numba import typeof
from numba.core import types
from numba.np.numpy_support import as_dtype, from_dtype

import gpukit
from gpukit.backends.base import Backend
from gpukit.errors import KernelTypingError

HEADER = ["import math", "", "import numba", "import numpy as np"]


@dataclass
class Mismatch:
    """One output element that differs from the oracle's."""

    result: int  # which result (output array o<result>)
    thread: int
    expected: Any
    actual: Any
    dtype: str


@dataclass
class Outcome:
    """What running one case found."""

    status: str  # "ok", "rejected" (numba-cuda rejects: so did gpukit), "mismatch", "error"
    source: str
    oracle_source: str
    result_dtypes: list[str] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    error: str = ""  # what went wrong for "error" (or numba-cuda's rejection)
    kind_errors: list[str] = field(default_factory=list)  # the generator's kind model was wrong

    def report(self, case: Case, limit: int = 8) -> str:
        """The kernel, the first mismatches with their threads' inputs, or the error."""
        lines = [f"status: {self.status}", self.source, f"input dtypes: {case.program.dtypes}",
                 f"launch: [{case.grid}, {case.block}]"]
        if self.error:
            lines.append(f"error: {self.error}")
        lines += self.kind_errors
        for m in self.mismatches[:limit]:
            inputs = ", ".join(f"a{k}[{m.thread}]={_show(a[m.thread])}" for k, a in
                               enumerate(case.inputs))
            lines.append(f"r{m.result} ({m.dtype}) thread {m.thread}: oracle {_show(m.expected)}, "
                         f"simulator {_show(m.actual)}   inputs: {inputs}")
        return "\n".join(lines)


def _show(value: Any) -> str:
    """A value as Python writes it (numpy 2's repr says `np.int64(7)`)."""
    item = np.asarray(value).item()
    return repr(item)


def render(program: Program) -> tuple[str, str]:
    """The kernel module's and the oracle module's source."""
    args = [f"a{k}" for k in range(len(program.dtypes))]
    outs = [f"o{k}" for k in range(len(program.results))]
    ret = f"return ({', '.join(name for name, _ in program.results)},)"
    kernel = [*HEADER, "from numba import cuda", ""]
    for dev in program.devices:
        kernel += ["", "@cuda.jit(device=True)",
                   f"def {dev.name}({', '.join(f'p{k}' for k in range(len(dev.params)))}):",
                   *indent(dev.lines)]
    kernel += ["", "", f"def thread({', '.join(args)}):", "    i = cuda.grid(1)",
               *indent(program.body), f"    {ret}", "", "", "@cuda.jit",
               f"def kernel({', '.join(args + outs)}):", "    i = cuda.grid(1)",
               *indent(program.body)]
    kernel += [f"    o{k}[i] = {name}" for k, (name, _) in enumerate(program.results)]
    kernel_text = "\n".join(kernel) + "\n"

    used = sorted(set(re.findall(r"\bmath\.(\w+)\(", kernel_text)))
    oracle = [*HEADER, "from diff_oracle import ORACLE_BINARY, ORACLE_MATH, ORACLE_ROUND", "",
              "cu_round = ORACLE_ROUND"]
    oracle += [f'{name} = ORACLE_BINARY["{name}"]' for name in ("cu_floordiv", "cu_mod",
                                                                "cu_divmod", "cu_min", "cu_max",
                                                                "cu_neg", "cu_abs")]
    oracle += [f'cu_{name} = ORACLE_MATH["{name}"]' for name in used]
    for dev in program.devices:
        oracle += ["", "", '@numba.njit(error_model="numpy")',
                   f"def {dev.name}({', '.join(f'p{k}' for k in range(len(dev.params)))}):",
                   *indent(dev.lines)]
    oracle += ["", "", '@numba.njit(error_model="numpy")',
               f"def thread({', '.join(['i', *args])}):", *indent(program.body), f"    {ret}"]
    oracle_text = "\n".join(oracle) + "\n"
    oracle_text = re.sub(r"\bmath\.(\w+)\(", r"cu_\1(", oracle_text)
    oracle_text = re.sub(r"(?<![\w.])round\(", "cu_round(", oracle_text)
    oracle_text = oracle_text.replace("cuda.local.array(", "np.empty(")
    return kernel_text, oracle_operators(oracle_text)


def load(text: str, directory: Path, prefix: str) -> ModuleType:
    """Import `text` as a module from a file in `directory` (so that its source can be read)."""
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    name = f"{prefix}_{digest}"
    if name in sys.modules:  # the same source again: its functions are compiled already
        return sys.modules[name]
    path = directory / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def same(expected: Any, actual: Any, dtype: np.dtype) -> bool:
    """Bit-for-bit equality, NaN equal to any NaN. An integer is stored into `dtype` as a
    kernel's store converts it: wrapped (a widened int16, `_widened_int16`)."""
    e = np.asarray(expected).astype(dtype) if dtype.kind in "iu" else \
        np.asarray(expected, dtype=dtype)
    a = np.asarray(actual, dtype=dtype)
    if dtype.kind == "f":
        if np.isnan(e) and np.isnan(a):
            return True
        return e.tobytes() == a.tobytes()
    return bool(e == a)


def _kind(t: Any) -> str:
    return kind_of_dtype(str(as_dtype(t)))


def _widened_int16(oracle_text: str, results: list[str]) -> set[int]:
    """The results (by position) that the oracle's thread computes only as `cu_abs(x)` or
    `cu_neg(x)`: numba-cuda types `abs()` of an int16 as an int16, but the GPU holds the value
    widened (32768 for -32768, gpukit/sim/arith.py), as the oracle and the simulator do in an
    int64; both store it into numba-cuda's int16 output alike."""
    thread = next(f for f in ast.walk(ast.parse(oracle_text))
                  if isinstance(f, ast.FunctionDef) and f.name == "thread")
    values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(thread):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name):
            values.setdefault(node.target.id, []).append(ast.Constant(None))  # not a call
    return {k for k, name in enumerate(results) if values.get(name) and all(
        isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
        and v.func.id in ("cu_abs", "cu_neg") for v in values[name])}


def run_case(case: Case, directory: Path, backend: Backend | None = None,
             oracle_hook: Any = None) -> Outcome:
    """Run `case` on the simulator and the oracle (`oracle_hook(values)` may alter the
    oracle's values: the harness's own tests plant wrong ones with it)."""
    program = case.program
    kernel_text, oracle_text = render(program)
    kmod = load(kernel_text, directory, "diffk")
    argtypes = tuple(types.Array(from_dtype(np.dtype(d)), 1, "C") for d in program.dtypes)
    backend = backend or gpukit.get_backend("cpu")
    try:
        typemap, rettype = cuda_typing(kmod.thread, argtypes)
    except CudaTypingError as exc:
        outs = [np.zeros(len(case.inputs[0])) for _ in program.results]
        try:
            backend.launch_kernel(kmod.kernel, case.grid, case.block, *map(backend.to_device,
                                  case.inputs + outs))
        except KernelTypingError:
            return Outcome("rejected", kernel_text, oracle_text, error=str(exc))
        except Exception as other:  # noqa: BLE001 - reported as the case's outcome
            return Outcome("error", kernel_text, oracle_text,
                           error=f"numba-cuda rejects the kernel but gpukit raised "
                                 f"{type(other).__name__}: {other}\nnumba-cuda: {exc}")
        return Outcome("error", kernel_text, oracle_text,
                       error=f"numba-cuda rejects the kernel but gpukit ran it: {exc}")
    rtypes = [types.unliteral(t) for t in rettype.types]
    dtypes = [as_dtype(t) for t in rtypes]
    outcome = Outcome("ok", kernel_text, oracle_text, result_dtypes=[str(d) for d in dtypes])
    # an integer the generator took for one (and so converted without a range check) must not
    # be a float: the conversion could be undefined behaviour. (The other way round is fine:
    # numba types `a if False else b` as b, whatever a is.)
    outcome.kind_errors = [f"r{k} {name}: generated as kind {kind!r}, numba-cuda types it {t}"
                           for k, ((name, kind), t) in enumerate(zip(program.results, rtypes))
                           if kind in "ib" and _kind(t) == "f"]
    assert str(types.unliteral(typemap["i"])) == "int64", typemap["i"]  # the oracle's `i`
    omod = load(oracle_text, directory, "diffo")
    threads = len(case.inputs[0])
    try:
        expected = [omod.thread(t, *case.inputs) for t in range(threads)]
    except Exception as exc:  # noqa: BLE001 - the generator wrote code that raises on a CPU
        outcome.status = "error"
        outcome.error = f"the oracle raised {type(exc).__name__}: {exc}"
        return outcome
    # the signature for these inputs: a program generated again with other input dtypes reuses
    # the module (and its dispatcher, compiled for those too)
    args = (types.int64, *(typeof(a) for a in case.inputs))
    (sig,) = [s for s in omod.thread.nopython_signatures if s.args == args]
    cpu_types = [types.unliteral(t) for t in sig.return_type]
    widened = _widened_int16(oracle_text, [name for name, _ in program.results])
    if any(c != r and not (k in widened and (c, r) == (types.int64, types.int16))
           for k, (c, r) in enumerate(zip(cpu_types, rtypes))):
        outcome.status = "error"
        outcome.error = (f"the oracle's result types {cpu_types} are not numba-cuda's {rtypes}:"
                         " the oracle needs a stand-in (diff_oracle.ORACLE_MATH)")
        return outcome
    if oracle_hook is not None:
        expected = oracle_hook(expected)
    outs = [backend.to_device(np.zeros(threads, dtype=d)) for d in dtypes]
    # gpukit reports negative indices by design (its "wraparound" check, README);
    # with that check off it must wrap them as Numba does
    options = {"checks": {"wraparound": False}} if "negative_index" in program.features else {}
    try:
        backend.launch_kernel(kmod.kernel, case.grid, case.block,
                              *map(backend.to_device, case.inputs), *outs, **options)
    except Exception as exc:  # noqa: BLE001 - a crash or false alarm is the case's outcome
        outcome.status = "error"
        outcome.error = f"the simulator raised {type(exc).__name__}: {exc}"
        return outcome
    actual = [backend.to_host(o) for o in outs]
    for k, dtype in enumerate(dtypes):
        for t in range(threads):
            if not same(expected[t][k], actual[k][t], dtype):
                outcome.mismatches.append(Mismatch(k, t, expected[t][k], actual[k][t][()],
                                                   str(dtype)))
    if outcome.mismatches:
        outcome.status = "mismatch"
    return outcome
