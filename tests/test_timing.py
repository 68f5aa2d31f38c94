"""gpukit.timing, gpukit.transfers, gpukit.timing_plots and the simulator's streams model
(gpukit.sim.streams); the CUDA code paths run under Numba's simulator in a subprocess (last)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from cudasim_runner import run_checks
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

from gpukit import timing
from gpukit.backends.cpu import CPUBackend, modeled_copy_ms
from gpukit.devices import get_profile
from gpukit.errors import ImplicitTransferWarning, InvalidArgumentError
from gpukit.sim.streams import PinnedArray, is_pinned
from gpukit.timing import (
    Timing,
    bandwidth_sweep,
    launch_log,
    model_kernel,
    model_launch,
    time_kernel,
    timer,
)

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
T4 = get_profile("T4")


def vadd(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


def scale(x, a):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = x[i] * a


@pytest.fixture
def be() -> CPUBackend:
    return CPUBackend(device="T4")


def _vadd_args(be: CPUBackend, n: int):
    x = be.to_device(np.arange(n, dtype=np.float32))
    y = be.to_device(np.ones(n, np.float32))
    return x, y, be.allocate(n, "float32")


def _positive_finite(values) -> bool:
    return all(math.isfinite(v) and v > 0 for v in values)


# -- Timing ------------------------------------------------------------------------------------
def test_timing_statistics_and_labels():
    t = Timing((3.0, 1.0, 2.0), "wall", "cpu", "k", first_launch_ms=9.0)
    assert (t.median_ms, t.min_ms, t.max_ms, t.mean_ms) == (2.0, 1.0, 3.0, 2.0)
    assert t.samples == (3.0, 1.0, 2.0) and t.modeled is None
    assert "wall" in str(t) and "first launch 9 ms" in str(t)


def test_timing_rejects_unknown_kinds_and_empty_samples():
    with pytest.raises(ValueError, match="kind must be one of cuda-events, wall, modeled"):
        Timing((1.0,), "measured", "cpu")
    with pytest.raises(ValueError, match="at least one sample"):
        Timing((), "wall", "cpu")


# -- the roofline ------------------------------------------------------------------------------
@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10**12), st.integers(1, 10**12), st.sampled_from(["T4", "A100", "H100"]))
def test_roofline_grows_with_bytes(small, extra, device):
    profile = get_profile(device)
    a, b = model_kernel(profile, small), model_kernel(profile, small + extra)
    assert b.ms > a.ms and b.memory_ms > a.memory_ms
    assert a.ms == pytest.approx(profile.launch_overhead_us * 1e-3
                                 + small / (profile.memory_bandwidth_gb_s * 1e9) * 1e3)


def test_roofline_terms_and_bound():
    assert model_kernel(T4, 0).bound == "launch"
    memory = model_kernel(T4, 320 * 10**6)  # 1 ms at 320 GB/s
    assert memory.memory_ms == pytest.approx(1.0) and memory.bound == "memory"
    assert memory.flops is None and "flops not declared" in memory.describe()
    compute = model_kernel(T4, 320 * 10**6, flops=8.1e10)  # 10 ms at 8.1 TFLOP/s
    assert compute.compute_ms == pytest.approx(10.0) and compute.bound == "compute"
    assert compute.ms == pytest.approx(T4.launch_overhead_us * 1e-3 + 10.0)
    with pytest.raises(InvalidArgumentError, match="^bytes_moved must be an int >= 0, got -1$"):
        model_kernel(T4, -1)


# -- time_kernel on the simulator -------------------------------------------------------------
def test_time_kernel_reports_wall_time_and_a_labelled_model(be):
    n = 4096
    x, y, out = _vadd_args(be, n)
    t = time_kernel(vadd, n // 256, 256, x, y, out, backend=be, repeat=2)
    assert (t.kind, t.backend, t.label, len(t.samples)) == ("wall", "cpu", "vadd", 2)
    assert _positive_finite(t.samples) and _positive_finite([t.first_launch_ms])
    assert "not a GPU time" in t.note
    m = t.modeled
    assert (m.kind, m.backend, len(m.samples)) == ("modeled", "cpu", 2)
    assert m.details["bytes_moved"] == 3 * 4 * n and m.details["bound"] == "launch"
    assert m.median_ms == pytest.approx(model_launch(T4, be.launches[-1]).ms)
    assert m.details["breakdown"] is not None and m.median_ms > model_kernel(T4, 3 * 4 * n).ms
    assert "T4" in m.note and "modeled" in str(t)
    np.testing.assert_array_equal(be.to_host(out), np.arange(n, dtype=np.float32) + 1)
    assert len(be.launches) == 3  # one warm-up, two timed


def test_more_bytes_take_longer_in_the_model(be):
    small = time_kernel(vadd, 4, 256, *_vadd_args(be, 1024), backend=be, repeat=1, warmup=0)
    big = time_kernel(vadd, 64, 256, *_vadd_args(be, 16384), backend=be, repeat=1, warmup=0)
    assert big.modeled.median_ms > small.modeled.median_ms
    assert small.first_launch_ms is None  # no warm-up: nothing reported apart


def test_declared_flops_feed_the_compute_term(be):
    args = _vadd_args(be, 1024)
    t = time_kernel(vadd, 4, 256, *args, backend=be, repeat=1, flops=8.1e9)
    assert t.modeled.details["flops"] == 8.1e9 and t.modeled.details["bound"] == "compute"
    # 4 blocks keep 4 of the T4's 40 SMs busy: a tenth of its peak, so 10 ms, not 1
    model = be.launches[-1].model_facts and model_launch(T4, be.launches[-1])
    assert model.compute_ms == pytest.approx(10.0)
    assert t.modeled.median_ms == pytest.approx(model.ms)
    assert 10.0 + T4.launch_overhead_us * 1e-3 <= model.ms < 10.01  # plus the hidden rest
    assert be.launches[-1].extra["flops"] == 8.1e9


def test_time_kernel_finds_the_backend_of_a_compiled_kernel(be):
    k = be.compile_kernel(scale)
    t = time_kernel(k, 1, 32, be.to_device(np.ones(32, np.float32)), np.float32(2), repeat=1)
    assert t.backend == "cpu" and t.label == "scale" and len(be.launches) == 2


@pytest.mark.parametrize(("option", "value", "message"), [
    ("repeat", 0, "repeat must be an int from 1 to 10000, got 0"),
    ("repeat", 1.5, "repeat must be an int from 1 to 10000, got float 1.5"),
    ("repeat", 2**64, "repeat must be an int from 1 to 10000, got 18446744073709551616"),
    ("warmup", -1, "warmup must be an int from 0 to 10000, got -1"),
])
def test_time_kernel_rejects_bad_counts(be, option, value, message):
    with pytest.raises(InvalidArgumentError, match=f"^{message}$"):
        time_kernel(vadd, 1, 32, *_vadd_args(be, 32), backend=be, **{option: value})


# -- timer ---------------------------------------------------------------------------------------
def test_timer_region_wall_and_modeled(be):
    host = np.ones(1 << 16, np.float32)
    with timer(be, label="copies") as t:
        d = be.to_device(host)
        be.to_host(d)
    timing_ = t.timing
    assert (timing_.kind, timing_.label, timing_.backend) == ("wall", "copies", "cpu")
    assert _positive_finite(timing_.samples)
    expected = (modeled_copy_ms(T4, "h2d", host.nbytes, False)
                + modeled_copy_ms(T4, "d2h", host.nbytes, False))
    assert timing_.modeled.kind == "modeled"
    assert timing_.modeled.median_ms == pytest.approx(expected)


def test_timer_has_no_timing_inside_the_block(be):
    with timer(be) as t, pytest.raises(RuntimeError, match="available after the `with timer"):
        t.timing  # noqa: B018


# -- transfers and bandwidth ---------------------------------------------------------------------
def test_bandwidth_sweep_rows_on_the_simulator(be):
    sizes = [4096, 1 << 16, 1 << 20]
    rows = bandwidth_sweep(be, sizes, "h2d", pinned=(False, True), repeat=1)
    assert len(rows) == 2 * len(sizes) * 2
    assert {(r.kind, r.pinned) for r in rows} == {(k, p) for k in ("wall", "modeled")
                                                for p in (False, True)}
    for r in rows:
        assert r.direction == "h2d" and r.size_bytes in sizes
        assert _positive_finite([r.ms, r.gb_per_s])
        assert r.gb_per_s == pytest.approx(r.size_bytes / (r.ms * 1e-3) / 1e9)
    modeled = {(r.pinned, r.size_bytes): r.ms for r in rows if r.kind == "modeled"}
    for pinned in (False, True):
        times = [modeled[pinned, s] for s in sizes]
        assert times == sorted(times) and len(set(times)) == len(times)  # bigger: longer
    assert all(modeled[True, s] < modeled[False, s] for s in sizes)  # pinned: faster
    assert modeled[True, 1 << 20] == modeled_copy_ms(T4, "h2d", 1 << 20, True)


@pytest.mark.parametrize("direction", ["d2h", "d2d"])
def test_bandwidth_sweep_other_directions(be, direction):
    rows = bandwidth_sweep(be, [1 << 12, 1 << 18], direction, pinned=True, repeat=1)
    assert [(r.kind, r.size_bytes) for r in rows] == [
        ("wall", 1 << 12), ("modeled", 1 << 12), ("wall", 1 << 18), ("modeled", 1 << 18)]
    assert all(r.direction == direction and _positive_finite([r.ms]) for r in rows)
    assert {r.pinned for r in rows} == ({None} if direction == "d2d" else {True})
    assert be.memory.used_bytes == 0  # the sweep frees what it allocates


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"direction": "up"}, "direction must be one of h2d, d2h, d2d, got 'up'"),
    ({"sizes": [0]}, "sizes must be positive ints of bytes"),
    ({"sizes": []}, "sizes must be positive ints of bytes"),
    ({"pinned": "yes"}, "pinned must be True, False or a sequence of them"),
    ({"repeat": 0}, "repeat must be an int from 1 to 10000, got 0"),
    ({"sizes": [2**31]}, "sizes must be positive ints of bytes, at most 1,073,741,824"),
    ({"sizes": 1024}, "sizes must be positive ints of bytes, got 1024"),
])
def test_bandwidth_sweep_rejects_bad_arguments(be, kwargs, message):
    with pytest.raises(InvalidArgumentError, match=message):
        bandwidth_sweep(be, **{"sizes": [1024], **kwargs})


def test_pinned_arrays_are_recorded_as_pinned(be):
    pinned = be.pinned_array((4, 8), "float64")
    assert isinstance(pinned, PinnedArray) and pinned.shape == (4, 8)
    assert is_pinned(pinned) and is_pinned(pinned[1:]) and is_pinned(pinned.T)
    assert not is_pinned(pinned + 1) and type(pinned + 1) is np.ndarray
    assert not is_pinned(pinned.copy()) and not is_pinned(np.ones(3))
    alias = pinned
    pinned += 1  # in place: still the same pinned array
    assert pinned is alias and is_pinned(pinned) and float(pinned.sum()) == 32.0
    pinned[...] = 7.0
    dev = be.to_device(pinned)
    out = be.pinned_array((4, 8), "float64")
    be.to_host(dev, out=out)
    be.copy_to_device(pinned, dev)
    be.to_host(dev)
    assert [(t.direction, t.pinned) for t in be.transfers] == [
        ("h2d", True), ("d2h", True), ("h2d", True), ("d2h", False)]
    assert be.transfers[0].modeled_ms == modeled_copy_ms(T4, "h2d", pinned.nbytes, True)
    np.testing.assert_array_equal(out, np.full((4, 8), 7.0))


# -- streams and the modeled timeline ----------------------------------------------------------
def _overlap(a, b) -> bool:
    return a.start_ms < b.end_ms and b.start_ms < a.end_ms


def test_copy_on_one_stream_overlaps_a_kernel_on_another(be):
    n = 1 << 16
    x, y, out = _vadd_args(be, n)
    be.reset_timeline()
    s1, s2 = be.stream(), be.stream()
    be.to_device(be.pinned_array(n), stream=s1)
    k = be.compile_kernel(vadd)
    k[n // 256, 256, s2](x, y, out)
    copy, kernel = be.timeline()
    assert (copy.kind, copy.stream, copy.engine, copy.nbytes, copy.pinned) == (
        "h2d", s1.id, "copy h2d", n * 4, True)
    assert (kernel.kind, kernel.stream, kernel.engine, kernel.kernel) == (
        "kernel", s2.id, "compute", "vadd")
    assert _overlap(copy, kernel) and copy.label == kernel.label == "modeled"
    assert kernel.duration_ms == pytest.approx(model_launch(T4, be.launches[-1]).ms)
    assert copy.duration_ms == pytest.approx(modeled_copy_ms(T4, "h2d", n * 4, True))


def test_one_copy_engine_serialises_copies_of_both_directions():
    profile = dataclasses.replace(T4, copy_engines=1)
    be1, be2 = CPUBackend(device=profile), CPUBackend(device="T4")
    for backend in (be1, be2):
        dev = backend.to_device(np.ones(1 << 16, np.float32))
        backend.reset_timeline()
        s1, s2, s3 = backend.stream(), backend.stream(), backend.stream()
        backend.to_device(backend.pinned_array(1 << 16), stream=s1)
        backend.to_device(backend.pinned_array(1 << 16), stream=s2)
        backend.to_host(dev, out=backend.pinned_array(1 << 16), stream=s3)
    a, b, c = be1.timeline()
    assert {a.engine, b.engine, c.engine} == {"copy"}
    assert not _overlap(a, b) and not _overlap(b, c) and b.start_ms == a.end_ms
    a, b, c = be2.timeline()  # two engines: same direction serialises, h2d and d2h overlap
    assert not _overlap(a, b) and _overlap(a, c) and c.engine == "copy d2h"


def test_the_default_stream_and_pageable_memory_serialise(be):
    n = 1 << 16
    x, y, out = _vadd_args(be, n)
    be.reset_timeline()
    s1, s2 = be.stream(), be.stream()
    be.to_device(be.pinned_array(n), stream=s1)
    be.launch_kernel(vadd, n // 256, 256, x, y, out)  # default stream: waits for s1
    copy, kernel = be.timeline()
    assert kernel.stream == 0 and kernel.start_ms == copy.end_ms
    be.reset_timeline()
    be.to_device(np.ones(n, np.float32), stream=s1)  # pageable: the host waits for the copy
    be.launch_kernel(vadd, n // 256, 256, x, y, out, stream=s2)
    copy, kernel = be.timeline()
    assert copy.pinned is False and kernel.start_ms == copy.end_ms


def test_events_measure_modeled_time_between_points(be):
    s = be.stream()
    start = s.record_event()
    be.to_device(be.pinned_array(1 << 20), stream=s)
    end = s.record_event()
    assert start.kind == "modeled" and start.query()
    assert start.elapsed_ms(end) == pytest.approx(modeled_copy_ms(T4, "h2d", 1 << 22, True))
    assert start.elapsed_time(end) == start.elapsed_ms(end)
    with pytest.raises(TypeError, match="another event recorded on the same backend"):
        start.elapsed_ms(CPUBackend().stream().record_event())


def test_wait_event_orders_streams_and_synchronize_moves_the_host(be):
    n = 1 << 16
    x, y, out = _vadd_args(be, n)
    be.reset_timeline()
    s1, s2 = be.stream(), be.stream()
    be.to_device(be.pinned_array(n), stream=s1)
    s2.wait_event(s1.record_event())
    be.launch_kernel(vadd, n // 256, 256, x, y, out, stream=s2)
    copy, kernel = be.timeline()
    assert kernel.start_ms == copy.end_ms
    s2.synchronize()
    with s1.auto_synchronize():
        be.to_device(be.pinned_array(n), stream=s1)
    third = be.timeline()[-1]
    assert third.start_ms == kernel.end_ms  # the host waited for s2 before issuing it


def test_implicit_transfers_surround_their_kernel(be):
    be.reset_timeline()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImplicitTransferWarning)
        be.launch_kernel(scale, 1, 64, np.ones(64, np.float32), np.float32(2))
    assert [e.kind for e in be.timeline()] == ["h2d", "kernel", "d2h"]
    events = be.timeline()
    assert events[0].end_ms <= events[1].start_ms and events[1].end_ms <= events[2].start_ms


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["h2d", "h2d pageable", "d2h", "kernel"]),
                          st.integers(0, 3), st.integers(1, 3)), min_size=1, max_size=10),
       st.integers(1, 3))
def test_timeline_invariants(ops, copy_engines):
    """Whatever is issued: streams run in order, an engine runs one thing at a time, and the
    default stream overlaps nothing. (The operations touch one array from several streams
    unordered: data races between streams, which this test of modeled times leaves unchecked.)"""
    be = CPUBackend(device=dataclasses.replace(T4, copy_engines=copy_engines),
                    checks={"races": False})
    dev = be.to_device(np.ones(1024, np.float32))
    be.reset_timeline()
    streams = [0, *(be.stream() for _ in range(3))]
    for kind, stream_index, size_kib in ops:
        stream, n = streams[stream_index], size_kib * 256
        if kind == "kernel":
            be.launch_kernel(scale, 4, 256, dev, np.float32(1), stream=stream)
        elif kind == "d2h":
            be.to_host(dev[:n], out=be.pinned_array(n), stream=stream or None)
        else:
            host = np.ones(n, np.float32) if kind == "h2d pageable" else be.pinned_array(n)
            be.copy_to_device(host, dev[:n], stream=stream or None)
    events = be.timeline()
    assert len(events) == len(ops)
    for i, a in enumerate(events):
        assert a.end_ms > a.start_ms >= 0 and a.label == "modeled"
        for b in events[i + 1:]:
            if a.stream == b.stream:
                assert b.start_ms >= a.end_ms  # in issue order
            if a.engine == b.engine or 0 in (a.stream, b.stream):
                assert not _overlap(a, b)


def test_streams_are_checked(be):
    dev = be.to_device(np.ones(4, np.float32))
    with pytest.raises(TypeError, match="stream must be backend.stream\\(\\) or 0"):
        be.to_host(dev, stream="s1")
    with pytest.raises(TypeError, match="belongs to another simulated device"):
        be.launch_kernel(scale, 1, 4, dev, np.float32(2), stream=CPUBackend().stream())
    with pytest.raises(TypeError, match="stream must be backend.stream\\(\\) or 0"):
        be.to_device(np.ones(4, np.float32), stream=object())
    assert len(be.transfers) == 1 and len(be.launches) == 0  # refused before doing anything


def test_reset_timeline(be):
    be.to_device(np.ones(8, np.float32))
    assert len(be.timeline()) == 1
    be.reset_timeline()
    assert be.timeline() == []
    be.to_device(np.ones(8, np.float32))
    assert be.timeline()[0].start_ms == 0.0


# -- the launch log ------------------------------------------------------------------------------
def test_launch_log_on_the_simulator(be):
    x, y, out = _vadd_args(be, 512)
    s = be.stream()
    be.launch_kernel(vadd, 2, 256, x, y, out, stream=s, flops=512)
    be.launch_kernel(vadd, (4, 1), (128, 1), x, y, out)
    first, second = launch_log(be, occupancy=False)
    assert (first.backend, first.kernel, first.grid, first.block, first.stream) == (
        "cpu", "vadd", (2, 1, 1), (256, 1, 1), s.id)
    assert first.occupancy is None and set(first.timings) == {"wall", "modeled"}
    assert first.bytes_moved == 3 * 4 * 512 and second.stream == 0
    assert _positive_finite(first.timings.values())
    assert first.record is be.launches[0] and "occupancy unknown" in str(first)


def test_launch_log_computes_occupancy_when_asked(be):
    be.launch_kernel(vadd, 2, 256, *_vadd_args(be, 512))
    (entry,) = launch_log(be)
    assert 0 < entry.occupancy <= 1 and entry.occupancy_source


# -- plots ---------------------------------------------------------------------------------------
def test_plot_timeline_rows_and_labels(be):
    n = 1 << 14
    x, y, out = _vadd_args(be, n)
    be.reset_timeline()
    s1, s2 = be.stream(), be.stream()
    be.to_device(be.pinned_array(n), stream=s1)
    be.launch_kernel(vadd, n // 256, 256, x, y, out, stream=s2)
    ax = timing.plot_timeline(be)
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"stream {s1.id}", f"stream {s2.id}"]
    assert "modeled" in ax.get_title() and "modeled" in ax.get_xlabel()
    ax = timing.plot_timeline(be.timeline(), by="engine")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["compute", "copy h2d"]
    with pytest.raises(ValueError, match="by must be 'stream' or 'engine'"):
        timing.plot_timeline(be, by="kind")
    be.reset_timeline()
    with pytest.raises(ValueError, match="no timeline events to plot"):
        timing.plot_timeline(be)
    matplotlib.pyplot.close("all")


def test_plot_bandwidth_labels_each_series(be):
    rows = bandwidth_sweep(be, [1024, 4096], "h2d", pinned=(False, True), repeat=1)
    ax = timing.plot_bandwidth(rows)
    assert sorted(line.get_label() for line in ax.get_lines()) == [
        "h2d pageable (modeled)", "h2d pageable (wall)", "h2d pinned (modeled)",
        "h2d pinned (wall)"]
    matplotlib.pyplot.close("all")


# -- the CUDA backend's code paths under Numba's CUDA simulator ---------------------------------
@pytest.mark.cudasim
def test_cuda_code_paths_under_numba_simulator(tmp_path):
    """tests/cudasim/timing_checks.py in a subprocess with NUMBA_ENABLE_CUDASIM=1."""
    results, output = run_checks(ROOT / "tests" / "cudasim" / "timing_checks.py", tmp_path)
    assert len(results) >= 9, f"too few checks ran:\n{output}"
    failed = {name: problems for name, problems in results.items() if problems}
    assert not failed, "\n".join(f"{n}: {p}" for n, ps in failed.items() for p in ps) + output
