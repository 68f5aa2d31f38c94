"""Differential testing: generated kernels on gpukit's simulator against Numba's CPU compiler.

Hypothesis writes random kernels (tests/diff_gen.py, diff_program.py: mixed dtypes, arithmetic,
math functions, control flow, local arrays, tuples, device functions); each runs on the
simulator and, thread by thread, through `numba.njit` as the oracle (diff_run.py,
diff_oracle.py); every output must match bit for bit, and a kernel numba-cuda's typing rejects
must be rejected with `KernelTypingError`.

CI runs `CI_EXAMPLES` generated kernels, derandomized (the hypothesis profile
"gpukit-differential-ci": the same kernels every run). Measured on the 2-core development machine:
`pytest -k test_generated_kernels_match_numba` used 36 s of CPU, pytest's start included (163 s
of wall time there, under a load average of 8 from other jobs). The soak
run is opt-in, because 10,000 kernels take hours (each is compiled three times: numba-cuda's
typing, the simulator, the CPU oracle):

    GPUKIT_DIFFERENTIAL_SOAK=10000 pytest tests/test_differential.py -k soak   # stops at one
    python tests/diff_soak.py --examples 10000 --out /tmp/differential        # collects all

`GPUKIT_DIFFERENTIAL_SHRINK=1` lets hypothesis shrink a failure to a small kernel (it reruns the
case hundreds of times). Constructs with an open engine bug are excluded (diff_features.EXCLUDED);
`GPUKIT_DIFFERENTIAL_ALL=1` generates them too.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import diff_run
import numba
import numpy as np
import pytest
from diff_gen import Program
from diff_oracle import ORACLE_MATH, CudaTypingError
from diff_program import Case, cases, programs
from diff_run import load, render, run_case, same
from hypothesis import HealthCheck, Phase, given, settings

import gpukit
from gpukit.backends.base import Backend

CI_EXAMPLES = 5
SOAK_EXAMPLES = int(os.environ.get("GPUKIT_DIFFERENTIAL_SOAK", "0") or 0)
PHASES = (tuple(Phase) if os.environ.get("GPUKIT_DIFFERENTIAL_SHRINK") == "1"
          else (Phase.explicit, Phase.reuse, Phase.generate))
_COMMON = {"deadline": None, "phases": PHASES,
               "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
settings.register_profile("gpukit-differential-ci", max_examples=CI_EXAMPLES, derandomize=True,
                          database=None, **_COMMON)
settings.register_profile("gpukit-differential-soak", max_examples=max(SOAK_EXAMPLES, 1),
                          derandomize=False, **_COMMON)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("differential")


@pytest.fixture(scope="module")
def backend() -> Backend:
    return gpukit.get_backend("cpu")


def fixed(dtypes: list[str], lines: list[str], results: list[tuple[str, str]],
          inputs: list[list]) -> Case:
    """A hand-written case in the generator's form (`x<k> = a<k>[i]` come first)."""
    body = [f"x{k} = a{k}[i]" for k in range(len(dtypes))] + lines
    arrays = [np.array(v, dtype=d) for v, d in zip(inputs, dtypes)]
    return Case(Program(dtypes, [], body, results), arrays, 1, len(arrays[0]))


# -- the differential test ----------------------------------------------------------------------
def check(case: Case, workdir: Path, backend: Backend) -> None:
    outcome = run_case(case, workdir, backend)
    assert outcome.status in ("ok", "rejected"), outcome.report(case)
    assert not outcome.kind_errors, outcome.report(case)


@settings(settings.get_profile("gpukit-differential-ci"))
@given(case=cases())
def test_generated_kernels_match_numba(case: Case, workdir: Path, backend: Backend):
    check(case, workdir, backend)


@pytest.mark.skipif(not SOAK_EXAMPLES, reason="opt-in soak run (GPUKIT_DIFFERENTIAL_SOAK=10000): "
                    "thousands of generated kernels take hours on 2 cores; CI runs "
                    "test_generated_kernels_match_numba")
@settings(settings.get_profile("gpukit-differential-soak"))
@given(case=cases())
def test_soak_generated_kernels_match_numba(case: Case, workdir: Path, backend: Backend):
    check(case, workdir, backend)


def test_the_generator_writes_mostly_kernels_numba_cuda_accepts(workdir: Path):
    verdicts: list[bool] = []

    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(program=programs())
    def type_one(program: Program) -> None:
        kmod = load(render(program)[0], workdir, "difft")
        argtypes = tuple(numba.typeof(np.zeros(1, d)) for d in program.dtypes)
        try:
            diff_run.cuda_typing(kmod.thread, argtypes)
            verdicts.append(True)
        except CudaTypingError:
            verdicts.append(False)

    type_one()
    assert len(verdicts) >= 20
    assert sum(verdicts) >= 0.8 * len(verdicts), f"{sum(verdicts)} of {len(verdicts)} typed"


def test_a_kernel_numba_cuda_rejects_is_rejected_by_gpukit(workdir: Path, backend: Backend):
    case = fixed(["int32"], ["r0 = min(x0, True)"], [("r0", "i")], [[1, 2]])
    outcome = run_case(case, workdir, backend)
    assert outcome.status == "rejected", outcome.report(case)
    assert "min" in outcome.error


# -- the harness can fail ---------------------------------------------------------------------
SIMPLE = fixed(["float32", "int8"], ["r0 = x0 * 2.0", "r1 = x1 + np.int8(100)", "r2 = x0 > x1"],
               [("r0", "f"), ("r1", "i"), ("r2", "b")],
               [[1.5, -2.0, math.nan, 0.25], [1, 100, -128, 7]])


def test_the_simple_case_passes(workdir: Path, backend: Backend):
    outcome = run_case(SIMPLE, workdir, backend)
    assert outcome.status == "ok", outcome.report(SIMPLE)
    assert outcome.result_dtypes == ["float64", "int64", "bool"]


def test_the_same_program_over_other_input_dtypes_is_compared_in_its_own_types(
        workdir: Path, backend: Backend):
    # the soak found the oracle reading its dispatcher's first signature: a program generated
    # again with other input dtypes (the same text, so the same module) got the old types
    for dtype, want in (("uint8", "uint8"), ("int8", "int8")):
        case = fixed([dtype], [], [("x0", "i")], [[1, 2, 3]])
        outcome = run_case(case, workdir, backend)
        assert outcome.status == "ok", outcome.report(case)
        assert outcome.result_dtypes == [want]


def test_the_oracle_negates_an_int16_as_the_gpu_does(workdir: Path, backend: Backend):
    # an H200 run of generated kernels found `-x1` of the int16 -32768: 32768 on the GPU (the
    # simulator now too), -32768 in Numba's CPU code, so the oracle takes the GPU's rule
    case = fixed(["int16"], ["r0 = (-x0)", "r1 = (-(x0 + 1))"], [("r0", "i"), ("r1", "i")],
                 [[-32768, 5, -7]])
    outcome = run_case(case, workdir, backend)
    assert outcome.status == "ok", outcome.report(case)


def test_abs_of_an_int16_is_compared_widened_as_the_gpu_holds_it(workdir: Path,
                                                                backend: Backend):
    # the soak: numba-cuda types abs() of an int16 as an int16; the GPU holds abs(-32768) as
    # 32768 in its 32-bit register, as the oracle and the simulator do in an int64, and the
    # int16 output receives it alike. A result the oracle computes otherwise must still match.
    case = fixed(["int16"], ["r0 = abs(x0)", "r1 = x0"], [("r0", "i"), ("r1", "i")],
                 [[-32768, 5, -7]])
    outcome = run_case(case, workdir, backend)
    assert outcome.status == "ok", outcome.report(case)
    assert outcome.result_dtypes == ["int16", "int16"]


def test_a_wrong_oracle_value_is_caught(workdir: Path, backend: Backend):
    def plant(values: list[tuple]) -> list[tuple]:
        values[3] = (values[3][0], values[3][1] + 1, values[3][2])
        return values

    outcome = run_case(SIMPLE, workdir, backend, oracle_hook=plant)
    assert outcome.status == "mismatch"
    assert [(m.result, m.thread, m.expected, m.actual) for m in outcome.mismatches] == [
        (1, 3, 108, 107)]
    assert "r1 (int64) thread 3: oracle 108, simulator 107" in outcome.report(SIMPLE)


def test_one_bit_of_a_float_is_a_mismatch(workdir: Path, backend: Backend):
    def plant(values: list[tuple]) -> list[tuple]:
        values[0] = (np.nextafter(values[0][0], math.inf), *values[0][1:])
        return values

    outcome = run_case(SIMPLE, workdir, backend, oracle_hook=plant)
    assert [(m.result, m.thread) for m in outcome.mismatches] == [(0, 0)]


def test_gpukit_running_a_kernel_numba_cuda_rejects_is_caught(workdir: Path,
                                                              backend: Backend,
                                                              monkeypatch: pytest.MonkeyPatch):
    def reject(*args: object) -> None:
        raise CudaTypingError("planted rejection")

    monkeypatch.setattr(diff_run, "cuda_typing", reject)
    outcome = run_case(SIMPLE, workdir, backend)
    assert outcome.status == "error"
    assert "numba-cuda rejects the kernel but gpukit ran it" in outcome.error


def test_bits_are_compared_and_nan_equals_nan():
    f32, f64 = np.dtype("float32"), np.dtype("float64")
    assert same(math.nan, -math.nan, f64)
    assert same(np.float32("nan"), np.float32("nan"), f32)
    assert not same(0.0, -0.0, f64)
    assert not same(1.0, math.nan, f32)
    assert not same(1.0, np.nextafter(1.0, 2.0), f64)
    assert same(2 ** 64 - 1, np.uint64(2 ** 64 - 1), np.dtype("uint64"))
    assert not same(True, False, np.dtype("bool"))


# -- the oracle follows numba-cuda's typing -------------------------------------------------------
cu_floor, cu_ceil, cu_trunc, cu_pow, cu_modf, cu_fmod, cu_remainder, cu_frexp = (
    ORACLE_MATH[n] for n in ("floor", "ceil", "trunc", "pow", "modf", "fmod", "remainder",
                             "frexp"))


def test_the_oracle_math_has_numba_cudas_types_and_exact_values():
    @numba.njit(error_model="numpy")
    def f(x32, x64, n8):
        return (cu_floor(x32), cu_floor(n8), cu_ceil(x64), cu_trunc(-x64), cu_pow(n8, n8),
                cu_modf(-x64), cu_fmod(-x64, 3.0), cu_remainder(x64, 3.0), cu_frexp(n8),
                cu_pow(0.0, n8 - n8 - 1))

    got = f(np.float32(2.5), 3.5e20, np.int8(3))
    assert str(f.nopython_signatures[0].return_type) == (
        "Tuple(float32, float64, float64, float64, float32, UniTuple(float64 x 2), float64, "
        "float64, Tuple(float32, int32), float64)")
    assert got[:5] == (2.0, 3.0, 3.5e20, -3.5e20, 27.0)
    assert got[5] == (-0.0, -3.5e20) and math.copysign(1, got[5][0]) == -1
    assert got[6] == math.fmod(-3.5e20, 3.0) and got[7] == math.remainder(3.5e20, 3.0)
    assert got[8] == (0.75, 2) and got[9] == math.inf


def test_the_oracle_module_is_the_kernel_body_with_cpu_spellings():
    program = Program(["float32"], [], ["x0 = a0[i]", "la = cuda.local.array(2, np.int8)",
                                        "la[0] = 1", "la[1] = 2", "r0 = math.floor(x0) + la[1]"],
                      [("r0", "f")])
    kernel, oracle = render(program)
    assert "    r0 = math.floor(x0) + la[1]\n    o0[i] = r0\n" in kernel
    assert "def thread(i, a0):" in oracle and "cu_floor(x0)" in oracle
    assert "np.empty(2, np.int8)" in oracle and "cuda" not in oracle


# -- what the tester found, fixed since: regressions ------------------------------------------
FIXED_BUGS = {  # what the tester found (differential #1-#4), each fixed: kept as regressions
    "math.floor": fixed(["float64", "float32"], ["r0 = math.floor(x0)", "r1 = math.ceil(x1)",
                                                 "r2 = math.trunc(x0)"],
                        [("r0", "f"), ("r1", "f"), ("r2", "f")],
                        [[1e20, -0.0, math.inf, 2.5], [-0.5, 3e38, math.nan, 1.5]]),
    "math.modf": fixed(["float64"], ["r0 = math.modf(x0)[0]", "r1 = math.fmod(x0, 0.75)",
                                     "r2 = math.remainder(x0, 0.75)"],
                       [("r0", "f"), ("r1", "f"), ("r2", "f")], [[2.5, -7.25]]),
    "math.pow": fixed(["float64", "int64", "int32"], ["r0 = math.pow(x0, x1)",
                                                      "r1 = math.pow(x0, x2)"],
                      [("r0", "f"), ("r1", "f")],
                      [[3.0, 0.9, 0.0, 2.0], [100, 400, 2, 3], [3, 2, -1, 2]]),
    "math.ldexp": fixed(["int32"], ["r0 = math.ldexp(True, x0)",
                                    "r1 = np.float32(1.0) / math.ldexp(True, x0)"],
                        [("r0", "f"), ("r1", "f")], [[128, 127]]),
}


@pytest.mark.parametrize("feature", list(FIXED_BUGS))
def test_what_the_tester_found_stays_fixed(feature: str, workdir: Path, backend: Backend):
    case = FIXED_BUGS[feature]
    outcome = run_case(case, workdir, backend)
    assert outcome.status == "ok", outcome.report(case, 3)
