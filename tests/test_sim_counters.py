"""The per-site access counts of kernels without sync points, which return their counters to
the driver (it sums them over threads): exact, whichever way each thread leaves the kernel."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

from gpukit.backends.cpu import CPUBackend


def leaves_early(a, out, limit):
    i = cuda.grid(1)
    if i >= out.shape[0]:
        return
    total = 0.0
    for k in range(a.shape[0]):
        if k == limit + i % 3:
            out[i] = total
            return
        total += a[k]
    out[i] = total


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 90), size=st.integers(1, 12), limit=st.integers(0, 14))
def test_each_sites_count_is_what_the_threads_executed(n, size, limit):
    a = np.arange(1, size + 1, dtype=np.float64)
    be = CPUBackend()
    out = be.allocate(n, np.float64)
    record = be.launch_kernel(leaves_early, (n + 31) // 32, 32, be.to_device(a), out, limit)
    stops = np.minimum(limit + np.arange(n) % 3, size)  # the elements each thread reads
    np.testing.assert_array_equal(be.to_host(out), np.cumsum(np.r_[0, a])[stops])
    executed = {"read": 0, "write": 0}
    for _, kind, _, global_count, _ in record.stats.sites:
        executed[kind] += global_count
    assert executed == {"read": int(stops.sum()), "write": n}
    assert record.stats.global_load_bytes == 8 * int(stops.sum())
