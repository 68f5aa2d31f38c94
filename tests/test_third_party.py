"""Code nobody here wrote, unchanged, under the simulation mode (tests/third_party/README.md):
numba-cuda's documentation examples under `python -m gpukit.simulate`, and stumpy's GPU tests
under `pytest --gpukit-simulate`. Each runs in a subprocess, as a user would run it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THIRD_PARTY = ROOT / "tests" / "third_party"
if str(ROOT) not in sys.path:  # benchmarks/ is run from a checkout, not installed
    sys.path.insert(0, str(ROOT))

from benchmarks.third_party import pytest_counts, run_stumpy

pytestmark = pytest.mark.slow

# the numba-cuda documentation examples that run on the simulator, with what each shows
DOC_EXAMPLES = {
    "test_vecadd.py": "to_device, device_array_like, forall and kernel[grid, block]",
    "test_matmul.py": "naive and shared-memory tiled matmul with syncthreads",
    "test_montecarlo.py": "numba.cuda.random in a grid-stride kernel, then numba's cuda.reduce",
    "test_reduction.py": "a shared-memory reduction with syncthreads",
    "test_cpu_gpu_compat.py": "one device function called from the CPU and from a kernel",
    "test_ufunc.py": "math functions of float arrays in a kernel",
    "test_laplace.py": "a heat-equation solver whose blocks meet at grid.sync() every step",
    "test_globals.py": "globals frozen at compile time, and a device array captured by pointer",
}
# (test_random.py runs too, but its 2-million-thread, 450-million-element launch takes minutes,
# beyond a test's budget)
# the examples whose kernels break a rule of the CUDA Programming Guide that today's GPUs do not
# enforce: each stops with the check's error. test_sessionize.py calls grid.sync() inside
# `if is_sess_boundary:`, so threads that are not at a session boundary finish without reaching
# it ("__syncthreads() is allowed in conditional code but only if the conditional evaluates
# identically across the entire thread block", and grid.sync() begins with a block barrier);
# it works on Volta and later only because a finished thread no longer takes part in barriers
DOC_EXAMPLES_REPORTED = {
    "test_sessionize.py": "gpukit.errors.BarrierError: divergent barrier: 13 of the 28 live "
                          "threads of block (0, 0, 0) reached grid.sync() at line 146, but "
                          "thread (1, 0, 0) did not (it ran to the end of the kernel without "
                          "reaching it)",
}


def _run_example(name: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, str]:
    """Run one example as a user would: a unittest module as a script under
    `python -m gpukit.simulate`, a pytest-style one under `pytest --gpukit-simulate`. Returns the
    process and its output."""
    script = tmp_path / name
    shutil.copy(THIRD_PARTY / "numba_cuda_docs" / name, script)
    env = {**os.environ, "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS": "0"}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if "unittest.main()" in script.read_text():
        command = ["-m", "gpukit.simulate", str(script)]
    else:
        command = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--gpukit-simulate",
                   str(script)]
    done = subprocess.run([sys.executable, *command], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    return done, done.stdout + done.stderr


@pytest.mark.parametrize("name", sorted(DOC_EXAMPLES))
def test_numba_cuda_doc_examples_run_unchanged(name, tmp_path):
    done, output = _run_example(name, tmp_path)
    assert done.returncode == 0, output
    last = output.rstrip().splitlines()[-1]
    assert last == "OK" or pytest_counts(last).keys() == {"passed"}, output  # all ran, none skipped
    assert "skipped" not in output


@pytest.mark.parametrize("name", sorted(DOC_EXAMPLES_REPORTED))
def test_numba_cuda_doc_examples_that_break_cuda_rules_are_reported(name, tmp_path):
    done, output = _run_example(name, tmp_path)
    assert done.returncode == 1, output
    assert DOC_EXAMPLES_REPORTED[name] in output


def test_pytest_counts_reads_the_closing_line():
    assert pytest_counts("...\n2 failed, 5 passed, 1 skipped in 3.20s\n") == {
        "failed": 2, "passed": 5, "skipped": 1}
    assert pytest_counts("=== 3 passed, 1 error in 0.5s ===") == {"passed": 3, "error": 1}
    assert pytest_counts("no summary") == {}


def test_stumpy_gpu_tests_pass_under_pytest_gpukit_simulate():
    """stumpy's GPU tests, unchanged, with every check but `wraparound` (stumpy relies on Numba
    wrapping one negative index: benchmarks/third_party.py says where)."""
    files = tuple(sorted(p.name for p in (THIRD_PARTY / "stumpy").glob("test_gpu_*.py")))
    assert len(files) == 8
    run = run_stumpy("gpukit", files, timeout_s=1200)
    assert not run.timed_out, run.tail
    assert run.counts.get("failed", 0) == run.counts.get("error", 0) == 0, run.tail
    assert run.passed == run.total >= 134, run.tail


def test_stumpy_relies_on_a_wrapped_negative_index_and_the_check_says_where():
    run = run_stumpy("gpukit", ("test_gpu_mpdist.py",), timeout_s=600,
                     extra=("--gpukit-checks=all", "-x", "--tb=line"))
    assert run.counts.get("failed", 0) == 1, run.tail
    assert "'QT_in[i - 1]' indexes global array QT_in" in run.tail
    assert "a computed index that goes negative" in run.tail
