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
import operator
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

# -- conversions of floats to integers: NaN, infinities and values out of the target's range ----
CONVERT_EDGES = EDGES + [2147483647.5, -2147483648.5, 2147483648.0, -2147483649.0, 4294967295.5,
                         4294967296.0, 9.3e18, -9.3e18, 1.8e19, 1.9e19, 255.5, 256.0, -0.5, -1.0,
                         -1.5, 65535.9, 65536.0, 32767.5, -32768.9, 127.9, 128.0, -129.0]
INTEGER_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _converter(name: str):
    """A kernel converting each float of `a` to the integer type `name` (np.<name>(x))."""
    namespace = {"cuda": cuda, "np": np}
    exec(f"def to_{name}(a, out):\n"  # noqa: S102 - one kernel per integer type
         "    i = cuda.grid(1)\n"
         "    if i < a.size:\n"
         f"        out[i] = np.{name}(a[i])\n", namespace)
    return namespace[f"to_{name}"]


def int_builtin(a, out):  # int(x): int64
    i = cuda.grid(1)
    if i < a.size:
        out[i] = int(a[i])


def floor_int(a, out):  # math.floor of a float is an int64 in Numba
    i = cuda.grid(1)
    if i < a.size:
        out[i] = math.floor(a[i])


def ceil_int(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = math.ceil(a[i])


def round_int(a, out):  # round(x) with one argument: an int64
    i = cuda.grid(1)
    if i < a.size:
        out[i] = round(a[i])


def store_int32(a, out):  # a float stored into an int32 array: the implicit conversion
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i]


# (kernel, output dtype): every float input of CONVERT_EDGES, in float32 and float64
CONVERSIONS = [(_converter(name), name) for name in INTEGER_TYPES] + [
    (int_builtin, "int64"), (floor_int, "int64"), (ceil_int, "int64"), (round_int, "int64"),
    (store_int32, "int32")]

# -- shifts by counts at and past the operand's width, and negative ones -------------------------
SHIFT_VALUES = [1, -8, 5, 0x7F, -1, 123456789]
SHIFT_COUNTS = [-1, 0, 1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 200]


def shift_left(x, s, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] << s[i]


def shift_right(x, s, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] >> s[i]


# -- integer division by zero without debug=True (the thread's exception is dropped) ----------
def int_floordiv(x, s, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] // s[i]


def int_mod(x, s, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] % s[i]


SENTINEL = 77  # integer outputs start at this value: a thread that stops early leaves it


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
    for dtype in (np.float32, np.float64):
        a = np.array(CONVERT_EDGES, dtype=np.float64)
        with np.errstate(over="ignore"):
            a = a.astype(dtype)
        key = f"convert/{np.dtype(dtype).name}"
        results[f"{key}/a"] = a
        for kernel, to in CONVERSIONS:
            _launch(backend, results, f"{key}/{kernel.__name__}", kernel, a,
                    np.full(a.size, SENTINEL, dtype=to))
    for dtype in ("int32", "int64", "uint32", "uint64"):
        x = np.repeat(np.array(SHIFT_VALUES), len(SHIFT_COUNTS)).astype(dtype)
        counts = np.tile(np.array(SHIFT_COUNTS), len(SHIFT_VALUES)).astype(dtype)
        key = f"int/{dtype}"
        results[f"{key}/a"], results[f"{key}/b"] = x, counts
        for kernel in (shift_left, shift_right, int_floordiv, int_mod):
            out_dtype = _result_dtype(backend, kernel, x, counts)
            _launch(backend, results, f"{key}/{kernel.__name__}", kernel, x, counts,
                    np.full(x.size, SENTINEL, dtype=out_dtype))
    np.savez(out, **results)
    print(f"{backend.name}: {len(results)} arrays in {out}")


def _launch(backend, results: dict, key: str, kernel, *arrays: np.ndarray) -> None:
    """Launch `kernel` on the arrays (the last one its output) and record the output."""
    ins = [backend.to_device(v) for v in arrays]
    try:
        backend.launch_kernel(kernel, (arrays[0].size + 127) // 128, 128, *ins)
    except Exception as exc:  # noqa: BLE001 - recorded
        results[f"{key}/error"] = np.array(str(exc))
        return
    results[f"{key}/0"] = backend.to_host(ins[-1])


def _result_dtype(backend, kernel, x: np.ndarray, counts: np.ndarray) -> np.dtype:
    """The dtype Numba gives `x[i] op s[i]` (int64 for int32 operands, float64 for a uint64
    with an int64, ...), as the kernel's output: nothing is converted on the way out."""
    from numba import njit

    op = {"shift_left": operator.lshift, "shift_right": operator.rshift,
          "int_floordiv": operator.floordiv, "int_mod": operator.mod}[kernel.__name__]
    return np.asarray(njit(lambda a, b: op(a, b))(x[2], counts[2])).dtype


def _same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "f":
        return x == y
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
        if key.endswith("/error") or g.dtype != s.dtype:
            print(f"{key}: GPU {g.dtype} {g if g.ndim == 0 else ''} / sim {s.dtype}")
            differences += 1
            continue
        family = key.rsplit("/", 2)[0]
        a = gpu[f"{family}/a"]
        b = gpu[f"{family}/b"] if f"{family}/b" in gpu.files else None
        bad = np.flatnonzero(~_same(g, s))
        differences += bad.size
        if bad.size:
            shown = ", ".join(f"({a[t]!r}{'' if b is None else f', {b[t]!r}'}): GPU {g[t]!r} "
                              f"sim {s[t]!r}" for t in bad[:6])
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
