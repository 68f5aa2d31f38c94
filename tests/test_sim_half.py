"""float16 in simulated kernels: numba-cuda's types, and values a GPU computes, bit for bit
(gpukit.sim.half). numpy's float16 is the reference: it rounds every conversion and every
+ - * / to nearest even, as a GPU's half instructions do."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numba import cuda
from script_run import run_script

from gpukit.backends.cpu import CPUBackend
from gpukit.sim.half import supported

pytestmark = pytest.mark.skipif(not supported(), reason="this CPU has no half-precision "
                                "conversions (x86 F16C): gpukit refuses float16 here")


@pytest.fixture(scope="module")
def be() -> CPUBackend:
    return CPUBackend()


def run(be: CPUBackend, kernel, n: int, *arrays: np.ndarray) -> list[np.ndarray]:
    devs = [be.to_device(a) for a in arrays]
    be.launch_kernel(kernel, (n + 63) // 64, 64, *devs)
    return [be.to_host(d) for d in devs]


def same(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal bit for bit, any NaN equal to any NaN."""
    nan = np.isnan(want)
    return bool((np.isnan(got) == nan).all() and
                (got[~nan].view(np.uint16 if got.dtype == np.float16 else np.uint64)
                 == want[~nan].view(np.uint16 if got.dtype == np.float16 else np.uint64)).all())


def halves(n: int, seed: int) -> np.ndarray:
    """Every kind of half: random bit patterns (normal, subnormal, zero, inf, NaN)."""
    return np.random.default_rng(seed).integers(0, 1 << 16, n, dtype=np.uint16).view(np.float16)


def to_half(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i]  # float64 -> float16


EDGES = [65504.0, 65519.99, 65520.0, -65520.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26,
         2.0 ** -25 + 2.0 ** -60, 1 + 2.0 ** -11, 1 + 2.0 ** -11 + 2.0 ** -40, 1 + 3 * 2.0 ** -11,
         0.1, -0.0, 1e300, -1e-300, math.inf, -math.inf, math.nan]


def test_float64_to_float16_rounds_once_to_nearest_even_at_every_edge(be):
    x = np.array(EDGES)
    (_, out) = run(be, to_half, x.size, x, np.zeros(x.size, np.float16))
    with np.errstate(over="ignore"):
        assert same(out, x.astype(np.float16))  # a double rounding through float32: 2 wrong


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, 64, elements=st.floats(width=64)))
def test_float64_to_float16_matches_numpy(be, x):
    (_, out) = run(be, to_half, x.size, x, np.zeros(x.size, np.float16))
    with np.errstate(over="ignore"):
        assert same(out, x.astype(np.float16))


def arithmetic(a, b, add, sub, mul, div, neg, absolute, lt, eq):
    i = cuda.grid(1)
    if i < a.size:
        add[i] = a[i] + b[i]
        sub[i] = a[i] - b[i]
        mul[i] = a[i] * b[i]
        div[i] = a[i] / b[i]
        neg[i] = -a[i]
        absolute[i] = abs(a[i])
        lt[i] = a[i] < b[i]
        eq[i] = a[i] == b[i]


def test_half_arithmetic_is_half_and_rounds_as_numpy_does(be):
    a, b = halves(4096, 1), halves(4096, 2)
    outs = [np.zeros(a.size, np.float16) for _ in range(6)] + [np.zeros(a.size, bool)] * 2
    with np.errstate(all="ignore"):
        want = [a + b, a - b, a * b, a / b, -a, abs(a), a < b, a == b]
    got = run(be, arithmetic, a.size, a, b, *outs)[2:]
    for g, w in zip(got[:6], want[:6]):
        assert same(g, w)
    assert (got[6] == want[6]).all() and (got[7] == want[7]).all()


def mixed(a, f, i8, out):
    i = cuda.grid(1)
    if i < a.size:
        out[0, i] = a[i] * f[i]  # half * float32: float32 (numba-cuda's rule)
        out[1, i] = a[i] + 1  # half + int64: float64
        out[2, i] = i8[i] + a[i]  # int8 converts safely to half: half
        h = float(a[i])  # numba-cuda: float() of a half stays half
        out[3, i] = h * h
        acc = a[i]
        acc += a[i] * a[i]  # in place, half
        out[4, i] = acc


def test_mixed_types_follow_numba_cudas_rules(be):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(256) * 50).astype(np.float16)
    f = rng.standard_normal(256).astype(np.float32)
    i8 = rng.integers(-128, 128, 256, dtype=np.int8)
    (_, _, _, out) = run(be, mixed, a.size, a, f, i8, np.zeros((5, 256)))
    assert same(out[0], (a.astype(np.float32) * f).astype(np.float64))
    assert same(out[1], a.astype(np.float64) + 1)
    assert same(out[2], (i8.astype(np.float16) + a).astype(np.float64))
    assert same(out[3], (a * a).astype(np.float64))  # rounded to half: not a float64 square
    assert same(out[4], (a + a * a).astype(np.float64))


def with_math(a, out, tan):
    i = cuda.grid(1)
    if i < a.size:
        out[0, i] = math.sqrt(a[i])
        out[1, i] = math.floor(a[i])  # numba-cuda: a half, not an int
        out[2, i] = math.sin(a[i])
        tan[i] = math.tan(a[i])  # no half case in numba-cuda: float32


def test_math_on_half_is_half_where_numba_cuda_types_it_so(be):
    a = halves(1024, 4)
    (_, out, tan) = run(be, with_math, a.size, a, np.zeros((3, a.size), np.float16),
                        np.zeros(a.size, np.float32))
    f = a.astype(np.float32)
    with np.errstate(all="ignore"):
        assert same(out[0], np.sqrt(f).astype(np.float16))
        assert same(out[1], np.floor(a))
        assert same(out[2], np.sin(f).astype(np.float16))
        assert np.allclose(tan, np.tan(f), equal_nan=True, rtol=1e-6, atol=0)


def intrinsics(a, b, c, out, cmp):
    i = cuda.grid(1)
    if i < a.size:
        out[0, i] = cuda.fp16.hadd(a[i], b[i])
        out[1, i] = cuda.fp16.hsub(a[i], b[i])
        out[2, i] = cuda.fp16.hmul(a[i], b[i])
        out[3, i] = cuda.fp16.hdiv(a[i], b[i])
        out[4, i] = cuda.fp16.hfma(a[i], b[i], c[i])
        out[5, i] = cuda.fp16.hneg(a[i])
        out[6, i] = cuda.fp16.habs(a[i])
        out[7, i] = cuda.fp16.hmax(a[i], b[i])
        out[8, i] = cuda.fp16.hmin(a[i], b[i])
        out[9, i] = cuda.fp16.hsqrt(a[i])
        out[10, i] = cuda.fp16.hrint(a[i])
        out[11, i] = cuda.fp16.hfloor(a[i])
        out[12, i] = cuda.fp16.hceil(a[i])
        out[13, i] = cuda.fp16.htrunc(a[i])
        out[14, i] = cuda.fp16.hrcp(a[i])
        cmp[0, i] = cuda.fp16.hlt(a[i], b[i])
        cmp[1, i] = cuda.fp16.hge(a[i], b[i])
        cmp[2, i] = cuda.fp16.heq(a[i], b[i])


def test_cuda_fp16_functions_compute_what_a_gpu_computes(be):
    a, b, c = halves(2048, 5), halves(2048, 6), halves(2048, 7)
    got = run(be, intrinsics, a.size, a, b, c, np.zeros((15, a.size), np.float16),
              np.zeros((3, a.size), bool))
    out, cmp = got[3], got[4]
    f = a.astype(np.float32)
    with np.errstate(all="ignore"):
        fma = (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64))
        want = [a + b, a - b, a * b, a / b, fma.astype(np.float16), -a, abs(a),
                np.fmax(a, b), np.fmin(a, b), np.sqrt(f).astype(np.float16), np.rint(a),
                np.floor(a), np.ceil(a), np.trunc(a), (1 / f).astype(np.float16)]
        for k, w in enumerate(want):
            assert same(out[k], w), k
        assert (cmp[0] == (a < b)).all() and (cmp[1] == (a >= b)).all()
        assert (cmp[2] == (a == b)).all()


def half_sum(a, out):
    out[0] = a[0] + a[1]


def test_numba_njit_keeps_its_own_rules_for_half(be):
    a = np.array([2048, 1], np.float16)  # 2049 needs 12 bits: a half rounds it to 2048
    (_, out) = run(be, half_sum, 1, a, np.zeros(1))
    assert out[0] == 2048.0
    on_cpu = np.zeros(1)
    numba.njit(half_sum)(a, on_cpu)  # Numba's CPU types half + half as float32
    assert on_cpu[0] == 2049.0


def test_half_kernels_run_from_the_disk_cache_and_without_it(be, tmp_path, monkeypatch):
    a = np.array([2048, 1], np.float16)
    for setting in (str(tmp_path), "off"):
        monkeypatch.setenv("GPUKIT_CACHE_DIR", setting)
        (_, out) = run(CPUBackend(), half_sum, 1, a, np.zeros(1))
        assert out[0] == 2048.0, setting


FP16_UNIMPORTED = """
import json, os, sys
import numpy as np, gpukit
from numba import cuda

def add(a, out):
    if cuda.grid(1) == 0:  # (a kernel that names cuda's functions, as every kernel does)
        out[0] = a[0] + a[1]

def doubled(a):  # cuda.fp16 without importing numba.cuda.fp16, as numba-cuda allows
    a[0] = cuda.fp16.hadd(a[0], a[0])

def sine(a):  # cuda.libdevice without importing it (numba-cuda's typing loads it)
    a[0] = cuda.libdevice.sin(a[0])

be = gpukit.get_backend("cpu")
out = be.to_device(np.zeros(1))
be.launch_kernel(add, 1, 1, be.to_device(np.ones(2)), out)
found = {"sum": float(be.to_host(out)[0]), "fp16_loaded": "numba.cuda.fp16" in sys.modules}
for name in os.environ["ORDER"].split():
    if name == "doubled":
        half = be.to_device(np.array([1.5], np.float16))
        be.launch_kernel(doubled, 1, 1, half)
        found[name] = float(be.to_host(half)[0])
    else:
        one = be.to_device(np.ones(1))
        be.launch_kernel(sine, 1, 1, one)
        found[name] = float(be.to_host(one)[0])
print(json.dumps(found))
"""


def test_cuda_fp16_needs_no_import_and_costs_a_launch_nothing_until_a_kernel_uses_it(tmp_path):
    # numba-cuda loads cuda.fp16 (a quarter of a second, with its bfloat16 bindings) when it
    # types a kernel; a kernel cached by an earlier process is not typed again, so its first
    # launch does without, and a kernel that names cuda.fp16 (or cuda.libdevice) later still
    # finds it
    env = {"GPUKIT_CACHE_DIR": str(tmp_path / "cache")}
    cold = run_script(tmp_path, FP16_UNIMPORTED, ORDER="doubled sine", **env)
    assert cold["fp16_loaded"]  # numba-cuda's typing of `add` loaded it
    for order in ("doubled sine", "sine doubled"):
        warm = run_script(tmp_path, FP16_UNIMPORTED, ORDER=order, **env)
        assert not warm["fp16_loaded"]
        for result in (cold, warm):
            assert (result["sum"], result["doubled"], result["sine"]) == (2.0, 3.0, math.sin(1))


NO_F16C = """
import llvmlite.binding as llvm
features = llvm.get_host_cpu_features
def without_f16c():
    found = features()
    found["f16c"] = False
    return found
llvm.get_host_cpu_features = without_f16c
import platform
platform.machine = lambda: "x86_64"
import numpy as np, gpukit
from numba import cuda
from gpukit.errors import UnsupportedKernelError
@cuda.jit
def doubled(a, out):
    out[0] = a[0] * 2
be = gpukit.get_backend("cpu")
try:
    be.launch_kernel(doubled, 1, 1, be.to_device(np.ones(2, np.float16)),
                     be.to_device(np.zeros(1, np.float32)))
except UnsupportedKernelError as exc:
    print(exc)
"""


def test_a_cpu_without_half_conversions_refuses_float16_in_words(tmp_path):
    script = tmp_path / "no_f16c.py"
    script.write_text(NO_F16C)
    env = dict(os.environ, GPUKIT_CACHE_DIR="off")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False,
                         env=env, timeout=300)
    assert out.stdout.startswith(
        "kernel 'doubled' computes with float16 (half precision), which gpukit's simulator "
        "computes only on a CPU with half-precision conversions (x86 with F16C, or ARM64), "
        "and this one has none; use float32 here"), out.stderr[-2000:]


def test_the_simulator_reports_float16_as_a_feature():
    assert CPUBackend("A100").supports_feature("float16")  # compute capability 8.0 >= 5.3
