"""gpukit.trace: recording launches on the simulator, and the counts, coalescing, bank-conflict
and diagram views, on kernels whose numbers are known by hand."""

from __future__ import annotations

import io
import math

import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda, float32

import gpukit.trace as gt
from gpukit.backends.cpu import CPUBackend
from gpukit.errors import GpukitError, KernelError, LaunchConfigError
from gpukit.trace.recorder import element_numbers

matplotlib.use("Agg")


# -- kernels -------------------------------------------------------------------------------------
def vadd(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] + b[i]


def copy(a, out):
    i = cuda.grid(1)
    out[i] = a[i]


def strided_read(a, out, stride):
    i = cuda.grid(1)
    out[i] = a[i * stride]


def reverse_block(a, out):
    tile = cuda.shared.array(8, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = a[i]
    cuda.syncthreads()
    out[i] = tile[7 - t]


def make_transpose(pad):
    width = 32 + pad  # a constant of the closure (numba-cuda needs a constant shape)

    def transpose(a, out):
        tile = cuda.shared.array((32, width), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tile[ty, tx] = a[ty, tx]
        cuda.syncthreads()
        out[ty, tx] = tile[tx, ty]
    return transpose


def shared_strided_write(stride):
    tile = cuda.shared.array(32 * 65, float32)
    tile[cuda.threadIdx.x * stride] = 1.0


def shared_broadcast(out):
    tile = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    tile[t] = t
    cuda.syncthreads()
    out[t] = tile[0]


def shared_f64(stride):
    tile = cuda.shared.array(64, np.float64)
    tile[cuda.threadIdx.x * stride] = 1.0


def histogram(a, bins):
    i = cuda.grid(1)
    cuda.atomic.add(bins, a[i] % 4, 1)


def with_local(a, out):
    i = cuda.grid(1)
    tmp = cuda.local.array(2, float32)
    tmp[0] = a[i]
    tmp[1] = tmp[0] * 2
    out[i] = tmp[1]


def do_nothing(out):
    pass


@pytest.fixture
def be():
    return CPUBackend()


def traced(be, kernel, grid, block, *args, **options):
    recorder = gt.Recorder(**options)
    record = be.launch_kernel(kernel, grid, block, *args, trace=recorder)
    return recorder.finish(record)


def f32(n, scale=1):
    return np.arange(n, dtype=np.float32) * scale


# -- the recording -------------------------------------------------------------------------------
def test_each_thread_access_is_recorded_with_array_index_kind_phase_and_line(be):
    a, out = be.to_device(f32(16)), be.allocate(16, np.float32)
    trace = traced(be, reverse_block, 2, 8, a, out)
    assert be.to_host(out).tolist() == [7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8]
    assert len(trace) == 64
    line = reverse_block.__code__.co_firstlineno
    got = [(x.array, x.space, x.index, x.kind, x.phase, x.lineno - line, x.text)
           for x in trace.accesses(thread=(1, 0, 0), block=(1, 0, 0))]
    assert got == [("a", "global", (9,), "read", 0, 4, "a[i]"),
                   ("tile", "shared", (1,), "write", 0, 4, "tile[t]"),
                   ("tile", "shared", (6,), "read", 1, 6, "tile[7 - t]"),
                   ("out", "global", (9,), "write", 1, 6, "out[i]")]
    first = trace.accesses(thread=1, block=1)[0]
    assert first.thread == (1, 0, 0) and first.block == (1, 0, 0)
    assert str(first).startswith("thread (1, 0, 0) of block (1, 0, 0): read a[9] (global")
    assert len(trace.accesses(block=(0, 0, 0), space="shared")) == 16
    assert trace.summary() == (
        "Trace of kernel 'reverse_block': grid (2, 1, 1) x block (8, 1, 1) (16 threads), "
        "64 memory accesses\n"
        "  a (global float32 (16,)): 16 reads\n"
        "  tile (shared float32 (8,)): 16 reads, 16 writes\n"
        "  out (global float32 (16,)): 16 writes")


def test_views_and_negative_strides_give_the_array_index_not_the_buffer_offset(be):
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    d = be.to_device(host)
    out = be.allocate(4, np.float32)

    def pick(m, out):
        i = cuda.grid(1)
        out[i] = m[i, 1]

    trace = traced(be, pick, 1, 4, d[::-1, 1:5:2], out)
    assert be.to_host(out).tolist() == host[::-1, 1:5:2][:, 1].tolist()
    assert [x.index for x in trace.accesses(array="m")] == [(0, 1), (1, 1), (2, 1), (3, 1)]


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_element_numbers_invert_any_slicing(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    base = np.arange(int(np.prod(shape)) * 4).reshape(tuple(s * 2 for s in shape[:1]) +
                                                     shape[1:] + (2,))
    slices = tuple(data.draw(st.sampled_from([slice(None), slice(None, None, -1),
                                              slice(1, None, 2), slice(None, None, -2)]))
                   for _ in range(base.ndim))
    view = base[slices]
    estrides = tuple(s // base.itemsize for s in view.strides)
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) \
        // base.itemsize
    index = np.array(list(np.ndindex(view.shape)), np.int64).reshape(-1, view.ndim)
    flat = offset + index @ np.array(estrides, np.int64)
    expected = np.ravel_multi_index(index.T, view.shape)
    assert element_numbers(flat - offset, view.shape, estrides).tolist() == expected.tolist()


def test_local_memory_is_recorded_but_not_counted_as_global_or_shared(be):
    a, out = be.to_device(f32(32)), be.allocate(32, np.float32)
    trace = traced(be, with_local, 1, 32, a, out)
    local = trace.accesses(thread=(5, 0, 0), space="local")
    assert [(x.array, x.index, x.kind) for x in local] == [
        ("tmp", (0,), "write"), ("tmp", (0,), "read"), ("tmp", (1,), "write"),
        ("tmp", (1,), "read")]
    assert gt.per_thread_counts(trace).of((5, 0, 0)) == {
        "global_reads": 1, "global_writes": 1, "global_atomics": 0, "shared_reads": 0,
        "shared_writes": 0, "shared_atomics": 0}


def test_atomics_are_their_own_kind(be):
    a, bins = be.to_device(np.arange(64, dtype=np.int32)), be.to_device(np.zeros(4, np.int32))
    trace = traced(be, histogram, 2, 32, a, bins)
    assert be.to_host(bins).tolist() == [16, 16, 16, 16]
    counts = gt.per_thread_counts(trace)
    assert counts.max() == {"global_reads": 1, "global_writes": 0, "global_atomics": 1,
                            "shared_reads": 0, "shared_writes": 0, "shared_atomics": 0}
    assert "global atomics" in counts.summary()
    assert [x.kind for x in trace.accesses(thread=0, array="bins")] == ["atomic"]


# -- per-thread counts ---------------------------------------------------------------------------
def test_vector_add_reads_two_and_writes_one_element_per_thread(be):
    n = 100
    a, b, out = be.to_device(f32(n)), be.to_device(f32(n, 2)), be.allocate(n, np.float32)
    counts = gt.per_thread_counts(traced(be, vadd, 4, 32, a, b, out))
    assert counts["global_reads"].tolist() == [2] * n + [0] * 28
    assert counts["global_writes"].tolist() == [1] * n + [0] * 28
    assert counts.of((3, 0, 0), block=(3, 0, 0))["global_reads"] == 2  # thread 99
    assert counts.of((4, 0, 0), block=(3, 0, 0))["global_reads"] == 0  # thread 100: guarded
    assert counts.max()["global_reads"] == 2 and counts.total()["global_writes"] == n
    assert counts.summary() == (
        "Per-thread memory accesses of kernel 'vadd' (grid (4, 1, 1) x block (32, 1, 1), "
        "128 threads):\n"
        "                 min  max  total\n"
        "  global reads     0    2    200\n"
        "  global writes    0    1    100\n"
        "  shared reads     0    0      0\n"
        "  shared writes    0    0      0")


def test_counts_reject_a_thread_outside_the_launch(be):
    out = be.allocate(4, np.float32)
    counts = gt.per_thread_counts(traced(be, do_nothing, 1, 4, out))
    assert counts.max()["global_reads"] == 0
    with pytest.raises(gt.TraceError, match=r"thread \(4, 0, 0\) is outside this launch's "
                                             r"block \(4, 1, 1\)"):
        counts.of((4, 0, 0))


# -- coalescing ----------------------------------------------------------------------------------
def test_a_coalesced_float32_copy_is_fully_efficient(be):
    a, out = be.to_device(f32(1024)), be.allocate(1024, np.float32)
    report = gt.coalescing(traced(be, copy, 8, 128, a, out))
    assert report.requests["sectors"].tolist() == [4] * 64
    assert report.efficiency == 1.0
    read = report.site("a[i]")
    assert (read.kind, read.requests, read.sectors_per_request, read.efficiency) == (
        "read", 32, 4.0, 1.0)
    line = copy.__code__.co_firstlineno + 2
    assert report.summary() == (
        "Global memory coalescing of kernel 'copy' (32-byte sectors per warp request):\n"
        "  line  access  kind   requests  sectors/req  ideal/req  efficiency\n"
        f"  {line:>4}  a[i]    read         32          4.0        4.0      100.0%\n"
        f"  {line:>4}  out[i]  write        32          4.0        4.0      100.0%\n"
        "overall: 256 sectors touched, 256 needed: 100.0% efficient")


def test_a_stride_32_float32_read_touches_32_sectors_per_warp(be):
    a, out = be.to_device(f32(256 * 32)), be.allocate(256, np.float32)
    report = gt.coalescing(traced(be, strided_read, 2, 128, a, out, 32))
    read, write = report.site("a[i * stride]"), report.site("out[i]")
    assert (read.requests, read.sectors_per_request, read.min_sectors_per_request) == (8, 32, 4)
    assert read.efficiency == 0.125
    assert write.sectors_per_request == 4 and write.efficiency == 1.0


def test_a_misaligned_view_touches_one_sector_more(be):
    a, out = be.to_device(f32(64)), be.allocate(32, np.float32)
    report = gt.coalescing(traced(be, copy, 1, 32, a[2:34], out))
    assert report.site("a[i]").sectors == 5 and report.site("a[i]").efficiency == 0.8


def test_a_partial_warp_requests_only_its_active_lanes(be):
    n = 100
    a, b, out = be.to_device(f32(n)), be.to_device(f32(n)), be.allocate(n, np.float32)
    report = gt.coalescing(traced(be, vadd, 4, 32, a, b, out))
    write = report.requests["kind"] == gt.KINDS.index("write")
    assert report.requests["lanes"][write].tolist() == [32, 32, 32, 4]
    assert report.requests["sectors"][write].tolist() == [4, 4, 4, 1]
    assert report.efficiency == 1.0


def test_warps_split_blocks_whose_size_is_not_a_multiple_of_32(be):
    a, out = be.to_device(f32(96)), be.allocate(96, np.float32)
    report = gt.coalescing(traced(be, copy, 2, 48, a, out))
    assert report.requests["lanes"].tolist()[:4] == [32, 16, 32, 16]
    assert report.site("a[i]").sectors == 2 * (4 + 2) and report.efficiency == 1.0


@settings(max_examples=25, deadline=None)
@given(stride=st.integers(1, 40), offset=st.integers(0, 9),
       dtype=st.sampled_from([np.int8, np.float32, np.float64, np.complex128]))
def test_sectors_per_warp_match_counting_the_bytes_by_hand(stride, offset, dtype):
    be = CPUBackend()
    a = be.to_device(np.zeros(offset + 32 * stride, dtype))
    out = be.allocate(32, dtype)
    report = gt.coalescing(traced(be, strided_read, 1, 32, a[offset:], out, stride))
    size = np.dtype(dtype).itemsize
    byte_addresses = {(offset + lane * stride) * size + k for lane in range(32) for k in range(size)}
    read = report.site("a[i * stride]")
    assert read.sectors == len({b // 32 for b in byte_addresses})
    assert read.min_sectors == math.ceil(32 * size / 32)


def test_coalescing_does_not_depend_on_the_schedule(be):
    a, out = be.to_device(f32(512 * 3)), be.allocate(512, np.float32)
    ordered = gt.coalescing(traced(be, strided_read, 4, 128, a, out, 3))
    recorder = gt.Recorder()
    record = be.launch_kernel(strided_read, 4, 128, a, out, 3, schedule="shuffle", seed=1,
                              trace=recorder)
    shuffled = gt.coalescing(recorder.finish(record))
    assert shuffled.sites == ordered.sites
    assert ordered.site("a[i * stride]").sectors_per_request == 12  # 32 lanes x 12 bytes


def test_site_lookup_names_the_sites_when_it_fails(be):
    a, out = be.to_device(f32(32)), be.allocate(32, np.float32)
    report = gt.coalescing(traced(be, copy, 1, 32, a, out))
    line = copy.__code__.co_firstlineno + 2
    with pytest.raises(gt.TraceError, match=f"several sites match {line}"):
        report.site(line)  # both accesses are on that line
    with pytest.raises(gt.TraceError, match=r"no site matches 'b\[i\]'; the sites are: 'a\[i\]' "
                                             rf"\(line {line}\), 'out\[i\]' \(line {line}\)"):
        report.site("b[i]")


# -- bank conflicts ------------------------------------------------------------------------------
@pytest.mark.parametrize("pad, ways, extra", [(0, 32, 32 * 31), (1, 1, 0)])
def test_the_32x32_tile_transpose_conflicts_32_ways_unless_padded(be, pad, ways, extra):
    host = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    a, out = be.to_device(host), be.allocate((32, 32), np.float32)
    report = gt.bank_conflicts(traced(be, make_transpose(pad), 1, (32, 32), a, out))
    assert np.array_equal(be.to_host(out), host.T)
    read, write = report.site("tile[tx, ty]"), report.site("tile[ty, tx]")
    assert (read.requests, read.max_ways, read.mean_ways, read.extra_wavefronts) == (
        32, ways, ways, extra)
    assert (write.max_ways, write.extra_wavefronts) == (1, 0)
    assert report.extra_wavefronts == extra
    if pad == 0:
        line = make_transpose.__code__.co_firstlineno
        assert report.summary() == (
            "Shared memory bank conflicts of kernel 'transpose' (32 banks of 4 bytes, per warp "
            "request):\n"
            "  line  access        kind   requests  max ways  mean ways  extra wavefronts\n"
            f"  {line + 7:>4}  tile[ty, tx]  write        32         1       1.00"
            "                 0\n"
            f"  {line + 9:>4}  tile[tx, ty]  read         32        32      32.00"
            "               992\n"
            "total: 992 extra wavefronts (bank conflicts) in 64 requests")


@settings(max_examples=20, deadline=None)
@given(stride=st.integers(1, 64))
def test_a_stride_s_float32_access_conflicts_gcd_s_32_ways(stride):
    be = CPUBackend()
    report = gt.bank_conflicts(traced(be, shared_strided_write, 1, 32, stride))
    assert report.site("tile[cuda.threadIdx.x * stride]").max_ways == math.gcd(stride, 32)


def test_lanes_reading_one_word_get_a_broadcast(be):
    out = be.allocate(32, np.float32)
    report = gt.bank_conflicts(traced(be, shared_broadcast, 1, 32, out))
    assert report.site("tile[0]").max_ways == 1 and report.extra_wavefronts == 0


@pytest.mark.parametrize("stride, ways, extra", [(1, 2, 0), (2, 4, 2)])
def test_64_bit_words_need_two_wavefronts_without_a_conflict(be, stride, ways, extra):
    report = gt.bank_conflicts(traced(be, shared_f64, 1, 32, stride))
    site = report.site("tile[cuda.threadIdx.x * stride]")
    assert (site.max_ways, site.extra_wavefronts) == (ways, extra)
    assert report.requests["ideal"].tolist() == [2]


# -- the bound -------------------------------------------------------------------------------------
TOO_LARGE = (r"kernel 'vadd' launched with grid \(4, 1, 1\) x block \(32, 1, 1\) \(128 threads\) "
             r"makes more than 250 memory accesses, the trace's limit \(max_events=250\); the "
             r"launch stopped partway.*raise the limit with "
             r"gpukit.trace.tracing\(backend, max_events=...\)")


def test_a_launch_too_large_to_trace_says_its_size_the_limit_and_what_to_do(be):
    n = 100
    a, b, out = be.to_device(f32(n)), be.to_device(f32(n)), be.allocate(n, np.float32)
    with pytest.raises(gt.TraceTooLargeError, match=TOO_LARGE) as info:
        traced(be, vadd, 4, 32, a, b, out, max_events=250)
    assert isinstance(info.value, GpukitError) and isinstance(info.value, LaunchConfigError)
    assert not isinstance(info.value, KernelError)
    with pytest.raises(gt.TraceTooLargeError, match=TOO_LARGE), gt.tracing(be, max_events=250):
        be.compile_kernel(vadd)[4, 32](a, b, out)
    assert "launch_kernel" not in vars(be)  # the context put the backend back
    assert len(traced(be, vadd, 4, 32, a, b, out, max_events=300)) == 300


@pytest.mark.parametrize("bad", [0, -1, 2.5, "many"])
def test_max_events_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="max_events must be a positive int, got"):
        gt.Recorder(bad)


def test_the_trace_option_values():
    assert gt.Recorder.from_option(None) is None and gt.Recorder.from_option(False) is None
    assert gt.Recorder.from_option(True).max_events == gt.DEFAULT_MAX_EVENTS
    assert gt.Recorder.from_option(7).max_events == 7
    recorder = gt.Recorder()
    assert gt.Recorder.from_option(recorder) is recorder
    with pytest.raises(ValueError, match="trace must be True, False, a max_events int or a "
                                         "gpukit.trace.Recorder, got 'yes'"):
        gt.Recorder.from_option("yes")


def test_finish_is_idempotent_and_needs_a_launch(be):
    with pytest.raises(gt.TraceError, match="this recorder has recorded no launch"):
        gt.Recorder().finish()
    recorder = gt.Recorder()
    record = be.launch_kernel(do_nothing, 1, 4, be.allocate(4, np.float32), trace=recorder)
    trace = recorder.finish(record)
    assert recorder.finish(record) is trace and len(trace) == 0 and trace.threads == 4


def test_every_block_of_a_launch_is_in_one_trace(be):
    a, out = be.to_device(f32(128)), be.allocate(128, np.float32)
    trace = traced(be, reverse_block, 16, 8, a, out)
    assert [x.label for x in trace.arrays] == ["a", "tile", "out"]
    assert [(x.array, x.index) for x in trace.accesses(thread=2, block=9)] == [
        ("a", (74,)), ("tile", (2,)), ("tile", (5,)), ("out", (74,))]
    assert gt.per_thread_counts(trace).total()["shared_writes"] == 128


# -- opting in -------------------------------------------------------------------------------------
def test_the_tracing_context_traces_every_launch_on_its_backend_and_only_inside(be):
    n = 64
    a, b, out = be.to_device(f32(n)), be.to_device(f32(n)), be.allocate(n, np.float32)
    k = be.compile_kernel(vadd)
    with gt.tracing(be, max_events=10_000) as t:
        k[2, 32](a, b, out)
        record = be.launch_kernel(k, 1, 64, a, b, out)
        be.launch_kernel(k, 1, 64, a, b, out, trace=False)
    assert len(t.traces) == 2 and t.trace is t.traces[-1]
    assert record.extra["trace"] is t.trace and t.records[-1] is record
    assert (t.traces[0].grid, t.traces[1].block) == ((2, 1, 1), (64, 1, 1))
    assert t.summary().count("Trace of kernel 'vadd'") == 2
    later = be.launch_kernel(k, 2, 32, a, b, out)
    assert "trace" not in later.extra and "launch_kernel" not in vars(be)


def test_the_tracing_context_needs_a_launch_and_the_simulator(be):
    with gt.tracing(be) as t:
        pass
    with pytest.raises(gt.TraceError, match="no kernel was launched on this backend inside"):
        _ = t.trace

    class NotASimulator:
        name = "cuda"

    with pytest.raises(gt.TraceError, match="backend 'cuda' runs kernels where their accesses "
                                            "cannot be observed.*get_backend\\('cpu'\\)"):
        gt.tracing(NotASimulator())


def test_launch_kernel_with_trace_true_puts_the_trace_in_the_record(be):
    a, b, out = be.to_device(f32(32)), be.to_device(f32(32)), be.allocate(32, np.float32)
    record = be.launch_kernel(vadd, 1, 32, a, b, out, trace=True)
    assert isinstance(record.extra["trace"], gt.Trace) and len(record.extra["trace"]) == 96
    assert record.trace is record.extra["trace"]
    assert be.launch_kernel(vadd, 1, 32, a, b, out, trace=False).trace is None


# -- the diagram -----------------------------------------------------------------------------------
def _thread_colours(fig):
    (threads,) = [c for c in fig.axes[0].collections if c.get_gid() == "threads"]
    return np.unique(threads.get_facecolor(), axis=0)


@pytest.mark.parametrize("block, threads", [(32, 32), ((4, 4), 16), ((32, 32), 1024)])
def test_the_block_diagram_gives_each_thread_its_colour(be, block, threads):
    from matplotlib.figure import Figure

    n = threads
    a, b, out = be.to_device(f32(n)), be.to_device(f32(n)), be.allocate(n, np.float32)

    def add2d(a, b, out):
        i = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
        out[i] = a[i] + b[i]

    trace = traced(be, add2d, 1, block, a, b, out)
    fig = gt.plot_block(trace, block=(0, 0, 0), view="cells")  # "auto": a heatmap at 1024
    assert isinstance(fig, Figure)
    assert len(_thread_colours(fig)) == threads
    fig.savefig(io.BytesIO(), format="png", dpi=40)
    title = fig.axes[0].get_title()
    assert title.startswith("kernel 'add2d', block (0, 0, 0)")
    assert ("lines left out" in title) == (3 * threads > 512)


def test_the_diagram_can_show_one_phase_and_any_block(be):
    a, out = be.to_device(f32(16)), be.allocate(16, np.float32)
    trace = traced(be, reverse_block, 2, 8, a, out)
    fig = gt.plot_block(trace, block=1, phase=1)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "tile[0:8] (shared)" in texts and "out[8:16] (global)" in texts
    assert "a[8:16] (global)" not in texts  # a is read in phase 0 only
    with pytest.raises(gt.TraceError, match=r"block \(2, 0, 0\) is outside this launch's grid"):
        gt.plot_block(trace, block=2)


def test_block_summary_lists_what_each_thread_did(be):
    a, out = be.to_device(f32(16)), be.allocate(16, np.float32)
    trace = traced(be, reverse_block, 2, 8, a, out)
    text = gt.block_summary(trace, block=(1, 0, 0), max_threads=2)
    assert text == (
        "Block (1, 0, 0) of kernel 'reverse_block': 8 threads, 32 accesses\n"
        "  thread (0, 0, 0): phase 0: reads a[8]; writes tile[0] | phase 1: reads tile[7]; "
        "writes out[8]\n"
        "  thread (1, 0, 0): phase 0: reads a[9]; writes tile[1] | phase 1: reads tile[6]; "
        "writes out[9]\n"
        "  ... and 6 more threads")


def test_block_diagram_displays_as_png_without_pyplot(be):
    """plot_block's Figure shows as an image in a notebook even before pyplot is imported."""
    a, b, out = be.to_device(f32(32)), be.to_device(f32(32)), be.allocate(32, np.float32)
    record = be.launch_kernel(vadd, 1, 32, a, b, out, trace=True)
    assert gt.plot_block(record.trace)._repr_png_().startswith(b"\x89PNG")


@cuda.jit
def _reads_one_past(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i + 1]


def test_a_failing_traced_launch_keeps_what_it_recorded_before_the_error():
    from gpukit.errors import OutOfBoundsError

    be = CPUBackend()
    a, out = be.to_device(np.arange(8, dtype=np.float32)), be.allocate(8, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        be.launch_kernel(_reads_one_past, 1, 8, a, out, trace=True)
    trace = info.value.trace
    assert isinstance(trace, gt.Trace)
    kinds = trace.columns["kind"]
    elements = trace.columns["element"]
    # threads 0-6 read a[i + 1] and wrote out[i]; thread 7's read of a[8] is the error
    assert sorted(elements[kinds == gt.KINDS.index("read")].tolist()) == list(range(1, 8))
    assert sorted(elements[kinds == gt.KINDS.index("write")].tolist()) == list(range(7))
    with pytest.raises(OutOfBoundsError) as info:
        be.launch_kernel(_reads_one_past, 1, 8, a, out)
    assert getattr(info.value, "trace", None) is None
