"""gpukit.widgets driven programmatically: set values as a user would, then check that the summary
and the figure changed, and that every number equals the pure modules' (or a numpy reference)."""

from __future__ import annotations

import base64
import html
import math

import ipywidgets as ipw
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

from gpukit.backends.cpu import CPUBackend, modeled_copy_ms
from gpukit.devices import get_profile, list_profiles
from gpukit.errors import LaunchConfigError
from gpukit.inspect import (
    InspectSignatureError,
    InspectUnavailableError,
    kernel_occupancy,
    unavailable_reason,
)
from gpukit.occupancy import best_block_size, calculator_curves, occupancy
from gpukit.timing import Timing
from gpukit.transfers import BandwidthRow
from gpukit.widgets import (
    WidgetControlError,
    block_size_timing,
    launch_geometry,
    memory_monitor,
    occupancy_explorer,
    plan_launch,
    timeline_view,
    timing_plot,
    transfer_bandwidth,
)

FAST = settings(max_examples=12, deadline=None)


def scale(a, n):
    i = cuda.grid(1)
    if i < n:
        a[i] = 2 * a[i]


def needs_shared(a):
    tile = cuda.shared.array(256, dtype=np.float32)
    i = cuda.grid(1)
    tile[cuda.threadIdx.x] = a[i]
    cuda.syncthreads()
    a[i] = tile[cuda.blockDim.x - 1 - cuda.threadIdx.x]


def _png(widget) -> bytes:
    return widget.png


# -- the common API ----------------------------------------------------------------------------

def test_every_widget_has_the_programmatic_api():
    be = CPUBackend("T4")
    be.to_device(np.ones(8, np.float32))
    widgets = [launch_geometry(), occupancy_explorer(), memory_monitor(be, auto_refresh=False),
               timeline_view(be, auto_refresh=False),
               timing_plot({32: Timing((1.0,), "wall", "cpu")})]
    for w in widgets:
        assert isinstance(w.widget, ipw.VBox) and w.summary and w.figure.axes
        assert _png(w).startswith(b"\x89PNG")
        bundle = w._repr_mimebundle_()
        # nbval compares text/plain: it is the summary; JupyterLab shows the live widget
        assert bundle["text/plain"] == w.summary
        assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == \
            w.widget.model_id
        assert base64.b64decode(bundle["image/png"]) == _png(w)
        assert w.summary in html.unescape(w._text.value)  # shown beside the figure


def test_set_rejects_unknown_controls_and_values_no_user_could_pick():
    w = launch_geometry(n=100, threads_per_block=32)
    with pytest.raises(WidgetControlError, match=r"launch_geometry has no control 'blocks'; "
                       r"its controls are: n, threads_per_block"):
        w.set(blocks=4)
    with pytest.raises(WidgetControlError, match=r"threads_per_block=2048 is outside the "
                       r"slider's range 1\.\.1024"):
        w.set(threads_per_block=2048)
    with pytest.raises(WidgetControlError, match=r"n must be an int, got float 10\.5"):
        w.set(n=10.5)
    with pytest.raises(WidgetControlError, match=r"n must be an int, got bool True"):
        w.set(n=True)
    assert w.values == {"n": 100, "threads_per_block": 32}  # nothing changed
    o = occupancy_explorer()
    with pytest.raises(WidgetControlError, match=r"device='GTX 480' is not one of the choices: "
                       r"T4, V100, A100 40GB"):
        o.set(device="GTX 480")
    with pytest.raises(WidgetControlError, match=r"threads_per_block must be an int from 32 to "
                       r"1024, got 2000"):
        occupancy_explorer(threads_per_block=2000)


def test_set_redraws_once_for_several_controls():
    w = launch_geometry(n=100, threads_per_block=32)
    drawn = []
    w._listeners.append(lambda widget: drawn.append(widget.summary))
    w.set(n=1000, threads_per_block=256)
    assert len(drawn) == 1 and "kernel[4, 256]" in drawn[0]
    w.controls["n"].value = 1025  # a user moving one slider redraws at once
    assert len(drawn) == 2 and "kernel[5, 256]" in w.summary


# -- launch geometry ---------------------------------------------------------------------------

@FAST
@given(n=st.integers(1, 5000), threads_per_block=st.integers(1, 1024))
def test_plan_launch_1d_against_numpy(n, threads_per_block):
    geo = plan_launch(n, threads_per_block)
    blocks = math.ceil(n / threads_per_block)
    index = np.arange(blocks)[:, None] * threads_per_block + np.arange(threads_per_block)
    assert geo.grid == (blocks,) and geo.threads == index.size
    assert geo.idle_threads == int((index >= n).sum())
    np.testing.assert_array_equal(geo.active_mask(), index < n)
    i = n - 1
    (b,), (t,) = geo.thread_of(i)
    assert b * threads_per_block + t == i and 0 <= t < threads_per_block
    assert geo.lanes_in_last_warp == threads_per_block - 32 * ((threads_per_block - 1) // 32)


@FAST
@given(rows=st.integers(1, 300), cols=st.integers(1, 300), bx=st.integers(1, 64),
       by=st.integers(1, 64))
def test_plan_launch_2d_against_numpy(rows, cols, bx, by):
    geo = plan_launch((rows, cols), (bx, by))
    gx, gy = math.ceil(cols / bx), math.ceil(rows / by)
    assert geo.grid == (gx, gy) and geo.threads == gx * gy * bx * by
    r, c = np.meshgrid(np.arange(gy * by), np.arange(gx * bx), indexing="ij")
    np.testing.assert_array_equal(geo.active_mask(), (r < rows) & (c < cols))
    assert geo.idle_threads == int(((r >= rows) | (c >= cols)).sum())
    (bkx, bky), (tx, ty) = geo.thread_of((rows - 1, cols - 1))
    assert (bky * by + ty, bkx * bx + tx) == (rows - 1, cols - 1)
    assert geo.valid == (bx * by <= 1024)


def test_plan_launch_errors():
    with pytest.raises(LaunchConfigError, match=r"n \(the data's shape\) must be positive, got 0"):
        plan_launch(0, 32)
    with pytest.raises(LaunchConfigError, match=r"threads_per_block \(x, y\) must be a tuple of 2 "
                       r"ints, got 16"):
        plan_launch((10, 10), 16)


def test_launch_geometry_1d_follows_its_sliders():
    w = launch_geometry(n=100, threads_per_block=32)
    assert w.summary.splitlines()[:2] == [
        "1D launch kernel[4, 32] over n = 100 elements",
        "4 blocks x 32 threads = 128 threads: 100 work, 28 idle (21.9%)"]
    assert "i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x" in w.summary
    assert "last element i = 99: block 3, thread 3: 3 * 32 + 3 = 99" in w.summary
    before = _png(w)
    w.set(threads_per_block=48)
    geo = plan_launch(100, 48)
    assert w.geometry == geo
    assert f"{geo.blocks} blocks x 48 threads = {geo.threads} threads" in w.summary
    assert "each block's last warp runs 16 of 32 lanes" in w.summary
    assert _png(w) != before
    # the picture: one row per block, idle threads (2) where i >= n
    image = np.asarray(w.figure.axes[0].images[0].get_array())
    np.testing.assert_array_equal(image == 2, ~geo.active_mask())
    assert w.figure.axes[0].get_title().startswith("kernel[3, 48]")


def test_launch_geometry_2d_and_invalid_blocks():
    w = launch_geometry(n=(10, 13), threads_per_block=(4, 4))
    assert w.summary.splitlines()[0] == \
        "2D launch kernel[(4, 3), (4, 4)] over a 10 x 13 array (rows x cols)"
    assert "130 work, 62 idle (32.3%)" in w.summary
    assert "last element [9, 12]: block (3, 2), thread (0, 1)" in w.summary
    w.set(block_x=40, block_y=40)
    assert list(w.controls) == ["rows", "cols", "block_x", "block_y"]
    assert ("cannot launch on the T4: kernel 'kernel': block (40, 40) has 1600 threads; the "
            "device allows at most 1024 threads per block") in w.summary
    image = np.asarray(w.figure.axes[0].images[0].get_array())
    assert image.shape == (40, 40) and (image == 2).sum() == 1600 - 130


# -- occupancy explorer ------------------------------------------------------------------------

_EXPLORER = []


def _shared_explorer():
    # One widget for all examples, moved from one configuration to the next like a user would.
    if not _EXPLORER:
        _EXPLORER.append(occupancy_explorer("T4"))
    return _EXPLORER[0]


@settings(max_examples=8, deadline=None)
@given(device=st.sampled_from([p.name for p in list_profiles()]),
       threads=st.integers(1, 32).map(lambda k: 32 * k), regs=st.integers(1, 255),
       smem=st.integers(0, 48 * 1024))
def test_occupancy_explorer_numbers_are_the_calculators(device, threads, regs, smem):
    w = _shared_explorer()
    w.set(device=device, threads_per_block=threads, regs_per_thread=regs, shared_mem_bytes=smem)
    expected = occupancy(device, threads, regs, smem)
    assert w.occupancy == expected
    assert w.summary.startswith(expected.describe())
    grid, block = best_block_size(device, regs, smem)
    if block:
        assert f"best block size (as cudaOccupancyMaxPotentialBlockSize): {block} threads, " \
               f"{grid} blocks" in w.summary
    assert w.figure.texts[0].get_text() == f"{expected.device}: {expected.summary()}"


def test_occupancy_explorer_draws_the_three_curves_with_the_current_point():
    w = occupancy_explorer("A100", threads_per_block=256, regs_per_thread=64)
    curves = calculator_curves("A100", 256, 64, 0)
    axes = w.figure.axes
    assert [ax.get_xlabel() for ax in axes] == [
        "Threads per block", "Registers per thread", "Shared memory per block (KiB)"]
    for ax, curve in zip(axes, curves.values()):
        line, marker = ax.get_lines()
        scale = 1024 if curve.parameter == "shared_mem_bytes" else 1
        np.testing.assert_allclose(line.get_xdata(), np.array(curve.xs) / scale)
        np.testing.assert_allclose(line.get_ydata(), np.array(curve.occupancies) * 100)
        assert marker.get_ydata()[0] == curve.current.occupancy * 100
    assert "limited by registers" in w.summary


def test_occupancy_explorer_device_changes_slider_ranges():
    w = occupancy_explorer("T4")
    assert w.controls["shared_mem_bytes"].max == get_profile("T4").cc.shared_mem_per_block_optin
    # in order: the device first, so 200 KiB fits the H100's range
    w.set(device="h100", shared_mem_bytes=200 * 1024)
    assert w.values["device"] == "H100 SXM"
    assert w.controls["shared_mem_bytes"].max == 227 * 1024
    assert w.occupancy == occupancy("H100 SXM", 256, 32, 200 * 1024)
    w.set(device="T4")  # the slider clamps to the T4's 64 KiB, as it would for a user
    assert w.values["shared_mem_bytes"] == 64 * 1024
    assert w.occupancy == occupancy("T4", 256, 32, 64 * 1024)


@pytest.mark.skipif(unavailable_reason() is not None,
                    reason=f"ptxas unavailable: {unavailable_reason()}")
def test_occupancy_explorer_with_a_kernel_uses_ptxas_resources():
    w = occupancy_explorer("T4", kernel=needs_shared, signature="void(float32[:])")
    assert list(w.controls) == ["device", "threads_per_block", "regs_per_thread",
                                "dynamic_shared_bytes"]
    assert w.resources.shared_mem_bytes == 1024 and w.controls["regs_per_thread"].disabled
    w.set(threads_per_block=512, dynamic_shared_bytes=8192)
    expected = kernel_occupancy(needs_shared, 512, "T4", "void(float32[:])", 8192)
    assert w.occupancy == expected and w.summary.startswith(expected.describe())
    assert f"kernel needs_shared: {w.resources}" in w.summary
    with pytest.raises(WidgetControlError, match=r"control 'regs_per_thread' is disabled \(the "
                       r"kernel's registers come from ptxas: \d+ per thread on sm_75\)"):
        w.set(regs_per_thread=20)
    w.set(device="A100")
    assert w.resources.arch == "sm_80"
    assert w.occupancy == kernel_occupancy(needs_shared, 512, "A100", "void(float32[:])", 8192)
    with pytest.raises(InspectSignatureError):
        occupancy_explorer("T4", kernel=scale, signature="void(float32[:], not_a_type)")


def test_occupancy_explorer_without_ptxas_falls_back_loudly(monkeypatch):
    def unavailable(*args, **kwargs):
        raise InspectUnavailableError("ptxas not found; install it with: pip install gpukit[inspect]")

    monkeypatch.setattr("gpukit.widgets.occupancy.resources", unavailable)
    w = occupancy_explorer("T4", kernel=scale, signature="void(float32[:], int32)")
    assert w.resources is None and not w.controls["regs_per_thread"].disabled
    assert "could not read the kernel's resources (ptxas not found; install it with: pip " \
           "install gpukit[inspect]); the sliders are the calculator's" in w.summary
    w.set(regs_per_thread=64)
    assert w.occupancy == occupancy("T4", 256, 64, 0)
    with pytest.raises(TypeError, match=r"needs signature="):
        occupancy_explorer("T4", kernel=scale)


# -- timing ------------------------------------------------------------------------------------

def _timings() -> dict[int, Timing]:
    wall = {32: (4.0, 5.0, 6.0), 128: (2.0, 2.5, 3.0), 512: (3.0, 3.0, 3.5)}
    return {b: Timing(samples, "wall", "cpu", "k", note="simulation wall time",
                      modeled=Timing((0.01,), "modeled", "cpu", "k", note="roofline"))
            for b, samples in wall.items()}


WALL_OR_MODEL = ("wall clock: the host's time (on the simulator: the simulation, not a GPU)",
                 "modeled GPU time (not measured)")


def test_timing_plot_labels_measured_and_modeled_series():
    w = timing_plot(_timings())
    assert w.values["series"] == "modeled"  # the simulator: modeled GPU time by default
    assert [line.get_label() for line in w.figure.axes[0].get_lines()] == [WALL_OR_MODEL[1]]
    w.set(series="all")
    ax = w.figure.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == list(WALL_OR_MODEL) and "measured" not in labels[0]
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [5.0, 2.5, 3.0])  # the medians
    assert f"{WALL_OR_MODEL[0]}: fastest 2.5 ms at 128, slowest 5 ms at 32" in w.summary
    assert f"{WALL_OR_MODEL[1]}: 0.01 ms at every threads_per_block" in w.summary
    assert "(wall: simulation wall time)" in w.summary
    w.set(series="clock")
    assert [line.get_label() for line in w.figure.axes[0].get_lines()] == [WALL_OR_MODEL[0]]
    assert "modeled" not in w.summary.replace("(modeled", "")
    w.set(series="all", log_scale=True)
    assert w.figure.axes[0].get_xscale() == "log"


def test_timing_plot_rows_and_bandwidth():
    rows = [{"n": n, "ms": n / 1000, "kind": "cuda-events"} for n in (1000, 10_000, 100_000)]
    bandwidth = [BandwidthRow(s, s / 8e6, 2.0 if s == 1024 else 8.0, d, p, k)
                 for s in (1024, 1 << 20) for d in ("h2d", "d2h") for p in (True, False)
                 for k in ("wall", "modeled")]
    w = timing_plot(rows, bandwidth, x="n")
    assert w.values == {"view": "both", "series": "all", "log_scale": True, "direction": "all"}
    kernel_ax, bw_ax = w.figure.axes
    assert kernel_ax.get_xlabel() == "problem size n (elements)"
    assert "measured: CUDA events: fastest 1 ms at 1,000, slowest 100 ms at 100,000" in w.summary
    assert len(bw_ax.get_lines()) == 8
    assert f"h2d pinned, {WALL_OR_MODEL[1]}: 8 GB/s at 1 MiB" in w.summary
    w.set(view="bandwidth", direction="d2h", series="modeled")
    (ax,) = w.figure.axes
    assert sorted(line.get_label() for line in ax.get_lines()) == [
        f"d2h pageable, {WALL_OR_MODEL[1]}", f"d2h pinned, {WALL_OR_MODEL[1]}"]
    with pytest.raises(WidgetControlError, match=r"timing_plot needs kernel_times=, bandwidth= "
                       r"or both"):
        timing_plot()
    with pytest.raises(WidgetControlError, match=r"each kernel-time row needs 'n', 'ms' and "
                       r"'kind'"):
        timing_plot([{"n": 1, "ms": 2.0}], x="n")


def test_block_size_timing_and_transfer_bandwidth_run_the_timing_module():
    be = CPUBackend("T4")
    a = be.to_device(np.ones(256, np.float32))
    w = block_size_timing(scale, 256, a, 256, block_sizes=(32, 128), backend=be, repeat=1)
    (modeled,) = w.figure.axes[0].get_lines()  # the simulator: the modeled series by default
    assert list(modeled.get_xdata()) == [32, 128] and modeled.get_label() == WALL_OR_MODEL[1]
    w.set(series="all")
    wall, _ = w.figure.axes[0].get_lines()
    assert wall.get_label() == WALL_OR_MODEL[0]
    assert {r.block for r in be.launches} == {(32, 1, 1), (128, 1, 1)}
    assert {r.grid for r in be.launches} == {(8, 1, 1), (2, 1, 1)}
    np.testing.assert_array_equal(a.copy_to_host(), 2.0 ** (len(be.launches)))
    t = transfer_bandwidth(be, sizes=[4096, 1 << 16], repeat=1)
    modeled_rows = [r for r in t.bandwidth if r.kind == "modeled"]
    assert len(t.bandwidth) == 16 and len(modeled_rows) == 8
    for r in modeled_rows:
        ms = modeled_copy_ms(be.profile, r.direction, r.size_bytes, r.pinned)
        assert r.gb_per_s == pytest.approx(r.size_bytes / ms / 1e6)


# -- memory monitor and timeline ---------------------------------------------------------------

def test_memory_monitor_follows_allocations_and_frees():
    be = CPUBackend("T4")
    w = memory_monitor(be, auto_refresh=False)
    assert w.info == be.memory_info() and "pressure low" in w.summary
    first = _png(w)
    big = be.allocate((14 * 1024**3,), "uint8")  # lazily materialised: costs no host memory
    w.refresh()
    info = be.memory_info()
    assert w.info == info and info.pressure == "high"
    assert f"used {info.used_bytes / 2**20:,.2f} MiB ({info.used_bytes:,} bytes)" in w.summary
    assert f"{info.used_fraction:.1%} used: pressure high" in w.summary
    assert _png(w) != first
    be.free(big)
    w.set(unit="GiB")  # set redraws without reading again
    assert w.info.pressure == "high" and "GiB" in w.summary
    w.refresh()
    assert w.info.used_bytes == 0 and "pressure low" in w.summary
    assert "highest reading so far: 14.00 GiB" in w.summary
    history = w.figure.axes[1].get_lines()[0].get_ydata()
    np.testing.assert_allclose(history, [0, info.used_bytes / 2**30, 0])
    with pytest.raises(WidgetControlError, match=r"unit must be one of KiB, MiB, GiB"):
        memory_monitor(be, unit="MB")


def test_timeline_view_draws_the_backends_timeline():
    be = CPUBackend("T4")
    w = timeline_view(be, auto_refresh=False)
    assert w.summary == "timeline: no events yet (copy or launch something, then .refresh())"
    a = be.to_device(np.ones(1024, np.float32))
    be.launch_kernel(scale, 4, 256, a, 1024)
    a.copy_to_host()
    w.refresh()
    events = be.timeline()
    assert w.events == events and [e.kind for e in events] == ["h2d", "kernel", "d2h"]
    assert w.summary.splitlines()[0] == (
        f"modeled timeline: 3 events on 1 stream (0), {events[0].start_ms:.4g} to "
        f"{events[-1].end_ms:.4g} ms")
    assert f"  kernel: 1 event, {events[1].duration_ms:.4g} ms in total" in w.summary
    assert "(modeled from the device profile, not measured)" in w.summary
    w.set(by="engine")
    assert "3 events on 3 engines (compute, copy d2h, copy h2d)" in w.summary
    assert [t.get_text() for t in w.figure.axes[0].get_yticklabels()] == \
        ["compute", "copy d2h", "copy h2d"]
    assert timeline_view(events, by="engine", auto_refresh=False).summary == w.summary


def test_in_ipython_a_bare_widget_shows_its_summary_and_monitors_refresh_after_cells():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    published = []
    shell.display_pub.publish = lambda data, metadata=None, **kw: published.append(data)
    try:
        shell.user_ns["be"] = CPUBackend("T4")
        shell.run_cell("from gpukit.widgets import memory_monitor\nmm = memory_monitor(be)")
        mm = shell.user_ns["mm"]
        assert mm.info.used_bytes == 0
        shell.run_cell("a = be.allocate((1 << 20,), 'float32')")
        assert mm.info.used_bytes == 4 << 20 and "pressure low" in mm.summary  # no refresh call
        shell.run_cell("mm")
        assert published[-1]["text/plain"] == mm.summary
        assert "application/vnd.jupyter.widget-view+json" in published[-1]
        mm.close()
        shell.run_cell("be.free(a)")
        assert mm.info.used_bytes == 4 << 20  # closed: it no longer follows the cells
    finally:
        InteractiveShell.clear_instance()
