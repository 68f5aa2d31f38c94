"""Known-wrong solutions of exercises 20-26, each of which check() must reject.

WRONG_REDUCTIONS holds (exercise, kernel / factory / host function, expected kind of the main
failure, a phrase the verdict must contain). They are the mistakes these exercises invite:
shuffles that reduce only one warp, cuda.laneid or threadIdx where the global index belongs,
syncwarp where the whole block must wait, a missing barrier, a non-atomic global update, sizes
written as numbers, no max-subtraction, a one-pass variance, a scan that adds only the previous
block, work done on the host, a single stream, and a pipeline that waits after every chunk.
"""

import math

import numba
import numpy as np
from numba import cuda


# -- 20. warp_reduce -------------------------------------------------------------------------------
def warp_reduce_shuffles_only(TPB):
    @cuda.jit
    def kernel(a, out, n):
        i = cuda.grid(1)
        v = a[i] if i < n else numba.float32(0.0)
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
            offset //= 2
        if cuda.threadIdx.x == 0:  # warp 0's total only: right for one-warp blocks
            out[cuda.blockIdx.x] = v

    return kernel


def warp_reduce_laneid_as_index(TPB):
    WARPS = TPB // 32

    @cuda.jit
    def kernel(a, out, n):
        totals = cuda.shared.array(WARPS, numba.float32)
        lane = cuda.laneid
        warp = cuda.threadIdx.x // 32
        i = cuda.blockIdx.x * TPB + lane  # the lane, not the thread: every warp reads warp 0's
        v = a[i] if i < n else numba.float32(0.0)
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
            offset //= 2
        if lane == 0:
            totals[warp] = v
        cuda.syncthreads()
        if warp == 0:
            v = totals[lane] if lane < WARPS else numba.float32(0.0)
            offset = 16
            while offset > 0:
                v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
                offset //= 2
            if lane == 0:
                out[cuda.blockIdx.x] = v

    return kernel


def warp_reduce_syncwarp_for_syncthreads(TPB):
    WARPS = TPB // 32

    @cuda.jit
    def kernel(a, out, n):
        totals = cuda.shared.array(WARPS, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        lane = t % 32
        warp = t // 32
        v = a[i] if i < n else numba.float32(0.0)
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
            offset //= 2
        if lane == 0:
            totals[warp] = v
        cuda.syncwarp()  # waits for this warp only: warp 0 may read the others' totals too early
        if warp == 0:
            v = totals[lane] if lane < WARPS else numba.float32(0.0)
            offset = 16
            while offset > 0:
                v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
                offset //= 2
            if lane == 0:
                out[cuda.blockIdx.x] = v

    return kernel


def warp_reduce_shared_tree(TPB):
    @cuda.jit
    def kernel(a, out, n):  # right, but a TPB-float tree in shared memory, no shuffles
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        cache[t] = a[i] if i < n else numba.float32(0.0)
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            out[cuda.blockIdx.x] = cache[0]

    return kernel


# -- 21. block_reduce_atomic -------------------------------------------------------------------------
def block_reduce_non_atomic(TPB):
    @cuda.jit
    def kernel(a, out, n):
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        total = numba.float32(0.0)
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            total += a[i]
        cache[t] = total
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            out[0] += cache[0]  # blocks race on out[0]

    return kernel


def block_reduce_no_stride_loop(TPB):
    @cuda.jit
    def kernel(a, out, n):
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        cache[t] = a[i] if i < n else numba.float32(0.0)  # one element per thread only
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            cuda.atomic.add(out, 0, cache[0])

    return kernel


def block_reduce_hardcoded_block(TPB):
    @cuda.jit
    def kernel(a, out, n):
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        total = numba.float32(0.0)
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            total += a[i]
        cache[t] = total
        cuda.syncthreads()
        step = 16  # written for 32-thread blocks
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            cuda.atomic.add(out, 0, cache[0])

    return kernel


def block_reduce_missing_barrier(TPB):
    @cuda.jit
    def kernel(a, out, n):
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        total = numba.float32(0.0)
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            total += a[i]
        cache[t] = total
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            step //= 2  # no barrier between the steps
        if t == 0:
            cuda.atomic.add(out, 0, cache[0])

    return kernel


def block_reduce_atomic_per_thread(TPB):
    @cuda.jit
    def kernel(a, out, n):  # right, but every thread makes a global atomic
        cache = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        total = numba.float32(0.0)
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            total += a[i]
        cache[t] = total
        cuda.syncthreads()
        cuda.atomic.add(out, 0, cache[t])

    return kernel


# -- 22. scan_multiblock ------------------------------------------------------------------------------
def _scan_kernels(TPB):
    @cuda.jit
    def block_scan(a, out, block_sums, n):
        tile = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        tile[t] = a[i] if i < n else numba.float32(0.0)
        cuda.syncthreads()
        offset = 1
        while offset < TPB:
            left = tile[t - offset] if t >= offset else numba.float32(0.0)
            cuda.syncthreads()
            tile[t] += left
            cuda.syncthreads()
            offset *= 2
        if i < n:
            out[i] = tile[t]
        if t == TPB - 1:
            block_sums[cuda.blockIdx.x] = tile[t]

    @cuda.jit
    def add_offsets(out, sums, n):
        i = cuda.grid(1)
        b = cuda.blockIdx.x
        if b > 0 and i < n:
            out[i] += sums[b - 1]

    return block_scan, add_offsets


def scan_multiblock_blocks_only(backend, a, out, n, TPB):
    block_scan, _ = _scan_kernels(TPB)
    blocks = (n + TPB - 1) // TPB
    sums = backend.allocate(blocks, np.float32)
    backend.compile_kernel(block_scan)[blocks, TPB](a, out, sums, n)  # no add-back


def scan_multiblock_previous_block_only(backend, a, out, n, TPB):
    block_scan, add_offsets = _scan_kernels(TPB)
    blocks = (n + TPB - 1) // TPB
    sums = backend.allocate(blocks, np.float32)
    backend.compile_kernel(block_scan)[blocks, TPB](a, out, sums, n)
    # adds the total of the block just before, not the scan of all earlier blocks
    backend.compile_kernel(add_offsets)[blocks, TPB](out, sums, n)


def scan_multiblock_no_recursion(backend, a, out, n, TPB):
    block_scan, add_offsets = _scan_kernels(TPB)
    blocks = (n + TPB - 1) // TPB
    sums = backend.allocate(blocks, np.float32)
    scanned = backend.allocate(blocks, np.float32)
    extra = backend.allocate(1, np.float32)
    backend.compile_kernel(block_scan)[blocks, TPB](a, out, sums, n)
    # one block scans the block sums: right only while blocks <= TPB
    backend.compile_kernel(block_scan)[1, TPB](sums, scanned, extra, blocks)
    backend.compile_kernel(add_offsets)[blocks, TPB](out, scanned, n)


def scan_multiblock_on_the_host(backend, a, out, n, TPB):
    block_scan, _ = _scan_kernels(TPB)
    blocks = (n + TPB - 1) // TPB
    sums = backend.allocate(blocks, np.float32)
    backend.compile_kernel(block_scan)[blocks, TPB](a, out, sums, n)
    host = backend.to_host(a)  # the scan done by numpy, copied back
    backend.copy_to_device(np.cumsum(host).astype(np.float32), out)


def _scan_kernels_missing_barrier(TPB):
    @cuda.jit
    def block_scan(a, out, block_sums, n):
        tile = cuda.shared.array(TPB, numba.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        tile[t] = a[i] if i < n else numba.float32(0.0)
        cuda.syncthreads()
        offset = 1
        while offset < TPB:
            if t >= offset:
                tile[t] += tile[t - offset]  # reads a slot another thread updates this step
            cuda.syncthreads()
            offset *= 2
        if i < n:
            out[i] = tile[t]
        if t == TPB - 1:
            block_sums[cuda.blockIdx.x] = tile[t]

    return block_scan


def scan_multiblock_race(backend, a, out, n, TPB):
    block_scan = _scan_kernels_missing_barrier(TPB)
    _, add_offsets = _scan_kernels(TPB)
    blocks = (n + TPB - 1) // TPB
    sums = backend.allocate(blocks, np.float32)
    backend.compile_kernel(block_scan)[blocks, TPB](a, out, sums, n)
    if blocks > 1:
        scanned = backend.allocate(blocks, np.float32)
        scan_multiblock_race(backend, sums, scanned, blocks, TPB)
        backend.compile_kernel(add_offsets)[blocks, TPB](out, scanned, n)


# -- 23. softmax --------------------------------------------------------------------------------------
def softmax_no_max_subtraction(TPB):
    @cuda.jit
    def kernel(a, out):
        cache = cuda.shared.array(TPB, numba.float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        cols = a.shape[1]
        s = numba.float32(0.0)
        for c in range(t, cols, TPB):
            s += math.exp(a[row, c])  # overflows to inf for values near 100
        cache[t] = s
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        for c in range(t, cols, TPB):
            out[row, c] = math.exp(a[row, c]) / cache[0]

    return kernel


def softmax_no_stride_loop(TPB):
    @cuda.jit
    def kernel(a, out):
        cache = cuda.shared.array(TPB, numba.float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        cols = a.shape[1]
        x = a[row, t] if t < cols else -math.inf  # one column per thread only
        cache[t] = x
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] = max(cache[t], cache[t + step])
            cuda.syncthreads()
            step //= 2
        m = cache[0]
        cuda.syncthreads()
        e = math.exp(x - m) if t < cols else numba.float32(0.0)
        cache[t] = e
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        if t < cols:
            out[row, t] = e / cache[0]

    return kernel


def softmax_missing_barrier(TPB):
    @cuda.jit
    def kernel(a, out):
        cache = cuda.shared.array(TPB, numba.float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        cols = a.shape[1]
        m = -math.inf
        for c in range(t, cols, TPB):
            m = max(m, a[row, c])
        cache[t] = m
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] = max(cache[t], cache[t + step])
            cuda.syncthreads()
            step //= 2
        m = cache[0]  # no barrier: thread 0 may overwrite cache[0] before the others read it
        s = numba.float32(0.0)
        for c in range(t, cols, TPB):
            s += math.exp(a[row, c] - m)
        cache[t] = s
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        for c in range(t, cols, TPB):
            out[row, c] = math.exp(a[row, c] - m) / cache[0]

    return kernel


def softmax_hardcoded_block(TPB):
    @cuda.jit
    def kernel(a, out):
        cache = cuda.shared.array(TPB, numba.float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        cols = a.shape[1]
        m = -math.inf
        for c in range(t, cols, 32):  # written for 32-thread blocks
            m = max(m, a[row, c])
        cache[t] = m
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] = max(cache[t], cache[t + step])
            cuda.syncthreads()
            step //= 2
        m = cache[0]
        cuda.syncthreads()
        s = numba.float32(0.0)
        for c in range(t, cols, 32):
            s += math.exp(a[row, c] - m)
        cache[t] = s
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        for c in range(t, cols, 32):
            out[row, c] = math.exp(a[row, c] - m) / cache[0]

    return kernel


# -- 24. layer_norm -------------------------------------------------------------------------------------
def layer_norm_one_pass_variance(TPB):
    @cuda.jit
    def kernel(a, gamma, beta, out):
        sums = cuda.shared.array(TPB, numba.float32)
        squares = cuda.shared.array(TPB, numba.float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        cols = a.shape[1]
        s = numba.float32(0.0)
        q = numba.float32(0.0)
        for c in range(t, cols, TPB):
            s += a[row, c]
            q += a[row, c] * a[row, c]
        sums[t] = s
        squares[t] = q
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                sums[t] += sums[t + step]
                squares[t] += squares[t + step]
            cuda.syncthreads()
            step //= 2
        mean = sums[0] / cols
        var = squares[0] / cols - mean * mean  # E[x^2] - E[x]^2: cancels catastrophically
        inv_std = 1.0 / math.sqrt(max(var, 0.0) + 1e-5)
        for c in range(t, cols, TPB):
            out[row, c] = (a[row, c] - mean) * inv_std * gamma[c] + beta[c]

    return kernel


def layer_norm_unbiased_variance(TPB):
    @cuda.jit
    def kernel(a, gamma, beta, out):
        cache = cuda.shared.array(TPB, numba.float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        cols = a.shape[1]
        s = numba.float32(0.0)
        for c in range(t, cols, TPB):
            s += a[row, c]
        cache[t] = s
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        mean = cache[0] / cols
        cuda.syncthreads()
        s = numba.float32(0.0)
        for c in range(t, cols, TPB):
            d = a[row, c] - mean
            s += d * d
        cache[t] = s
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        inv_std = 1.0 / math.sqrt(cache[0] / (cols - 1) + 1e-5)  # divides by cols - 1
        for c in range(t, cols, TPB):
            out[row, c] = (a[row, c] - mean) * inv_std * gamma[c] + beta[c]

    return kernel


def layer_norm_missing_barrier(TPB):
    @cuda.jit
    def kernel(a, gamma, beta, out):
        cache = cuda.shared.array(TPB, numba.float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        cols = a.shape[1]
        s = numba.float32(0.0)
        for c in range(t, cols, TPB):
            s += a[row, c]
        cache[t] = s
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        mean = cache[0] / cols  # no barrier before cache is reused below
        s = numba.float32(0.0)
        for c in range(t, cols, TPB):
            d = a[row, c] - mean
            s += d * d
        cache[t] = s
        cuda.syncthreads()
        step = TPB // 2
        while step > 0:
            if t < step:
                cache[t] += cache[t + step]
            cuda.syncthreads()
            step //= 2
        inv_std = 1.0 / math.sqrt(cache[0] / cols + 1e-5)
        for c in range(t, cols, TPB):
            out[row, c] = (a[row, c] - mean) * inv_std * gamma[c] + beta[c]

    return kernel


def layer_norm_thread_zero_does_the_row(TPB):
    @cuda.jit
    def kernel(a, gamma, beta, out):
        stats = cuda.shared.array(TPB, numba.float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        cols = a.shape[1]
        if t == 0:  # one thread reads the whole row: right, but serial
            s = numba.float32(0.0)
            for c in range(cols):
                s += a[row, c]
            mean = s / cols
            s = numba.float32(0.0)
            for c in range(cols):
                d = a[row, c] - mean
                s += d * d
            stats[0] = mean
            stats[1] = 1.0 / math.sqrt(s / cols + 1e-5)
        cuda.syncthreads()
        for c in range(t, cols, TPB):
            out[row, c] = (a[row, c] - stats[0]) * stats[1] * gamma[c] + beta[c]

    return kernel


# -- 25. attention --------------------------------------------------------------------------------------
def _attention_factory(scaled, subtract_max, barrier, v_transposed=False):
    def make_kernel(TPB, L):
        @cuda.jit
        def kernel(q, k, v, out):
            scores = cuda.shared.array(L, numba.float32)
            cache = cuda.shared.array(TPB, numba.float32)
            i = cuda.blockIdx.x
            t = cuda.threadIdx.x
            d = q.shape[1]
            scale = 1.0 / math.sqrt(d) if scaled else 1.0
            m = -math.inf
            for j in range(t, L, TPB):
                s = numba.float32(0.0)
                for c in range(d):
                    s += q[i, c] * k[j, c]
                scores[j] = s * scale
                m = max(m, scores[j])
            cache[t] = m
            cuda.syncthreads()
            step = TPB // 2
            while step > 0:
                if t < step:
                    cache[t] = max(cache[t], cache[t + step])
                cuda.syncthreads()
                step //= 2
            m = cache[0] if subtract_max else 0.0
            if barrier:
                cuda.syncthreads()
            s = numba.float32(0.0)
            for j in range(t, L, TPB):
                scores[j] = math.exp(scores[j] - m)
                s += scores[j]
            cache[t] = s
            cuda.syncthreads()
            step = TPB // 2
            while step > 0:
                if t < step:
                    cache[t] += cache[t + step]
                cuda.syncthreads()
                step //= 2
            total = cache[0]
            for c in range(t, d, TPB):
                acc = numba.float32(0.0)
                for j in range(L):
                    acc += scores[j] * (v[c, j] if v_transposed else v[j, c])
                out[i, c] = acc / total

        return kernel

    return make_kernel


attention_unscaled = _attention_factory(scaled=False, subtract_max=True, barrier=True)
attention_unscaled.__name__ = "attention_unscaled"
attention_no_max_subtraction = _attention_factory(scaled=True, subtract_max=False, barrier=True)
attention_no_max_subtraction.__name__ = "attention_no_max_subtraction"
attention_missing_barrier = _attention_factory(scaled=True, subtract_max=True, barrier=False)
attention_missing_barrier.__name__ = "attention_missing_barrier"
attention_v_transposed = _attention_factory(scaled=True, subtract_max=True, barrier=True,
                                            v_transposed=True)
attention_v_transposed.__name__ = "attention_v_transposed"


def attention_recompute_per_column(TPB, L):
    @cuda.jit
    def kernel(q, k, v, out):  # right, but every output thread recomputes every score
        cache = cuda.shared.array(TPB, numba.float32)
        i = cuda.blockIdx.x
        t = cuda.threadIdx.x
        d = q.shape[1]
        cache[t] = 0.0
        cuda.syncthreads()
        for c in range(t, d, TPB):
            m = -math.inf
            for j in range(L):
                s = numba.float32(0.0)
                for e in range(d):
                    s += q[i, e] * k[j, e]
                m = max(m, s / math.sqrt(d))
            total = numba.float32(0.0)
            acc = numba.float32(0.0)
            for j in range(L):
                s = numba.float32(0.0)
                for e in range(d):
                    s += q[i, e] * k[j, e]
                p = math.exp(s / math.sqrt(d) - m)
                total += p
                acc += p * v[j, c]
            out[i, c] = acc / total + cache[0]

    return kernel


# -- 26. stream_overlap -----------------------------------------------------------------------------------
@cuda.jit
def _affine(x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = 3 * x[i] + 1


def _pipeline(backend, h_in, h_out, n, TPB, chunks, streams, sync_each=False, stage=False,
              chunk=None, back_shift=0):
    kernel = backend.compile_kernel(_affine)
    d_in = backend.allocate(n, np.float32)
    d_out = backend.allocate(n, np.float32)
    chunk = chunk or (n + chunks - 1) // chunks
    for c in range(chunks):
        s = streams[c % len(streams)]
        part = slice(c * chunk, min((c + 1) * chunk, n))
        size = part.stop - part.start
        if size <= 0:
            continue
        source = np.array(h_in[part]) if stage else h_in[part]  # a pageable copy when staged
        backend.copy_to_device(source, d_in[part], stream=s)
        kernel[(size + TPB - 1) // TPB, TPB, s](d_in[part], d_out[part])
        back = streams[(c + back_shift) % len(streams)]
        backend.to_host(d_out[part], out=h_out[part], stream=back)
        if sync_each:
            backend.synchronize()
    backend.synchronize()


def stream_overlap_one_stream(backend, h_in, h_out, n, TPB, CHUNKS):
    s = backend.stream()
    _pipeline(backend, h_in, h_out, n, TPB, CHUNKS, [s])


def stream_overlap_default_stream(backend, h_in, h_out, n, TPB, CHUNKS):
    _pipeline(backend, h_in, h_out, n, TPB, CHUNKS, [None])


def stream_overlap_sync_each_chunk(backend, h_in, h_out, n, TPB, CHUNKS):
    streams = [backend.stream() for _ in range(CHUNKS)]
    _pipeline(backend, h_in, h_out, n, TPB, CHUNKS, streams, sync_each=True)


def stream_overlap_pageable_staging(backend, h_in, h_out, n, TPB, CHUNKS):
    streams = [backend.stream() for _ in range(CHUNKS)]
    _pipeline(backend, h_in, h_out, n, TPB, CHUNKS, streams, stage=True)


def stream_overlap_copies_back_on_the_next_stream(backend, h_in, h_out, n, TPB, CHUNKS):
    # right on the simulator's clock, which runs everything in issue order; on a GPU the copy
    # back may run before the kernel that writes its chunk has finished
    streams = [backend.stream() for _ in range(CHUNKS)]
    _pipeline(backend, h_in, h_out, n, TPB, CHUNKS, streams, back_shift=1)


def stream_overlap_drops_the_remainder(backend, h_in, h_out, n, TPB, CHUNKS):
    streams = [backend.stream() for _ in range(CHUNKS)]
    _pipeline(backend, h_in, h_out, n, TPB, CHUNKS, streams, chunk=n // CHUNKS)


@cuda.jit
def _read_only(x, y):
    i = cuda.grid(1)
    if i < x.size and x[i] > 1e30:  # reads, writes nothing
        y[i] = 0


def stream_overlap_on_the_host(backend, h_in, h_out, n, TPB, CHUNKS):
    kernel = backend.compile_kernel(_read_only)
    d_in = backend.allocate(n, np.float32)
    d_out = backend.allocate(n, np.float32)
    streams = [backend.stream() for _ in range(CHUNKS)]
    chunk = (n + CHUNKS - 1) // CHUNKS
    for c in range(CHUNKS):
        s = streams[c]
        part = slice(c * chunk, min((c + 1) * chunk, n))
        size = part.stop - part.start
        if size <= 0:
            continue
        backend.copy_to_device(h_in[part], d_in[part], stream=s)
        kernel[(size + TPB - 1) // TPB, TPB, s](d_in[part], d_out[part])  # a kernel for show
        backend.to_host(d_in[part], out=h_out[part], stream=s)
    backend.synchronize()
    h_out[:] = 3 * h_out + 1  # the real work, done by the host


WRONG_REDUCTIONS = [
    ("warp_reduce", warp_reduce_shuffles_only, "mismatch", "expected"),
    ("warp_reduce", warp_reduce_laneid_as_index, "mismatch", "expected"),
    ("warp_reduce", warp_reduce_syncwarp_for_syncthreads, "RaceConditionError", "Race"),
    ("warp_reduce", warp_reduce_shared_tree, "budget", "over budget: shared memory"),
    ("block_reduce_atomic", block_reduce_non_atomic, "RaceConditionError", "atomic"),
    ("block_reduce_atomic", block_reduce_no_stride_loop, "mismatch", "expected"),
    ("block_reduce_atomic", block_reduce_hardcoded_block, "mismatch", "expected"),
    ("block_reduce_atomic", block_reduce_missing_barrier, "RaceConditionError", "Race"),
    ("block_reduce_atomic", block_reduce_atomic_per_thread, "budget", "global atomics per block"),
    ("scan_multiblock", scan_multiblock_blocks_only, "mismatch", "several blocks"),
    ("scan_multiblock", scan_multiblock_previous_block_only, "mismatch", "expected"),
    ("scan_multiblock", scan_multiblock_no_recursion, "UninitializedMemoryError",
     "more blocks than a block has threads"),
    ("scan_multiblock", scan_multiblock_on_the_host, "host_copy", "copied data between host"),
    ("scan_multiblock", scan_multiblock_race, "RaceConditionError", "Race"),
    ("softmax", softmax_no_max_subtraction, "mismatch", "nan"),
    ("softmax", softmax_no_stride_loop, "unwritten", "never written"),
    ("softmax", softmax_missing_barrier, "RaceConditionError", "Race"),
    ("softmax", softmax_hardcoded_block, "mismatch", "expected"),
    ("layer_norm", layer_norm_one_pass_variance, "mismatch", "expected"),
    ("layer_norm", layer_norm_unbiased_variance, "mismatch", "expected"),
    ("layer_norm", layer_norm_missing_barrier, "RaceConditionError", "Race"),
    ("layer_norm", layer_norm_thread_zero_does_the_row, "budget", "global reads per thread"),
    ("attention", attention_unscaled, "mismatch", "expected"),
    ("attention", attention_no_max_subtraction, "mismatch", "nan"),
    ("attention", attention_missing_barrier, "RaceConditionError", "Race"),
    ("attention", attention_v_transposed, "OutOfBoundsError", "OutOfBounds"),
    ("attention", attention_recompute_per_column, "budget", "global reads per thread"),
    ("stream_overlap", stream_overlap_one_stream, "one_stream", "one stream"),
    ("stream_overlap", stream_overlap_default_stream, "sync_copy", "default stream"),
    ("stream_overlap", stream_overlap_sync_each_chunk, "no_overlap", "no copy overlaps"),
    ("stream_overlap", stream_overlap_pageable_staging, "sync_copy", "pageable"),
    ("stream_overlap", stream_overlap_drops_the_remainder, "unwritten", "never written"),
    ("stream_overlap", stream_overlap_copies_back_on_the_next_stream, "StreamRaceError",
     "data race between streams"),
    ("stream_overlap", stream_overlap_on_the_host, "host_compute", "compute on the device"),
]
