"""`gpukit selftest`: does gpukit work here, on every backend there is?

`selftest()` runs the curated kernel corpus (`gpukit.selftest.corpus`), the ops, copies, streams,
timing and memory accounting (`gpukit.selftest.checks`) on each available backend, compares every
result with numpy and, where two backends ran, with each other, and returns a `Report` whose
`text()` is a short verdict with the driver, runtime and library versions. Backends that cannot
run here are reported with the reason. Instructors run it on lab machines before a workshop;
`gpukit selftest` prints it and exits 0 only when everything passed.
"""

from __future__ import annotations

import platform
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends import available_backends, get_backend
from ..errors import ArgumentTypeError, ImplicitTransferWarning
from . import checks, corpus

__all__ = ["Outcome", "Report", "selftest"]

TOLERANCE = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-10}


@dataclass
class Outcome:
    """One check on one backend: passed or not, with what went wrong."""

    backend: str
    group: str
    name: str
    ok: bool
    detail: str = ""
    results: dict[str, np.ndarray] = field(default_factory=dict, repr=False)


@dataclass
class Report:
    """Every outcome, the backends that could not run (with why) and the versions."""

    outcomes: list[Outcome]
    unavailable: dict[str, str]
    devices: dict[str, str]
    versions: dict[str, str]
    seconds: float

    @property
    def passed(self) -> bool:
        return bool(self.outcomes) and all(o.ok for o in self.outcomes)

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def text(self) -> str:
        lines = ["gpukit selftest"]
        lines += [f"  {key}: {value}" for key, value in self.versions.items()]
        for name, device in self.devices.items():
            mine = [o for o in self.outcomes if o.backend == name]
            groups = sorted({o.group for o in mine}, key=[o.group for o in mine].index)
            counts = ", ".join(f"{g} {sum(o.ok for o in mine if o.group == g)}/"
                               f"{sum(1 for o in mine if o.group == g)}" for g in groups)
            verdict = "PASS" if all(o.ok for o in mine) else "FAIL"
            lines.append(f"{name:5} {verdict}  {device}: {counts}")
        for name, reason in self.unavailable.items():
            lines.append(f"{name:5} not available: {reason}")
        lines += [f"  FAILED {o.backend} {o.group} {o.name}: {o.detail}" for o in self.failures()]
        verdict = "PASS" if self.passed else "FAIL"
        lines.append(f"verdict: {verdict} ({len(self.outcomes)} checks on "
                     f"{len(self.devices)} backend(s) in {self.seconds:.1f} s)")
        return "\n".join(lines)


def _attempt(outcomes: list[Outcome], backend: str, group: str, name: str, run: Any) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ImplicitTransferWarning)
            results = run()
    except Exception as exc:  # noqa: BLE001 - a self-test reports every failure and goes on
        outcomes.append(Outcome(backend, group, name, False,
                                " ".join(f"{type(exc).__name__}: {exc}".split())[:300]))
        return
    outcomes.append(Outcome(backend, group, name, True, results=results or {}))


QUICK_KERNELS = ("map", "2d map", "dynamic shared memory", "histogram (atomics)")
QUICK_OPS = ("unary", "binary")


def _run_backend(backend: Any, outcomes: list[Outcome], quick: bool) -> None:
    name = backend.name
    shuffles = "numba_simulator" not in backend.capabilities().features
    for case in corpus.build():
        if (case.warp_intrinsics and not shuffles) or (quick and case.name not in QUICK_KERNELS):
            continue  # Numba's CUDA simulator has no warp intrinsics
        _attempt(outcomes, name, "kernels", case.name,
                 lambda case=case: checks.run_case(backend, case))
    for op, check in checks.op_checks(backend, shuffles):
        if not quick or op in QUICK_OPS:
            _attempt(outcomes, name, "ops", op, check)
    for group, check in (("transfers", checks.check_transfers),
                         ("streams", checks.check_streams), ("timing", checks.check_timing),
                         ("memory", checks.check_memory)):
        _attempt(outcomes, name, group, group, lambda check=check: check(backend))


def _compare(outcomes: list[Outcome], first: str, second: str) -> None:
    """The same check's results on two backends must agree (exactly for integers)."""
    by_check = {(o.group, o.name): o for o in outcomes if o.backend == first and o.ok}
    for other in [o for o in outcomes if o.backend == second and o.ok]:
        mine = by_check.get((other.group, other.name))
        if mine is None:
            continue
        for key, value in other.results.items():
            theirs = mine.results.get(key)
            rtol = TOLERANCE.get(value.dtype, 0.0)
            if theirs is None or theirs.shape != value.shape or not (
                    np.array_equal(theirs, value) if rtol == 0
                    else np.allclose(theirs, value, rtol=rtol, atol=rtol)):
                other.ok = False
                other.detail = f"{key} differs between {first} and {second}"


def selftest(backends: Any = None, *, quick: bool = False) -> Report:
    """Run the self-test on `backends` (names; default: every registered backend that can run
    here) and return the Report. `quick` runs four corpus kernels and two ops instead of all
    (compiling every kernel takes a minute or two on a small CPU). Never raises for a failing
    check: it is in the report."""
    start = time.perf_counter()
    if backends is not None and (isinstance(backends, str) or not all(
            isinstance(b, str) for b in backends)):
        raise ArgumentTypeError(f"backends must be a list of backend names, got {backends!r}")
    found = available_backends()
    names = [n for n in (backends or found) if n in ("cpu", "cuda")]
    unavailable = {n: found.get(n) or "not registered" for n in names if found.get(n)}
    outcomes: list[Outcome] = []
    devices, versions = {}, {"gpukit": _version(), "Python": platform.python_version(),
                             "numpy": np.__version__}
    for name in names:
        if name in unavailable:
            continue
        backend = get_backend(name)
        devices[name] = f"{backend.device_name} ({backend.version})"
        if name == "cuda":
            from ..backends.cuda import cuda_versions  # lazy: CUDA only
            versions.update(cuda_versions(backend.simulator))
        _run_backend(backend, outcomes, bool(quick))
    if "cpu" in devices and "cuda" in devices:
        _compare(outcomes, "cpu", "cuda")
    if "cuda" in unavailable:
        from ..backends.cuda import cuda_versions  # lazy: as above
        versions.update({k: v for k, v in cuda_versions().items() if k != "CUDA driver"})
    return Report(outcomes, unavailable, devices, versions, time.perf_counter() - start)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("gpukit")
    except PackageNotFoundError:
        return "unknown"
