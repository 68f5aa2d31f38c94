"""A kernel with many element accesses has the checks of those past the first
`access.OUTLINE_ACCESSES` compiled once and called (`access.touch_outlined`), not copied into
each access: the checks find the same bugs and the kernels the same results either way."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
from numba import cuda
from script_run import run_script
from sim_bugs import BUGS, line_of

from benchmarks.kernels import WORKLOADS
from gpukit.backends.cpu import CPUBackend
from gpukit.sim import access


@pytest.fixture
def all_outlined(monkeypatch):
    """Every access of the kernels compiled in the test is checked out of line."""
    monkeypatch.setattr(access, "OUTLINE_ACCESSES", 0)


def outlined_accesses(kernel) -> int:
    """How many accesses of the compiled kernel pass False (out of line) as their last
    argument (after the descriptor)."""
    return len(re.findall(r"(_g_D\[\d+\]|_g_NODESC|_g_u\d+), False\)", kernel.explain()))


@pytest.mark.parametrize("name", list(BUGS))
def test_bugs_are_caught_the_same_with_every_check_out_of_line(name, all_outlined):
    b = BUGS[name]
    backend = CPUBackend(device=b.device)
    with pytest.raises(b.error, match=b.message) as info:
        backend.launch_kernel(b.kernel, b.grid, b.block, *b.args(backend), **b.options)
    err = info.value
    if hasattr(err, "thread") and err.lineno is not None:
        assert (err.kernel, err.thread, err.block, err.lineno) == (
            b.kernel.__name__, b.thread, b.block_idx, line_of(b.where or b.kernel))
        assert err.filename == inspect.getsourcefile(b.kernel)


@pytest.mark.parametrize("name", ["matmul_tiled", "reduce_sum", "histogram", "stencil"])
def test_kernels_compute_the_same_with_every_check_out_of_line(name, all_outlined):
    workload = WORKLOADS[name]
    backend = CPUBackend()
    kernel = backend.compile_kernel(workload.kernel)
    assert outlined_accesses(kernel) > 0
    case = workload.build(64 if name.startswith("matmul") else 4096, 0)
    args = [backend.to_device(a) if isinstance(a, np.ndarray) else a for a in case.args]
    record = backend.launch_kernel(kernel, case.grid, case.block, *args)
    assert all(record.checks.values())
    assert case.verify([backend.to_host(args[i]) for i in case.outputs]) <= 1e-4


# 27 accesses (13 writes, 14 reads), each a site of its own; the last line reads two written
# elements (race records)
MANY_ACCESSES = "def many_accesses(out, x):\n    i = 0\n" + "".join(
    f"    out[i + {k}] = x[i + {k}] * 2\n" for k in range(12)) + \
    "    out[i + 12] = out[i + 0] + out[i + 11]\n"
exec(compile(MANY_ACCESSES, "<many accesses>", "exec"))  # noqa: S102 - defines many_accesses


def test_only_the_accesses_past_the_budget_are_out_of_line_and_llvm_keeps_them_there():
    backend = CPUBackend()
    kernel = backend.compile_kernel(many_accesses)  # noqa: F821 - made by exec above
    # 16 accesses inline, 11 out of line
    assert access.OUTLINE_ACCESSES == 16
    assert outlined_accesses(kernel) == 11
    out = backend.allocate(13, np.float32)
    backend.launch_kernel(kernel, 1, 1, out, backend.to_device(np.arange(13, dtype=np.float32)))
    expected = np.arange(13, dtype=np.float32) * 2
    expected[12] = expected[0] + expected[11]
    np.testing.assert_array_equal(backend.to_host(out), expected)


LLVM_CALLS = """
import json
from gpukit.backends.cpu import CPUBackend
import numpy as np
{kernel}
backend = CPUBackend()
kernel = backend.compile_kernel(many_accesses)
out = backend.allocate(13, np.float32)
backend.launch_kernel(kernel, 1, 1, out, backend.to_device(np.zeros(13, np.float32)))
driver = kernel.sim.driver
llvm = driver.inspect_llvm(next(iter(driver.overloads)))
print(json.dumps(sum(" call " in line and "access8_checked" in line
                     for line in llvm.splitlines())))
"""


def test_llvm_inlines_none_of_the_calls_to_the_outlined_checks(tmp_path):
    # compiled in a process with no cache, so that the driver's LLVM is all there to read
    calls = run_script(tmp_path, LLVM_CALLS.format(kernel=MANY_ACCESSES),
                       GPUKIT_CACHE_DIR="off")
    assert 11 <= calls <= 2 * 11  # a write calls it on either of its two paths


def racing_many(out, x):
    i = 0  # every thread writes out[0..2] with the same values: no race (they keep the bits)
    out[0] = x[i + 0] + x[i + 1] + x[i + 2] + x[i + 3] + x[i + 4] + x[i + 5] + x[i + 6]
    out[1] = x[i + 7] + x[i + 8] + x[i + 9] + x[i + 10] + x[i + 11] + x[i + 12] + x[i + 13]
    out[2] = x[i + 14] + x[i + 15]
    out[3] = cuda.threadIdx.x  # a race, at an access past the budget


def test_a_race_at_an_outlined_access_names_both_threads_and_the_line():
    from gpukit.errors import RaceConditionError

    backend = CPUBackend()
    kernel = backend.compile_kernel(racing_many)
    assert outlined_accesses(kernel) >= 1
    out = backend.allocate(4, np.float32)
    x = backend.to_device(np.ones(16, np.float32))
    with pytest.raises(RaceConditionError, match=r"data race on out\[3\]") as info:
        backend.launch_kernel(kernel, 1, 2, out, x)
    _, first = inspect.getsourcelines(racing_many)
    assert info.value.lineno == first + 5
    assert info.value.thread == (1, 0, 0)
