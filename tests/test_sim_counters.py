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


def repeat_read(a, out, reps):
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = a[i] - a[i]
        for _ in range(reps):
            acc += a[i]
        out[i] = acc


@settings(max_examples=10, deadline=None)
@given(launches=st.lists(st.tuples(st.sampled_from([np.float32, np.float64, np.int16]),
                                   st.integers(0, 3)), min_size=2, max_size=6))
def test_a_loop_of_launches_counts_each_launch_as_it_ran(launches):
    # statistics and the model's facts are remembered between launches that count the same:
    # each launch must still get its own, for its element size and its counts
    from gpukit.timing import launch_facts

    be = CPUBackend()
    records = []
    for dtype, reps in launches:
        a, out = be.to_device(np.ones(40, dtype)), be.allocate(40, dtype)
        record = be.launch_kernel(repeat_read, 2, 32, a, out, reps)
        size = np.dtype(dtype).itemsize
        assert record.stats.global_load_bytes == 40 * (reps + 2) * size
        assert record.stats.global_store_bytes == 40 * size
        assert launch_facts(record).global_bytes == 40 * (reps + 3) * size
        assert not launch_facts(record).observed
        records.append(record)
    # per-site counts are tuples: records that counted alike share one, and none can change it
    assert all(type(r.stats.sites) is tuple and r.stats.sites for r in records)


def test_a_traced_launch_gets_observed_facts_after_untraced_ones_alike():
    from gpukit.timing import launch_facts

    be = CPUBackend()
    a, out = be.to_device(np.ones(64, np.float32)), be.allocate(64, np.float32)
    plain = be.launch_kernel(repeat_read, 2, 32, a, out, 1)
    traced = be.launch_kernel(repeat_read, 2, 32, a, out, 1, trace=True)
    assert traced.stats.sites == plain.stats.sites
    assert not launch_facts(plain).observed and launch_facts(traced).observed
