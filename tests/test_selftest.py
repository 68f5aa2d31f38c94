"""`gpukit selftest` and `gpukit.selftest.selftest`: on this machine the simulator runs it and the
CUDA backend is reported with the reason it cannot run; a failing or disagreeing check is
reported; the corpus's numpy results are right. Under Numba's CUDA simulator the CUDA backend
runs it too (tests/cudasim/cuda_backend_checks.py)."""

from __future__ import annotations

import numpy as np
import pytest

from gpukit import cli
from gpukit.backends._cuda_env import cuda_unavailable_reason
from gpukit.errors import ArgumentTypeError
from gpukit.selftest import Outcome, Report, _compare, corpus, selftest

REASON = cuda_unavailable_reason()


@pytest.fixture(scope="module")
def report() -> Report:
    return selftest(quick=True)


def test_quick_selftest_passes_on_the_simulator(report):
    assert report.passed, report.text()
    groups = {o.group for o in report.outcomes if o.backend == "cpu"}
    assert groups == {"kernels", "ops", "transfers", "streams", "timing", "memory"}
    assert [o.name for o in report.outcomes if o.group == "kernels"] == [
        "map", "2d map", "dynamic shared memory", "histogram (atomics)"]


@pytest.mark.skipif(REASON is None, reason="here CUDA is usable")
def test_cuda_is_reported_unavailable_with_the_reason(report):
    assert report.unavailable == {"cuda": REASON}
    text = report.text()
    assert f"cuda  not available: {REASON}" in text.splitlines()
    assert text.splitlines()[-1].startswith("verdict: PASS (")
    for key in ("gpukit", "numpy", "numba-cuda", "CUDA runtime (cudart)", "NVRTC"):
        assert any(line.startswith(f"  {key}: ") for line in text.splitlines()), key
    assert "cpu   PASS  simulated T4 (0.1.0): kernels 4/4, ops 2/2, transfers 1/1, streams " \
           "1/1, timing 1/1, memory 1/1" in text.splitlines()


def test_the_command_prints_the_verdict_and_exits_with_it(report, capsys):
    assert cli.main(["selftest", "--quick", "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gpukit selftest\n") and "verdict: PASS" in out
    assert cli.main(["selftest", "--backend", "gpu"]) == 2


def test_failures_and_disagreements_are_reported():
    same = np.arange(4.0, dtype=np.float32)
    outcomes = [Outcome("cpu", "ops", "gemm", True, results={"c": same}),
                Outcome("cuda", "ops", "gemm", True, results={"c": same + 1}),
                Outcome("cpu", "kernels", "map", True, results={"out": np.arange(3)}),
                Outcome("cuda", "kernels", "map", True, results={"out": np.arange(3)}),
                Outcome("cuda", "memory", "memory", False, "free did not give the memory back")]
    _compare(outcomes, "cpu", "cuda")
    assert [(o.backend, o.name, o.ok) for o in outcomes] == [
        ("cpu", "gemm", True), ("cuda", "gemm", False), ("cpu", "map", True),
        ("cuda", "map", True), ("cuda", "memory", False)]
    report = Report(outcomes, {}, {"cpu": "simulated T4", "cuda": "Tesla T4"}, {}, 1.0)
    lines = report.text().splitlines()
    assert "cuda  FAIL  Tesla T4: ops 0/1, kernels 1/1, memory 0/1" in lines
    assert "  FAILED cuda ops gemm: c differs between cpu and cuda" in lines
    assert lines[-1] == "verdict: FAIL (5 checks on 2 backend(s) in 1.0 s)"
    with pytest.raises(ArgumentTypeError, match="backends must be a list of backend names"):
        selftest("cpu")


def test_the_corpus_references_are_numpys():
    cases = {case.name: case for case in corpus.build()}
    assert len(cases) == 11 and cases["warp shuffle sums"].warp_intrinsics
    hist = cases["histogram (atomics)"]
    assert hist.expected["hist"].sum() == hist.arrays["data"].size
