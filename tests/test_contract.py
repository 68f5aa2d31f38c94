"""The backend contract (tests/contract.py) on every backend there is: CPUBackend here,
CUDABackend under Numba's CUDA simulator in a subprocess, and on a real GPU where there is one."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from contract import CHECKS
from cudasim_runner import run_checks

from gpukit.backends._cuda_env import cuda_unavailable_reason, simulator_enabled
from gpukit.backends.cpu import CPUBackend

ROOT = Path(__file__).resolve().parents[1]
REASON = cuda_unavailable_reason()
HAS_GPU = REASON is None and not simulator_enabled()


def _run(check, make):
    backend = make()
    kwargs = {"other": make()} if "other" in inspect.signature(check).parameters else {}
    check(backend, **kwargs)


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_cpu_backend(check):
    _run(check, CPUBackend)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason=f"needs an NVIDIA GPU; here: {REASON}")
@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_cuda_backend_on_a_gpu(check):
    from gpukit.backends.cuda import CUDABackend
    _run(check, CUDABackend)


@pytest.fixture(scope="module")
def cudasim_run(tmp_path_factory):
    return run_checks(ROOT / "tests" / "cudasim" / "contract_checks.py",
                      tmp_path_factory.mktemp("cudasim_contract"))


@pytest.mark.cudasim
@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_cuda_backend_under_numba_simulator(cudasim_run, check):
    results, output = cudasim_run
    runs = {n: p for n, p in results.items() if n.split("[")[-1].rstrip("]") == check.__name__}
    if not runs:
        pytest.fail(f"{check.__name__} did not run under the simulator:\n{output}")
    problems = [p for found in runs.values() for p in found]
    assert not problems, "\n".join(problems) + f"\n--- output ---\n{output}"
