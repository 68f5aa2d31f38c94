"""The public API under hostile input: every bad value gets a gpukit error, nothing leaks.

Hypothesis feeds wrong types, negatives, huge ints, NaN, None, strings and bools to each entry
point (backends, arrays, launches and their options, ops, occupancy, timing, trace, widgets'
`set`, exercises, geometry, the CLI). Each call either works or raises a `GpukitError`: never a
raw TypeError, ValueError, OverflowError, AttributeError or IndexError from inside gpukit, never
a crash. Simulated memory (device bytes in use, live allocations, host budget in use) is exactly
as before after every call. The cases named in issue 18 are also checked message by message.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import cuda

import gpukit
from gpukit import geometry, ops, timing
from gpukit import occupancy as occ
from gpukit import trace as gt
from gpukit.backends import options as launch_opts
from gpukit.backends.cpu import CPUBackend
from gpukit.backends.validate import InvalidShapeError
from gpukit.cli import main as cli_main
from gpukit.errors import (
    BackendError,
    GpukitError,
    HostMemoryBudgetError,
    ImplicitTransferWarning,
    InvalidDeviceArrayError,
    InvalidOptionError,
    LaunchConfigError,
    OptionTypeError,
    OutOfMemoryError,
    UnsupportedKernelError,
)
from gpukit.exercises import ExerciseUsageError, check
from gpukit.ops import OpInputError
from gpukit.sim.memory import DeviceArray

HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**62, max_value=2**200),
    st.integers(max_value=-1), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -0.0, 1e308, 2**64, -(2**63), 1j]),
    st.text(max_size=6), st.binary(max_size=4), st.lists(st.integers(-5, 5), max_size=4),
    st.tuples(st.integers(-3, 2**40), st.integers(-3, 3)), st.dictionaries(st.text(max_size=3),
                                                                        st.integers(), max_size=2),
    st.sampled_from([np.int64(-1), np.float32(np.nan), np.array([1, 2]), np.uint64(2**63),
                     object(), (1, 2, 3, 4), ("races",), {"races": "no"}]),
)
SWEEP = settings(max_examples=40, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])


@cuda.jit
def vadd(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def twice(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = a[i] * 2


@cuda.jit
def reverse(out):
    i = cuda.grid(1)
    if i < out.size:
        out[out.size - 1 - i] = i


BE = CPUBackend()
N = 64
A = BE.to_device(np.arange(N, dtype=np.float32))
OUT = BE.allocate(N, np.float32)
X = np.linspace(0, 1, 16, dtype=np.float32).reshape(4, 4)
Q = np.ones((1, 1, 4, 4), np.float32)
TRACE = BE.launch_kernel(vadd, 1, N, A, A, OUT, trace=True).trace
# OUT's race records, which a launch makes once and OUT keeps (vadd's launches over one block
# dimension need none: each thread writes its own element; a 2-D block needs them)
BE.launch_kernel(reverse, 1, N, OUT)
KEEP = {A.alloc, OUT.alloc}


def _snapshot(backend: CPUBackend = BE) -> tuple:
    memory = backend.memory
    return (backend.memory_info(), len(memory.live), memory.host_budget.used_bytes)


def _release(result: object, backend: CPUBackend = BE) -> None:
    """Free what a call that worked made, so that accounting can be compared."""
    results = result if isinstance(result, (tuple, list)) else (result,)
    for r in results:
        if isinstance(r, DeviceArray) and r.device_memory is backend.memory \
                and not r.is_freed and not r.is_view and r.alloc not in KEEP:
            backend.free(r)


def _survives(call, value, backend: CPUBackend = BE) -> None:
    """`call(value)` works or raises a GpukitError; memory accounting is exactly restored."""
    before = _snapshot(backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _release(call(value), backend)
        except GpukitError:
            pass
    assert _snapshot(backend) == before


def _cli(value):
    argv = value if isinstance(value, list) else ["occupancy", "--threads", str(value)]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli_main(argv) in (0, 1, 2)


ENTRY_POINTS = {
    # backends and device arrays
    "CPUBackend(device)": lambda v: CPUBackend(device=v),
    **{f"DeviceProfile({name})": (lambda v, name=name: CPUBackend(
        device=dataclasses.replace(gpukit.get_profile("T4"), **{name: v})))
       for name in ("compute_capability", "sm_count", "memory_bytes", "memory_bandwidth_gb_s",
                    "fp32_tflops", "pcie_gen", "copy_engines", "launch_overhead_us")},
    "get_backend(name)": lambda v: gpukit.get_backend(v),
    "allocate(shape)": lambda v: BE.allocate(v),
    "allocate(dtype)": lambda v: BE.allocate(4, v),
    "to_device": lambda v: BE.to_device(v),
    "to_device(stream)": lambda v: BE.to_device(np.ones(4), stream=v),
    "to_host": lambda v: BE.to_host(v),
    "to_host(out)": lambda v: BE.to_host(A, out=v),
    "copy_to_device(host)": lambda v: BE.copy_to_device(v, OUT),
    "free": lambda v: BE.free(v),
    "compile_kernel": lambda v: BE.compile_kernel(v),
    "pinned_array(shape)": lambda v: BE.pinned_array(v),
    "supports_device": lambda v: BE.supports_device(v),
    "supports_feature": lambda v: BE.supports_feature(v),
    "device_array[index]": lambda v: A[v],
    "device_array.reshape": lambda v: A.reshape(v),
    "device_array.copy_to_host(out)": lambda v: A.copy_to_host(v),
    "device_array.copy_to_device": lambda v: OUT.copy_to_device(v),
    # launches and their options
    "launch(grid)": lambda v: BE.launch_kernel(vadd, v, N, A, A, OUT),
    "launch(block)": lambda v: BE.launch_kernel(vadd, 1, v, A, A, OUT),
    "launch(argument)": lambda v: BE.launch_kernel(vadd, 1, N, A, v, OUT),
    "kernel[grid, block, stream, shared]": lambda v: BE.compile_kernel(vadd)[1, N, 0, v](A, A,
                                                                                         OUT),
    **{f"launch({name})": (lambda v, name=name: BE.launch_kernel(vadd, 1, N, A, A, OUT,
                                                                 **{name: v}))
       for name in ("stream", "dynamic_shared_bytes", "checks", "schedule", "seed",
                    "watchdog_s", "flops", "trace")},
    **{f"CPUBackend({name})": (lambda v, name=name: CPUBackend(**{name: v}))
       for name in ("checks", "schedule", "seed", "watchdog_s", "host_memory_budget_bytes",
                    "num_threads", "use_numba")},
    # ops, with numpy operands (copied to the device, and freed again)
    **{f"gemm({name})": (lambda v, name=name: ops.gemm(X, X, backend=BE, **{name: v}))
       for name in ("alpha", "beta", "trans_a", "trans_b", "variant")},
    "gemm(a)": lambda v: ops.gemm(v, X, backend=BE),
    "gemm(c)": lambda v: ops.gemm(X, X, v, backend=BE),
    "gemm(backend)": lambda v: ops.gemm(X, X, backend=v),
    "batched_gemm(b)": lambda v: ops.batched_gemm(X[None], v, backend=BE),
    "attention(scale)": lambda v: ops.attention(Q, Q, Q, scale=v, backend=BE),
    "attention(causal)": lambda v: ops.attention(Q, Q, Q, causal=v, backend=BE),
    "conv2d_forward(stride)": lambda v: ops.conv2d_forward(Q, Q[..., :3, :3], stride=v,
                                                           backend=BE),
    "conv2d_forward(padding)": lambda v: ops.conv2d_forward(Q, Q[..., :3, :3], padding=v,
                                                            backend=BE),
    "reduce(op)": lambda v: ops.reduce(v, X, backend=BE),
    "reduce(axis)": lambda v: ops.reduce("sum", X, axis=v, backend=BE),
    "unary(x)": lambda v: ops.unary("exp", v, backend=BE),
    "binary(op)": lambda v: ops.binary(v, X, X, backend=BE),
    # occupancy
    "occupancy(device)": lambda v: occ.occupancy(v, 128),
    **{f"occupancy({name})": (lambda v, name=name: occ.occupancy(
        "A100", **({"threads_per_block": 128} | {name: v})))
       for name in ("threads_per_block", "regs_per_thread", "shared_mem_bytes", "carveout",
                    "opt_in")},
    "best_block_size(regs)": lambda v: occ.best_block_size("T4", v),
    "best_block_size(max_block_size)": lambda v: occ.best_block_size("T4", 32, 0, v),
    "best_block_size(sm_count)": lambda v: occ.best_block_size("8.0", sm_count=v),
    "occupancy_vs_block_size(block_sizes)": lambda v: occ.occupancy_vs_block_size(
        "T4", block_sizes=v),
    "calculator_curves(threads)": lambda v: occ.calculator_curves("T4", v),
    # timing
    **{f"time_kernel({name})": (lambda v, name=name: timing.time_kernel(
        vadd, 1, N, A, A, OUT, **({"backend": BE, "repeat": 1} | {name: v})))
       for name in ("repeat", "warmup", "flops", "dynamic_shared_bytes", "stream", "backend")},
    "timer(backend)": lambda v: timing.timer(v),
    "timer(label)": lambda v: timing.timer(BE, label=v),
    **{f"bandwidth_sweep({name})": (lambda v, name=name: timing.bandwidth_sweep(
        BE, **({"sizes": [256], "repeat": 1, "pinned": False} | {name: v})))
       for name in ("sizes", "direction", "pinned", "repeat")},
    "launch_log(occupancy)": lambda v: timing.launch_log(BE, occupancy=v),
    "model_kernel(bytes_moved)": lambda v: timing.model_kernel(BE.profile, v),
    "Timing(samples)": lambda v: timing.Timing(v, "wall", "cpu"),
    "plot_timeline(by)": lambda v: timing.plot_timeline(BE, by=v),
    # trace
    "tracing(max_events)": lambda v: gt.tracing(BE, v),
    "per_thread_counts": lambda v: gt.per_thread_counts(v),
    "Trace.thread_id": lambda v: TRACE.thread_id(v),
    "Trace.coordinates": lambda v: TRACE.coordinates(v),
    "Trace.accesses(space)": lambda v: TRACE.accesses(space=v),
    "Trace.accesses(block)": lambda v: TRACE.accesses(block=v),
    "coalescing.site": lambda v: gt.coalescing(TRACE).site(v),
    "block_summary(phase)": lambda v: gt.block_summary(TRACE, phase=v),
    "thread_colors": lambda v: gt.thread_colors(v),
    # geometry, exercises, the CLI
    "plan_launch(n)": lambda v: geometry.plan_launch(v, 32),
    "plan_launch(threads_per_block)": lambda v: geometry.plan_launch(100, v),
    "check(kernel)": lambda v: check(v, "map", quiet=True),
    "check(exercise)": lambda v: check(vadd, v, quiet=True),
    # with an unknown exercise, a good value ends in ExerciseUsageError without running anything
    **{f"check({name})": (lambda v, name=name: check(vadd, "nope", **({"quiet": True} |
                                                                       {name: v})))
       for name in ("seed", "quiet", "device", "watchdog_s")},
    "gpukit command": _cli,
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@SWEEP
@given(value=HOSTILE)
def test_hostile_values_get_gpukit_errors_and_leak_nothing(entry, value):
    _survives(ENTRY_POINTS[entry], value)


@pytest.fixture(scope="module")
def explorers():
    from gpukit import widgets

    timed = timing.Timing((1.0, 2.0), "wall", "cpu")
    return [widgets.launch_geometry(), widgets.launch_geometry((10, 10), (4, 4)),
            widgets.occupancy_explorer(), widgets.timing_plot({32: timed, 64: timed}),
            widgets.memory_monitor(BE, auto_refresh=False),
            widgets.timeline_view(BE, auto_refresh=False)]


@SWEEP
@given(index=st.integers(0, 5), name=st.sampled_from(
    ["n", "threads_per_block", "rows", "cols", "block_x", "block_y", "device", "regs_per_thread",
     "shared_mem_bytes", "view", "series", "log_scale", "unit", "by", "nope"]), value=HOSTILE)
def test_widget_set_takes_only_what_a_user_could_pick(explorers, index, name, value):
    widget = explorers[index]
    before = widget.values
    try:
        widget.set(**{name: value})
    except GpukitError:
        pass
    assert set(widget.values) == set(before)


# -- the cases of issue 18, message by message -------------------------------------------------
def _raises(error, message, call):
    before = _snapshot()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=f"^{re.escape(message)}$"):
            call()
    assert _snapshot() == before


def test_an_allocation_too_large_to_describe_is_refused_before_memory_is_touched():
    _raises(InvalidShapeError,
            "allocate: shape (4294967296, 4294967296) of float32 is too large: it spans "
            "73,786,976,294,838,206,464 bytes, more than any array can address "
            "(9,223,372,036,854,775,807 bytes)", lambda: BE.allocate((2**32, 2**32)))
    _raises(InvalidShapeError,
            "allocate: shape (18446744073709551616,) of float32 is too large: it spans "
            "73,786,976,294,838,206,464 bytes, more than any array can address "
            "(9,223,372,036,854,775,807 bytes)", lambda: BE.allocate(2**64))
    free = BE.memory.free_bytes
    _raises(OutOfMemoryError,
            f"out of device memory: requested 16.00 GiB (17,179,869,184 bytes), free "
            f"{free / 2**30:.2f} GiB ({free:,} bytes), total 14.75 GiB (15,833,497,600 bytes); "
            "free arrays you no longer need (backend.free(array)) or choose a device with more "
            "memory", lambda: BE.allocate((2**16, 2**16), np.float32))


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"checks": {"races": "no"}}, OptionTypeError,
     "checks['races'] must be True or False, got str 'no'"),
    ({"checks": 5}, OptionTypeError,
     ("checks must be True, False, a dict or a list of names, not 5; the checks are: "
      "launch_limits, bounds, races, barriers, uninitialized, division_by_zero, wraparound")),
    ({"watchdog_s": "x"}, OptionTypeError,
     "watchdog_s must be a positive number of seconds or None, got str 'x'"),
    ({"watchdog_s": -1}, InvalidOptionError,
     "watchdog_s must be a positive number of seconds or None, got -1"),
    ({"watchdog_s": float("nan")}, InvalidOptionError,
     "watchdog_s must be a positive number of seconds or None, got nan"),
    ({"host_memory_budget_bytes": -1}, InvalidOptionError,
     ("host_memory_budget_bytes must be an int of bytes >= 1 or None (half of this machine's "
      "memory), got -1")),
    ({"schedule": "random"}, InvalidOptionError,
     "schedule must be 'ordered' or 'shuffle', got 'random'"),
    ({"seed": -1}, InvalidOptionError, "seed must be an int >= 0 or None, got -1"),
    ({"seed": 1.5}, OptionTypeError, "seed must be an int >= 0 or None, got float 1.5"),
])
def test_bad_options_are_refused_by_the_constructor_and_by_each_launch(options, error, message):
    _raises(error, message, lambda: CPUBackend(**options))
    _raises(error, message, lambda: BE.launch_kernel(vadd, 1, N, A, A, OUT, **options)
            if "host_memory_budget_bytes" not in options else CPUBackend(**options))


def test_per_launch_only_options_are_checked():
    _raises(OptionTypeError, "flops must be a number >= 0 or None, got str 'many'",
            lambda: BE.launch_kernel(vadd, 1, N, A, A, OUT, flops="many"))
    _raises(OptionTypeError, "launch_kernel() got unexpected option(s) shared; the CPU "
            "simulator accepts stream, dynamic_shared_bytes, flops, checks, schedule, seed, "
            "trace and watchdog_s",
            lambda: BE.launch_kernel(vadd, 1, N, A, A, OUT, shared=1))
    _raises(LaunchConfigError, "kernel 'vadd': dynamic_shared_bytes must be an int from 0 to "
            "65536 (the simulated T4 (CC 7.5)'s shared memory per block), got -1",
            lambda: BE.launch_kernel(vadd, 1, N, A, A, OUT, dynamic_shared_bytes=-1))
    _raises(LaunchConfigError, "kernel 'vadd': dynamic_shared_bytes must be an int >= 0, got -1",
            lambda: BE.launch_kernel(vadd, 1, N, A, A, OUT, dynamic_shared_bytes=-1,
                                     checks={"launch_limits": False}))


def test_a_negative_watchdog_never_kills_a_correct_kernel():
    with pytest.raises(InvalidOptionError):
        BE.launch_kernel(vadd, 1, N, A, A, OUT, watchdog_s=-1)
    record = BE.launch_kernel(vadd, 1, N, A, A, OUT, watchdog_s=5)
    assert record.kernel == "vadd" and BE.to_host(OUT)[3] == 6


def test_the_engine_receives_plain_values():
    opts = launch_opts.launch_options({"checks": ["bounds"], "seed": np.int64(3)},
                                      launch_opts.simulator_options())
    assert opts.checks == {"launch_limits": False, "bounds": True, "races": False,
                           "barriers": False, "uninitialized": False, "division_by_zero": False,
                           "wraparound": False}
    assert (opts.schedule, opts.seed, opts.watchdog_s, opts.trace) == ("ordered", 3, 30.0, None)
    assert type(opts.seed) is int


def test_op_arguments_are_checked():
    _raises(OpInputError, "gemm: alpha must be a number, got NoneType None",
            lambda: ops.gemm(X, X, alpha=None, backend=BE))
    _raises(OpInputError, "gemm: beta must be a finite number, got nan",
            lambda: ops.gemm(X, X, X, beta=float("nan"), backend=BE))
    _raises(OpInputError, "attention: causal must be True or False, got str 'no'",
            lambda: ops.attention(Q, Q, Q, causal="no", backend=BE))
    _raises(OpInputError, "gemm: trans_a must be True or False, got int 1",
            lambda: ops.gemm(X, X, trans_a=1, backend=BE))
    _raises(OpInputError, "gemm: unknown variant ['tiled']; choose one of 'naive', 'tiled', "
            "'library'", lambda: ops.gemm(X, X, variant=["tiled"], backend=BE))
    _raises(OpInputError, "gemm: backend must be a gpukit backend (gpukit.get_backend()) or "
            "None, got str", lambda: ops.gemm(X, X, backend="cpu"))


def test_ops_free_their_device_copies_when_they_work_and_when_they_raise():
    before = _snapshot()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImplicitTransferWarning)
        result = ops.gemm(X, X, backend=BE)
        assert _snapshot() != before  # the result is on the device, and only it
        BE.free(result)
        assert _snapshot() == before
        for call in (lambda: ops.reduce("sum", np.ones(10_000, np.float32), backend=BE),
                     lambda: ops.attention(Q, Q, Q, backend=BE),
                     lambda: ops.binary("add", X, X, backend=BE)):
            BE.free(call())
            assert _snapshot() == before
    c = BE.to_device(np.zeros((4, 4), np.float32))
    before = _snapshot()
    with pytest.raises(OpInputError, match="c shares memory with a"):
        ops.gemm(c, X, c, backend=BE)  # a host b is never copied: the check comes first
    assert _snapshot() == before
    BE.free(c)


def test_an_op_that_fails_after_copying_its_inputs_frees_the_copies():
    small = dataclasses.replace(gpukit.get_profile("T4"), name="T4 with 2 KiB", memory_bytes=2048)
    backend = CPUBackend(device=small)
    a = np.ones((16, 16), np.float32)  # 1 KiB: a and b fit, the result does not
    before = _snapshot(backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImplicitTransferWarning)
        with pytest.raises(OutOfMemoryError, match="requested 1.00 KiB"):
            ops.gemm(a, a, backend=backend)
    assert _snapshot(backend) == before and not backend.memory.live


def test_a_to_device_that_exceeds_the_host_budget_leaves_nothing_allocated():
    backend = CPUBackend(host_memory_budget_bytes=1 << 20)
    before = _snapshot(backend)
    with pytest.raises(HostMemoryBudgetError, match="simulating this needs 4.00 MiB"):
        backend.to_device(np.zeros(1 << 20, np.float32))
    assert _snapshot(backend) == before and not backend.memory.live


def test_a_factory_that_returns_no_backend_gets_a_clear_error(monkeypatch):
    monkeypatch.setattr(gpukit.backends, "_FACTORIES", dict(gpukit.backends._FACTORIES))
    gpukit.register_backend("broken", lambda: None)
    with pytest.raises(BackendError, match=re.escape(
            "the factory registered for backend 'broken' returned None (NoneType), not a gpukit "
            "Backend; a factory passed to register_backend must return an instance of a "
            "gpukit.backends.Backend subclass")):
        gpukit.get_backend("broken")
    assert gpukit.available_backends()["broken"].startswith("BackendError: the factory")


def test_a_lambda_on_a_continuation_line_is_refused_as_a_kernel():
    kernels = [lambda a: None,
               lambda a:
               None]
    with pytest.raises(UnsupportedKernelError, match=re.escape(
            "kernel '<lambda>' is a lambda; write kernels with def (numba-cuda compiles "
            "lambdas only as device functions of other kernels)")):
        BE.compile_kernel(kernels[1])


def test_big_endian_arrays_work_both_ways():
    host = np.arange(N, dtype=">f4")
    device = BE.to_device(host)
    assert BE.to_host(device).dtype == np.float32
    np.testing.assert_array_equal(BE.to_host(device), np.arange(N, dtype=np.float32))
    with pytest.warns(ImplicitTransferWarning):
        BE.launch_kernel(twice, 1, N, host)  # copied in, doubled, copied back in its byte order
    assert host.dtype == np.dtype(">f4")
    np.testing.assert_array_equal(host, 2 * np.arange(N))
    out = np.zeros(N, ">f4")
    BE.to_host(device, out=out)
    np.testing.assert_array_equal(out, np.arange(N))
    BE.free(device)


def test_freed_arrays_and_exercise_misuse_are_refused():
    dead = BE.to_device(np.ones(4, np.float32))
    BE.free(dead)
    with pytest.raises(InvalidDeviceArrayError, match="use after free"):
        BE.launch_kernel(twice, 1, 4, dead)
    with pytest.raises(ExerciseUsageError, match=r"^unknown exercise 'mapp'; did you mean 'map'"):
        check(vadd, "mapp", quiet=True)
    with pytest.raises(ExerciseUsageError, match="check expects your kernel function"):
        check(42, "map", quiet=True)


@pytest.mark.parametrize("value", [0.0, math.inf, -1.0])
def test_flops_must_be_finite_and_not_negative(value):
    if value == 0.0:
        record = BE.launch_kernel(vadd, 1, N, A, A, OUT, flops=value)
        assert record.extra["flops"] == 0.0
        return
    with pytest.raises(InvalidOptionError, match="flops must be a finite number >= 0 or None"):
        BE.launch_kernel(vadd, 1, N, A, A, OUT, flops=value)
