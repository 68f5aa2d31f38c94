"""Checked memory accesses in compiled kernels: bounds, initialisation, races, counters, traces.

The transform turns every subscript of a kernel into `ld` or `st` (and atomics into `atomic`):
Numba overloads that, for arrays, check the index against the array's shape, find the memory slot
that holds the element (by address, so views, slices, aliases and device-function arguments are
all seen), and then

- check that a read element was written before (`S_INIT`): a read of an unwritten element is not
  an error by itself; it marks the value undefined (`UNDEF`), and the transform reports it where
  the value is used (stored, branched on, used as an index or passed on);
- keep per-element race records: a writer record and, for arrays that are also read, a reader
  record. A record packs (stamp, site, flags, thread index in its block). Stamps grow at every
  block start and every sync event, so a record is stale when older than the launch (or, for
  shared memory, than the block), belongs to an earlier block when older than the block, and is
  ordered before the present access when older than the block's latest barrier. Two accesses
  conflict when they come from different threads, at least one writes, not both are atomic, and
  nothing orders them (a barrier, a syncwarp both took part in, or a threadfence-and-atomic
  release followed by an atomic acquire, across blocks or within one). A plain write that
  leaves the element's bits unchanged counts as a read;
- count the access per source site, and record it when the block is traced.
Other subscripts (tuples, records' fields by name) keep Numba's own meaning.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.core.errors import TypingError

from . import engine_cache
from . import layout as L
from .lowlevel import (
    addr_of,
    load_at,
    load_u8,
    load_u64,
    out_of_line,
    overload,
    record_addr,
    register_jitable,
    store_at,
    store_u8,
    store_u64,
    trap,
)

# record layout: stamp (bits 32-63) | site (16-31) | flags (10-12) | thread index in block (0-9)
_LT_MASK = 1023
_ATOMIC = 1 << 10
_MULTI = 1 << 11  # reader record: several threads of the block read in this epoch
_MULTI_BLOCK = 1 << 12  # reader record: threads of another block read it too
_PRESERVING = 1 << 13  # writer record: the write left the element's bits as they were


@register_jitable
def fail(c, code, site, a, b, cc, d, e):
    """Report an error and stop the launch. A deferred error (an uninitialised value that was
    used) goes first, unless this is a race: in code racing on shared memory, a read of an
    element another thread has not written yet is a symptom; the race is the bug."""
    if c[L.PENDING] != 0 and code != L.E_RACE:
        for k in range(8):
            c[L.ERR_CODE + k] = c[L.PENDING + k]
        trap()
    c[L.ERR_CODE] = code
    c[L.ERR_SITE] = site
    c[L.ERR_GT] = c[L.GT]
    c[L.ERR_A] = a
    c[L.ERR_B] = b
    c[L.ERR_C] = cc
    c[L.ERR_D] = d
    c[L.ERR_E] = e
    trap()


@register_jitable
def defer(c, code, site, a, b, cc, d, e):
    """Report an error at the end of the running block's epoch (the next sync point, the end
    of the block), unless a race turns up first; the first one deferred is kept."""
    if c[L.PENDING] != 0:
        return
    c[L.PENDING] = code
    c[L.PENDING + 1] = site
    c[L.PENDING + 2] = c[L.GT]
    c[L.PENDING + 3] = a
    c[L.PENDING + 4] = b
    c[L.PENDING + 5] = cc
    c[L.PENDING + 6] = d
    c[L.PENDING + 7] = e


@register_jitable(forceinline=True)
def settle(c):
    """At a sync point or a block's end: raise the deferred error, if any."""
    if c[L.PENDING] != 0:
        fail(c, c[L.PENDING], 0, 0, 0, 0, 0, 0)


@register_jitable
def find_slot(c, addr):
    """The offset of the slot holding `addr` in the context, or -1."""
    s = L.HEADER + c[L.LAST_SLOT] * L.SLOT_FIELDS
    if c[s + L.S_BASE] <= addr < c[s + L.S_END]:
        return s
    for k in range(c[L.NSLOTS]):
        s = L.HEADER + k * L.SLOT_FIELDS
        if c[s + L.S_BASE] <= addr < c[s + L.S_END]:
            c[L.LAST_SLOT] = k
            return s
    return -1


@register_jitable(forceinline=True)
def _make(c, site, flags):
    return np.uint64((c[L.STAMP] << 32) | (site << 16) | flags | c[L.LT])


@register_jitable
def warp_ordered(c, stamp, other_lt):
    """Whether a syncwarp that both the running thread and `other_lt` took part in happened
    after `stamp` (and after the block's latest barrier)."""
    me = c[L.LT]
    if me // 32 != other_lt // 32:
        return False
    if np.int64(load_u64(c[L.XCH] + L.XCH_FULL + (me // 32) * 8)) > stamp:
        return True  # a whole-warp syncwarp (every live lane took part) since
    both = (np.int64(1) << (me % 32)) | (np.int64(1) << (other_lt % 32))
    log = c[L.XCH]  # the warp-event log lives at the start of the exchange area
    for k in range(c[L.WARP_EVENTS]):
        ev = log + k * 24
        if np.int64(load_u64(ev)) > stamp and np.int64(load_u64(ev + 8)) == me // 32 \
                and (np.int64(load_u64(ev + 16)) & both) == both:
            return True
    return False


@register_jitable
def released(c, rec):
    """Whether a record from an earlier block is ordered before the running thread by a
    threadfence-and-atomic release in its block and an atomic the running block performed since
    (the Programming Guide's last-block pattern). Atomics themselves count as released."""
    acquired = max(c[L.ACQUIRE_SEQ], c[L.BLOCK_ACQUIRE])
    if acquired == 0 or c[L.RELEASES] == 0:
        return False
    if rec & _ATOMIC:
        return True
    stamp = rec >> 32
    # the block run that made the record: the last one started at or before its stamp
    starts = c[L.BLOCK_STARTS]  # [number of blocks started, their first stamps in run order]
    lo, hi = 1, np.int64(load_u64(starts))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if np.int64(load_u64(starts + mid * 8)) <= stamp:
            lo = mid
        else:
            hi = mid - 1
    rel = c[L.RELEASES] + (lo - 1) * 16  # per block run: (its latest fence stamp, the atomic
    fence_stamp = np.int64(load_u64(rel))  # sequence number of its first atomic after it)
    release_seq = np.int64(load_u64(rel + 8))
    return release_seq != 0 and release_seq <= acquired and stamp <= fence_stamp


@register_jitable
def released_in_block(c, rec):
    """Whether a record of another thread of the running block is ordered before the running
    thread by that thread's threadfence-and-atomic release and an atomic the running thread
    performed since (a lock: `while cas(lock, 0, 0, 1) != 0: pass`, `threadfence()`, the
    critical section, `threadfence()`, `exch(lock, 0, 0)`)."""
    if c[L.RELEASES] == 0 or rec & _ATOMIC:
        return False
    at = c[L.RELEASES] + (c[L.NBLOCKS] + (rec & _LT_MASK)) * 16
    fence_stamp = np.int64(load_u64(at))
    release_seq = np.int64(load_u64(at + 8))
    stamp = rec >> 32
    return fence_stamp >= c[L.BLOCK_STAMP] and stamp <= fence_stamp and release_seq != 0 \
        and release_seq <= max(c[L.ACQUIRE_SEQ], c[L.BLOCK_ACQUIRE])


# A slot's descriptor: its fields read once per launch (the driver builds one per static slot,
# so hot accesses find them in registers rather than in the context).
D_BASE, D_SHIFT, D_INIT_KIND, D_INIT, D_WREC, D_RREC, D_SPACE, D_WRITABLE, D_FLAGS, D_SLOT = range(10)
NODESC = (-1, 0, 0, 0, 0, 0, 0, 0, 0, 0)  # an access whose slot is found by address
TRACE_FLAG = 1 << 8  # in D_FLAGS, beside the check flags
# in D_FLAGS: an access through the descriptor has nothing to do besides its bounds (no
# initialisation marks, no race records, no trace; a write also needs a writable slot), so
# `touch` returns at once instead of testing each field
QUIET_FLAG = 1 << 9
# in D_FLAGS: a write through the descriptor has only its element's written mark (a byte) to
# set besides its bounds: a fresh output that no race records cover (gpukit.sim.thread_indexed)
MARK_FLAG = 1 << 10


@register_jitable(forceinline=True)
def desc(c, k):
    """The descriptor of slot `k` (see D_*)."""
    s = L.HEADER + k * L.SLOT_FIELDS
    flags = c[L.CHECKS] | (TRACE_FLAG if c[L.TRACE_CAP] else 0)
    base, init_kind, wrec = c[s + L.S_BASE], c[s + L.S_INIT_KIND], c[s + L.S_WREC]
    shift = c[s + L.S_SHIFT]
    if base >= 0 and not flags & TRACE_FLAG and (wrec == 0 or not flags & L.CHECK_RACES):
        if init_kind == L.INIT_NONE:
            flags |= QUIET_FLAG
        # items of 2**shift bytes from an aligned base: (addr >> shift) - (base >> shift) indexes them
        elif init_kind == L.INIT_BYTE and c[s + L.S_WRITABLE] and shift >= 0 \
                and base & ((1 << shift) - 1) == 0:
            flags |= MARK_FLAG
    return (base, shift, init_kind, c[s + L.S_INIT], wrec, c[s + L.S_RREC],
            c[s + L.S_SPACE], c[s + L.S_WRITABLE], flags, np.int64(k))


@register_jitable
def unraced(c, d):
    """`d` for the reads of a shared array that no thread writes in their barrier interval
    (gpukit.sim.intervals), made once before the block's threads run them: without race
    records, as nothing can race with those reads, and without init marks when every element
    has been written in this block, as none can be unwritten while the reads last. The marks
    are looked at only for an array of at most 8 elements per thread, so that looking costs no
    more than a few reads would."""
    init_kind = d[D_INIT_KIND]
    if init_kind == L.INIT_STAMP or init_kind == L.INIT_WREC:
        elems = c[L.HEADER + d[D_SLOT] * L.SLOT_FIELDS + L.S_ELEMS]
        if elems <= 8 * c[L.TPB]:
            marks, init_kind = init_kind, L.INIT_NONE
            for e in range(elems):
                if not _written(c, marks, d[D_INIT], e):
                    init_kind = marks
                    break
    return (d[D_BASE], d[D_SHIFT], init_kind, d[D_INIT], np.int64(0), np.int64(0),
            d[D_SPACE], d[D_WRITABLE], d[D_FLAGS], d[D_SLOT])


@register_jitable
def _conflict(c, site, slot, e, rec, writes, other_writes):
    fail(c, L.E_RACE, site, slot, e, np.int64(rec), 1 if writes else 0, 1 if other_writes else 0)


@register_jitable(forceinline=True)
def _check_writer(c, site, slot, wrec, e, lo, kind):
    """Check the element's writer record against the running thread's access.

    kind: 0 a read, 1 a write, 2 an atomic, 3 a write that keeps the element's bits. A write
    that changed nothing orders with everything but a later write that changes the element (and
    reads do not conflict with it): `cuda.syncwarp`'s documented `ary[i] = ary[0]` pattern."""
    w = np.int64(load_u64(wrec + e * 8))
    # an atomic after an atomic never races, whoever did it and whenever: tested first, before
    # the tests of who wrote the element when, which in a histogram are as good as random (a
    # branch mispredicted every other access: a histogram's atomics spent 5.8 ns an element in
    # the race check, 1.7 ns with this test and `_write_record`'s first, 2026-12-08)
    if kind == 2 and (w & _ATOMIC):
        return
    ws = w >> 32
    if ws < lo or kind == 3:
        return
    if kind == 0 and (w & _PRESERVING):
        return
    if ws < c[L.BLOCK_STAMP]:  # written by an earlier block of this launch
        if kind == 2 and (w & _ATOMIC):
            return
        if released(c, w):
            return
        _conflict(c, site, slot, e, w, kind != 0, True)
    if (w & _LT_MASK) == c[L.LT] or ws < c[L.BARRIER_STAMP]:
        return
    if kind == 2 and (w & _ATOMIC):
        return
    if c[L.XCH] != 0 and warp_ordered(c, ws, w & _LT_MASK):
        return
    if released_in_block(c, w):
        return
    _conflict(c, site, slot, e, w, kind != 0, True)


@register_jitable(forceinline=True)
def _record_read(c, site, rrec, e, lo):
    rp = rrec + e * 8
    r = np.int64(load_u64(rp))
    rs = r >> 32
    bs = c[L.BLOCK_STAMP]
    if rs < lo or (bs <= rs < c[L.BARRIER_STAMP]):
        store_u64(rp, _make(c, site, 0))
    elif rs >= bs:
        if (r & _LT_MASK) != c[L.LT] and not (r & _MULTI):
            if (c[L.XCH] != 0 and warp_ordered(c, rs, r & _LT_MASK)) or \
                    released_in_block(c, r):
                # the earlier reader is ordered before this one (by a syncwarp they both took
                # part in, or its release and this thread's acquire): a later write unordered
                # with it is unordered with this read too
                store_u64(rp, _make(c, site, 0))
            else:
                store_u64(rp, np.uint64(r | _MULTI))
    elif not (r & _MULTI_BLOCK):
        store_u64(rp, np.uint64(r | _MULTI_BLOCK))


@register_jitable(forceinline=True)
def _check_readers(c, site, slot, rrec, e, lo):
    """A write (or atomic) by the running thread against the element's reader record."""
    r = np.int64(load_u64(rrec + e * 8))
    rs = r >> 32
    if rs < lo:
        return
    if rs < c[L.BLOCK_STAMP] or (r & _MULTI_BLOCK):
        if not released(c, r):
            _conflict(c, site, slot, e, r, True, False)
        return
    if rs < c[L.BARRIER_STAMP]:
        return
    if (r & _LT_MASK) == c[L.LT] and not (r & _MULTI):
        return
    if not (r & _MULTI) and c[L.XCH] != 0 and warp_ordered(c, rs, r & _LT_MASK):
        return
    if not (r & _MULTI) and released_in_block(c, r):
        return
    _conflict(c, site, slot, e, r, True, False)


@register_jitable(forceinline=True)
def _write_record(c, site, wrec, e, lo, kind):
    wp = wrec + e * 8
    w = np.int64(load_u64(wp))
    ws = w >> 32
    if kind == 3:  # a write that changed nothing: on record only where nothing else is
        if ws >= lo and ws >= c[L.BARRIER_STAMP] and (w & _LT_MASK) != c[L.LT]:
            return
        store_u64(wp, _make(c, site, _PRESERVING))
        return
    # a thread's own plain write stays on record under its atomics: others' atomics race it
    # (the predictable test first: most records under an atomic are atomics')
    if kind == 2 and not (w & _ATOMIC) and ws >= c[L.BLOCK_STAMP] \
            and (w & _LT_MASK) == c[L.LT]:
        return
    store_u64(wp, _make(c, site, _ATOMIC if kind == 2 else 0))


@register_jitable
def _trace(c, site, slot, e, kind):
    if c[L.TRACE_ON] == 0:  # a block outside the sample
        return
    n = c[L.TRACE_N]
    if n >= c[L.TRACE_CAP]:
        if c[L.TRACE_QUIET]:
            c[L.TRACE_FULL] = 1
            return
        fail(c, L.E_TRACE_FULL, site, n, 0, 0, 0, 0)
    row = c[L.TRACE_COLS] + n * (L.TRACE_FIELDS * 8)
    seq_at = c[L.TRACE_SEQ] + (c[L.LT] * c[L.NSITES] + site) * 8  # [thread][site] counters
    seq = np.int64(load_u64(seq_at))
    store_u64(seq_at, seq + 1)
    store_u64(row, c[L.GT])
    store_u64(row + 8, site)
    store_u64(row + 16, slot)
    store_u64(row + 24, e)
    store_u64(row + 32, kind)
    store_u64(row + 40, c[L.PHASE])
    store_u64(row + 48, seq)
    c[L.TRACE_N] = n + 1


@register_jitable
def _undefined_read(c, site, slot, e):
    c[L.UNDEF] += 1
    c[L.UNDEF_SITE] = site
    c[L.UNDEF_SLOT] = slot
    c[L.UNDEF_ELEM] = e
    c[L.UNDEF_LT] = c[L.LT]


@register_jitable
def _dynamic(c, site, addr, isz):
    """The descriptor of the slot holding `addr` (an access whose slot the transform could not
    know); counts the access, which static accesses count in the kernel's own variables."""
    s = find_slot(c, addr)
    if s < 0:
        cnt = c[L.SITE_BASE] + site * L.SITE_FIELDS
        c[cnt + L.SPACE_CONST] += 1
        c[cnt + L.SC_ITEMSIZE] = isz
        return NODESC
    d = desc(c, (s - L.HEADER) // L.SLOT_FIELDS)
    cnt = c[L.SITE_BASE] + site * L.SITE_FIELDS
    c[cnt + d[D_SPACE]] += 1
    c[cnt + L.SC_ITEMSIZE] = isz
    return d


@register_jitable(forceinline=True)
def _written(c, init_kind, ip, e):
    """Whether element `e` has been written, by its init marks at `ip` (INIT_BYTE: a byte per
    element; INIT_STAMP: the stamp of its latest write, written in this block when not older
    than the block's shared memory; INIT_WREC: that stamp in its writer record)."""
    if init_kind == L.INIT_BYTE:
        return load_u8(ip + e) != 0
    stamp = np.int64(load_u64(ip + e * 8))
    if init_kind == L.INIT_WREC:
        stamp >>= 32
    return stamp >= c[L.SHARED_EPOCH]


@register_jitable(forceinline=True)
def touch(c, site, d, addr, isz, kind, preserving):
    """Everything an element access does besides the load or store itself.

    `d`: the slot's descriptor (NODESC: find it by address); kind: KIND_READ, KIND_WRITE or
    KIND_ATOMIC; `preserving`: a plain write of the bits already there (checked as a read).
    """
    if _quiet(d, addr, kind):
        return
    _checked(c, site, d, addr, isz, kind, preserving)


@register_jitable(forceinline=True)
def touch_outlined(c, site, d, addr, isz, kind, preserving):
    """`touch` for the access sites of a kernel past its first `OUTLINE_ACCESSES`: only its
    two cheapest cases are compiled into each access; the rest is one function that each
    access calls. Compiled into every access, the whole of it makes LLVM's work grow faster
    than the kernel (2026-12-07, 2-core VM: 40 reads and 40 writes took 29-40 s to compile,
    8.6 s with those past the first 16 this way, 6 s with all; `touch`'s inline checks run up
    to twice as fast, so the first sites keep it)."""
    if _quiet(d, addr, kind):
        return
    _checked_call(c, site, d, addr, isz, kind, preserving)


@register_jitable(forceinline=True)
def _quiet(d, addr, kind):
    """The accesses with nothing to check (QUIET_FLAG) or only a written mark to set
    (MARK_FLAG, set here): whether that was all."""
    if d[D_FLAGS] & QUIET_FLAG and (kind == L.KIND_READ or d[D_WRITABLE] != 0):
        return True
    if d[D_FLAGS] & MARK_FLAG and kind == L.KIND_WRITE:
        shift = d[D_SHIFT]  # the element's index, as desc allows: all but addr >> shift is
        store_u8(d[D_INIT] - (d[D_BASE] >> shift) + (addr >> shift), 1)  # the same every time
        return True
    return False


@register_jitable(forceinline=True)
def _checked(c, site, d, addr, isz, kind, preserving):
    """`touch` past `_quiet`: init marks, race records and the trace."""
    if d[D_BASE] < 0:
        d = _dynamic(c, site, addr, isz)
        if d[D_BASE] < 0:
            return
    flags = d[D_FLAGS]
    if kind != L.KIND_READ and d[D_WRITABLE] == 0:
        fail(c, L.E_READONLY, site, d[D_SLOT], 0, 0, 0, 0)
    shift = d[D_SHIFT]
    off = addr - d[D_BASE]
    e = off >> shift if shift >= 0 else off // isz
    init_kind = d[D_INIT_KIND]
    if init_kind != L.INIT_NONE:
        ip = d[D_INIT]
        if kind == L.KIND_WRITE and preserving:  # unwritten memory: no write preserves it
            preserving = _written(c, init_kind, ip, e)
        if kind != L.KIND_WRITE:
            ok = _written(c, init_kind, ip, e)
            if not ok and (flags & L.CHECK_UNINITIALIZED):
                if kind == L.KIND_ATOMIC:  # its result goes back to memory: an error, but a
                    defer(c, L.E_UNINIT, site, d[D_SLOT], e, 0, 0, 0)  # race is reported first
                _undefined_read(c, site, d[D_SLOT], e)
        if kind != L.KIND_READ:  # (INIT_WREC: the writer record below is the mark)
            if init_kind == L.INIT_BYTE:
                store_u8(ip + e, 1)
            elif init_kind == L.INIT_STAMP:
                store_u64(ip + e * 8, c[L.STAMP])
    wrec = d[D_WREC]
    if wrec != 0 and (flags & L.CHECK_RACES):
        lo = c[L.BLOCK_STAMP] if d[D_SPACE] == L.SPACE_SHARED else c[L.LAUNCH_STAMP]
        how = kind if not (kind == L.KIND_WRITE and preserving) else 3
        _check_writer(c, site, d[D_SLOT], wrec, e, lo, how)
        rrec = d[D_RREC]
        if how == 0:
            if rrec != 0:
                _record_read(c, site, rrec, e, lo)
        else:
            if rrec != 0 and how != 3:
                _check_readers(c, site, d[D_SLOT], rrec, e, lo)
            _write_record(c, site, wrec, e, lo, how)
    if flags & TRACE_FLAG and c[L.TRACE_ON]:  # (off in blocks outside a sample)
        _trace(c, site, d[D_SLOT], e, kind)


_checked_call = out_of_line(_checked)


@register_jitable
def touch_unraced(c, site, d, addr, isz):
    """`touch` of a read that keeps no race records (`ld_unraced`, with a descriptor made by
    `unraced`), called only where the descriptor asks for more than the bounds: the element's
    init mark (unless the block wrote every element) and the trace."""
    flags = d[D_FLAGS]
    init_kind = d[D_INIT_KIND]
    off = addr - d[D_BASE]
    shift = d[D_SHIFT]
    e = off >> shift if shift >= 0 else off // isz
    if init_kind != L.INIT_NONE and (flags & L.CHECK_UNINITIALIZED) \
            and not _written(c, init_kind, d[D_INIT], e):
        _undefined_read(c, site, d[D_SLOT], e)
    if flags & TRACE_FLAG and c[L.TRACE_ON]:
        _trace(c, site, d[D_SLOT], e, L.KIND_READ)


@register_jitable
def bounds_fail(c, site, axis, value, obj):
    c[L.ERR_BASE] = addr_of(obj)
    c[L.ERR_NDIM] = obj.ndim
    for k in range(min(obj.ndim, 4)):
        c[L.ERR_SHAPE + k] = obj.shape[k]
    fail(c, L.E_BOUNDS, site, axis, value, obj.shape[axis], 0, 0)


# -- the overloads the transform calls ----------------------------------------------------------
def ld(c, obj, idx, site, d, n):
    """obj[idx] in a kernel."""


def st(c, obj, idx, value, site, d, n):
    """obj[idx] = value in a kernel."""


def ld_unraced(c, obj, idx, site, d, n):
    """obj[idx], an element of a shared array that nothing can race with (gpukit.sim.intervals
    gives it a descriptor made by `unraced`)."""


def ld_bare(c, obj, idx, site, d, n):
    """`ld_unraced` where `bounds_only(d)`: the bounds are all there is to check."""


def ld_free(c, obj, idx, site, d, n):
    """`ld_bare` in a loop whose indices were found in bounds before the loop started
    (gpukit.sim.hoist): nothing is left to check."""


def ld_inb(c, obj, idx, site, d, n):
    """`ld` in a loop whose indices were found in bounds before the loop started
    (gpukit.sim.hoist): every check but the bounds."""


def st_inb(c, obj, idx, value, site, d, n):
    """`st` in a loop whose indices were found in bounds before the loop started."""


def extent(obj, axis):
    """`obj.shape[axis]` of an array with that axis; -1 for anything else (gpukit.sim.hoist's
    tests then fail, and the loop runs with every check)."""


@overload(extent, jit_options={'forceinline': True}, cached=True)
def _ol_extent(obj, axis):
    if isinstance(obj, types.Array) and obj.ndim > 0:
        return lambda obj, axis: obj.shape[axis] if axis < obj.ndim else -1
    return lambda obj, axis: -1


@register_jitable
def bounds_only(d):
    """Whether a descriptor made by `unraced` asks for nothing but bounds checks."""
    return d[D_INIT_KIND] == L.INIT_NONE and not (d[D_FLAGS] & TRACE_FLAG)


def _full_index(idx) -> int:
    """How many integer indices `idx` gives (0 when it is not all integers)."""
    items = idx.types if isinstance(idx, types.BaseTuple) else (idx,)
    if not all(isinstance(t, (types.Integer, types.IntegerLiteral)) for t in items):
        return 0
    return len(items)


def _element_source(ndim: int, store: bool, tuple_index: bool, direct: bool,
                    unraced: str = "", bounds: bool = True, outlined: bool = False) -> str:
    """Element access for `ndim` integer indices (tuples may mix integer types).

    `direct`: the element is a number or a boolean, loaded and stored at the address computed
    here (other dtypes, such as records, go through Numba's own indexing). `unraced`: a read
    that keeps no race records, "checked" (`ld_unraced`: its other checks run where its
    descriptor has any) or "bare" (`ld_bare`: the bounds only). Without `bounds`, the indices
    are known to be in bounds (`ld_free`, `ld_inb`, `st_inb`). `outlined`: the checks call
    `touch_outlined` (a kernel with many accesses)."""
    args = "c, obj, idx, value, site, d, n" if store else "c, obj, idx, site, d, n"
    touch_ = "touch_outlined" if outlined else "touch"
    lines = [f"def impl({args}):",
             "    addr = addr_of(obj)"]
    for k in range(ndim):
        src = f"idx[{k}]" if tuple_index else "idx"
        lines.append(f"    i{k} = np.int64({src})")
        if bounds:
            # i < 0 or i >= n in one unsigned compare (shapes are >= 0); the flags only here
            lines += [f"    if np.uint64(i{k}) >= np.uint64(obj.shape[{k}]):",
                      "        bc = d[8] & CHECK_BOUNDS if d[0] >= 0 else c[CHECKS] & CHECK_BOUNDS",
                      (f"        if (bc and (i{k} >= obj.shape[{k}] or i{k} < -obj.shape[{k}])) "
                       f"or (i{k} < 0 and i{k} >= -obj.shape[{k}] "
                       "and c[CHECKS] & CHECK_WRAPAROUND):"),
                      f"            bounds_fail(c, site, {k}, i{k}, obj)",
                      f"        if i{k} < 0:",  # Numba wraps negative indices to the end
                      f"            i{k} += obj.shape[{k}]"]
        lines.append(f"    addr += i{k} * obj.strides[{k}]")
    index = ", ".join(f"i{k}" for k in range(ndim))
    if store:  # store first, then check: a failed check ends the launch either way
        if direct:  # the old value matters only to the race records (a write that keeps the
            lines += ["    if d[4] == 0 and d[0] >= 0:",  # bits counts as a read): a fresh
                      "        store_at(addr, value, obj)",  # output's page is not read first
                      f"        {touch_}(c, site, d, addr, obj.itemsize, KIND_WRITE, False)",
                      "        return",
                      "    old = load_at(addr, obj)",
                      "    store_at(addr, value, obj)",
                      (f"    {touch_}(c, site, d, addr, obj.itemsize, KIND_WRITE, "
                       "same_bits(old, load_at(addr, obj)))")]
        else:
            lines += [f"    old = obj[{index}]",
                      f"    obj[{index}] = value",
                      (f"    {touch_}(c, site, d, addr, obj.itemsize, KIND_WRITE, "
                       f"same_bits(old, obj[{index}]))")]
    else:
        if unraced == "checked":
            lines += ["    if d[2] != INIT_NONE or d[8] & TRACE_FLAG:",
                      "        touch_unraced(c, site, d, addr, obj.itemsize)"]
        elif not unraced:
            lines.append(f"    {touch_}(c, site, d, addr, obj.itemsize, KIND_READ, False)")
        lines.append("    return load_at(addr, obj)" if direct else f"    return obj[{index}]")
    return "\n".join(lines)


_IMPLS: dict = {}


def _impl_for(ndim: int, store: bool, tuple_index: bool, direct: bool, unraced: str = "",
              bounds: bool = True, outlined: bool = False):
    key = (ndim, store, tuple_index, direct, unraced, bounds, outlined)
    if key not in _IMPLS:
        namespace = {"__name__": __name__,  # (Numba's cache finds its globals again by it)
                     "np": np, "addr_of": addr_of, "bounds_fail": bounds_fail, "touch": touch,
                     "touch_outlined": touch_outlined,
                     "touch_unraced": touch_unraced, "INIT_NONE": L.INIT_NONE,
                     "TRACE_FLAG": TRACE_FLAG,
                     "same_bits": same_bits, "CHECKS": L.CHECKS, "CHECK_BOUNDS": L.CHECK_BOUNDS,
                     "CHECK_WRAPAROUND": L.CHECK_WRAPAROUND,
                     "KIND_WRITE": L.KIND_WRITE, "KIND_READ": L.KIND_READ,
                     "load_at": load_at, "store_at": store_at}
        source = _element_source(ndim, store, tuple_index, direct, unraced, bounds, outlined)
        exec(compile(source, f"<gpukit {ndim}-d access>", "exec"), namespace)  # noqa: S102
        _IMPLS[key] = impl = namespace["impl"]
        # its source is the key's: the key names it for the cache on disk
        engine_cache.enroll(impl, "-".join(str(k) for k in key))
    return _IMPLS[key]


# The element access sites of a kernel (with its device functions) past the first this many call
# their checks out of line (`touch_outlined`). The transform says so by the type of each such
# access's last argument, `n`: False instead of 0 (a bool, not an int).
OUTLINE_ACCESSES = 16


def _outlined(n) -> bool:
    return isinstance(n, types.Boolean)


def _direct(ary: types.Array) -> bool:
    return isinstance(ary.dtype, (types.Number, types.Boolean))


def same_bits(old, new):
    """Whether `new` (as stored) equals `old` bit for bit (NaNs compare equal to NaNs)."""


@overload(same_bits, jit_options={'forceinline': True})
def _ol_same_bits(old, new):
    if isinstance(old, types.Float):
        return lambda old, new: old == new or (math.isnan(old) and math.isnan(new))
    if isinstance(old, (types.Integer, types.Boolean, types.Complex)):
        return lambda old, new: old == new
    return lambda old, new: False


@register_jitable
def pointer_addr(c, site, ptr, i, isz):
    """The address of `ptr[i]`, an element of `isz` bytes, checked to lie in one slot (an
    allocation the launch can touch): a pointer carries no extent, so this is its bounds
    check, and it is always on (an access past every array would reach the host's memory)."""
    base = addr_of(ptr)
    addr = base + np.int64(i) * isz
    s = find_slot(c, addr)
    if s < 0 or addr + isz > c[s + L.S_END]:
        fail(c, L.E_NO_SLOT, site, base, np.int64(i), isz, 0, 0)
    return addr


@register_jitable
def pointer_span(c, site, base, count, isz):
    """Check that `count` elements of `isz` bytes from address `base` (an array made over a
    raw pointer) lie in one slot."""
    if count <= 0:
        return
    s = find_slot(c, base)
    if s < 0 or base + count * isz > c[s + L.S_END]:
        fail(c, L.E_NO_SLOT, site, base, np.int64(count - 1), isz, 1, 0)


def _pointer_access(ptr, idx, store: bool):
    """ptr[idx] through a raw pointer (a `CPointer` parameter of an eager signature)."""
    if not isinstance(ptr, types.CPointer) or not isinstance(idx, types.Integer):
        return None
    from numba.np.numpy_support import as_dtype
    isz = as_dtype(ptr.dtype).itemsize
    if store:
        def store_impl(c, obj, idx, value, site, d, n):
            addr = pointer_addr(c, site, obj, idx, isz)
            old = obj[idx]
            obj[idx] = value
            touch(c, site, NODESC, addr, isz, L.KIND_WRITE, same_bits(old, obj[idx]))
        return store_impl

    def load_impl(c, obj, idx, site, d, n):
        touch(c, site, NODESC, pointer_addr(c, site, obj, idx, isz), isz, L.KIND_READ, False)
        return obj[idx]
    return load_impl


@overload(ld, jit_options={'forceinline': True}, cached=True)
def _ol_ld(c, obj, idx, site, d, n):
    if isinstance(obj, types.CPointer):
        return _pointer_access(obj, idx, False)
    if isinstance(obj, types.Array):
        if _full_index(idx) == obj.ndim:
            return _impl_for(obj.ndim, False, isinstance(idx, types.BaseTuple), _direct(obj),
                             outlined=_outlined(n))
        return None  # a view: the overload below
    field = _field(obj, idx)
    if field is not None:
        if isinstance(obj.typeof(field), types.NestedArray):
            return None  # an array field: a view (below)
        return _field_load(obj, field)
    if _holds_arrays(obj):
        return None  # an item of a tuple of arrays: below
    if isinstance(obj, types.RangeType):  # `for a, b in zip(range(...), x)`: Numba has no
        return lambda c, obj, idx, site, d, n: obj.start + idx * obj.step  # range[k]
    return lambda c, obj, idx, site, d, n: obj[idx]


# it returns a new array, so it needs Numba's runtime
@overload(ld, jit_options={'forceinline': True, '_nrt': True}, cached=True)
def _ol_ld_view(c, obj, idx, site, d, n):
    if isinstance(obj, types.Array) and _full_index(idx) < obj.ndim:
        return lambda c, obj, idx, site, d, n: view(c, obj, idx, site)
    field = _field(obj, idx)
    if field is not None and isinstance(obj.typeof(field), types.NestedArray):
        return lambda c, obj, idx, site, d, n: obj[field]  # its elements are checked when used
    if _holds_arrays(obj):  # its arrays' elements are checked when used
        return lambda c, obj, idx, site, d, n: obj[idx]
    return None


def _one_element(obj, idx) -> bool:
    return isinstance(obj, types.Array) and _full_index(idx) == obj.ndim


def _unraced_load(obj, idx, how: str, bounds: bool = True):
    if _one_element(obj, idx):
        return _impl_for(obj.ndim, False, isinstance(idx, types.BaseTuple), _direct(obj), how,
                         bounds)
    return None  # not one element after all: a typing error, and the kernel runs as generators


@overload(ld_unraced, jit_options={'forceinline': True}, cached=True)
def _ol_ld_unraced(c, obj, idx, site, d, n):
    return _unraced_load(obj, idx, "checked")


@overload(ld_bare, jit_options={'forceinline': True}, cached=True)
def _ol_ld_bare(c, obj, idx, site, d, n):
    return _unraced_load(obj, idx, "bare")


@overload(ld_free, jit_options={'forceinline': True}, cached=True)
def _ol_ld_free(c, obj, idx, site, d, n):
    return _unraced_load(obj, idx, "bare", bounds=False)


@overload(ld_inb, jit_options={'forceinline': True}, cached=True)
def _ol_ld_inb(c, obj, idx, site, d, n):
    if _one_element(obj, idx):
        return _impl_for(obj.ndim, False, isinstance(idx, types.BaseTuple), _direct(obj),
                         bounds=False, outlined=_outlined(n))
    return None


# anything else (a view, a pointer, a record's field): `ld` itself, every check included
@overload(ld_inb, jit_options={'forceinline': True, '_nrt': True}, cached=True)
def _ol_ld_inb_other(c, obj, idx, site, d, n):
    if _one_element(obj, idx):
        return None
    return lambda c, obj, idx, site, d, n: ld(c, obj, idx, site, d, n)


@overload(st_inb, jit_options={'forceinline': True}, cached=True)
def _ol_st_inb(c, obj, idx, value, site, d, n):
    if _one_element(obj, idx):
        return _impl_for(obj.ndim, True, isinstance(idx, types.BaseTuple), _direct(obj),
                         bounds=False, outlined=_outlined(n))
    return None


@overload(st_inb, jit_options={'forceinline': True, '_nrt': True}, cached=True)
def _ol_st_inb_other(c, obj, idx, value, site, d, n):
    if _one_element(obj, idx):
        return None
    return lambda c, obj, idx, value, site, d, n: st(c, obj, idx, value, site, d, n)


def _holds_arrays(obj) -> bool:
    """Whether `obj` is a tuple with an array in it (at any depth)."""
    return isinstance(obj, types.BaseTuple) and any(
        isinstance(t, types.Array) or _holds_arrays(t) for t in obj.types)


def _field(obj, idx) -> str | None:
    """The record field `obj[idx]` names (by name or by position), or None."""
    if not isinstance(obj, types.Record):
        return None
    if isinstance(idx, types.StringLiteral):
        return idx.literal_value
    if isinstance(idx, types.IntegerLiteral) and -len(obj.fields) <= idx.literal_value \
            < len(obj.fields):
        return list(obj.fields)[idx.literal_value]
    return None


@overload(st, jit_options={'forceinline': True}, cached=True)
def _ol_st(c, obj, idx, value, site, d, n):
    if isinstance(obj, types.CPointer):
        return _pointer_access(obj, idx, True)
    if isinstance(obj, types.Array):
        if _full_index(idx) == obj.ndim:
            return _impl_for(obj.ndim, True, isinstance(idx, types.BaseTuple), _direct(obj),
                             outlined=_outlined(n))
        return None  # a slice or a partial index: the overload below
    field = _field(obj, idx)
    if field is not None:
        return _field_store(obj, field)

    def impl(c, obj, idx, value, site, d, n):
        obj[idx] = value
    return impl


# `out[:] = x`, `tmp[1:3] = 0.0`, `m[i] = row`: the view's elements one by one, each store
# with every check. It makes a view, so it needs Numba's runtime.
@overload(st, jit_options={'forceinline': True, '_nrt': True}, cached=True)
def _ol_st_view(c, obj, idx, value, site, d, n):
    if isinstance(obj, types.Array) and _full_index(idx) < obj.ndim:
        return _view_store(obj, idx, value)
    return None


def _view_store(obj, idx, value):
    """Assign `value` (a scalar, or an array numpy broadcasts to the view's shape) to the view
    obj[idx]. An array's elements are read with every check, at the statement's site."""
    from numba.core.typing.arraydecl import get_array_index_type

    target = get_array_index_type(obj, idx).result
    ndim = target.ndim if isinstance(target, types.Array) else 0
    if not isinstance(value, types.Array):
        def impl(c, obj, idx, value, site, d, n):
            v = view(c, obj, idx, site)
            for ix in np.ndindex(v.shape):
                st(c, v, ix, value, site, d, n)
        return impl
    if value.ndim > ndim:
        raise TypingError(f"cannot assign a {value.ndim}-d array to a {ndim}-d slice")
    off = ndim - value.ndim  # numpy broadcasting: the value's axes line up with the last ones
    key = ("view-store", value.ndim, off)
    if key in _IMPLS:
        return _IMPLS[key]
    lines = ["def impl(c, obj, idx, value, site, d, n):",
             "    v = view(c, obj, idx, site)"]
    for k in range(value.ndim):
        lines += [f"    if value.shape[{k}] != 1 and value.shape[{k}] != v.shape[{off + k}]:",
                  "        raise ValueError('cannot assign slice from input of different size')"]
    # read first, then write, as Numba does when the two overlap (`a[1:] = a[:-1]`)
    src = ", ".join(f"0 if value.shape[{k}] == 1 else ix[{off + k}]" for k in range(value.ndim))
    lines += ["    tmp = np.empty(v.shape, v.dtype)",
              "    for ix in np.ndindex(v.shape):",
              f"        tmp[ix] = ld(c, value, ({src},), site, NODESC, n)",
              "    for ix in np.ndindex(v.shape):",
              "        st(c, v, ix, tmp[ix], site, d, n)"]
    namespace = {"__name__": __name__, "np": np, "view": view, "st": st, "ld": ld,
                 "NODESC": NODESC}
    exec(compile("\n".join(lines), "<gpukit view store>", "exec"), namespace)  # noqa: S102
    _IMPLS[key] = impl = namespace["impl"]
    engine_cache.enroll(impl, "-".join(str(k) for k in key))  # its source is the key's
    return impl


def view(c, obj, idx, site):
    """obj[idx] that is a view (a partial index or slices), its integer indices checked."""


@overload(view, jit_options={"_nrt": True})  # a function returning an array needs the runtime
def _ol_view(c, obj, idx, site):
    return _view_impl(obj, idx)


def _view_impl(obj, idx):
    """A partial index or a slice: bounds-check the integer components, return Numba's view."""
    items = idx.types if isinstance(idx, types.BaseTuple) else (idx,)
    lines = ["def impl(c, obj, idx, site):", "    bc = c[CHECKS] & CHECK_BOUNDS"]
    for k, t in enumerate(items):
        if isinstance(t, (types.Integer, types.IntegerLiteral)):
            src = f"idx[{k}]" if isinstance(idx, types.BaseTuple) else "idx"
            lines += [f"    j = np.int64({src})",
                      (f"    if (bc and (j >= obj.shape[{k}] or j < -obj.shape[{k}])) or "
                       f"(j < 0 and j >= -obj.shape[{k}] and c[CHECKS] & CHECK_WRAPAROUND):"),
                      f"        bounds_fail(c, site, {k}, j, obj)"]
    lines.append("    return obj[idx]")
    namespace = {"np": np, "bounds_fail": bounds_fail, "CHECKS": L.CHECKS,
                 "CHECK_BOUNDS": L.CHECK_BOUNDS, "CHECK_WRAPAROUND": L.CHECK_WRAPAROUND}
    exec("\n".join(lines), namespace)  # noqa: S102
    return namespace["impl"]


# A field access is checked as an access of its whole record (the element the checks track):
# the record's address and size, so that a record whose size is not a power of two (a 52-byte
# record, say) finds its element by division by the record's size, not by the field's.
def _field_load(rec: types.Record, name: str):
    size = rec.size

    def impl(c, obj, idx, site, d, n):
        touch(c, site, NODESC, record_addr(obj), size, L.KIND_READ, False)
        return obj[name]
    return impl


def _field_store(rec: types.Record, name: str):
    size = rec.size

    def impl(c, obj, idx, value, site, d, n):
        old = obj[name]
        obj[name] = value
        touch(c, site, NODESC, record_addr(obj), size, L.KIND_WRITE,
              same_bits(old, obj[name]))
    return impl
