"""The analytical timing model (gpukit.timing.model): hand-computed terms, and the pairs a GPU
course uses to teach performance, each ordered by a plausible factor (ranges, not exact floats)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from benchmarks.model_vs_gpu import copy_strided, count_into, transpose_padded, transpose_tile
from gpukit.backends.cpu import CPUBackend
from gpukit.devices import get_profile
from gpukit.errors import InvalidArgumentError
from gpukit.timing import model_launch

T4 = get_profile("T4")


def _model(be, kernel, grid, block, *args, trace=1 << 21, **options):
    record = be.launch_kernel(kernel, grid, block, *args, trace=trace, **options)
    return model_launch(be.profile, record)


@cuda.jit
def matmul_naive(a, b, c):
    row, col = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = 0.0
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


@cuda.jit
def matmul_tiled(a, b, c):
    sa = cuda.shared.array((16, 16), np.float32)
    sb = cuda.shared.array((16, 16), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * 16 + ty
    col = cuda.blockIdx.x * 16 + tx
    acc = 0.0
    for t in range(a.shape[1] // 16):
        sa[ty, tx] = a[row, t * 16 + tx]
        sb[ty, tx] = b[t * 16 + ty, col]
        cuda.syncthreads()
        for k in range(16):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    c[row, col] = acc


@pytest.fixture
def be() -> CPUBackend:
    return CPUBackend()


def kernel_ms(model) -> float:
    """The kernel's own modeled time: launch overhead excluded (the same on both sides)."""
    return model.ms - model.launch_ms


# -- terms computed by hand ----------------------------------------------------------------------
def test_a_coalesced_copy_moves_its_bytes_at_dram_bandwidth(be):
    n = 1 << 16
    a, out = be.to_device(np.ones(n, np.float32)), be.allocate(n, np.float32)
    m = _model(be, copy_strided, n // 256, 256, a, out, 1, trace=False)
    b = m.breakdown
    assert not b.facts["observed"] and b.facts["sectors_per_request"] == 4.0
    assert b.ms("dram") == pytest.approx(8 * n / 320e9 * 1e3)  # 4 B read + 4 B written each
    assert b.ms("l2") == pytest.approx(8 * n / (2.5 * 320e9) * 1e3)
    assert b.binding == "dram" and m.bytes_moved == 8 * n
    traced = _model(be, copy_strided, n // 256, 256, a, out, 1)
    assert traced.breakdown.facts["observed"] and traced.ms == pytest.approx(m.ms)


def test_one_address_serialises_its_atomics(be):
    n = 1 << 14
    bins = be.to_device(np.zeros(1, np.int32))
    m = _model(be, count_into, n // 256, 256, bins, 1)
    assert m.breakdown.facts["observed"] and m.bound == "atomics"
    assert m.breakdown.ms("atomics") == pytest.approx(n / (T4.sm_clock_mhz * 1e6) * 1e3)
    assert be.to_host(bins)[0] == n


def test_breakdown_names_every_term_and_the_binding_one(be):
    n = 4096
    m = _model(be, copy_strided, n // 256, 256, be.to_device(np.ones(n, np.float32)),
               be.allocate(n, np.float32), 1, trace=False)
    b = m.breakdown
    assert set(b.names) >= {"launch", "memory", "dram", "l2", "latency", "shared", "atomics",
                            "compute", "barriers"}
    assert b.binding in b.names and b.margin >= 1
    assert f"binding: {b.binding}" in b.summary() and "see .breakdown" in m.describe()
    assert m.ms == pytest.approx(sum(t.ms for t in b.terms if t.role == "added")
                                 + max(t.ms for t in b.terms if t.role in ("limit", "sum")))


# -- the pairs a course teaches with ---------------------------------------------------------------
def test_strided_reads_cost_more_than_coalesced(be):
    n = 1 << 18
    a, out = be.to_device(np.ones(n * 32, np.float32)), be.allocate(n, np.float32)
    coalesced = _model(be, copy_strided, n // 256, 256, a, out, 1)
    strided = _model(be, copy_strided, n // 256, 256, a, out, 32)
    assert strided.breakdown.facts["sectors_per_request"] == 18.0  # 32 read + 4 written / 2
    assert 3.0 < kernel_ms(strided) / kernel_ms(coalesced) < 8.0
    assert 2.0 < strided.ms / coalesced.ms < 8.0


def test_padding_the_transpose_tile_removes_bank_conflicts():
    for device, low in (("T4", 1.2), ("A100", 1.3)):
        be = CPUBackend(device=device)
        m = 512
        a, out = be.to_device(np.ones((m, m), np.float32)), be.allocate((m, m), np.float32)
        unpadded = _model(be, transpose_tile, (m // 32, m // 32), (32, 32), a, out)
        padded = _model(be, transpose_padded, (m // 32, m // 32), (32, 32), a, out)
        assert unpadded.breakdown.facts["observed"]
        assert low < kernel_ms(unpadded) / kernel_ms(padded) < 2.5, device
        assert unpadded.ms > padded.ms


def test_low_occupancy_hides_less_latency(be):
    n = 1 << 18
    a, out = be.to_device(np.ones(n, np.float32)), be.allocate(n, np.float32)
    full = _model(be, copy_strided, n // 256, 256, a, out, 1, trace=False)
    # 48 KiB of shared memory per block: one 256-thread block per T4 SM, 25% occupancy
    low = _model(be, copy_strided, n // 256, 256, a, out, 1, trace=False,
                 dynamic_shared_bytes=48 * 1024)
    assert low.breakdown.facts["occupancy"] == 0.25 and full.breakdown.facts["occupancy"] == 1.0
    assert low.bound == "latency" and full.bound == "dram"
    assert 1.5 < kernel_ms(low) / kernel_ms(full) < 5.0


def test_tiny_blocks_waste_a_small_gpu(be):
    n = 1 << 18
    a, out = be.to_device(np.ones(n, np.float32)), be.allocate(n, np.float32)
    times = {block: kernel_ms(_model(be, copy_strided, n // block, block, a, out, 1,
                                     trace=False)) for block in (32, 64, 256)}
    # a T4 SM holds 16 blocks: 32-thread blocks fill half its warps, 64 and up all of them
    assert 1.1 < times[32] / times[256] < 3.0
    assert times[64] == pytest.approx(times[256], rel=0.05)


def test_contended_atomics_cost_more_than_spread_ones(be):
    n = 1 << 18
    bins = be.to_device(np.zeros(1024, np.int32))
    contended = _model(be, count_into, n // 256, 256, bins, 1)
    spread = _model(be, count_into, n // 256, 256, bins, 1024)
    assert contended.breakdown.facts["observed"]
    assert 5.0 < contended.ms / spread.ms < 50.0


def test_tiled_matmul_beats_the_naive_one(be):
    m = 64
    a, c = be.to_device(np.ones((m, m), np.float32)), be.allocate((m, m), np.float32)
    naive = _model(be, matmul_naive, (m // 16, m // 16), (16, 16), a, a, c, flops=2 * m**3)
    tiled = _model(be, matmul_tiled, (m // 16, m // 16), (16, 16), a, a, c, flops=2 * m**3)
    assert 2.0 < naive.ms / tiled.ms < 20.0
    assert 4.0 < kernel_ms(naive) / kernel_ms(tiled) < 30.0


def test_a_large_gpu_runs_the_same_kernel_faster():
    n = 1 << 20
    times = {}
    for device in ("T4", "H100"):
        be = CPUBackend(device=device)
        a, out = be.to_device(np.ones(n, np.float32)), be.allocate(n, np.float32)
        times[device] = _model(be, copy_strided, n // 256, 256, a, out, 1, trace=False)
    ratio = kernel_ms(times["T4"]) / kernel_ms(times["H100"])
    assert 5.0 < ratio < 12.0  # bandwidth: 3,350 / 320 GB/s = 10.5


# -- where the model shows up ---------------------------------------------------------------------
def test_every_simulated_launch_carries_its_model_and_time_kernel_can_trace(be):
    from gpukit.timing import time_kernel

    n = 1 << 12
    a, out = be.to_device(np.ones(n * 32, np.float32)), be.allocate(n, np.float32)
    record = be.launch_kernel(copy_strided, n // 256, 256, a, out, 32)
    assert record.modeled.ms == pytest.approx(model_launch(T4, record).ms)
    assert not record.modeled.breakdown.facts["observed"]  # not traced: assumed coalesced
    t = time_kernel(copy_strided, n // 256, 256, a, out, 32, backend=be, repeat=1, trace=True)
    observed = t.modeled.details["breakdown"]
    assert observed.facts["observed"] and observed.facts["sectors_per_request"] == 18.0
    assert t.modeled.median_ms > record.modeled.ms
    t = time_kernel(copy_strided, n // 256, 256, a, out, 32, backend=be, repeat=1, trace=False)
    assert not t.modeled.details["breakdown"].facts["observed"]
    with pytest.raises(InvalidArgumentError,
                       match=r"^trace must be 'sample', True or False, got 'all'$"):
        time_kernel(copy_strided, n // 256, 256, a, out, 32, backend=be, trace="all")


# -- a sample of blocks (time_kernel's default trace) -----------------------------------------
@cuda.jit
def column_sum(m, out, count):
    """Thread x of each block walks a column of its block's rows: a bank conflict per step."""
    tile = cuda.shared.array((32, 33), np.float32)
    x, b = cuda.threadIdx.x, cuda.blockIdx.x
    for r in range(32):
        tile[x, r] = m[b * 32 + r, x]
    cuda.syncthreads()
    acc = 0.0
    for r in range(32):
        acc += tile[r, x]
    out[b * 32 + x] = acc
    cuda.atomic.add(count, 0, 1)


def test_a_sample_of_blocks_sees_what_the_whole_trace_sees(be):
    from gpukit.timing.facts import launch_facts
    from gpukit.trace import Recorder

    blocks = 64
    m = be.to_device(np.arange(blocks * 32 * 32, dtype=np.float32).reshape(-1, 32))
    out = be.to_device(np.zeros(blocks * 32, np.float32))
    count = be.to_device(np.zeros(1, np.int32))
    full = launch_facts(be.launch_kernel(column_sum, blocks, 32, m, out, count, trace=True))
    record = be.launch_kernel(column_sum, blocks, 32, m, out, count,
                              trace=Recorder(sample_blocks=4))
    trace = record.trace
    # every 17th block (an odd stride, so power-of-two layouts do not alias): 0, 17, 34, 51
    blocks_seen = np.unique(trace.columns["thread"] // 32)
    assert blocks_seen.tolist() == [0, 17, 34, 51]
    assert trace.traced_blocks == 4 and trace.sampled and trace.complete
    sample = launch_facts(record)
    for name in ("global_requests", "sectors", "shared_requests", "shared_wavefronts",
                 "max_same_address_atomics", "atomics"):
        assert getattr(sample, name) == getattr(full, name), name
    assert full.source == "observed in the launch's trace"
    assert sample.source == ("observed in a sample of 4 of 64 blocks and scaled to the whole "
                             "launch")
    # each block reads its own rows: the sample extrapolates no reuse between blocks, as it is
    assert sample.unique_sectors == full.unique_sectors


def test_a_full_sample_stops_recording_not_the_launch(be):
    from gpukit.trace import Recorder

    blocks = 8
    m = be.to_device(np.ones((blocks * 32, 32), np.float32))
    out = be.to_device(np.zeros(blocks * 32, np.float32))
    count = be.to_device(np.zeros(1, np.int32))
    record = be.launch_kernel(column_sum, blocks, 32, m, out, count,
                              trace=Recorder(100, sample_blocks=2))
    assert len(record.trace) == 100 and not record.trace.complete and record.trace.sampled
    expected = np.full(blocks * 32, 32.0, np.float32)
    np.testing.assert_array_equal(be.to_host(out), expected)  # the launch ran to the end
    assert record.modeled.breakdown.facts["observed"]


@pytest.mark.parametrize(("value", "error", "message"), [
    (0, "InvalidOptionError", "sample_blocks must be a positive int, got 0"),
    (2.0, "OptionTypeError", "sample_blocks must be a positive int, got float 2.0"),
    (True, "OptionTypeError", "sample_blocks must be a positive int, got bool True"),
])
def test_sample_blocks_is_a_positive_int(value, error, message):
    import gpukit.errors
    from gpukit.trace import Recorder

    with pytest.raises(getattr(gpukit.errors, error), match=f"^{message}$"):
        Recorder(sample_blocks=value)


def test_time_kernel_observes_coalescing_by_default(be):
    from gpukit.timing import time_kernel

    n = 1 << 16
    a, out = be.to_device(np.ones(n * 32, np.float32)), be.allocate(n, np.float32)
    times = {}
    for stride in (1, 32):
        t = time_kernel(copy_strided, n // 256, 256, a, out, stride, backend=be, repeat=1)
        facts = t.modeled.details["breakdown"].facts
        assert facts["observed"]
        times[stride] = t.modeled.median_ms - t.modeled.details["launch_ms"]
    assert times[32] > 2 * times[1]


def test_model_vs_gpu_says_why_it_cannot_run_without_a_gpu(capsys):
    import gpukit
    from benchmarks import model_vs_gpu
    from gpukit.errors import BackendUnavailableError

    try:
        gpukit.get_backend("cuda")
    except BackendUnavailableError:
        pass
    else:
        pytest.skip("a GPU is present: the script would measure")
    assert model_vs_gpu.main([]) == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err
