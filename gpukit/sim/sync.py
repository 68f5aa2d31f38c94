"""Blocks, threads and sync points: what runs between a kernel's threads.

Every kernel runs block by block (in index order, or a seeded shuffled order), and inside a block
thread by thread. A kernel without sync points runs each thread to its end (`begin_block`,
`begin_thread`). A kernel with sync points (`syncthreads*`, `syncwarp`, shuffles, votes, ballots,
matches, `activemask`) runs each thread as a generator that stops at every sync point after
leaving its operands in the exchange area (`put`); when every live thread has stopped,
`resolve` completes whatever can complete:

- a warp-level call completes when every live lane its mask names waits at the same call (each
  lane's mask must name the lane itself); shuffles read the source lane's operand (a source lane
  that does not take part is an error, its value being undefined on a GPU); `syncwarp` orders
  memory between the lanes it names;
- a block-wide barrier completes when every live thread of the block waits at it. Threads that
  returned no longer count (as on Volta and later). Live threads waiting at different barriers,
  or at a barrier while others wait at a warp call that needs them, are reported, since that
  block would hang or misbehave on a GPU;
- `grid.sync()` of cooperative groups is a block-wide barrier the block does not pass by itself:
  its blocks take turns (`suspend_block`, `resume_block`) until all wait there (`grid_barrier`).
This is a legal schedule: threads of a block interleave only at sync points.
"""

from __future__ import annotations

import numpy as np
from numba import types

from . import engine_cache
from . import layout as L
from .access import fail, settle
from .lowlevel import (
    bits_of,
    fetch_add,
    from_bits,
    load_i64,
    overload,
    poll,
    register_jitable,
    signal,
    store_i64,
)


# -- blocks and threads ------------------------------------------------------------------------
@register_jitable
def begin_launch(c):
    """Before the first block: tell the host threads that wait for this launch to start
    (`gpukit.sim.parallel`), from compiled code, which holds no GIL they would wait for."""
    if c[L.SIGNAL] != 0:
        signal(c[L.SIGNAL], c[L.SIGNAL_VALUE])


@register_jitable
def begin_block(c, run):
    """Set up the `run`-th block to execute (its coordinates, stamps, and counters); False
    when there is none left to run. In a launch split over host threads, the block is the
    next one this thread claims, not the `run`-th (`_claim`)."""
    if c[L.CLAIM] != 0:
        run = _claim(c)
        if run < 0:
            return False
    _enter_block(c, run)
    c[L.SHARED_EPOCH] = c[L.BLOCK_STAMP]
    c[L.PHASE] = 0
    return True


@register_jitable
def _claim(c):
    """The next block for this host thread of a split launch: the next of its chunk, else the
    first of a new chunk taken from the launch's counter (claim word 0) by an atomic add, so
    that a thread that runs faster, or starts sooner, takes more chunks. -1 when every block
    is taken, or when another thread has failed (claim word 1): the blocks left all come after
    the failing one, as chunks are taken in block order, so none of their errors would be the
    first."""
    run = c[L.CLAIM_NEXT]
    if run >= c[L.CLAIM_END]:
        words = c[L.CLAIM]
        if poll(words + 8) != 0:
            return -1
        run = fetch_add(words, c[L.CLAIM_CHUNK])
        if run >= c[L.NBLOCKS]:
            return -1
        c[L.CLAIM_END] = min(run + c[L.CLAIM_CHUNK], c[L.NBLOCKS])
    c[L.CLAIM_NEXT] = run + 1
    c[L.CLAIMED] += 1
    return run


@register_jitable
def _enter_block(c, run):
    """The `run`-th block becomes the running one: its coordinates, a new run of it (stamps)."""
    order = c[L.ORDER]
    blin = load_i64(order + run * 8) if order != 0 else run
    gx, gy = c[L.GDX], c[L.GDY]
    c[L.BLIN] = blin
    c[L.BX] = blin % gx
    c[L.BY] = (blin // gx) % gy
    c[L.BZ] = blin // (gx * gy)
    if c[L.TRACE_EVERY] != 0:
        c[L.TRACE_ON] = 1 if blin % c[L.TRACE_EVERY] == 0 else 0
    settle(c)  # the previous block's deferred error, if any
    c[L.STAMP] += 1
    c[L.BLOCK_STAMP] = c[L.STAMP]
    c[L.BARRIER_STAMP] = c[L.STAMP]
    c[L.WARP_EVENTS] = 0
    c[L.BLOCK_ACQUIRE] = 0
    starts = c[L.BLOCK_STARTS]
    if starts != 0:
        n = load_i64(starts) + 1
        store_i64(starts, n)
        store_i64(starts + n * 8, c[L.STAMP])
    if c[L.XCH] != 0:
        full = c[L.XCH] + L.XCH_FULL
        for w in range(32):
            store_i64(full + w * 8, 0)
    if poll(c.ctypes.data + L.STOP * 8) != 0:
        fail(c, L.E_WATCHDOG, -1, 0, 0, 0, 0, 0)


@register_jitable
def end_launch(c):
    """After the last block: raise a deferred error, if any."""
    settle(c)


@register_jitable(forceinline=True)
def thread_at(c, k):
    """The `k`-th thread of the block to run (a seeded permutation under the shuffle schedule)."""
    order = c[L.TORDER]
    return load_i64(order + k * 8) if order != 0 else k


@register_jitable(forceinline=True)
def begin_thread_in(c, lt, row, first, fences, frames):
    """`begin_thread`, given what is the same for every thread of the block, which the loop
    over its threads keeps in variables of its own (registers: loaded from the context, it
    would be loaded again for every thread, as the compiler cannot tell the kernel's stores
    from writes to the context): `row`, whether the block is one row of threads (`is_row`);
    `first`, the global linear index of its thread 0 (`first_thread`). A block of one row,
    the common case, is set up here; any other by `begin_thread`. (Measured, 2026-12-07,
    2-core VM, one host thread: vector add 0.86-0.90x the time it took with `begin_thread`
    for every thread; setting up every shape here made it 1.6x, and passing the block's
    extents too lost the gain: LLVM lays the loop out differently.)"""
    if row:
        c[L.LT] = lt
        c[L.TX] = lt
        c[L.GT] = first + lt
        if frames:
            c[L.LOCAL_SP] = c[L.LOCAL_BASE] + lt * c[L.LOCAL_STRIDE] + c[L.LOCAL_KERNEL]
        if fences:
            c[L.FENCE_STAMP] = 0
            c[L.ACQUIRE_SEQ] = 0
    else:
        begin_thread(c, lt, fences, frames)


@register_jitable(forceinline=True)
def is_row(c):
    """Whether the launch's blocks are one row of threads (blockDim.y == blockDim.z == 1)."""
    return c[L.BDY] == 1 and c[L.BDZ] == 1


@register_jitable(forceinline=True)
def first_thread(c):
    """The global linear index of the running block's thread 0."""
    return c[L.BLIN] * c[L.TPB]


@register_jitable(forceinline=True)
def begin_thread(c, lt, fences, frames):
    """Make `lt` (a linear thread index in the running block) the running thread. `fences`:
    the kernel calls threadfence (the thread's fence and acquire state start at 0; in other
    kernels nothing reads them); `frames`: it calls device functions (their frames start at the
    thread's stack pointer)."""
    c[L.LT] = lt
    if c[L.BDY] == 1 and c[L.BDZ] == 1:
        c[L.TX] = lt
    else:
        bx, by = c[L.BDX], c[L.BDY]
        sx, sxy = c[L.BDX_SHIFT], c[L.BDXY_SHIFT]
        if sx >= 0 and sxy >= 0:  # shifts and masks, not divisions (most blocks)
            c[L.TX] = lt & (bx - 1)
            c[L.TY] = (lt >> sx) & (by - 1)
            c[L.TZ] = lt >> sxy
        else:
            c[L.TX] = lt % bx
            c[L.TY] = (lt // bx) % by
            c[L.TZ] = lt // (bx * by)
    c[L.GT] = c[L.BLIN] * c[L.TPB] + lt
    if frames:
        c[L.LOCAL_SP] = c[L.LOCAL_BASE] + lt * c[L.LOCAL_STRIDE] + c[L.LOCAL_KERNEL]
    if fences:
        c[L.FENCE_STAMP] = 0
        c[L.ACQUIRE_SEQ] = 0


# -- fences --------------------------------------------------------------------------------
@register_jitable
def fence(c):
    """cuda.threadfence*(): the running thread's writes so far are released by its next atomic.
    The stamp moves on, so that its accesses after the fence are not among them."""
    c[L.FENCE_STAMP] = c[L.STAMP]
    c[L.STAMP] += 1


@register_jitable
def release(c):
    """An atomic after a fence: record the release for the running block and for the running
    thread (see access.released and access.released_in_block)."""
    rel = c[L.RELEASES]
    if rel == 0:
        return
    run = load_i64(c[L.BLOCK_STARTS]) - 1
    for at in (rel + run * 16, rel + (c[L.NBLOCKS] + c[L.LT]) * 16):
        store_i64(at, c[L.FENCE_STAMP])
        store_i64(at + 8, c[L.ATOMIC_SEQ])
    c[L.FENCE_STAMP] = 0


# -- sync points: operands in, results out --------------------------------------------------
@register_jitable
def _slot(c):
    return c[L.XCH] + L.XCH_THREADS + c[L.LT] * (L.XF * 8)


def put(c, kind, site, mask, value, arg):
    """Leave the running thread's operands of a sync point in the exchange area."""


@overload(put, jit_options={'forceinline': True})
def _ol_put(c, kind, site, mask, value, arg):
    def impl(c, kind, site, mask, value, arg):
        x = _slot(c)
        store_i64(x + L.X_KIND * 8, kind)
        store_i64(x + L.X_SITE * 8, site)
        store_i64(x + L.X_MASK * 8, np.int64(mask) & 0xFFFFFFFF)
        store_i64(x + L.X_VALUE * 8, bits_of(value))
        store_i64(x + L.X_ARG * 8, np.int64(arg))
    return impl


def value(c, proto):
    """The result of the running thread's sync point, of the type of `proto`."""


@overload(value, jit_options={'forceinline': True})
def _ol_value(c, proto):
    if isinstance(proto, types.Boolean):
        return lambda c, proto: load_i64(_slot(c) + L.X_RESULT * 8) != 0
    return lambda c, proto: from_bits(load_i64(_slot(c) + L.X_RESULT * 8), proto)


@register_jitable
def result_i32(c):
    return np.int32(load_i64(_slot(c) + L.X_RESULT * 8))


@register_jitable
def result_u32(c):
    return np.uint32(load_i64(_slot(c) + L.X_RESULT * 8) & 0xFFFFFFFF)


@register_jitable
def result_bool(c):
    return load_i64(_slot(c) + L.X_RESULT * 8) != 0


@register_jitable
def result2_bool(c):
    return load_i64(_slot(c) + L.X_RESULT2 * 8) != 0


# -- resolving what the waiting threads can complete ---------------------------------------------
@register_jitable
def _get(x, lt, field):
    return load_i64(x + (lt * L.XF + field) * 8)


@register_jitable
def _set(x, lt, field, v):
    store_i64(x + (lt * L.XF + field) * 8, v)


@register_jitable
def _lane_bits(x, lo, hi, site, kind):
    """Bit mask (by lane in warp) of the lanes in [lo, hi) waiting at `site` with `kind`."""
    bits = np.int64(0)
    for lt in range(lo, hi):
        if _get(x, lt, L.X_STATUS) == L.WAITING and _get(x, lt, L.X_SITE) == site \
                and _get(x, lt, L.X_KIND) == kind:
            bits |= np.int64(1) << (lt - lo)
    return bits


@register_jitable
def _warp_call(c, x, w, lt0, checks):
    """Try to complete the warp call lane `lt0` waits at; True when it did."""
    tpb = c[L.TPB]
    lo = w * 32
    hi = min(tpb, lo + 32)
    site = _get(x, lt0, L.X_SITE)
    kind = _get(x, lt0, L.X_KIND)
    group = _lane_bits(x, lo, hi, site, kind)
    if kind == L.K_ACTIVEMASK:  # the lanes that are here now, whoever else comes later
        for lt in range(lo, hi):
            if (group >> (lt - lo)) & 1:
                _set(x, lt, L.X_RESULT, group)
                _set(x, lt, L.X_STATUS, L.RUNNABLE)
        return True
    exists = (np.int64(1) << (hi - lo)) - 1
    needed = np.int64(0)
    for lt in range(lo, hi):
        if (group >> (lt - lo)) & 1:
            m = _get(x, lt, L.X_MASK)
            if checks and not (m >> (lt - lo)) & 1:
                fail(c, L.E_WARP, site, 1, lt, m, 0, 0)  # the mask leaves out its own lane
            needed |= m
    needed &= exists
    for lt in range(lo, hi):
        # "all non-exited threads named in mask must execute the same intrinsic" (CUDA
        # Programming Guide): a named lane that has exited is excused; a shuffle that reads
        # one is caught below
        if (needed >> (lt - lo)) & 1 and not (group >> (lt - lo)) & 1 \
                and _get(x, lt, L.X_STATUS) != L.EXITED:
            return False  # a named lane has not arrived yet
    _complete_warp(c, x, lo, hi, group, kind, site, checks)
    return True


@register_jitable
def _complete_warp(c, x, lo, hi, group, kind, site, checks):
    if kind == L.K_SYNCWARP:
        c[L.STAMP] += 1
        live = np.int64(0)
        for lt in range(lo, hi):
            if _get(x, lt, L.X_STATUS) != L.EXITED:
                live |= np.int64(1) << (lt - lo)
        if group == live:
            store_i64(c[L.XCH] + L.XCH_FULL + (lo // 32) * 8, c[L.STAMP])
        else:
            n = c[L.WARP_EVENTS]
            if n < L.XCH_LOG_CAP:
                ev = c[L.XCH] + n * 24
                store_i64(ev, c[L.STAMP])
                store_i64(ev + 8, lo // 32)
                store_i64(ev + 16, group)
                c[L.WARP_EVENTS] = n + 1
    for lt in range(lo, hi):
        if not (group >> (lt - lo)) & 1:
            continue
        lane = lt - lo
        m = _get(x, lt, L.X_MASK) & group
        arg = _get(x, lt, L.X_ARG)
        own = _get(x, lt, L.X_VALUE)
        res = own
        res2 = np.int64(0)
        if kind >= L.K_SHFL_IDX and kind <= L.K_SHFL_XOR:
            if kind == L.K_SHFL_IDX:
                src = arg & 31
            elif kind == L.K_SHFL_UP:
                src = lane - arg
            elif kind == L.K_SHFL_DOWN:
                src = lane + arg
            else:
                src = lane ^ arg
            if 0 <= src < 32:
                if (group >> src) & 1:
                    res = _get(x, lo + src, L.X_VALUE)
                elif checks:
                    fail(c, L.E_WARP, site, 3, lt, src, 0, 0)  # reads a lane not taking part
        elif kind == L.K_ALL or kind == L.K_ANY or kind == L.K_EQ or kind == L.K_BALLOT:
            yes = np.int64(0)
            for k in range(32):
                if (m >> k) & 1 and _get(x, lo + k, L.X_VALUE) != 0:
                    yes |= np.int64(1) << k
            if kind == L.K_ALL:
                res = 1 if yes == m else 0
            elif kind == L.K_ANY:
                res = 1 if yes != 0 else 0
            elif kind == L.K_EQ:
                res = 1 if (yes == m or yes == 0) else 0
            else:
                res = yes
        elif kind == L.K_MATCH_ANY or kind == L.K_MATCH_ALL:
            same = np.int64(0)
            for k in range(32):
                if (m >> k) & 1 and _get(x, lo + k, L.X_VALUE) == own:
                    same |= np.int64(1) << k
            if kind == L.K_MATCH_ANY:
                res = same
            else:
                res = m if same == m else 0
                res2 = 1 if same == m else 0
        _set(x, lt, L.X_RESULT, res)
        _set(x, lt, L.X_RESULT2, res2)
        _set(x, lt, L.X_STATUS, L.RUNNABLE)


@register_jitable(forceinline=True)
def _barrier_result(kind, count, arrived):
    """syncthreads_count/_and/_or's result from how many arrived and how many passed nonzero."""
    if kind == L.K_SYNC_COUNT:
        return count
    if kind == L.K_SYNC_AND:
        return 1 if count == arrived else 0
    return 1 if count > 0 else 0


@register_jitable(forceinline=True)
def _pass_barrier(c, acquire):
    """The block passes a barrier: a new phase for the race check, the acquire it carries."""
    c[L.STAMP] += 1
    c[L.BARRIER_STAMP] = c[L.STAMP]
    c[L.PHASE] += 1
    c[L.WARP_EVENTS] = 0
    c[L.BLOCK_ACQUIRE] = acquire
    c[L.BARRIERS] += 1


@register_jitable
def _block_barrier(c, x, checks):
    """Complete a block-wide barrier if every live thread waits at it: 1 when it did, 0 when
    no thread waits at one, 2 when every live thread waits at grid.sync() (the block then waits
    for the grid: `grid_barrier`).

    Threads that returned (a `return` statement) no longer count, as on Volta and later; a
    thread that waits elsewhere, or ran to the end of the kernel without reaching this barrier,
    makes the barrier divergent."""
    tpb = c[L.TPB]
    first = -1
    for lt in range(tpb):
        if _get(x, lt, L.X_STATUS) == L.WAITING and _get(x, lt, L.X_KIND) < L.K_SYNCWARP:
            first = lt
            break
    if first < 0:
        for lt in range(tpb):
            if _get(x, lt, L.X_STATUS) == L.WAITING:  # a warp call that cannot complete
                fail(c, L.E_DEADLOCK, _get(x, lt, L.X_SITE), lt, -1, 0, 0, 0)
        return 0
    site, kind = _get(x, first, L.X_SITE), _get(x, first, L.X_KIND)
    arrived, live, other = 0, 0, -1
    for lt in range(tpb):
        st = _get(x, lt, L.X_STATUS)
        if st == L.EXITED and _get(x, lt, L.X_RETURNED):
            continue
        live += 1
        if st == L.WAITING and _get(x, lt, L.X_SITE) == site and _get(x, lt, L.X_KIND) == kind:
            arrived += 1
        elif other < 0:
            other = lt
    if other >= 0:
        if _get(x, other, L.X_STATUS) == L.WAITING and _get(x, other, L.X_KIND) >= L.K_SYNCWARP:
            fail(c, L.E_DEADLOCK, _get(x, other, L.X_SITE), other, first, site, 0, 0)
        if checks:
            elsewhere = _get(x, other, L.X_SITE) if _get(x, other, L.X_STATUS) == L.WAITING \
                else -1
            c[L.GT] = c[L.BLIN] * tpb + first
            fail(c, L.E_BARRIER, site, arrived, live, other, elsewhere, first)
    if kind == L.K_GRID:
        return 2
    count = 0
    acquire = c[L.BLOCK_ACQUIRE]
    for lt in range(tpb):
        if _get(x, lt, L.X_STATUS) != L.WAITING:
            continue
        if _get(x, lt, L.X_VALUE) != 0:
            count += 1
        acquire = max(acquire, _get(x, lt, L.X_ACQUIRE))
    res = _barrier_result(kind, count, arrived)
    _pass_barrier(c, acquire)
    for lt in range(tpb):
        if _get(x, lt, L.X_STATUS) == L.WAITING:
            _set(x, lt, L.X_RESULT, res)
            _set(x, lt, L.X_ARRIVALS, _get(x, lt, L.X_ARRIVALS) + 1)
            _set(x, lt, L.X_STATUS, L.RUNNABLE)
    return 1


@register_jitable
def barrier(c, kind, fences):
    """A block-wide barrier of a kernel run region by region (gpukit.sim.regions): every
    runnable thread of the block has reached it, by construction (uniform control flow), and
    threads that returned are excused, as in `_block_barrier`. `fences`: the kernel calls
    threadfence; without fences a plain barrier needs nothing from its threads (their acquire
    states only matter to fences' releases), so it does not visit them."""
    x = c[L.XCH] + L.XCH_THREADS
    if poll(c.ctypes.data + L.STOP * 8) != 0:
        fail(c, L.E_WATCHDOG, -1, 0, 0, 0, 0, 0)
    settle(c)
    if kind == L.K_BARRIER and not fences:
        _pass_barrier(c, c[L.BLOCK_ACQUIRE])
        return
    count, arrived = 0, 0
    acquire = c[L.BLOCK_ACQUIRE]
    for lt in range(c[L.TPB]):
        if _get(x, lt, L.X_STATUS) == L.RUNNABLE:
            arrived += 1
            if kind != L.K_BARRIER and _get(x, lt, L.X_VALUE) != 0:
                count += 1
            acquire = max(acquire, _get(x, lt, L.X_ACQUIRE))
    _pass_barrier(c, acquire)
    if kind == L.K_BARRIER:
        return
    res = _barrier_result(kind, count, arrived)
    for lt in range(c[L.TPB]):
        if _get(x, lt, L.X_STATUS) == L.RUNNABLE:
            _set(x, lt, L.X_RESULT, res)


@engine_cache.njit(nogil=True)
def resolve(c):
    """Complete what the block's waiting threads can complete. Returns how many threads are
    runnable afterwards (0: every thread has returned; -1: every live thread waits at
    grid.sync())."""
    x = c[L.XCH] + L.XCH_THREADS
    tpb = c[L.TPB]
    checks = (c[L.CHECKS] & L.CHECK_BARRIERS) != 0
    if poll(c.ctypes.data + L.STOP * 8) != 0:
        fail(c, L.E_WATCHDOG, -1, 0, 0, 0, 0, 0)
    settle(c)
    live = 0
    for lt in range(tpb):
        if _get(x, lt, L.X_STATUS) != L.EXITED:
            live += 1
    if live == 0:
        return 0
    progressed = False
    for lt in range(tpb):
        if _get(x, lt, L.X_STATUS) == L.WAITING and _get(x, lt, L.X_KIND) >= L.K_SYNCWARP \
                and _warp_call(c, x, lt // 32, lt, checks):
            progressed = True
    if not progressed:
        passed = _block_barrier(c, x, checks)
        if passed != 1:
            return -1 if passed == 2 else 0
    return live


@register_jitable
def begin_generators(c):
    """Mark every thread of the running block runnable (before its first resume)."""
    x = c[L.XCH] + L.XCH_THREADS
    for lt in range(c[L.TPB]):
        for f in range(L.XF):
            _set(x, lt, f, 0)


@register_jitable
def save_thread(c, code):
    """After a resume: the thread's status and its fence/acquire state."""
    x = c[L.XCH] + L.XCH_THREADS
    lt = c[L.LT]
    _set(x, lt, L.X_STATUS, L.EXITED if code < 0 else L.WAITING)
    _set(x, lt, L.X_FENCE, c[L.FENCE_STAMP])
    _set(x, lt, L.X_ACQUIRE, c[L.ACQUIRE_SEQ])


@register_jitable
def pause_thread(c):
    """After a region that ends without a barrier (gpukit.sim.regions): the running thread
    stays runnable; its fence/acquire state is kept."""
    x = c[L.XCH] + L.XCH_THREADS
    lt = c[L.LT]
    _set(x, lt, L.X_FENCE, c[L.FENCE_STAMP])
    _set(x, lt, L.X_ACQUIRE, c[L.ACQUIRE_SEQ])


def keep(c, nv, k, v):
    """Keep the running thread's value of its `k`-th of `nv` kept variables (a number or a
    bool) until its next region (gpukit.sim.regions)."""


@overload(keep, jit_options={'forceinline': True}, cached=True)
def _ol_keep(c, nv, k, v):
    if isinstance(v, (types.Integer, types.Float, types.Boolean)):
        def impl(c, nv, k, v):
            store_i64(c[L.REGION_VARS] + (c[L.LT] * nv + k) * 8, bits_of(v))
        return impl
    return None  # a tuple, an array view, ...: the kernel runs as generators instead


def reload(c, nv, k, proto):
    """The running thread's kept value of its `k`-th variable, of the type of `proto`."""


@overload(reload, jit_options={'forceinline': True}, cached=True)
def _ol_reload(c, nv, k, proto):
    if isinstance(proto, (types.Integer, types.Float, types.Boolean)):
        def impl(c, nv, k, proto):
            return from_bits(load_i64(c[L.REGION_VARS] + (c[L.LT] * nv + k) * 8), proto)
        return impl
    return None


@register_jitable
def restore_thread(c, lt):
    """Before a resume: make `lt` the running thread, with its fence/acquire state."""
    x = c[L.XCH] + L.XCH_THREADS
    begin_thread(c, lt, False, True)
    c[L.FENCE_STAMP] = _get(x, lt, L.X_FENCE)
    c[L.ACQUIRE_SEQ] = _get(x, lt, L.X_ACQUIRE)


@register_jitable
def returned(c):
    """A generator kernel's thread executes `return`: it leaves the block's barriers."""
    if c[L.XCH] != 0:
        _set(c[L.XCH] + L.XCH_THREADS, c[L.LT], L.X_RETURNED, 1)


@register_jitable
def runnable(c, lt):
    return _get(c[L.XCH] + L.XCH_THREADS, lt, L.X_STATUS) == L.RUNNABLE


@register_jitable(forceinline=True)
def block_threads(c):
    """What a region's loop over the block's threads reads once, before it starts: where the
    order threads run in is (0: index order) and where their exchange fields are."""
    return c[L.TORDER], c[L.XCH] + L.XCH_THREADS


@register_jitable(forceinline=True)
def nth_runnable(threads, k):
    """The `k`-th thread to run (`thread_at`) and whether it is runnable (`runnable`), from
    `block_threads`'s values."""
    order, x = threads
    lt = load_i64(order + k * 8) if order != 0 else k
    return lt, _get(x, lt, L.X_STATUS) == L.RUNNABLE


# -- the threads a region's guard lets through ----------------------------------------------------
# how a region's only statement compares the thread's threadIdx.x with a block-uniform bound
# (gpukit.sim.regions._Builder.span): tid < bound, tid <= bound, tid == bound, >=, >
SPAN_LT, SPAN_LE, SPAN_EQ, SPAN_GE, SPAN_GT = range(5)


def thread_span(c, op, bound):
    """The threads [lo, hi) of the running block that can pass `threadIdx.x <op> bound`: the
    others would do nothing in the region, so the block does not visit them. Every thread
    (0, blockDim) unless the block is 1-D, its threads run in index order (so the k-th thread
    run is thread k: not under the shuffled schedule) and the bound is an integer."""


@overload(thread_span, jit_options={'forceinline': True})
def _ol_thread_span(c, op, bound):
    if not isinstance(bound, types.Integer):
        return lambda c, op, bound: (np.int64(0), c[L.TPB])
    signed = bound.signed

    def impl(c, op, bound):
        tpb = c[L.TPB]
        if c[L.TORDER] != 0 or c[L.BDY] != 1 or c[L.BDZ] != 1:
            return np.int64(0), tpb
        if signed:
            b = max(min(np.int64(bound), tpb + 1), np.int64(-1))
        else:
            b = tpb + 1 if bound > tpb else np.int64(bound)
        lo, hi = np.int64(0), tpb
        if op == SPAN_LT:
            hi = b
        elif op == SPAN_LE:
            hi = b + 1
        elif op == SPAN_EQ:
            lo, hi = b, b + 1
        elif op == SPAN_GE:
            lo = b
        else:
            lo = b + 1
        lo = max(np.int64(0), min(lo, tpb))
        return lo, max(lo, min(hi, tpb))
    return impl


@register_jitable
def alive_beyond(c, alive, lo, hi):
    """The block's threads still running after a region that visited only [lo, hi) of them
    (`thread_span`): `alive`, the visited ones that did not return, or when none did, the
    runnable threads it did not visit (0 only when every thread has returned)."""
    if alive != 0:
        return alive
    for lt in range(c[L.TPB]):
        if (lt < lo or lt >= hi) and runnable(c, lt):
            alive += 1
    return alive


# -- grid.sync(): the blocks of a cooperative launch take turns ----------------------------------
# A kernel that calls `cuda.cg.this_grid().sync()` runs every block up to its next grid.sync()
# (or its end), one block after another, saving each block's state (shared memory with its
# records, its threads' exchange fields and local memory: the regions of the table at COOP)
# when it stops and restoring it when the block runs again. When every block waits at
# grid.sync(), the grid passes it: every access before it is ordered before every access after.
@register_jitable
def _coop_block(c, run):
    """Address of the `run`-th block's fields (CB_*) in the grid-sync table."""
    t = c[L.COOP]
    regions = load_i64(t + L.COOP_REGIONS * 8)
    return t + (L.COOP_HEADER + 2 * regions + run * L.COOP_BLOCK_FIELDS) * 8


@register_jitable
def _copy_block_state(c, run, save):
    """Copy the running block's state to the `run`-th save area (`save`) or back from it."""
    t = c[L.COOP]
    at = load_i64(t + L.COOP_SAVE * 8) + run * load_i64(t + L.COOP_BLOCK_BYTES * 8)
    for k in range(load_i64(t + L.COOP_REGIONS * 8)):
        addr = load_i64(t + (L.COOP_HEADER + 2 * k) * 8)
        nbytes = load_i64(t + (L.COOP_HEADER + 2 * k + 1) * 8)  # a multiple of 8
        for off in range(0, nbytes, 8):
            if save:
                store_i64(at + off, load_i64(addr + off))
            else:
                store_i64(addr + off, load_i64(at + off))
        at += nbytes


@register_jitable
def suspend_block(c, run, left):
    """The running block stopped: it finished (`left` 0) or waits at grid.sync() (-1)."""
    settle(c)
    _copy_block_state(c, run, True)
    b = _coop_block(c, run)
    store_i64(b + L.CB_DONE * 8, 1 if left == 0 else 0)
    store_i64(b + L.CB_SHARED_EPOCH * 8, c[L.SHARED_EPOCH])
    store_i64(b + L.CB_PHASE * 8, c[L.PHASE])
    if left < 0:
        waiting = c[L.COOP] + L.COOP_WAITING * 8
        store_i64(waiting, load_i64(waiting) + 1)
        x = c[L.XCH] + L.XCH_THREADS
        for lt in range(c[L.TPB]):
            if _get(x, lt, L.X_STATUS) == L.WAITING:
                store_i64(b + L.CB_SITE * 8, _get(x, lt, L.X_SITE))
                break


@register_jitable
def resume_block(c, run):
    """Make the `run`-th block the running one again, past the grid.sync() its threads wait
    at; False when it has finished."""
    b = _coop_block(c, run)
    if load_i64(b + L.CB_DONE * 8) != 0:
        return False
    _enter_block(c, run)
    c[L.SHARED_EPOCH] = load_i64(b + L.CB_SHARED_EPOCH * 8)
    c[L.PHASE] = load_i64(b + L.CB_PHASE * 8) + 1
    _copy_block_state(c, run, False)
    x = c[L.XCH] + L.XCH_THREADS
    for lt in range(c[L.TPB]):
        if _get(x, lt, L.X_STATUS) == L.WAITING and _get(x, lt, L.X_KIND) == L.K_GRID:
            _set(x, lt, L.X_RESULT, 0)
            _set(x, lt, L.X_ARRIVALS, _get(x, lt, L.X_ARRIVALS) + 1)
            _set(x, lt, L.X_STATUS, L.RUNNABLE)
    c[L.BARRIERS] += 1
    return True


@register_jitable
def grid_barrier(c):
    """After every block ran to its next grid.sync() or its end: False when all finished; True
    when all wait at grid.sync() and the grid passes it. A block that finished while another
    waits is an error: on a GPU that grid.sync() would wait for it forever."""
    t = c[L.COOP]
    waiting = load_i64(t + L.COOP_WAITING * 8)
    if waiting == 0:
        return False
    nblocks = c[L.NBLOCKS]
    if waiting < nblocks:
        done, wait = -1, -1
        for run in range(nblocks):
            if load_i64(_coop_block(c, run) + L.CB_DONE * 8) != 0:
                done = run if done < 0 else done
            elif wait < 0:
                wait = run
        order = c[L.ORDER]
        done_blin = load_i64(order + done * 8) if order != 0 else done
        wait_blin = load_i64(order + wait * 8) if order != 0 else wait
        c[L.GT] = wait_blin * c[L.TPB]
        fail(c, L.E_GRID_DEADLOCK, load_i64(_coop_block(c, wait) + L.CB_SITE * 8), done_blin,
             wait_blin, 0, 0, 0)
    store_i64(t + L.COOP_WAITING * 8, 0)
    c[L.STAMP] += 1
    c[L.LAUNCH_STAMP] = c[L.STAMP]  # older records are ordered before whatever comes next
    if c[L.BLOCK_STARTS] != 0:
        store_i64(c[L.BLOCK_STARTS], 0)  # block runs are counted per stretch between syncs
    if c[L.RELEASES] != 0:
        for k in range(2 * nblocks):
            store_i64(c[L.RELEASES] + k * 8, 0)
    return True
