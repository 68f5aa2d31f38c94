"""The seed operations (`gpukit.ops`) at teaching sizes on the simulator.

For each op: the simulation's wall time (best of a few launches, after a warm-up that compiles)
and the modeled GPU time of the same launches on the simulated T4 (the roofline of
`gpukit.timing`: launch overhead plus the larger of counted bytes over bandwidth and declared flops
over peak). The two answer different questions: what the simulator costs on this CPU, and roughly
what a GPU would take. `python -m benchmarks.simulator` adds this table to BENCHMARKS.md;
`python -m benchmarks.ops` prints it alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import gpukit
from gpukit import ops
from gpukit.timing.model import model_launch

HEADERS = ["op", "shape", "launches", "simulator wall s", "modeled GPU ms (T4)", "GFLOP",
           "max abs error vs numpy"]


def _cases(be: Any, rng: np.random.Generator) -> list[tuple[str, str, Callable[[], Any],
                                                             Callable[[], np.ndarray]]]:
    def dev(*shape: int) -> tuple[Any, np.ndarray]:
        host = rng.standard_normal(shape).astype(np.float32)
        return be.to_device(host), host

    a, ha = dev(64, 64)
    b, hb = dev(64, 64)
    ba, hba = dev(8, 32, 32)
    bb, hbb = dev(8, 32, 32)
    x, hx = dev(1, 3, 32, 32)
    w, hw = dev(8, 3, 3, 3)
    q, hq = dev(1, 2, 64, 32)
    k, hk = dev(1, 2, 64, 32)
    v, hv = dev(1, 2, 64, 32)
    r, hr = dev(65536)
    m, hm = dev(256, 256)
    ref = ops.references
    return [
        ("gemm naive", "64x64x64", lambda: ops.gemm(a, b, variant="naive"),
         lambda: ref.gemm(ha, hb)),
        ("gemm tiled", "64x64x64", lambda: ops.gemm(a, b, variant="tiled"),
         lambda: ref.gemm(ha, hb)),
        ("batched_gemm tiled", "8 x 32x32x32", lambda: ops.batched_gemm(ba, bb),
         lambda: ref.batched_gemm(hba, hbb)),
        ("conv2d_forward", "(1,3,32,32) * (8,3,3,3)", lambda: ops.conv2d_forward(x, w),
         lambda: ref.conv2d_forward(hx, hw)),
        ("attention", "(1,2,64,32)", lambda: ops.attention(q, k, v),
         lambda: ref.attention(hq, hk, hv)),
        ("attention causal", "(1,2,64,32)", lambda: ops.attention(q, k, v, causal=True),
         lambda: ref.attention(hq, hk, hv, causal=True)),
        ("reduce sum", "65,536", lambda: ops.reduce("sum", r, None),
         lambda: ref.reduce("sum", hr, None)),
        ("reduce max axis 0", "256x256", lambda: ops.reduce("max", m, 0),
         lambda: ref.reduce("max", hm, 0)),
        ("unary sigmoid", "65,536", lambda: ops.unary("sigmoid", r),
         lambda: ref.unary("sigmoid", hr)),
        ("binary add", "65,536", lambda: ops.binary("add", r, r),
         lambda: ref.binary("add", hr, hr)),
    ]


def rows(repeats: int = 3, log: Callable[[str], None] = lambda msg: None) -> list[list[str]]:
    """One table row per op (wall time, modeled time, flops, error against numpy)."""
    be = gpukit.get_backend("cpu", device="T4")
    rows = []
    for name, shape, run, reference in _cases(be, np.random.default_rng(0)):
        log(f"ops: {name} {shape}")
        out = run()  # warm-up: transforms the kernels
        error = float(np.max(np.abs(np.asarray(be.to_host(out), np.float64) - reference())))
        best, records = float("inf"), []
        for _ in range(repeats):
            first = len(be.launches)
            start = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - start)
            records = be.launches[first:]
        modeled_ms = sum(model_launch(be.profile, rec).ms for rec in records)
        flops = sum(rec.extra.get("flops", 0) for rec in records)
        rows.append([name, shape, str(len(records)), f"{best:.3g}", f"{modeled_ms:.3g}",
                     f"{flops / 1e9:.3g}", f"{error:.1e}"])
    return rows


if __name__ == "__main__":
    from .report import text_table
    print(text_table(HEADERS, rows(log=print)))
