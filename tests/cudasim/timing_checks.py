"""gpukit.timing on the CUDA backend under Numba's CUDA simulator; run by tests/test_timing.py in
a subprocess (NUMBA_ENABLE_CUDASIM must be set before numba.cuda is imported).

Numba's simulator gives every event -1.0 ms and runs streams synchronously, so these checks assert
structure, kinds and finite positive values; one check stands in GPU event times to follow the
"cuda-events" path.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from numba import cuda

from gpukit import timing
from gpukit.backends import _cuda_hold, _cuda_streams
from gpukit.backends.cuda import CUDABackend

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    pytest.skip("runs only under NUMBA_ENABLE_CUDASIM=1 (tests/test_timing.py runs it so)",
                allow_module_level=True)


def vadd(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


@pytest.fixture
def be() -> CUDABackend:
    return CUDABackend()


def _positive_finite(values) -> bool:
    return all(math.isfinite(v) and v > 0 for v in values)


def _args(be: CUDABackend, n: int = 256):
    return (be.to_device(np.arange(n, dtype=np.float32)), be.to_device(np.ones(n, np.float32)),
            be.allocate(n, "float32"))


def test_time_kernel_is_wall_time_on_numba_simulator(be):
    x, y, out = _args(be)
    t = timing.time_kernel(vadd, 2, 128, x, y, out, backend=be, repeat=2)
    assert (t.kind, t.backend, t.label, len(t.samples)) == ("wall", "cuda", "vadd", 2)
    assert "Numba's CUDA simulator" in t.note and t.modeled is None
    assert _positive_finite(t.samples) and _positive_finite([t.first_launch_ms])
    np.testing.assert_array_equal(be.to_host(out), np.arange(256, dtype=np.float32) + 1)


def test_time_kernel_reads_cuda_events_where_they_are_timed(be, monkeypatch):
    monkeypatch.setattr(_cuda_streams, "events_timed", lambda backend: True)
    monkeypatch.setattr(type(cuda.event()), "elapsed_time", lambda self, other: 0.25)
    t = timing.time_kernel(vadd, 2, 128, *_args(be), backend=be, repeat=3)
    assert t.kind == "cuda-events" and t.samples == (0.25, 0.25, 0.25)
    assert t.note == _cuda_hold.UNHELD_NOTE  # no GPU to hold the stream (tests/test_cuda_hold.py)
    assert be.launches[-1].timings == {"cuda-events": 0.25}
    assert timing.launch_log(be)[-1].timings == {"cuda-events": 0.25}


def test_timer_on_cuda(be):
    x, y, out = _args(be)
    with timing.timer(be, label="launch") as t:
        be.launch_kernel(vadd, 2, 128, x, y, out)
    assert (t.timing.kind, t.timing.label, t.timing.backend) == ("wall", "launch", "cuda")
    assert _positive_finite(t.timing.samples)


def test_streams_events_async_copies_and_launches(be):
    s = be.stream()
    assert s.gpukit_id >= 1 and callable(s.record_event)
    host = be.pinned_array(256, "float32")
    host[...] = np.arange(256)
    start = s.record_event()
    x = be.to_device(host, stream=s)
    y = be.to_device(np.ones(256, np.float32), stream=s)
    out = be.allocate(256, "float32")
    k = be.compile_kernel(vadd)
    k[2, 128, s](x, y, out)
    be.launch_kernel(vadd, 2, 128, x, y, out, stream=s)
    result = be.to_host(out, out=be.pinned_array(256, "float32"), stream=s)
    end = s.record_event()
    s.synchronize()
    np.testing.assert_array_equal(result, np.arange(256, dtype=np.float32) + 1)
    assert start.kind == "wall" and math.isfinite(start.elapsed_ms(end))
    assert start.elapsed_ms(end) >= 0
    with pytest.raises(TypeError, match="elapsed_ms needs another CUDAEvent"):
        start.elapsed_ms(0.5)


def test_launch_log_on_cuda(be):
    s = be.stream()
    be.launch_kernel(vadd, 2, 128, *_args(be), stream=s)
    be.launch_kernel(vadd, (1, 1), (256, 1), *_args(be))
    first, second = timing.launch_log(be)
    assert (first.backend, first.kernel, first.grid, first.block, first.stream) == (
        "cuda", "vadd", (2, 1, 1), (128, 1, 1), s.gpukit_id)
    assert first.occupancy is None and first.timings == {} and second.stream == 0
    assert "occupancy unknown" in str(first)


@pytest.mark.parametrize(("direction", "pinned"), [("h2d", (False, True)), ("d2h", True),
                                                   ("d2d", False)])
def test_bandwidth_sweep_on_cuda(be, direction, pinned):
    sizes = [1024, 1 << 16]
    rows = timing.bandwidth_sweep(be, sizes, direction, pinned=pinned, repeat=2)
    modes = [None] if direction == "d2d" else (
        [pinned] if isinstance(pinned, bool) else list(pinned))
    assert [(r.pinned, r.size_bytes) for r in rows] == [(m, s) for m in modes for s in sizes]
    assert all(r.kind == "wall" and r.direction == direction for r in rows)
    assert _positive_finite([v for r in rows for v in (r.ms, r.gb_per_s)])


def test_cuda_events_path_of_the_sweep(be, monkeypatch):
    monkeypatch.setattr(_cuda_streams, "events_timed", lambda backend: True)
    monkeypatch.setattr(type(cuda.event()), "elapsed_time", lambda self, other: 0.5)
    (row,) = timing.bandwidth_sweep(be, [10**6], "h2d", pinned=True, repeat=2)
    assert (row.kind, row.ms, row.gb_per_s) == ("cuda-events", 0.5, 2.0)
