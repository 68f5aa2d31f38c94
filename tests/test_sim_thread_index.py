"""threadIdx for every block shape: the simulator finds each thread's (x, y, z) from its linear
index with shifts and masks when blockDim.x and blockDim.x * blockDim.y are powers of two, with
divisions otherwise; both must give numpy's unravelled indices."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

from gpukit.backends.cpu import CPUBackend


def thread_coordinates(out):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
    out[b, t, 0] = cuda.threadIdx.x
    out[b, t, 1] = cuda.threadIdx.y
    out[b, t, 2] = cuda.threadIdx.z


extents = st.one_of(st.sampled_from([1, 2, 4, 8, 16, 32]), st.integers(1, 12))


@settings(max_examples=20, deadline=None)
@given(x=extents, y=extents, z=st.integers(1, 4), blocks=st.integers(1, 3))
def test_thread_indices_unravel_the_linear_index(x, y, z, blocks):
    if x * y * z > 1024:
        x = 8
    be = CPUBackend()
    out = be.allocate((blocks, x * y * z, 3), np.int64)
    be.launch_kernel(thread_coordinates, blocks, (x, y, z), out)
    zs, ys, xs = np.unravel_index(np.arange(x * y * z), (z, y, x))
    expected = np.stack([xs, ys, zs], axis=1)
    np.testing.assert_array_equal(be.to_host(out),
                                  np.broadcast_to(expected, (blocks, *expected.shape)))
