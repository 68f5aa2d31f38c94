"""Edge-value semantics of numba-cuda on a GPU, side by side with gpukit's simulator.

The differential run on a GPU (benchmarks/gpu_differential.py) found operations whose results on
a GPU are not those of Numba's CPU target: numba-cuda lowers `min` and `max` of two floats to
libdevice's fmin/fmax, and the GPU's float remainder (`%`, `//`, `divmod`) is NVVM's lowering of
LLVM's `frem`. This probe runs those operations over every pair of edge values (zeros of both
signs, infinities, NaN, subnormals, huge and tiny quotients) in float32 and float64:

    python benchmarks/gpu_semantics.py run --backend cuda --out gpu.npz    # on a GPU
    python benchmarks/gpu_semantics.py run --backend cpu --out sim.npz     # the simulator
    python benchmarks/gpu_semantics.py compare gpu.npz sim.npz             # bit for bit
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from numba import cuda

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpukit

EDGES = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, 7.0, 0.1, -0.1, 1e10, 123456789.123, 1e30,
         -1e30, 1e300, 1e-300, 5e-324, 1e-40, math.inf, -math.inf, math.nan]


def rem(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] % b[i]


def floordiv(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] // b[i]


def divmod_both(a, b, q, r):
    i = cuda.grid(1)
    if i < a.size:
        q[i], r[i] = divmod(a[i], b[i])


def fmod(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = math.fmod(a[i], b[i])


def remainder(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = math.remainder(a[i], b[i])


def min2(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = min(a[i], b[i])


def max2(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = max(a[i], b[i])


def min3(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = min(a[i], b[i], a[i])


def max3(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = max(a[i], b[i], a[i])


def min_mixed(a, b, out):  # float32 with float64
    i = cuda.grid(1)
    if i < a.size:
        out[i] = min(np.float32(a[i]), b[i])


def max_mixed(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = max(np.float32(a[i]), b[i])


def min_int(a, b, out):  # an int64 with a float
    i = cuda.grid(1)
    if i < a.size:
        out[i] = min(i - 200, b[i])


def max_int(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = max(i - 200, b[i])


def modf_frac(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = math.modf(a[i])[0]


def modf_int(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = math.modf(a[i])[1]


def copysign(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = math.copysign(a[i], b[i])


BINARY = [rem, floordiv, fmod, remainder, min2, max2, min3, max3, min_mixed, max_mixed, min_int,
          max_int, modf_frac, modf_int, copysign]


def run(backend_name: str, out: Path) -> None:
    backend = gpukit.get_backend(backend_name)
    results = {}
    for dtype in (np.float32, np.float64):
        with np.errstate(over="ignore"):  # 1e300 is inf in float32, as intended
            a = np.repeat(np.array(EDGES), len(EDGES)).astype(dtype)
            b = np.tile(np.array(EDGES), len(EDGES)).astype(dtype)
        results[f"{np.dtype(dtype).name}/a"], results[f"{np.dtype(dtype).name}/b"] = a, b
        for kernel in [*BINARY, divmod_both]:
            outs = [backend.to_device(np.zeros_like(a))
                    for _ in range(2 if kernel is divmod_both else 1)]
            try:
                backend.launch_kernel(kernel, (a.size + 127) // 128, 128, backend.to_device(a),
                                      backend.to_device(b), *outs)
            except Exception as exc:  # noqa: BLE001 - recorded
                results[f"{np.dtype(dtype).name}/{kernel.__name__}/error"] = np.array(str(exc))
                continue
            for k, o in enumerate(outs):
                results[f"{np.dtype(dtype).name}/{kernel.__name__}/{k}"] = backend.to_host(o)
    np.savez(out, **results)
    print(f"{backend.name}: {len(results)} arrays in {out}")


def _same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (np.isnan(x) & np.isnan(y)) | (x.view(f"u{x.itemsize}") == y.view(f"u{y.itemsize}"))


def compare(gpu_path: Path, sim_path: Path) -> int:
    gpu, sim = np.load(gpu_path), np.load(sim_path)
    differences = 0
    for key in gpu.files:
        if key.endswith(("/a", "/b")):
            continue
        if key not in sim.files:
            print(f"{key}: only on the GPU ({sim_path} has {sorted(sim.files)[:3]}...)")
            differences += 1
            continue
        g, s = gpu[key], sim[key]
        if g.dtype.kind not in "f":
            print(f"{key}: {g} / {s}")
            continue
        dtype = key.split("/")[0]
        a, b = gpu[f"{dtype}/a"], gpu[f"{dtype}/b"]
        bad = np.flatnonzero(~_same(g, s))
        differences += bad.size
        if bad.size:
            shown = ", ".join(f"({a[t]!r}, {b[t]!r}): GPU {g[t]!r} sim {s[t]!r}" for t in bad[:6])
            print(f"{key}: {bad.size} of {g.size} differ: {shown}")
    print(f"{differences} differences")
    return 0 if differences == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    r = sub.add_parser("run")
    r.add_argument("--backend", default="cpu")
    r.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("compare")
    c.add_argument("gpu", type=Path)
    c.add_argument("sim", type=Path)
    args = parser.parse_args(argv)
    if args.step == "run":
        run(args.backend, args.out)
        return 0
    return compare(args.gpu, args.sim)


if __name__ == "__main__":
    raise SystemExit(main())
