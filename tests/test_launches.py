"""gpukit.launches: the one launch record both backends keep (the CUDA backend's own record is
checked under Numba's simulator in tests/cudasim/)."""

from __future__ import annotations

import numpy as np
from numba import cuda

from gpukit.backends.cpu import CPUBackend
from gpukit.launches import LaunchRecord


@cuda.jit
def fill(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 1.0


def test_a_record_computes_occupancy_once_when_asked():
    calls = []

    def occupancy():
        calls.append(1)
        return 0.5, "test"

    record = LaunchRecord("k", (2, 1, 1), (32, 4, 1), occupancy_of=occupancy)
    assert record.threads == 256 and record.trace is None and calls == []
    assert (record.occupancy, record.occupancy_source, record.occupancy) == (0.5, "test", 0.5)
    assert calls == [1]
    assert LaunchRecord("k", (1, 1, 1), (1, 1, 1)).occupancy is None


def test_the_simulator_fills_the_common_record():
    backend = CPUBackend()
    out = backend.allocate(64, np.float32)
    record = backend.launch_kernel(fill, 2, 32, out, flops=64, trace=True)
    assert isinstance(record, LaunchRecord) and backend.launches == [record]
    assert (record.kernel, record.grid, record.block, record.dynamic_shared_bytes,
            record.stream, record.schedule, record.backend) == (
        "fill", (2, 1, 1), (32, 1, 1), 0, 0, "ordered", "cpu")
    assert record.checks == backend.checks and record.stats.global_store_bytes == 256
    assert record.timings == {"wall": record.wall_ms} and record.extra["flops"] == 64
    assert record.trace is not None and len(record.trace) == 64
    assert record.occupancy.threads_per_block == 32 and record.occupancy_source
