"""The simulator runs the corpus of correct Numba CUDA kernels (tests/sim_corpus.py) and matches
numpy under every schedule; Numba's own CUDA simulator, in a subprocess, agrees where it can run
the kernel, and fails or differs exactly where the corpus says it cannot."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sim_corpus import CASES, Spec, rng_for

import gpukit.inspect as gi
from gpukit.backends.cpu import CPUBackend

CORPUS = Path(__file__).with_name("sim_corpus.py")
SCHEDULES = [("ordered", None), ("shuffle", 1), ("shuffle", 7)]

# What issue 3 asks the corpus to cover; each must be a tag of some case.
REQUIRED_TAGS = {
    "map", "zip", "guard", "2d map", "broadcast", "multi-block", "grid-stride loop", "3d grid",
    "shared-memory reverse", "pooling", "dot product", "1d convolution with halo",
    "prefix scan (Hillis-Steele, double buffered)", "prefix scan (Blelloch, exclusive)",
    "axis sum (axis 0)", "naive matmul", "tiled matmul", "transpose with padding (32x33 tile)",
    "histogram with atomics", "compare-and-swap (first writer wins)",
    "warp reduction with shfl_down_sync", "ballot_sync and popc", "dynamic shared memory",
    "local arrays", "float64", "int32", "uint8", "int64 beyond 32 bits", "Fortran-order inputs",
    "two launches sharing device arrays", "syncthreads_count/and/or", "atomic inc/exch",
    "atomic max/min (float32, int64)", "math functions (exp, sqrt, sin) in float32",
    "while loops with break and continue", "early return", "ternary expressions",
    "and/or short circuits guarding indices", "factory-style kernel",
    "device functions (nested, early returns, writing arrays)",
}


def run_on_simulator(spec: Spec, schedule: str, seed: int | None) -> tuple[dict, CPUBackend]:
    """Copy the inputs to a CPUBackend, launch, copy the outputs back.

    The ordered schedule launches with numba's syntax, kernel[grid, block, stream, dyn_smem];
    the shuffled one through launch_kernel with per-launch options.
    """
    backend = CPUBackend()
    device = {name: backend.allocate(a.shape, a.dtype) if name in spec.uninitialized
              else backend.to_device(a) for name, a in spec.arrays.items()}
    for run in spec.runs:
        args = [device[a] if isinstance(a, str) else a for a in run.args]
        if schedule == "ordered":
            kernel = backend.compile_kernel(run.kernel)
            kernel[run.grid, run.block, 0, run.dynamic_shared_bytes](*args)
        else:
            backend.launch_kernel(run.kernel, run.grid, run.block, *args, schedule=schedule,
                                  seed=seed, dynamic_shared_bytes=run.dynamic_shared_bytes)
    return {name: backend.to_host(device[name]) for name in spec.expected}, backend


def assert_close(spec: Spec, actual: np.ndarray, expected: np.ndarray, what: str,
                 slack: float = 1.0) -> None:
    """Equal within the spec's tolerance (exact when it is 0), after its canonical form."""
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if spec.canonical is not None:
        actual, expected = spec.canonical(actual), spec.canonical(expected)
    scale = max(1.0, float(np.abs(expected).max())) if expected.size else 1.0
    rtol = spec.rtol * slack
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale, err_msg=what)


def assert_matches(spec: Spec, results: dict[str, np.ndarray], what: str) -> None:
    for name, expected in spec.expected.items():
        assert_close(spec, results[name], expected, f"{what}: array {name!r}")


def test_the_corpus_is_large_and_covers_what_issue_3_asks():
    assert len(CASES) >= 30
    tags = {tag for c in CASES.values() for tag in c.tags}
    assert not REQUIRED_TAGS - tags, f"not covered: {sorted(REQUIRED_TAGS - tags)}"


@pytest.mark.parametrize(("schedule", "seed"), SCHEDULES,
                         ids=[f"{s}-{seed}" if seed else s for s, seed in SCHEDULES])
@pytest.mark.parametrize("name", list(CASES))
def test_corpus_kernel_matches_numpy(name, schedule, seed):
    spec = CASES[name].build(rng_for(name))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # device arrays only: no implicit transfers, no warnings
        results, backend = run_on_simulator(spec, schedule, seed)
    assert_matches(spec, results, f"{name} ({schedule}, seed {seed})")
    assert [r.schedule for r in backend.launches] == [schedule] * len(spec.runs)
    assert all(all(r.checks.values()) for r in backend.launches)  # every check was on
    dyn = [r.dynamic_shared_bytes for r in spec.runs]
    assert [r.dynamic_shared_bytes for r in backend.launches] == dyn


@pytest.mark.skipif(gi.unavailable_reason() is not None,
                    reason=f"numba-cuda's compiler is missing: {gi.unavailable_reason()}")
def test_every_corpus_kernel_compiles_with_numba_cuda():
    """The kernels the simulator runs are, unchanged, valid numba-cuda kernels (PTX for sm_75)."""
    for name, case in CASES.items():
        spec = case.build(rng_for(name))
        for run in spec.runs:
            args = [spec.arrays[a] if isinstance(a, str) else a for a in run.args]
            assert ".entry" in gi.ptx(run.kernel, args, "T4"), name


@pytest.mark.cudasim
def test_numba_cuda_simulator_agrees_on_the_corpus(tmp_path):
    """One subprocess runs the whole corpus with numba's cuda.jit under NUMBA_ENABLE_CUDASIM=1."""
    out = tmp_path / "numba_results.npz"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run([sys.executable, "-W", "ignore::RuntimeWarning", str(CORPUS), str(out)],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"the corpus failed under Numba's simulator:\n{proc.stderr}"
    data = np.load(out)
    assert bool(data["simulator_enabled"]), "the subprocess did not run Numba's CUDA simulator"
    skipped = {name: c.cudasim_skip for name, c in CASES.items() if c.cudasim_skip}
    assert len(skipped) <= 5 and all("Numba's CUDA simulator" in r for r in skipped.values())
    for name, case in CASES.items():
        spec = case.build(rng_for(name))
        if f"{name}/error" in data.files:
            assert name in skipped, f"{name} failed under Numba's simulator: {data[name + '/error']}"
            continue
        numba_results = {array: data[f"{name}/{array}"] for array in spec.expected}
        if name in skipped:  # it ran: the skip holds only if Numba's simulator got it wrong
            with pytest.raises(AssertionError):
                assert_matches(spec, numba_results, name)
            continue
        assert_matches(spec, numba_results, f"{name} under Numba's simulator")
        ours, _ = run_on_simulator(spec, "ordered", None)
        for array, value in numba_results.items():  # and the two simulators agree
            assert_close(spec, ours[array], value, f"{name}: gpukit vs Numba's simulator, "
                         f"array {array!r}", slack=2.0)
