"""Known-wrong solutions of the workshop exercises, each of which check() must reject.

Each entry of WRONG is (exercise, kernel or factory, expected kind of the first failure, a phrase
the verdict must contain). They are the mistakes learners make: a missing guard, a missing
barrier, a race, an off-by-one, threadIdx where the global index belongs, and answers that are
right only for one size or block shape, plus correct answers that break a budget. And the tricks
that fooled the checker before it tried multi-warp blocks and drawn sizes: cuda.syncwarp() for
cuda.syncthreads(), cuda.laneid for the thread index, a warp-shuffle-only reduction, sizes
hard-coded into the kernel, a shared array declared (or written) only to meet the budget, and a
read disguised as cuda.atomic.add(x, j, 0).
"""

import numba
from numba import cuda


# -- map -------------------------------------------------------------------------------------------
@cuda.jit
def map_off_by_one(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i + 1] + 10


# -- guards ----------------------------------------------------------------------------------------
@cuda.jit
def guards_missing_guard(a, out, n):
    i = cuda.grid(1)
    out[i] = a[i] * a[i]


@cuda.jit
def guards_off_by_one(a, out, n):
    i = cuda.grid(1)
    if i <= n:
        out[i] = a[i] * a[i]


@cuda.jit
def guards_local_index(a, out, n):
    i = cuda.threadIdx.x  # the index inside the block, not in the whole grid
    if i < n:
        out[i] = a[i] * a[i]


# -- map_2d ----------------------------------------------------------------------------------------
@cuda.jit
def map_2d_swapped_axes(a, b, out):
    row, col = cuda.grid(2)  # x is the column: lucky on square arrays only
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col] + b[col]


@cuda.jit
def map_2d_missing_guard(a, b, out):
    col, row = cuda.grid(2)
    out[row, col] = a[row, col] + b[col]


# -- blocks ----------------------------------------------------------------------------------------
@cuda.jit
def blocks_no_stride_loop(x, y, out, alpha, n):
    i = cuda.grid(1)  # right only when the grid covers every element
    if i < n:
        out[i] = alpha * x[i] + y[i]


# -- shared_memory ---------------------------------------------------------------------------------
def shared_missing_barrier(TPB):
    @cuda.jit
    def reverse_kernel(a, out, n):
        tile = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * TPB + t
        if i < n:
            tile[t] = a[i]
        j = cuda.blockIdx.x * TPB + TPB - 1 - t
        if j < n:
            out[n - 1 - j] = tile[TPB - 1 - t]
    return reverse_kernel


def shared_skips_shared_memory(TPB):
    @cuda.jit
    def reverse_kernel(a, out, n):
        i = cuda.grid(1)
        if i < n:
            out[n - 1 - i] = a[i]
    return reverse_kernel


# -- pooling ---------------------------------------------------------------------------------------
def pooling_global_reads(TPB):
    @cuda.jit
    def pool_kernel(a, out, n):
        i = cuda.grid(1)
        if i < n:
            acc = a[i]
            if i >= 1:
                acc += a[i - 1]
            if i >= 2:
                acc += a[i - 2]
            out[i] = acc
    return pool_kernel


def pooling_off_by_one(TPB):
    TILE = TPB + 2

    @cuda.jit
    def pool_kernel(a, out, n):
        tile = cuda.shared.array(TILE, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        if i < n:
            tile[t + 2] = a[i]
        if t < 2:
            j = i - 2
            if j >= 0 and j < n:
                tile[t] = a[j]
            else:
                tile[t] = 0.0
        cuda.syncthreads()
        if i < n:
            out[i] = tile[t + 1] + tile[t + 2]  # a window of two: a[i - 2] is missing
    return pool_kernel


# -- dot -------------------------------------------------------------------------------------------
def _dot(TPB, barrier_in_loop, atomic):
    @cuda.jit
    def dot_kernel(a, b, out, n):
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        if i < n:
            cache[t] = a[i] * b[i]
        else:
            cache[t] = 0.0
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            if barrier_in_loop:
                cuda.syncthreads()
            step //= 2
        if t == 0:
            if atomic:
                cuda.atomic.add(out, 0, cache[0])
            else:
                out[0] += cache[0]
    return dot_kernel


def dot_missing_barrier(TPB):
    return _dot(TPB, False, True)


def dot_race_between_blocks(TPB):
    return _dot(TPB, True, False)


def dot_atomic_per_thread(TPB):
    @cuda.jit
    def dot_kernel(a, b, out, n):
        i = cuda.grid(1)
        if i < n:
            cuda.atomic.add(out, 0, a[i] * b[i])
    return dot_kernel


# -- conv1d ----------------------------------------------------------------------------------------
def conv_global_reads(TPB, K):
    @cuda.jit
    def conv_kernel(a, w, out, n):
        i = cuda.grid(1)
        if i < n:
            acc = 0.0
            for k in range(K):
                if i + k < n:
                    acc += a[i + k] * w[k]
            out[i] = acc
    return conv_kernel


# -- prefix_sum ------------------------------------------------------------------------------------
def scan_one_barrier(TPB):
    @cuda.jit
    def scan_kernel(a, out, n):
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        cache[t] = a[i] if i < n else 0.0
        cuda.syncthreads()
        offset = 1
        while offset < TPB:
            if t >= offset:
                cache[t] += cache[t - offset]  # reads a slot another thread updates now
            cuda.syncthreads()
            offset *= 2
        if i < n:
            out[i] = cache[t]
    return scan_kernel


def scan_barrier_in_guard(TPB):
    @cuda.jit
    def scan_kernel(a, out, n):
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        if i < n:
            cache[t] = a[i]
            cuda.syncthreads()  # threads past n never get here
            offset = 1
            while offset < TPB:
                value = 0.0
                if t >= offset:
                    value = cache[t - offset]
                cuda.syncthreads()
                cache[t] += value
                cuda.syncthreads()
                offset *= 2
            out[i] = cache[t]
    return scan_kernel


# -- axis_sum --------------------------------------------------------------------------------------
def _axis_sum(TPB, stride_loop, reduce_width):
    @cuda.jit
    def axis_sum_kernel(a, out):
        cache = cuda.shared.array(TPB, numba.float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        acc = 0.0
        if stride_loop:
            for col in range(t, a.shape[1], TPB):
                acc += a[row, col]
        elif t < a.shape[1]:
            acc = a[row, t]
        cache[t] = acc
        cuda.syncthreads()
        step = reduce_width // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            out[row] = cache[0]
    return axis_sum_kernel


def axis_sum_no_stride(TPB):
    return _axis_sum(TPB, False, TPB)


def axis_sum_hardcoded_block(TPB):
    return _axis_sum(TPB, True, 32)  # reduces 32 slots whatever the block size


# -- matmul ----------------------------------------------------------------------------------------
def matmul_naive(TPB):
    @cuda.jit
    def matmul_kernel(a, b, out):
        col, row = cuda.grid(2)
        if row < out.shape[0] and col < out.shape[1]:
            acc = 0.0
            for k in range(a.shape[1]):
                acc += a[row, k] * b[k, col]
            out[row, col] = acc
    return matmul_kernel


def matmul_missing_second_barrier(TPB):
    @cuda.jit
    def matmul_kernel(a, b, out):
        a_tile = cuda.shared.array((TPB, TPB), numba.float32)
        b_tile = cuda.shared.array((TPB, TPB), numba.float32)
        col, row = cuda.grid(2)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        acc = 0.0
        for start in range(0, a.shape[1], TPB):
            if row < a.shape[0] and start + tx < a.shape[1]:
                a_tile[ty, tx] = a[row, start + tx]
            else:
                a_tile[ty, tx] = 0.0
            if col < b.shape[1] and start + ty < b.shape[0]:
                b_tile[ty, tx] = b[start + ty, col]
            else:
                b_tile[ty, tx] = 0.0
            cuda.syncthreads()
            for k in range(TPB):
                acc += a_tile[ty, k] * b_tile[k, tx]
        if row < out.shape[0] and col < out.shape[1]:
            out[row, col] = acc
    return matmul_kernel


# -- histogram -------------------------------------------------------------------------------------
def histogram_race(TPB, BINS):
    @cuda.jit
    def histogram_kernel(a, out, n):
        i = cuda.grid(1)
        if i < n:
            out[a[i]] += 1
    return histogram_kernel


def histogram_global_atomics(TPB, BINS):
    @cuda.jit
    def histogram_kernel(a, out, n):
        i = cuda.grid(1)
        if i < n:
            cuda.atomic.add(out, a[i], 1)
    return histogram_kernel


# -- fooling tricks and evidence-based hints (issue 15) ----------------------------------------


@cuda.jit
def map_laneid(a, out):
    i = cuda.laneid  # the lane within the warp: right only while the block is one warp
    out[i] = a[i] + 10


@cuda.jit
def map_guard_off_by_one(a, out):
    i = cuda.threadIdx.x
    if i < a.size - 1:  # skips the last element (and, for n = 1, every element)
        out[i] = a[i] + 10


@cuda.jit
def map_atomic_read(a, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.add(a, i, 0) + 10  # a read in disguise: still a global access


@cuda.jit
def guards_hardcoded_block(a, out, n):
    i = cuda.blockIdx.x * 32 + cuda.threadIdx.x  # assumes 32-thread blocks
    if i < n:
        out[i] = a[i] * a[i]


@cuda.jit
def map_2d_hardcoded_block(a, b, out):
    col = cuda.blockIdx.x * 8 + cuda.threadIdx.x  # assumes (8, 8) blocks
    row = cuda.blockIdx.y * 8 + cuda.threadIdx.y
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col] + b[col]


@cuda.jit
def blocks_block_stride(x, y, out, alpha, n):
    start = cuda.grid(1)
    for i in range(start, n, cuda.blockDim.x):  # the block's size, not the grid's
        out[i] = alpha * x[i] + y[i]


@cuda.jit
def blocks_hardcoded_stride(x, y, out, alpha, n):
    for i in range(cuda.grid(1), n, 128):  # right only for grids of 128 threads
        out[i] = alpha * x[i] + y[i]


def shared_syncwarp(TPB):
    @cuda.jit
    def reverse_kernel(a, out, n):
        tile = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * TPB + t
        if i < n:
            tile[t] = a[i]
        cuda.syncwarp()  # waits for the warp only, not the block
        j = cuda.blockIdx.x * TPB + TPB - 1 - t
        if j < n:
            out[n - 1 - j] = tile[TPB - 1 - t]
    return reverse_kernel


def shared_unused_tile(TPB):
    @cuda.jit
    def reverse_kernel(a, out, n):
        tile = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * TPB + t
        if i < n:
            tile[t] = a[i]  # written, never read: only there to meet the budget
            out[n - 1 - i] = a[i]
    return reverse_kernel


def shared_every_thread_loops(TPB):
    @cuda.jit
    def reverse_kernel(a, out, n):
        tile = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * TPB + t
        if i < n:
            tile[t] = a[i]
        cuda.syncthreads()
        for s in range(TPB):  # every thread writes every element of the block
            j = cuda.blockIdx.x * TPB + s
            if j < n:
                out[n - 1 - j] = tile[s]
    return reverse_kernel


def pooling_atomic_halo(TPB):
    TILE = TPB + 2

    @cuda.jit
    def pool_kernel(a, out, n):
        tile = cuda.shared.array(TILE, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        if i < n:
            tile[t + 2] = a[i]
        if t < 2:
            if i >= 2:
                tile[t] = cuda.atomic.add(a, i - 2, 0)  # a read in disguise
            else:
                tile[t] = 0.0
        cuda.syncthreads()
        if i < n:
            out[i] = tile[t] + tile[t + 1] + tile[t + 2]
    return pool_kernel


def pooling_syncwarp(TPB):
    TILE = TPB + 2

    @cuda.jit
    def pool_kernel(a, out, n):
        tile = cuda.shared.array(TILE, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        if i < n:
            tile[t + 2] = a[i]
        if t < 2:
            if i >= 2:
                tile[t] = a[i - 2]
            else:
                tile[t] = 0.0
        cuda.syncwarp()
        if i < n:
            out[i] = tile[t] + tile[t + 1] + tile[t + 2]
    return pool_kernel


def dot_shuffle_only(TPB):
    WIDTH = min(TPB, 32)
    MASK = (1 << WIDTH) - 1
    @cuda.jit
    def dot_kernel(a, b, out, n):
        i = cuda.grid(1)
        value = a[i] * b[i] if i < n else 0.0
        offset = WIDTH // 2
        while offset > 0:  # a butterfly over one warp: every lane ends with the warp's sum
            value += cuda.shfl_xor_sync(MASK, value, offset)
            offset //= 2
        if cuda.threadIdx.x == 0:  # warp 0's total only: the other warps' sums are lost
            cuda.atomic.add(out, 0, value)
    return dot_kernel


def dot_unused_shared(TPB):
    @cuda.jit
    def dot_kernel(a, b, out, n):
        cache = cuda.shared.array(TPB, numba.float32)  # noqa: F841 - declared, never used
        i = cuda.grid(1)
        if i < n:
            cuda.atomic.add(out, 0, a[i] * b[i])
    return dot_kernel


def conv_syncwarp(TPB, K):
    TILE = TPB + K - 1

    @cuda.jit
    def conv_kernel(a, w, out, n):
        tile = cuda.shared.array(TILE, numba.float32)
        weights = cuda.shared.array(K, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        tile[t] = a[i] if i < n else 0.0
        if t < K - 1:
            j = i + TPB
            tile[TPB + t] = a[j] if j < n else 0.0
        if t < K:
            weights[t] = w[t]
        cuda.syncwarp()
        if i < n:
            acc = 0.0
            for k in range(K):
                acc += tile[t + k] * weights[k]
            out[i] = acc
    return conv_kernel


def conv_hardcoded_k(TPB, K):
    TILE = TPB + K - 1

    @cuda.jit
    def conv_kernel(a, w, out, n):
        tile = cuda.shared.array(TILE, numba.float32)
        weights = cuda.shared.array(K, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        tile[t] = a[i] if i < n else 0.0
        if t < K - 1:
            j = i + TPB
            tile[TPB + t] = a[j] if j < n else 0.0
        if t < K:
            weights[t] = w[t]
        cuda.syncthreads()
        if i < n:
            acc = 0.0
            for k in range(3):  # the first case's K
                if k < K:
                    acc += tile[t + k] * weights[k]
            out[i] = acc
    return conv_kernel


def scan_global_index_in_shared(TPB):
    @cuda.jit
    def scan_kernel(a, out, n):
        cache = cuda.shared.array(TPB, numba.float32)
        i = cuda.grid(1)
        cache[i] = a[i] if i < n else 0.0  # the global index in a per-block array
        cuda.syncthreads()
        offset = 1
        while offset < TPB:
            left = 0.0
            if i >= offset:
                left = cache[i - offset]
            cuda.syncthreads()
            cache[i] += left
            cuda.syncthreads()
            offset *= 2
        if i < n:
            out[i] = cache[i]
    return scan_kernel


def scan_syncwarp(TPB):
    @cuda.jit
    def scan_kernel(a, out, n):
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        cache[t] = a[i] if i < n else 0.0
        cuda.syncwarp()
        offset = 1
        while offset < TPB:
            left = 0.0
            if t >= offset:
                left = cache[t - offset]
            cuda.syncwarp()
            cache[t] += left
            cuda.syncwarp()
            offset *= 2
        if i < n:
            out[i] = cache[t]
    return scan_kernel


def axis_sum_syncwarp(TPB):
    @cuda.jit
    def axis_sum_kernel(a, out):
        cache = cuda.shared.array(TPB, numba.float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        partial = 0.0
        for col in range(t, a.shape[1], TPB):
            partial += a[row, col]
        cache[t] = partial
        cuda.syncwarp()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncwarp()
            step //= 2
        if t == 0:
            out[row] = cache[0]
    return axis_sum_kernel


def matmul_three_tiles(TPB):
    @cuda.jit
    def matmul_kernel(a, b, out):
        a_tile = cuda.shared.array((TPB, TPB), numba.float32)
        b_tile = cuda.shared.array((TPB, TPB), numba.float32)
        col, row = cuda.grid(2)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        acc = 0.0
        for tile in range(3):  # the tiles of K = 9 with TPB = 4
            start = tile * TPB
            if row < a.shape[0] and start + tx < a.shape[1]:
                a_tile[ty, tx] = a[row, start + tx]
            else:
                a_tile[ty, tx] = 0.0
            if col < b.shape[1] and start + ty < b.shape[0]:
                b_tile[ty, tx] = b[start + ty, col]
            else:
                b_tile[ty, tx] = 0.0
            cuda.syncthreads()
            for k in range(TPB):
                acc += a_tile[ty, k] * b_tile[k, tx]
            cuda.syncthreads()
        if row < out.shape[0] and col < out.shape[1]:
            out[row, col] = acc
    return matmul_kernel


def histogram_syncwarp(TPB, BINS):
    @cuda.jit
    def histogram_kernel(a, out, n):
        counts = cuda.shared.array(BINS, numba.int32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        for v in range(t, BINS, TPB):
            counts[v] = 0
        cuda.syncwarp()
        if i < n:
            cuda.atomic.add(counts, a[i], 1)
        cuda.syncwarp()
        for v in range(t, BINS, TPB):
            if counts[v] > 0:
                cuda.atomic.add(out, v, counts[v])
    return histogram_kernel


def histogram_every_thread_loops(TPB, BINS):
    @cuda.jit
    def histogram_kernel(a, out, n):
        counts = cuda.shared.array(BINS, numba.int32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        for v in range(t, BINS, TPB):
            counts[v] = 0
        cuda.syncthreads()
        if i < n:
            cuda.atomic.add(counts, a[i], 1)
        cuda.syncthreads()
        for v in range(BINS):  # every thread adds every bin
            cuda.atomic.add(out, v, counts[v])
    return histogram_kernel


def dot_every_thread_loops(TPB):
    @cuda.jit
    def dot_kernel(a, b, out, n):
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        cache[t] = a[i] * b[i] if i < n else 0.0
        cuda.syncthreads()
        for s in range(1, TPB):  # every thread adds the whole block into cache[0]
            cache[0] += cache[s]
        cuda.syncthreads()
        if t == 0:
            cuda.atomic.add(out, 0, cache[0])
    return dot_kernel


# (exercise, kernel or factory, kind of the first failure, phrase the verdict must contain)
WRONG = [
    ("map", map_off_by_one, "OutOfBoundsError", "outside 0..0"),
    ("map", map_laneid, "unwritten", "fails exactly when the block has several warps"),
    ("map", map_guard_off_by_one, "unwritten", "though it writes 'out' in other cases"),
    ("map", map_atomic_read, "budget", "cuda.atomic.add(x, j, 0) is a read in disguise"),
    ("guards", guards_missing_guard, "OutOfBoundsError", "fails exactly when"),
    ("guards", guards_off_by_one, "OutOfBoundsError", "compare with <, not <="),
    ("guards", guards_local_index, "unwritten", "global index"),
    ("guards", guards_hardcoded_block, "unwritten", "was never written"),
    ("map_2d", map_2d_swapped_axes, "unwritten", "the array is not square"),
    ("map_2d", map_2d_missing_guard, "OutOfBoundsError", "Guard both axes"),
    ("map_2d", map_2d_hardcoded_block, "unwritten", "every element it wrote is right"),
    ("blocks", blocks_no_stride_loop, "unwritten", "fewer threads than there are elements"),
    ("blocks", blocks_block_stride, "budget", "global writes per thread: 4 (limit 1)"),
    ("blocks", blocks_hardcoded_stride, "unwritten", "stride = cuda.gridsize(1)"),
    ("shared_memory", shared_missing_barrier, "RaceConditionError", "cuda.syncthreads()"),
    ("shared_memory", shared_skips_shared_memory, "budget", "shared memory per block"),
    ("shared_memory", shared_syncwarp, "RaceConditionError",
     "fails exactly when the block has several warps"),
    ("shared_memory", shared_unused_tile, "budget", "'tile' is written but never read"),
    ("shared_memory", shared_every_thread_loops, "budget",
     "global writes per thread: 21 (limit 1)"),
    ("pooling", pooling_global_reads, "budget", "under the minimum: shared memory"),
    ("pooling", pooling_off_by_one, "mismatch", "expected"),
    ("pooling", pooling_atomic_halo, "RaceConditionError", "An atomic is a write too"),
    ("pooling", pooling_syncwarp, "RaceConditionError", "not cuda.syncwarp()"),
    ("dot", dot_missing_barrier, "RaceConditionError", "data race on cache"),
    ("dot", dot_race_between_blocks, "RaceConditionError",
     "fails exactly when the launch has several blocks"),
    ("dot", dot_atomic_per_thread, "budget", "global atomics per block"),
    ("dot", dot_shuffle_only, "mismatch", "block=256"),
    ("dot", dot_unused_shared, "budget", "written and read (bytes, at least): 0"),
    ("dot", dot_every_thread_loops, "RaceConditionError", "remove the loop"),
    ("conv1d", conv_global_reads, "budget", "global reads per thread"),
    ("conv1d", conv_syncwarp, "RaceConditionError", "fails exactly when the block has several warps"),
    ("conv1d", conv_hardcoded_k, "mismatch", "passes only when K=3"),
    ("prefix_sum", scan_one_barrier, "RaceConditionError", "read the value into a register"),
    ("prefix_sum", scan_barrier_in_guard, "BarrierError", "divergent barrier"),
    ("prefix_sum", scan_global_index_in_shared, "OutOfBoundsError",
     "index it with cuda.threadIdx.x"),
    ("prefix_sum", scan_syncwarp, "RaceConditionError", "not cuda.syncwarp()"),
    ("axis_sum", axis_sum_no_stride, "mismatch", "more columns than the block has threads"),
    ("axis_sum", axis_sum_hardcoded_block, "mismatch", "TPB=256"),
    ("axis_sum", axis_sum_syncwarp, "RaceConditionError",
     "fails exactly when the block has several warps"),
    ("matmul", matmul_naive, "budget", "global reads per thread"),
    ("matmul", matmul_missing_second_barrier, "RaceConditionError", "K spans several tiles"),
    ("matmul", matmul_three_tiles, "mismatch", "K=64"),
    ("histogram", histogram_race, "RaceConditionError", "cuda.atomic.add"),
    ("histogram", histogram_global_atomics, "budget", "shared memory per block"),
    ("histogram", histogram_syncwarp, "RaceConditionError",
     "fails exactly when the block has several warps"),
    ("histogram", histogram_every_thread_loops, "mismatch", "expected"),
]
