"""The simulator catches every bug of the corpus in tests/sim_bugs.py with the right error, thread,
block and line; each check can be switched off, on the backend or for one launch; and an error
stops the launch cleanly, leaving the backend ready for the next one."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from numba import cuda
from sim_bugs import BUGS, Bug, line_of

import gpukit.inspect as gi
from gpukit.backends.cpu import CPUBackend
from gpukit.errors import (
    ImplicitTransferWarning,
    KernelError,
    KernelTimeoutError,
    KernelTypingError,
    LaunchConfigError,
    OutOfBoundsError,
    RaceConditionError,
    UnsupportedKernelError,
)
from gpukit.sim import CHECKS

CLASSES = {"oob": 8, "race": 7, "barrier": 3, "warp": 1, "uninit": 6, "integer": 2,
           "watchdog": 2, "launch": 6}


def launch(backend: CPUBackend, b: Bug, **options):
    return backend.launch_kernel(b.kernel, b.grid, b.block, *b.args(backend),
                                 **{**b.options, **options})


def test_the_bug_corpus_has_several_variants_per_class():
    assert len(BUGS) >= 18
    counts = {prefix: sum(name.startswith(prefix) for name in BUGS) for prefix in CLASSES}
    assert counts == CLASSES


@pytest.mark.parametrize("name", list(BUGS))
def test_bug_is_caught_with_its_error_thread_block_and_line(name):
    b = BUGS[name]
    backend = CPUBackend(device=b.device)
    with pytest.raises(b.error, match=b.message) as info:
        launch(backend, b)
    err = info.value
    # exactly that class (a typing error is also one of numba's: the most derived class
    # shows gpukit's name)
    assert type(err) is b.error or (type(err).__name__ == b.error.__name__
                                    and type(err).__mro__[1] is b.error)
    if not issubclass(b.error, KernelError):
        return
    line = line_of(b.where or b.kernel)
    filename = inspect.getsourcefile(b.kernel)
    assert (err.kernel, err.thread, err.block, err.lineno) == (
        b.kernel.__name__, b.thread, b.block_idx, line)
    assert err.filename == filename
    at = "" if b.thread is None else f"thread {b.thread}, block {b.block_idx}, "
    assert str(err).endswith(f"[kernel '{b.kernel.__name__}', {at}{filename}:{line}]")
    if b.error is RaceConditionError:
        try:
            other_line = line_of(b.kernel, "other")
        except ValueError:  # both accesses are on the `# bug` line
            other_line = line
        assert (err.other_thread, err.other_block, err.other_lineno) == (
            b.other_thread, b.other_block, other_line)
        assert f"at line {line} " in str(err) and f"at line {other_line} " in str(err)


QUICK = [name for name, b in BUGS.items() if b.error is not KernelTimeoutError]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", QUICK)
def test_bug_is_caught_under_shuffled_schedules(name, seed):
    """Block order and the order of racing accesses change; the bug is still caught."""
    b = BUGS[name]
    backend = CPUBackend(device=b.device, schedule="shuffle", seed=seed)
    with pytest.raises(b.error) as info:
        launch(backend, b)
    if isinstance(info.value, KernelError):
        assert (info.value.thread is None) == (b.thread is None)
        lines = {line_of(b.where or b.kernel)}
        if b.error is RaceConditionError:  # in another order, the other access finds it
            try:
                lines.add(line_of(b.kernel, "other"))
            except ValueError:
                pass
        assert info.value.lineno in lines


# -- switching checks off -------------------------------------------------------------------------
SILENT = [name for name, b in BUGS.items() if b.silent_when_off]


def test_every_check_has_a_bug_that_runs_once_it_is_off():
    assert {BUGS[name].check for name in SILENT} == set(CHECKS)


@pytest.mark.parametrize("how", ["backend", "launch", "list of the others", "all off"])
@pytest.mark.parametrize("name", SILENT)
def test_a_switched_off_check_lets_the_buggy_kernel_run(name, how):
    b = BUGS[name]
    others = [c for c in CHECKS if c != b.check]
    if how == "backend":
        backend, options = CPUBackend(device=b.device, checks={b.check: False}), {}
    elif how == "launch":
        backend, options = CPUBackend(device=b.device), {"checks": {b.check: False}}
    elif how == "list of the others":
        backend, options = CPUBackend(device=b.device, checks=others), {}
    else:
        backend, options = CPUBackend(device=b.device), {"checks": False}
    record = launch(backend, b, **options)
    assert record.checks[b.check] is False
    if how != "all off":
        assert all(record.checks[c] for c in others)
    assert backend.launches == [record]


@pytest.mark.parametrize("name", ["oob_negative_index", "race_global_write_write",
                                  "barrier_inside_if", "uninit_allocated_array",
                                  "integer_division_by_zero", "launch_1025_threads_per_block"])
def test_a_launch_can_switch_a_check_back_on(name):
    b = BUGS[name]
    backend = CPUBackend(device=b.device, checks=False)
    launch(backend, b)  # off on the backend: runs
    with pytest.raises(b.error, match=b.message):
        launch(backend, b, checks={b.check: True})
    with pytest.raises(b.error, match=b.message):
        launch(backend, b, checks=[b.check])
    with pytest.raises(b.error):
        launch(backend, b, checks=True)


def test_unknown_or_malformed_checks_are_refused():
    with pytest.raises(ValueError, match="unknown check 'bound'; the checks are: launch_limits, "
                                         "bounds, races, barriers, uninitialized, "
                                         "division_by_zero, wraparound"):
        CPUBackend(checks={"bound": False})
    b = BUGS["oob_missing_guard"]
    backend = CPUBackend()
    with pytest.raises(ValueError, match="unknown check 'race'"):
        launch(backend, b, checks=["race"])
    with pytest.raises(TypeError, match="checks must be True, False, a dict or a list of names"):
        launch(backend, b, checks="bounds")


def test_float_division_by_zero_is_ieee_not_an_error():
    def ratio(a, b, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            out[i] = a[i] / b[i]

    backend = CPUBackend()
    a = backend.to_device(np.array([1.0, -1.0, 0.0, 6.0], np.float32))
    b = backend.to_device(np.array([0.0, 0.0, 0.0, 3.0], np.float32))
    out = backend.allocate(4, np.float32)
    backend.launch_kernel(ratio, 1, 32, a, b, out)
    result = backend.to_host(out)
    assert result[0] == np.inf and result[1] == -np.inf and np.isnan(result[2])
    assert result[3] == 2.0


# -- the watchdog ---------------------------------------------------------------------------------
def test_watchdog_set_on_the_backend_or_per_launch():
    b = BUGS["watchdog_spin_wait"]
    with pytest.raises(KernelTimeoutError, match="after 0.3 s"):
        launch(CPUBackend(watchdog_s=0.3), b, watchdog_s="default")
    with pytest.raises(KernelTimeoutError, match="after 0.2 s"):
        launch(CPUBackend(watchdog_s=None), b, watchdog_s=0.2)
    with pytest.raises(ValueError, match="watchdog_s must be a positive number of seconds or None"):
        CPUBackend(watchdog_s=0)


# -- errors stop the launch cleanly ---------------------------------------------------------------
def copy_kernel(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i]


ONE_PER_CLASS = ["oob_shared_overflow", "race_cross_block_read", "barrier_in_each_branch",
                 "warp_shuffle_in_branch", "uninit_local_array", "integer_division_by_zero",
                 "watchdog_some_threads_loop_forever", "python_error_in_kernel",
                 "launch_static_shared_over_48KiB", "launch_too_much_dynamic_shared"]


@pytest.mark.parametrize("name", ONE_PER_CLASS)
def test_an_error_stops_the_launch_cleanly_and_the_backend_keeps_working(name):
    b = BUGS[name]
    backend = CPUBackend(device=b.device)
    host_before_args = backend.status().extra["host_memory_used_bytes"]
    args = b.args(backend)
    memory = backend.memory_info()
    with pytest.raises(b.error):
        backend.launch_kernel(b.kernel, b.grid, b.block, *args, **b.options)
    assert backend.memory_info() == memory
    assert backend.status().last_error.startswith(f"{b.error.__name__}: ")
    assert backend.launches == [] and backend.status().kernels_launched == 0
    # the backend and the very same device arrays keep working
    host = np.arange(len(args[0]), dtype=np.float32)
    a = backend.to_device(host)
    out = backend.allocate(len(host), np.float32)
    backend.launch_kernel(copy_kernel, 4, 32, a, out)
    np.testing.assert_array_equal(backend.to_host(out), host)
    for arg in args:
        if hasattr(arg, "shape"):
            backend.to_host(arg)
    assert backend.status().kernels_launched == 1
    for arg in (a, out, *args):  # race records live as long as their arrays, no longer
        if hasattr(arg, "shape"):
            backend.free(arg)
    assert backend.status().extra["host_memory_used_bytes"] == host_before_args


def test_an_error_frees_the_implicit_copies_of_host_arrays():
    b = BUGS["oob_missing_guard"]
    backend = CPUBackend()
    memory = backend.memory_info()
    a, out = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    with pytest.warns(ImplicitTransferWarning), pytest.raises(OutOfBoundsError):
        backend.launch_kernel(b.kernel, b.grid, b.block, a, out)
    assert backend.memory_info() == memory
    assert not out.any()  # nothing was copied back from a failed launch


def test_a_kernel_numba_cuda_rejects_is_rejected_with_numba_cudas_reason():
    b = BUGS["python_error_in_kernel"]
    with pytest.raises(KernelTypingError) as info:
        launch(CPUBackend(), b)
    assert "numba-cuda would not compile kernel 'typo_in_kernel'" in str(info.value)
    assert isinstance(info.value, UnsupportedKernelError)
    from numba.cuda.core.errors import TypingError  # code written for numba-cuda catches it too
    assert isinstance(info.value, TypingError) and type(info.value).__name__ == "KernelTypingError"
    assert info.value.lineno == line_of(b.kernel)
    assert info.value.thread is None  # found when the kernel is typed, before any thread runs


def test_launch_limit_errors_are_value_errors_and_name_value_and_limit():
    b = BUGS["launch_1025_threads_per_block"]
    with pytest.raises(ValueError, match="1025 threads.*at most 1024"):
        launch(CPUBackend(), b)
    assert issubclass(LaunchConfigError, ValueError)
    # an A100 allows more dynamic shared memory than a T4 (163 KiB opt-in)
    big = BUGS["launch_too_much_dynamic_shared"]
    launch(CPUBackend(device="A100"), big)


# -- the bugs are the kernel's, not the simulator's -----------------------------------------------
needs_compiler = pytest.mark.skipif(
    gi.unavailable_reason() is not None,
    reason=f"numba-cuda's compiler is missing: {gi.unavailable_reason()}")


@needs_compiler
def test_buggy_kernels_compile_with_numba_cuda():
    """Every bug but the Python typo is one numba-cuda compiles and a GPU would run silently."""
    backend = CPUBackend()
    for name, b in BUGS.items():
        args = [backend.to_host(a) if hasattr(a, "copy_to_host") else a for a in b.args(backend)]
        if name == "python_error_in_kernel":
            with pytest.raises(gi.InspectCompileError, match="scale_factr"):
                gi.ptx(b.kernel, args, "T4")
        else:
            assert ".entry" in gi.ptx(b.kernel, args, "T4"), name


def vote_with_a_bool(a, out):
    i = cuda.grid(1)
    out[i] = cuda.syncthreads_count(a[i] > 0)  # bug


def test_a_bool_vote_predicate_is_refused_as_numba_cuda_refuses_it():
    backend = CPUBackend()
    a, out = backend.to_device(np.ones(32, np.float32)), backend.allocate(32, np.int32)
    with pytest.raises(KernelTypingError, match=r"syncthreads_count") as info:
        backend.launch_kernel(vote_with_a_bool, 1, 32, a, out)
    assert (info.value.thread, info.value.block, info.value.lineno) == (
        None, None, line_of(vote_with_a_bool))
    if gi.unavailable_reason() is None:
        with pytest.raises(gi.InspectCompileError, match=r"syncthreads_count\(bool\)"):
            gi.ptx(vote_with_a_bool, (np.ones(32, np.float32), np.zeros(32, np.int32)), "T4")
