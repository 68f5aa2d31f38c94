"""The launch context: one int64 array every compiled kernel function receives as `_g_c`.

It holds the running thread's coordinates, the launch's counters and flags, the error being
reported, and a table of memory slots (one per array the launch can touch: arguments, shared and
local memory, constants). Compiled code addresses it by these constant offsets, so it needs no
Python objects while it runs. Nothing here runs; it is the shared vocabulary of `access`, `sync`,
`intrinsics` and `launch`.
"""

from __future__ import annotations

# -- the reported error (written by compiled code just before it raises Trap) --------------------
ERR_CODE = 0  # an Err value below, 0 when none
ERR_SITE = 1  # the source site of the failing access or call
ERR_GT = 2  # the failing thread: global linear thread id
ERR_A = 3  # details (index values, the other thread, its site, ...), per error kind
ERR_B = 4
ERR_C = 5
ERR_D = 6
ERR_E = 7

# -- the running thread ----------------------------------------------------------------------
GT = 8  # global linear thread id: block_linear * threads_per_block + LT
LT = 9  # linear thread index within the block (x fastest)
TX, TY, TZ = 10, 11, 12
BX, BY, BZ = 13, 14, 15
BLIN = 16  # linear block index

# -- the launch ------------------------------------------------------------------------------
BDX, BDY, BDZ = 17, 18, 19
GDX, GDY, GDZ = 20, 21, 22
TPB = 23  # threads per block
NBLOCKS = 24
CHECKS = 25  # bit flags, CHECK_* below
STOP = 26  # set to 1 by the watchdog thread; compiled code polls it
TICKS = 27

# -- race bookkeeping: stamps order accesses (see `access`) ----------------------------------
STAMP = 28  # the current sync epoch: increases at every block start and sync event
LAUNCH_STAMP = 29  # the first stamp of this launch: older records are stale
BLOCK_STAMP = 30  # the first stamp of the running block: older records are other blocks'
BARRIER_STAMP = 31  # the stamp of the running block's latest block-wide barrier
PHASE = 32  # block-wide barriers the running block has passed (for traces and messages)
WARP_EVENTS = 33  # warp-level sync events of the running block since its latest barrier
ATOMIC_SEQ = 34  # atomics performed so far in the launch (for fences and acquires)
FENCE_STAMP = 35  # stamp of the running thread's latest threadfence, or 0

# -- memory of the running block and thread ------------------------------------------------
SHARED_BASE = 36  # address of the running block's shared memory (static then dynamic)
LOCAL_BASE = 37  # address of the local-memory arena (thread 0's frame)
LOCAL_SIZE = 38  # bytes of local memory per thread (the kernel's and its calls')
LOCAL_SP = 39  # the running thread's local-memory stack pointer (an address)
LOCAL_INIT = 40  # address of the local arena's init bytes (parallel to LOCAL_BASE)

# -- uninitialised values ------------------------------------------------------------------
UNDEF = 41  # 0 while every value read since the statement began was written
UNDEF_SITE = 42  # where the latest uninitialised read happened, with its slot and element
UNDEF_SLOT = 43
UNDEF_ELEM = 44

# -- tracing ------------------------------------------------------------------------------
TRACE_ON = 45  # 1 while the running block is recorded
TRACE_N = 46  # events recorded so far
TRACE_CAP = 47  # capacity of the trace columns
TRACE_COLS = 48  # address of the trace columns (int64, TRACE_FIELDS per event)
TRACE_SEQ = 49  # address of the per-(thread, site) execution counters of the running block
TRACE_EVERY = 90  # 0: every block is recorded; k: only blocks whose linear index is a multiple of k
TRACE_QUIET = 91  # 1: a full trace stops recording (a sample) instead of stopping the launch
TRACE_FULL = 92  # set to 1 when a quiet trace filled up
REGION_VARS = 93  # address of the variables each thread keeps between regions (sim/regions)
SHARED_EPOCH = 94  # the first stamp of the running block's shared memory: shared elements whose
#                    write stamp is older were written by another block (so never by this one)
COOP = 95  # address of the grid-sync table (kernels that call grid.sync(), see sync.grid_barrier)

# -- sync points (kernels with barriers or warp intrinsics) -----------------------------------
XCH = 50  # address of the exchange area: per thread, operands in and results out
PRINT_N = 51  # print records so far
PRINT_CAP = 52
PRINT_BUF = 53  # address of the print records (float64, PRINT_FIELDS per value)
RELEASES = 54  # address of per-block, then per-thread release records (threadfence), or 0
BLOCK_STARTS = 55  # address of the first stamp of every block run so far, in run order
NSLOTS = 56  # memory slots in use
SITE_BASE = 57  # offset of the per-site counters (after the slot table)
LAST_SLOT = 58  # the slot found by the latest dynamic lookup (a one-entry cache)
ACQUIRE_SEQ = 59  # the running thread's latest atomic (as an ATOMIC_SEQ value)
BLOCK_ACQUIRE = 60  # the running block's latest atomic seen by all its threads (at a barrier)
NSITES = 61  # source sites of the kernel (the per-site counters' and trace counters' rows)
DYN_SHARED = 62  # bytes of dynamic shared memory per block
LOCAL_STRIDE = 63  # bytes between two threads' local frames (0: threads reuse one frame)

# -- a launch split over host threads (gpukit.sim.parallel) ---------------------------------
CLAIM = 98  # address of the launch's claim words (next unclaimed block, stop), 0: not split
CLAIM_CHUNK = 99  # blocks a host thread takes at a time
CLAIM_NEXT = 100  # the next block of this host thread's chunk
CLAIM_END = 101  # one past the last block of its chunk
CLAIMED = 102  # blocks this host thread has run

HEADER = 103  # the slot table starts here
BARRIERS = 64  # block-wide barriers passed, summed over blocks (a launch statistic)
ORDER = 65  # address of the block run order (int64 linear block ids), 0: in index order
GEN_RESUMES = 66  # generator resumes (a simulator statistic)
LOCAL_KERNEL = 67  # bytes of the kernel's own local arrays (device functions' frames follow)
SHARED_STATIC = 68  # bytes of static shared memory per block (dynamic shared memory follows)
TORDER = 69  # address of the order threads run in within a block (int64), 0: index order
ERR_BASE = 70  # bounds errors: the indexed array's address, its rank, then its shape
ERR_NDIM = 71
ERR_SHAPE = 72  # up to 4 extents
BDX_SHIFT = 76  # log2 of blockDim.x, -1 when it is not a power of two (sync.begin_thread)
BDXY_SHIFT = 77  # log2 of blockDim.x * blockDim.y, -1 when it is not a power of two
CAPTURED = 78  # address of the captured device arrays' table (launch._captured)
UNDEF_LT = 79  # the thread (in its block) that made the latest uninitialised read
PENDING = 80  # a deferred error (an uninitialised value used): code, site, thread, A..E
GENBUF = 88  # address of the buffer that holds a block's thread generators
GENBUF_BYTES = 89  # its size
SIGNAL = 96  # address the driver writes SIGNAL_VALUE to as it starts, 0: none (parallel.run)
SIGNAL_VALUE = 97


# -- memory slots -------------------------------------------------------------------------
SLOT_FIELDS = 16
S_BASE = 0  # first byte address
S_END = 1  # one past the last byte
S_SHIFT = 2  # log2 of the bytes per tracked element (init and race records)
S_INIT = 3  # address of the init marks, 0 when everything is initialised
S_INIT_KIND = 4  # INIT_* below
S_WREC = 5  # address of the writer records (uint64 per element), 0: not tracked
S_RREC = 6  # address of the reader records, 0: not tracked
S_SPACE = 7  # SPACE_* below
S_WRITABLE = 8
S_LABEL = 9  # index of the slot's label (kept on the host)
S_ITEMSIZE = 10
S_ELEMS = 11  # elements tracked

SPACE_GLOBAL, SPACE_SHARED, SPACE_LOCAL, SPACE_CONST = 0, 1, 2, 3
SPACE_NAMES = ("global", "shared", "local", "const")

INIT_NONE = 0  # all initialised
INIT_BYTE = 1  # one byte per element, 1 once written (global and local memory)
INIT_STAMP = 2  # one uint64 per element, the stamp of its latest write (shared memory)
# shared memory while races are checked: the writer records (S_WREC) hold the stamp of each
# element's latest write already, so they are its init marks too (8 bytes and a store less)
INIT_WREC = 3

# -- per-site counters (SITE_FIELDS per site, after the slot table) ----------------------------
# executions of the site in each memory space (indexed by SPACE_*), then the element size of an
# access whose slot the transform could not know (static sites' sizes come from their slots)
SITE_FIELDS = 5
SC_ITEMSIZE = 4

# -- check flags -------------------------------------------------------------------------
CHECK_BOUNDS = 1
CHECK_RACES = 2
CHECK_BARRIERS = 4
CHECK_UNINITIALIZED = 8
CHECK_DIVISION = 16
CHECK_WRAPAROUND = 32  # a computed negative index, which Numba wraps to the end of the axis
CHECK_NAMES = {"bounds": CHECK_BOUNDS, "races": CHECK_RACES, "barriers": CHECK_BARRIERS,
               "uninitialized": CHECK_UNINITIALIZED, "division_by_zero": CHECK_DIVISION,
               "wraparound": CHECK_WRAPAROUND}

# -- trace columns -----------------------------------------------------------------------
TRACE_FIELDS = 7  # global thread, site, slot, element, kind, phase, execution number
KIND_READ, KIND_WRITE, KIND_ATOMIC = 0, 1, 2

# -- print records -------------------------------------------------------------------------
PRINT_FIELDS = 4  # global thread, site, argument index, value (as float64 bits or int)
MAX_PRINT_ITEMS = 32  # CUDA's vprintf: numba-cuda prints the raw format of a longer print()


# -- error codes compiled code writes to ERR_CODE (the host turns them into exceptions) -----
E_BOUNDS = 1  # A: axis, B: index value, C: extent
E_UNINIT = 2  # A: slot, B: element
E_RACE = 3  # A: slot, B: element, C: other record, D: 1 if this access writes, E: other wrote
E_DIVZERO = 4  # A: 0 floordiv, 1 mod
E_BARRIER = 5  # A..E: see `sync`
E_WARP = 6
E_DEADLOCK = 7
E_WATCHDOG = 8
E_READONLY = 9  # A: slot
E_UNDEF_USE = 10  # A: what (UNDEF_* below); B, C, D: the read's site, slot, element; E: its thread
E_TRACE_FULL = 11
E_RANGE_STEP = 12
E_NO_SLOT = 13  # ptr[i] lies in no slot (A: the pointer's value, B: i, C: the element size)
E_ASSERT = 14
E_LOCAL_OVERFLOW = 15
E_RAISE = 16
E_GRID_DEADLOCK = 17  # A: a block that finished, B: a block waiting at grid.sync()

UNDEF_BRANCH, UNDEF_STORE, UNDEF_INDEX, UNDEF_CALL, UNDEF_RETURN, UNDEF_SYNC = 1, 2, 3, 4, 5, 6


# -- the exchange area of kernels with sync points (at XCH) --------------------------------
XCH_LOG_CAP = 1024  # partial-mask syncwarp events kept since the block's latest barrier
XCH_FULL = XCH_LOG_CAP * 24  # per warp: stamp of its latest whole-warp syncwarp
XCH_THREADS = XCH_FULL + 32 * 8  # per thread: XF fields
XF = 12
X_STATUS, X_KIND, X_SITE, X_MASK, X_VALUE, X_ARG, X_RESULT, X_RESULT2 = 0, 1, 2, 3, 4, 5, 6, 7
X_FENCE, X_ACQUIRE, X_ARRIVALS, X_RETURNED = 8, 9, 10, 11
RUNNABLE, WAITING, EXITED = 0, 1, 2

# sync kinds: block-wide below 10, warp-wide from 10
K_BARRIER, K_SYNC_COUNT, K_SYNC_AND, K_SYNC_OR = 1, 2, 3, 4
K_GRID = 9  # grid.sync() of cooperative groups: every thread of the grid (a block-wide one too)
K_SYNCWARP, K_SHFL_IDX, K_SHFL_UP, K_SHFL_DOWN, K_SHFL_XOR = 10, 11, 12, 13, 14
K_ALL, K_ANY, K_EQ, K_BALLOT, K_MATCH_ANY, K_MATCH_ALL, K_ACTIVEMASK = 15, 16, 17, 18, 19, 20, 21


# the grid-sync table at COOP (int64): its header, then (address, bytes) of each region of
# block state (shared memory with its records, the exchange area's thread fields, local memory)
# saved and restored when blocks take turns, then COOP_BLOCK_FIELDS per block
COOP_REGIONS, COOP_BLOCK_BYTES, COOP_SAVE, COOP_WAITING, COOP_HEADER = 0, 1, 2, 3, 4
COOP_BLOCK_FIELDS = 4
CB_DONE, CB_SHARED_EPOCH, CB_PHASE, CB_SITE = 0, 1, 2, 3


def xch_bytes(threads_per_block: int) -> int:
    """Bytes of the exchange area for blocks of this size."""
    return XCH_THREADS + threads_per_block * XF * 8
