"""benchmarks/gpu_differential.py's verdicts (no GPU: the GPU's results are made up here)."""

from __future__ import annotations

import pickle

import numpy as np

from benchmarks import gpu_differential as gd


def _case(module: str, outs: list[np.ndarray], uses_math: bool) -> dict:
    return {"module": module, "grid": 1, "block": 2, "inputs": [np.zeros(2)],
            "dtypes": [str(o.dtype) for o in outs], "simulator": outs, "uses_math": uses_math,
            "features": []}


def test_each_kernel_gets_the_verdict_its_differences_earn(tmp_path, capsys):
    sim = [np.array([1.0, np.nan]), np.array([3, 4])]
    off_by_a_bit = np.nextafter(sim[0], 2.0)
    kept = [_case("same", sim, False), _case("fused", sim, False),
            _case("libdevice", sim, True), _case("bug", sim, False), _case("broken", sim, False),
            _case("far", sim, True)]
    gpu = {0: {True: [np.array([1.0, -np.nan]), sim[1]], False: sim},  # NaN equals any NaN
           1: {True: [off_by_a_bit, sim[1]], False: sim},
           2: {True: [off_by_a_bit, sim[1]], False: [off_by_a_bit, sim[1]]},
           3: {True: [sim[0], np.array([3, 5])], False: [sim[0], np.array([3, 5])]},
           4: {True: "CudaAPIError: out of memory", False: "CudaAPIError: out of memory"},
           5: {True: [np.array([-7.3e-12, np.nan]), sim[1]],  # a math kernel, far off
               False: [np.array([-7.3e-12, np.nan]), sim[1]]}}
    (tmp_path / "cases.pkl").write_bytes(pickle.dumps(kept))
    (tmp_path / "gpu_results.pkl").write_bytes(pickle.dumps(
        {"device": "made up", "cc": (9, 0), "results": gpu}))
    summary = gd.compare(tmp_path, tmp_path)
    assert summary["verdicts"] == {
        "equal bit for bit": 1, "equal without FMA contraction": 1,
        "differs: calls math functions (libdevice)": 1, "differs: unexplained": 2,
        "failed on the GPU": 1}
    out = capsys.readouterr().out
    assert "kernel 3 (bug.py)\no1 thread 1: simulator 4, GPU 5; a0[1]=0.0" in out
    assert "kernel 4 (broken.py)\nGPU: CudaAPIError: out of memory" in out
    assert "kernel 5 (far.py)\no0 thread 0: simulator 1.0, GPU -7.3e-12" in out


def test_bits_decide_and_nan_equals_nan():
    assert gd._equal(np.array([np.nan, 0.0]), np.array([-np.nan, 0.0]))
    assert not gd._equal(np.array([0.0]), np.array([-0.0]))
