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
from numba import cuda, njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpukit

EDGES = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, 7.0, 0.1, -0.1, 1e10, 123456789.123, 1e30,
         -1e30, 1e300, 1e-300, 5e-324, 1e-40, math.inf, -math.inf, math.nan]


# (name, the operation on `x` and `y`, elements a[i] and b[i]): one kernel computes them all,
# per float type
BINARY = [("rem", "x % y"), ("floordiv", "x // y"), ("fmod", "math.fmod(x, y)"),
          ("remainder", "math.remainder(x, y)"), ("min2", "min(x, y)"), ("max2", "max(x, y)"),
          ("min3", "min(x, y, x)"), ("max3", "max(x, y, x)"),
          ("min_mixed", "min(np.float32(x), y)"), ("max_mixed", "max(np.float32(x), y)"),
          ("min_int", "min(i - 200, y)"), ("max_int", "max(i - 200, y)"),  # int64 with a float
          ("modf_frac", "math.modf(x)[0]"), ("modf_int", "math.modf(x)[1]"),
          ("copysign", "math.copysign(x, y)")]
BINARY_OUTPUTS = [f"{n}/0" for n, _ in BINARY] + ["divmod_both/0", "divmod_both/1"]


# -- conversions of floats to integers: NaN, infinities and values out of the target's range ----
CONVERT_EDGES = EDGES + [2147483647.5, -2147483648.5, 2147483648.0, -2147483649.0, 4294967295.5,
                         4294967296.0, 9.3e18, -9.3e18, 1.8e19, 1.9e19, 255.5, 256.0, -0.5, -1.0,
                         -1.5, 65535.9, 65536.0, 32767.5, -32768.9, 127.9, 128.0, -129.0]
INTEGER_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _kernel(name: str, params: list[str], lines: list[str]):
    """A kernel that runs `lines` (with `i` its thread's element) for every element of params[0]."""
    namespace = {"cuda": cuda, "np": np, "math": math}
    body = "".join(f"        {line}\n" for line in lines)
    exec(f"def {name}({', '.join(params)}):\n"  # noqa: S102 - our own text, one kernel per family
         f"    i = cuda.grid(1)\n    if i < {params[0]}.size:\n{body}", namespace)
    return namespace[name]


# (name, the conversion of `x`, the result's dtype): one kernel makes them all, per float type
CONVERSIONS = [(f"to_{t}", f"np.{t}(x)", t) for t in INTEGER_TYPES] + [
    ("int_builtin", "int(x)", "int64"), ("floor_int", "math.floor(x)", "int64"),  # Numba: int64
    ("ceil_int", "math.ceil(x)", "int64"), ("round_int", "round(x)", "int64"),
    ("store_int32", "x", "int32")]  # a float stored into an int32 array: the implicit conversion
binary_all = _kernel(
    "binary_all", ["a", "b", *(f"o{k}" for k in range(len(BINARY_OUTPUTS)))],
    ["x = a[i]", "y = b[i]", *(f"o{k}[i] = {e}" for k, (_, e) in enumerate(BINARY)),
     f"o{len(BINARY)}[i], o{len(BINARY) + 1}[i] = divmod(x, y)"])
convert_all = _kernel("convert_all", ["a", *(f"o_{n}" for n, _, _ in CONVERSIONS)],
                      ["x = a[i]", *(f"o_{n}[i] = {e}" for n, e, _ in CONVERSIONS)])

# -- shifts by counts at and past the operand's width (and negative ones); integer division by
# zero without debug=True. One kernel, per integer type of both operands --------------------
SHIFT_VALUES = [1, -8, 5, 0x7F, -1, 123456789]
SHIFT_COUNTS = [-1, 0, 1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 200]
INT_OPS = [("shift_left", operator.lshift, "<<"), ("shift_right", operator.rshift, ">>"),
           ("int_floordiv", operator.floordiv, "//"), ("int_mod", operator.mod, "%")]
int_ops = _kernel("int_ops", ["x", "s", *(f"o_{n}" for n, _, _ in INT_OPS)],
                  [f"o_{n}[i] = x[i] {symbol} s[i]" for n, _, symbol in INT_OPS])

# -- unary operators on small integers (Numba negates before it widens: `-x` of an int16 is an
# int64 computed in 16 bits) ----------------------------------------------------------------
UNARY_TYPES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")
UNARY_OPS = [("neg", operator.neg, "-x[i]"), ("pos", operator.pos, "+x[i]"),
             ("invert", operator.invert, "~x[i]"), ("abs", abs, "abs(x[i])")]
unary_ops = _kernel("unary_ops", ["x", *(f"o_{n}" for n, _, _ in UNARY_OPS)],
                    [f"o_{n}[i] = {e}" for n, _, e in UNARY_OPS])

SENTINEL = 77  # integer outputs start at this value: a thread that stops early leaves it


def run(backend_name: str, out: Path) -> None:
    backend = gpukit.get_backend(backend_name)
    results = {}
    for dtype in (np.float32, np.float64):
        with np.errstate(over="ignore"):  # 1e300 is inf in float32, as intended
            a = np.repeat(np.array(EDGES), len(EDGES)).astype(dtype)
            b = np.tile(np.array(EDGES), len(EDGES)).astype(dtype)
        key = np.dtype(dtype).name
        results[f"{key}/a"], results[f"{key}/b"] = a, b
        outs = [np.zeros_like(a) for _ in BINARY_OUTPUTS]
        _launch(backend, results, [f"{key}/{n}" for n in BINARY_OUTPUTS], binary_all, [a, b],
                outs)
    for dtype in (np.float32, np.float64):
        a = np.array(CONVERT_EDGES, dtype=np.float64)
        with np.errstate(over="ignore"):
            a = a.astype(dtype)
        key = f"convert/{np.dtype(dtype).name}"
        results[f"{key}/a"] = a
        _launch(backend, results, [f"{key}/{n}/0" for n, _, _ in CONVERSIONS], convert_all, [a],
                [np.full(a.size, SENTINEL, dtype=to) for _, _, to in CONVERSIONS])
    for dtype in ("int32", "int64", "uint32", "uint64"):
        x = np.repeat(np.array(SHIFT_VALUES), len(SHIFT_COUNTS)).astype(dtype)
        counts = np.tile(np.array(SHIFT_COUNTS), len(SHIFT_VALUES)).astype(dtype)
        key = f"int/{dtype}"
        results[f"{key}/a"], results[f"{key}/b"] = x, counts
        outs = [np.full(x.size, SENTINEL, dtype=_result_dtype(op, x[2], counts[2]))
                for _, op, _ in INT_OPS]
        _launch(backend, results, [f"{key}/{n}/0" for n, _, _ in INT_OPS], int_ops, [x, counts],
                outs)
    for dtype in UNARY_TYPES:
        info = np.iinfo(dtype)
        x = np.array([info.min, info.min + 1, -1 if info.min else 2, 0, 1, info.max - 1,
                      info.max], dtype=dtype)
        key = f"unary/{dtype}"
        results[f"{key}/a"] = x
        outs = [np.full(x.size, SENTINEL, dtype=_result_dtype(op, x[0])) for _, op, _ in UNARY_OPS]
        _launch(backend, results, [f"{key}/{n}/0" for n, _, _ in UNARY_OPS], unary_ops, [x],
                outs)
    np.savez(out, **results)
    print(f"{backend.name}: {len(results)} arrays in {out}")


def _launch(backend, results: dict, keys: list[str], kernel, ins: list[np.ndarray],
            outs: list[np.ndarray]) -> None:
    """Launch `kernel` on the inputs and outputs and record each output under its key. The
    simulator's division-by-zero check stays off: what is measured is the value a GPU gives."""
    device = [backend.to_device(v) for v in [*ins, *outs]]
    options = {"checks": {"division_by_zero": False}} if backend.name == "cpu" else {}
    try:
        backend.launch_kernel(kernel, (ins[0].size + 127) // 128, 128, *device, **options)
    except Exception as exc:  # noqa: BLE001 - recorded
        for key in keys:
            results[f"{key.rsplit('/', 1)[0]}/error"] = np.array(str(exc))
        return
    for key, out in zip(keys, device[len(ins):]):
        results[key] = backend.to_host(out)


def _result_dtype(op, *values) -> np.dtype:
    """The dtype Numba gives `op(*values)` (int64 for `x << s` of int32s, for `-x` of an int16,
    ...), as the kernel's output: nothing is converted on the way out."""
    f = njit(lambda a: op(a)) if len(values) == 1 else njit(lambda a, b: op(a, b))
    return np.asarray(f(*values)).dtype


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
