"""Running one launch on the simulator: bind the arguments, fill the context, run, report.

The backend validates and normalises the launch (geometry, options, host arrays copied to the
device) and calls `run`. Here every array argument becomes a memory slot (its allocation's address
range, written-elements mask and race records), shared and local memory come from a reusable
`Workspace`, the compiled driver runs with the GIL released while a watchdog thread may stop it,
and the context it leaves behind becomes statistics, printed output, trace columns or an error.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from ..errors import InvalidDeviceArrayError, UnsupportedKernelError, as_numba_cuda_error
from . import bfloat16, cache, parallel
from . import layout as L
from .compiler import collector_paused, cuda_typecheck
from .device_array import interface_view
from .eager import c_convert
from .kernel import SimKernel
from .lowlevel import Trap
from .memory import DeviceArray, DeviceMemory
from .overloads import compiling_kernel
from .regions import kept_types_agree
from .report import ErrorContext, format_prints, kernel_error, python_exception
from .usage import ANY

STAMP_LIMIT = 1 << 31  # records keep 32-bit stamps: renumber long before they wrap
PRINT_CAPACITY = 1 << 16  # print records per launch (a GPU's printf buffer is bounded too)


@dataclass
class LaunchStats:
    """What a launch did, counted by the simulator (inputs to the timing model and the log)."""

    global_load_bytes: int = 0
    global_store_bytes: int = 0
    shared_load_bytes: int = 0
    shared_store_bytes: int = 0
    atomics: int = 0
    barriers: int = 0  # block-wide barriers passed, summed over blocks
    static_shared_bytes: int = 0
    dynamic_shared_bytes: int = 0
    local_bytes_per_thread: int = 0
    implicit_transfers: tuple[str, ...] = ()
    sites: tuple[tuple[int, str, int, int, int], ...] = ()
    # (site, kind, itemsize, global-or-constant executions, shared executions) per access site
    # (tuples, and `sites` shared by launches that counted the same: a launch log holds 10,000
    # of these, and each object a launch leaves in it costs time in every full collection)


@dataclass
class LaunchResult:
    """What `run` returns to the backend."""

    stats: LaunchStats
    wall_ms: float
    trace: Any = None  # (columns, slot descriptions, sites) when a trace was asked for
    output: str = ""
    traced_blocks: int = 0  # blocks the trace recorded (all of them unless sampled)
    trace_complete: bool = True  # False: a sampled trace filled up before its blocks ended
    signature: tuple = ()  # Numba's types of the arguments, as the kernel was compiled for them
    host_threads: int = 1  # host threads that ran its blocks (gpukit.sim.parallel)
    host_blocks: tuple[int, ...] = ()  # how many blocks each of them ran
    host_cores: float | None = None  # split: the cores' worth of CPU time its threads got


@dataclass(slots=True)
class SlotInfo:
    """A slot as the host describes it (for messages and traces)."""

    label: str
    space: str
    shape: tuple[int, ...]
    dtype: np.dtype
    array: Any = None  # the DeviceArray of an argument (its view of the allocation)
    decls: tuple = ()  # local memory: the kernel's local arrays (offset, bytes, label, ...)
    stride: int = 0  # local memory: bytes between two threads' frames


_generations = itertools.count(1)


class Workspace:
    """Scratch memory reused by every launch on one simulated device (no churn).

    `generation` changes whenever a buffer is made or replaced (by a number no workspace has had
    before), so that a launch plan holding the addresses of an older generation is not used."""

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}
        self._addresses: dict[str, int] = {}
        self.generation = next(_generations)
        self._helpers: list[Workspace] = []  # the other host threads' (gpukit.sim.parallel)

    def helper(self, k: int) -> Workspace:
        """The scratch memory of the `k`-th extra host thread that runs a launch's blocks."""
        while len(self._helpers) <= k:
            self._helpers.append(Workspace())
        return self._helpers[k]

    def get(self, name: str, nbytes: int, zero: bool = False) -> np.ndarray:
        buf = self._buffers.get(name)
        if buf is None or buf.nbytes < nbytes:
            buf = np.zeros(max(nbytes, 64), np.uint8)
            self._buffers[name] = buf
            self._addresses[name] = buf.ctypes.data
            self.generation = next(_generations)
        elif zero:
            buf[:nbytes] = 0
        return buf

    def address(self, name: str, nbytes: int, zero: bool = False) -> int:
        """Where buffer `name` (at least `nbytes`, see get) lives."""
        self.get(name, nbytes, zero)
        return self._addresses[name]

    def clear_records(self) -> None:
        """Zero every race record and stamp kept here (when stamps are renumbered)."""
        for name, buf in self._buffers.items():
            if name.startswith("rec") or name.endswith("init"):
                buf[:] = 0
        for helper in self._helpers:
            helper.clear_records()


class _Watchdog:
    """One background thread that raises a launch's stop flag when its time is up.

    Arming a launch only notes its deadline: the thread looks every `PERIOD` seconds, so a
    launch costs no thread wake-up (a stop comes at most PERIOD late)."""

    PERIOD = 0.05

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: tuple[list[np.ndarray], float] | None = None
        self._thread: threading.Thread | None = None

    def arm(self, contexts: list[np.ndarray], seconds: float) -> None:
        with self._lock:
            self._armed = (contexts, time.monotonic() + seconds)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gpukit-watchdog",
                                                daemon=True)
                self._thread.start()

    def disarm(self) -> None:
        with self._lock:
            self._armed = None

    def _run(self) -> None:
        while True:
            with self._lock:
                armed = self._armed
                if armed is not None and armed[1] <= time.monotonic():
                    for context in armed[0]:
                        context[L.STOP] = 1
                    self._armed = armed = None
            left = self.PERIOD if armed is None else armed[1] - time.monotonic()
            time.sleep(min(max(left, 0.0), self.PERIOD))


WATCHDOG = _Watchdog()
_CONTEXT_TYPE = numba.types.Array(numba.int64, 1, "C")  # the launch context's Numba type


@functools.lru_cache(maxsize=64)
def _check_flags(checks: tuple[tuple[str, bool], ...]) -> int:
    """The CHECK_* bits of the checks a launch asked for (a check not named is on)."""
    on = dict(checks)
    return sum(bit for name, bit in L.CHECK_NAMES.items() if on.get(name, True))


def _shift(n: int) -> int:
    """log2 of `n` (an item size, a block's extent) when it is a power of two, else -1."""
    return n.bit_length() - 1 if n & (n - 1) == 0 else -1


def run(kernel: SimKernel, memory: DeviceMemory, workspace: Workspace, args: tuple, *,
        grid: tuple[int, int, int], block: tuple[int, int, int], dynamic_shared_bytes: int,
        checks: dict[str, bool], schedule: str, seed: int | None, watchdog_s: float | None,
        trace_capacity: int = 0, trace_sample: int = 0, threads: int | None = None
        ) -> LaunchResult:
    """Run `kernel` over grid x block threads with `args` (device arrays and scalars).

    trace_capacity: record up to this many accesses (0: no trace); more stop the launch with
    TraceCapacityError, unless `trace_sample` (k > 0) asks for a sample: then only about k blocks
    evenly spread over the grid are recorded, and a full trace just stops recording.
    threads: host threads that may run the launch's blocks side by side (None: one per core
    this process may use; see `_threads_for`)."""
    tpb = block[0] * block[1] * block[2]
    nblocks = grid[0] * grid[1] * grid[2]
    key = _plan_key(kernel, workspace, args, grid, block, dynamic_shared_bytes, checks)
    plan = kernel.plans.get(key) if key is not None else None
    if plan is not None and not plan.binds(args):
        plan = None  # an argument died and another object took its id
    keep: list[Any] = []  # everything the context points at stays alive until the end
    captured: list = []
    pointed: dict = {}
    if plan is not None:  # a launch that repeats an earlier one's binding
        c, infos, values = plan.replay(kernel, args)
        apart = plan.apart
        arrays, fresh = _arrays(args), []
    else:
        pointed = _pointed(kernel, memory, args) if kernel.pointers else {}
        nslots = len(kernel.slots) + len(pointed)
        for arg in args:
            if isinstance(arg, tuple):  # arrays in tuples get slots of their own
                nslots += len(_tuple_arrays(arg, ""))
        nsites = max(len(kernel.sites), 1)
        c = np.zeros(L.HEADER + nslots * L.SLOT_FIELDS + nsites * L.SITE_FIELDS, np.int64)
        c[L.NSLOTS], c[L.SITE_BASE], c[L.NSITES] = nslots, L.HEADER + nslots * L.SLOT_FIELDS, \
            nsites
        infos = [None] * nslots
        captured = [_captured_view(kernel, memory, entry) for entry in kernel.captured]
        arrays = _arrays(args) + [a for a in captured if a is not None] + list(pointed.values())
        fresh = [a.alloc for a in arrays if not a.is_freed and not a.alloc.has_race_records]
    trace_bytes = trace_capacity * L.TRACE_FIELDS * 8
    if trace_bytes:
        memory.host_budget.take(trace_bytes, f"a trace of up to {trace_capacity:,} accesses")
    try:
        if plan is None:
            values, apart = _bind(kernel, memory, args, checks, c, keep, infos, captured,
                                  pointed, grid, block)
            _fill(kernel, workspace, c, checks, grid, block, tpb, nblocks, dynamic_shared_bytes,
                  infos)
            if key is not None:
                plan = _remember(kernel, workspace, args, grid, block, dynamic_shared_bytes,
                                 checks, c, infos, apart)
        workers = _threads_for(kernel, threads, apart, schedule, trace_capacity, tpb, nblocks)
        result = _run(kernel, memory, workspace, values, grid, block, dynamic_shared_bytes,
                      schedule, seed, watchdog_s, trace_capacity, trace_sample, c, keep, infos, tpb,
                      nblocks, plan, workers)
    except BaseException:  # race records this launch made go with it; older ones stay
        for alloc in fresh:
            if not alloc.freed:
                alloc.drop_race_records()
        raise
    finally:
        memory.host_budget.give_back(trace_bytes)
    for array in arrays:  # a mask whose every element is now written is dropped
        if not array.is_freed:
            array.alloc.settle_init_mask()
    return result


@dataclass(slots=True)
class _Plan:
    """A launch's binding, kept for the launches that repeat it (a loop of small launches spends
    most of its time binding the same arrays to the same slots): the context as binding left
    it, the slots' descriptions (an argument's own are made again at each launch), a weak
    reference to each device array argument (a plan keeps no memory alive: an array that
    numba-cuda's API frees when it is collected is freed as before), and the driver with its
    types once found."""

    context: np.ndarray
    infos: list
    refs: tuple  # per argument: a weak reference to the device array, None for a scalar
    apart: bool  # no block writes global memory another block may touch (`_bind`)
    driver: Any = None
    sig: tuple = ()
    types: Any = None

    def binds(self, args: tuple) -> bool:
        """Whether `args` are the very arrays the plan was made for (its key has their ids)."""
        return all(ref is None or ref() is arg for ref, arg in zip(self.refs, args))

    def replay(self, kernel: SimKernel, args: tuple) -> tuple[np.ndarray, list, list]:
        """(a context as binding `args` would make it, the slots' descriptions, the values the
        driver takes)."""
        infos, values = list(self.infos), []
        for k, (arg, ref) in enumerate(zip(args, self.refs)):
            if ref is None:
                values.append(_as_declared(kernel, k, arg))
            else:
                infos[k] = SlotInfo(kernel.param_names[k], "global", arg.shape, arg.dtype, arg)
                values.append(arg.host_view())
        return self.context.copy(), infos, values


def _threads_for(kernel: SimKernel, threads: int | None, apart: bool, schedule: str,
                 trace_capacity: int, tpb: int, nblocks: int) -> int:
    """How many host threads run the launch's blocks (gpukit.sim.parallel): one, unless its
    blocks are independent (`apart`: no global memory that one block writes and another may
    touch; no grid.sync(), fences or print(), whose order spans blocks), the launch is large and
    in the ordered schedule (the shuffle's seeded order is one order), nothing is traced, and,
    unless `threads` names a number, the cores are not busy elsewhere
    (`parallel.worth_splitting`)."""
    if threads == 1 or not apart or schedule == "shuffle" or trace_capacity \
            or tpb * nblocks < parallel.MIN_THREADS or nblocks < 2:
        return 1
    if kernel.cooperative or kernel.uses_fences or kernel.prints or (
            kernel.generator and not kernel.regions):
        return 1
    if threads is None and not parallel.worth_splitting():  # the cores are busy elsewhere
        return 1
    wanted = threads if threads is not None else parallel.usable_cores()
    return max(1, min(wanted, parallel.MAX_THREADS, nblocks))


def _plan_key(kernel: SimKernel, workspace: Workspace, args: tuple, grid: tuple, block: tuple,
              dynamic_shared_bytes: int, checks: dict[str, bool]) -> tuple | None:
    """Everything a launch's binding depends on: the workspace's buffers (by generation), the
    geometry and checks, each array argument (the object, which its plan checks by a weak
    reference, and its allocation's storage, mask and records) and each scalar's type. None for
    launches that bind more than their arguments (raw pointers, captured arrays) or pass tuples:
    bound every time. Reading `allocation` raises for a freed array, as binding it would."""
    if kernel.pointers or kernel.captured:
        return None
    parts: list[Any] = [workspace.generation, grid, block, dynamic_shared_bytes,
                        tuple(checks.items())]
    for arg in args:
        if isinstance(arg, DeviceArray):
            parts.append((id(arg), arg.allocation.binding_key))
            continue
        kind = None if isinstance(arg, tuple) else _type_key(arg)
        if kind is None:
            return None
        parts.append(kind)
    return tuple(parts)


def _remember(kernel: SimKernel, workspace: Workspace, args: tuple, grid: tuple, block: tuple,
              dynamic_shared_bytes: int, checks: dict[str, bool], c: np.ndarray,
              infos: list, apart: bool) -> _Plan:
    """Keep the binding just made, under the key the next launch with these arguments will find
    (binding may have made the arguments' masks and records)."""
    if len(kernel.plans) >= 8:
        kernel.plans.clear()
    refs = tuple(weakref.ref(arg) if isinstance(arg, DeviceArray) else None for arg in args)
    kept = list(infos)
    for k, ref in enumerate(refs):
        if ref is not None:
            kept[k] = None  # an argument's own: made again at each launch
    plan = _Plan(c.copy(), kept, refs, apart)
    key = _plan_key(kernel, workspace, args, grid, block, dynamic_shared_bytes, checks)
    kernel.plans[key] = plan
    return plan


def _fill(kernel: SimKernel, workspace: Workspace, c: np.ndarray, checks: dict[str, bool],
          grid: tuple[int, int, int], block: tuple[int, int, int], tpb: int, nblocks: int,
          dynamic_shared_bytes: int, infos: list) -> None:
    """The context's checks, geometry, shared and local memory (after the arguments' slots)."""
    c[L.CHECKS] = _check_flags(tuple(checks.items()))
    c[L.BDX], c[L.BDY], c[L.BDZ] = block
    c[L.BDX_SHIFT], c[L.BDXY_SHIFT] = _shift(block[0]), _shift(block[0] * block[1])
    c[L.GDX], c[L.GDY], c[L.GDZ] = grid
    c[L.TPB], c[L.NBLOCKS] = tpb, nblocks
    _shared(kernel, workspace, c, dynamic_shared_bytes, infos)
    _local(kernel, workspace, c, tpb, infos)


def _run(kernel: SimKernel, memory: DeviceMemory, workspace: Workspace, values: list,
         grid: tuple[int, int, int], block: tuple[int, int, int], dynamic_shared_bytes: int,
         schedule: str, seed: int | None, watchdog_s: float | None, trace_capacity: int,
         trace_sample: int, c: np.ndarray, keep: list, infos: list, tpb: int, nblocks: int,
         plan: _Plan | None, workers: int) -> LaunchResult:
    if memory.race_stamp + 1 >= STAMP_LIMIT:
        _renumber(memory, workspace)
    c[L.STAMP] = memory.race_stamp
    c[L.LAUNCH_STAMP] = memory.race_stamp + 1
    _scratch(kernel, workspace, c, tpb, nblocks)
    if kernel.cooperative:
        keep.append(_grid_sync_table(kernel, workspace, c, nblocks, tpb))
    if schedule == "shuffle":
        rng = np.random.default_rng(seed)
        order = rng.permutation(nblocks).astype(np.int64)
        torder = rng.permutation(tpb).astype(np.int64)
        keep += [order, torder]
        c[L.ORDER], c[L.TORDER] = order.ctypes.data, torder.ctypes.data
    prints = None
    if kernel.prints:
        prints = np.zeros(PRINT_CAPACITY * L.PRINT_FIELDS, np.int64)
        c[L.PRINT_BUF], c[L.PRINT_CAP] = prints.ctypes.data, PRINT_CAPACITY
    columns = None
    if trace_capacity:
        columns = np.empty(trace_capacity * L.TRACE_FIELDS, np.int64)  # rows < TRACE_N are read
        seq = np.zeros(tpb * int(c[L.NSITES]), np.int64)
        keep += [columns, seq]
        c[L.TRACE_COLS], c[L.TRACE_CAP], c[L.TRACE_SEQ] = columns.ctypes.data, trace_capacity, \
            seq.ctypes.data
        c[L.TRACE_ON] = 1
        if trace_sample > 0:
            c[L.TRACE_QUIET] = 1
            if trace_sample < nblocks:  # an odd stride: no aliasing with power-of-two layouts
                c[L.TRACE_EVERY] = -(-nblocks // trace_sample) | 1
    if plan is not None and plan.driver is kernel.driver:
        driver, sig, types = plan.driver, plan.sig, plan.types
    else:
        driver, sig, types = _compiled_driver(kernel, values)
        if plan is not None:
            plan.driver, plan.sig, plan.types = driver, sig, types
    contexts = [c]
    if workers > 1:
        contexts = _shares(kernel, workspace, c, workers, dynamic_shared_bytes, tpb, nblocks,
                           len(infos), keep)
    start = time.perf_counter()
    error = host_cores = None
    if watchdog_s:
        WATCHDOG.arm(contexts, watchdog_s)
    try:
        if kernel.generator and not kernel.regions:
            _run_generators(driver, c, values, workspace)
        elif workers > 1:
            host_cores = parallel.run(driver, contexts, values, c)
        else:
            driver(c, *values)
    except Trap:
        error = "trap"
    except (ZeroDivisionError, IndexError, ValueError, OverflowError, SystemError,
            TypeError) as exc:  # (TypeError: Numba casting an optional that is None)
        error = exc
    finally:
        if watchdog_s:
            WATCHDOG.disarm()
    wall_ms = (time.perf_counter() - start) * 1e3
    memory.race_stamp = int(c[L.STAMP])
    output = format_prints(kernel, c, prints) if prints is not None else ""
    if output:
        sys.stdout.write(output)
        sys.stdout.flush()
    trace = None
    if columns is not None:
        n = int(c[L.TRACE_N])
        trace = (columns[:n * L.TRACE_FIELDS].reshape(n, L.TRACE_FIELDS).copy(), infos,
                 kernel.sites)
    if error is not None:
        ctx = ErrorContext(kernel, c, infos, grid, block, watchdog_s)
        exc = kernel_error(ctx) if error == "trap" else python_exception(ctx, error)
        exc.partial_trace = trace  # the accesses recorded before the error (backend: exc.trace)
        raise exc from (None if error == "trap" else error)
    stats = _stats(kernel, c, dynamic_shared_bytes, infos, types)
    if trace is not None:
        every = int(c[L.TRACE_EVERY]) or 1
        return LaunchResult(stats, wall_ms, trace, output, traced_blocks=-(-nblocks // every),
                            trace_complete=not c[L.TRACE_FULL], signature=sig)
    host_blocks = tuple(int(context[L.CLAIMED]) for context in contexts) if workers > 1 \
        else (nblocks,)
    return LaunchResult(stats, wall_ms, trace, output, signature=sig, host_threads=workers,
                        host_blocks=host_blocks, host_cores=host_cores)


def _scratch(kernel: SimKernel, workspace: Workspace, c: np.ndarray, tpb: int,
             nblocks: int) -> None:
    """The per-launch scratch memory of a kernel with sync points or fences."""
    if kernel.generator:
        c[L.XCH] = workspace.address("xch", L.xch_bytes(tpb), zero=True)
    if kernel.regions:
        nv = max(len(kernel.unit.region_vars), 1)
        c[L.REGION_VARS] = workspace.address("regions", nv * tpb * 8)
    if kernel.generator or kernel.uses_fences:
        c[L.BLOCK_STARTS] = workspace.address("starts", (nblocks + 1) * 8, zero=True)
    if kernel.uses_fences:
        # per block run, then per thread of the running block (its entries older than the
        # block are stale): a fence's stamp and the atomic sequence number that released it
        c[L.RELEASES] = workspace.address("releases", 2 * (nblocks + tpb) * 8, zero=True)


def _shares(kernel: SimKernel, workspace: Workspace, c: np.ndarray, workers: int, dynamic: int,
            tpb: int, nblocks: int, nslots: int, keep: list) -> list[np.ndarray]:
    """A context per host thread (gpukit.sim.parallel): `c`, taking its blocks a chunk at a
    time from claim words all the contexts share, and, past the first, with shared, local and
    scratch memory of its own (from a helper workspace)."""
    words = np.zeros(2, np.int64)  # the next block no thread has taken; 1 once one has failed
    keep.append(words)
    c[L.CLAIM], c[L.CLAIM_CHUNK] = words.ctypes.data, parallel.chunk(nblocks, workers)
    contexts = []
    for k in range(workers):
        share = c.copy()
        if k > 0:
            ws, infos = workspace.helper(k - 1), [None] * nslots
            _shared(kernel, ws, share, dynamic, infos)
            _local(kernel, ws, share, tpb, infos)
            _scratch(kernel, ws, share, tpb, nblocks)
        contexts.append(share)
    return contexts


def _run_generators(driver: Any, c: np.ndarray, values: list, workspace: Workspace) -> None:
    """Run a kernel with sync points: its threads' generators live in a workspace buffer."""
    def buffer(nbytes: int) -> None:
        c[L.GENBUF] = workspace.address("generators", nbytes)
        c[L.GENBUF_BYTES] = workspace.get("generators", nbytes).nbytes

    buffer(0)
    needed = driver(c, *values)
    if needed:
        buffer(int(needed))
        driver(c, *values)


def _compiled_driver(kernel: SimKernel, values: list) -> tuple[Any, tuple, tuple | None]:
    """(the driver, compiled for these argument types before the watchdog starts; Numba's types;
    what those types depend on, a key for caches, or None when that is not known cheaply)."""
    driver = kernel.driver
    key = tuple(_type_key(v) for v in values)
    ready_for, ready = kernel.ready
    if ready_for is not driver:
        kernel.ready = (driver, {})
    elif key in ready:  # launched before with values of these types (None: keys for no types)
        return driver, ready[key], key
    sig = _signature(kernel, values, key)
    full = (_CONTEXT_TYPE, *sig)
    with collector_paused():  # typing and compiling make many objects
        driver = _typed_and_compiled(kernel, driver, sig, full)
    if None not in key and kernel.ready[0] is driver:
        kernel.ready[1][key] = sig
    return driver, sig, None if None in key else key


def _typed_and_compiled(kernel: SimKernel, driver: Any, sig: tuple, full: tuple) -> Any:
    """`kernel`'s driver, typed by numba-cuda and compiled for the argument types `sig` (a
    kernel whose regions cannot keep their variables' types falls back to one without)."""
    if sig not in kernel.checked_signatures:
        # numba-cuda's typing, once per kernel and signature. One typed earlier in this process
        # (the same kernel by content: a cell run again) gives its warnings again; one compiled
        # here already, or accepted in an earlier process (gpukit.sim.cache), is not typed again
        typemap = cache.typed_before(kernel.key, str(sig))
        if typemap is None and (cache.typed_under_other_settings(kernel.key, str(sig)) or (
                full not in driver.overloads and not cache.typechecked(kernel.key, str(sig)))):
            with cache.typing_warnings() as found:
                typemap = cuda_typecheck(kernel.py_func, tuple(
                    kernel.argtypes[k] if name in kernel.pointers else ty  # an address: a
                    for k, (name, ty) in enumerate(zip(kernel.param_names, sig))))  # pointer
            cache.remember_typing(kernel.key, str(sig), typemap, found)
        if typemap is not None and kernel.regions and \
                not kept_types_agree(kernel.unit.region_vars, typemap):
            kernel.without_regions()  # a kept variable changes type across a barrier
            driver = kernel.driver
        kernel.checked_signatures.add(sig)
    if full not in driver.overloads:
        with cache.quiet_driver_warnings(), compiling_kernel():
            try:
                with cache.saving(kernel.key):
                    driver.compile(full)
            except numba.core.errors.TypingError:
                if not kernel.regions:
                    raise
                kernel.without_regions()  # it keeps a tuple or a view across a barrier
                driver = kernel.driver
                with cache.saving(kernel.key):
                    driver.compile(full)
            except numba.core.errors.NumbaError as exc:  # as numba-cuda's compiler raises it
                raise as_numba_cuda_error(exc) from exc.__cause__
            except NotImplementedError as exc:  # no float16 on this CPU (gpukit.sim.half)
                if str(exc) != "float16":
                    raise
                raise UnsupportedKernelError(
                    f"kernel '{kernel.name}' computes with float16 (half precision), which "
                    "gpukit's simulator computes only on a CPU with half-precision conversions "
                    "(x86 with F16C, or ARM64), and this one has none; use float32 here",
                    kernel=kernel.name) from None
        cache.remember_typechecked(kernel.key, str(sig))
    return driver


def _signature(kernel: SimKernel, values: list, key: tuple) -> tuple:
    """Numba's types of the launch's values, remembered per kernel by what decides them
    (numba.typeof costs more than the rest of a small launch)."""
    if None in key:
        return tuple(_typeof(v) for v in values)
    sig = kernel.signatures.get(key)
    if sig is None:
        sig = kernel.signatures[key] = tuple(_typeof(v) for v in values)
    return sig


def argument_types(args: tuple) -> tuple:
    """Numba's types of a launch's arguments as given (a device array typed as the view of it
    the launch binds, a host array as the device copy made of it)."""
    def typed(value: Any) -> Any:
        if isinstance(value, DeviceArray):
            return numba.types.Array(numba.from_dtype(value.dtype), value.ndim, value.layout)
        if isinstance(value, np.ndarray):  # its copy: native byte order, C or Fortran order
            f = value.flags
            return numba.types.Array(numba.from_dtype(value.dtype.newbyteorder("=")),
                                     value.ndim, "F" if f.f_contiguous and not f.c_contiguous
                                     else "C")
        if type(value) is tuple:
            return numba.types.BaseTuple.from_types([typed(v) for v in value])
        return _typeof(value)
    return tuple(typed(v) for v in args)


def _typeof(value: Any) -> Any:
    """numba.typeof, where an array of bfloat16 (ml_dtypes') is one of numba-cuda's bfloat16."""
    if bfloat16.ARRAY_DTYPE is not None and getattr(value, "dtype", None) == \
            bfloat16.ARRAY_DTYPE:
        bfloat16.register()
    return numba.typeof(value)


def _type_key(value: Any) -> Any:
    """What numba.typeof's answer depends on, for arrays and numbers; None for other values."""
    kind = type(value)
    if kind is np.ndarray:
        f = value.flags
        return (value.dtype, value.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if kind is int:
        return (int, -(2 ** 63) <= value < 2 ** 63)
    if kind in (float, bool, complex) or (isinstance(value, np.generic) and kind.__module__
                                           == "numpy"):
        return kind
    if kind is tuple:
        inner = tuple(_type_key(v) for v in value)
        return None if None in inner else (tuple, inner)
    return None


def _bind(kernel: SimKernel, memory: DeviceMemory, args: tuple, checks: dict[str, bool],
          c: np.ndarray, keep: list, infos: list[SlotInfo], captured: list,
          pointed: dict, grid: tuple[int, int, int], block: tuple[int, int, int]
          ) -> tuple[list, bool]:
    """Bind the arguments to the context's slots; (the values the driver takes, whether every
    global allocation the kernel may write is one only a single thread touches each element
    of, so that blocks are independent of one another)."""
    if len(args) != len(kernel.param_names):
        raise TypeError(f"kernel '{kernel.name}' takes {len(kernel.param_names)} arguments "
                        f"({', '.join(kernel.param_names)}), got {len(args)}")
    written: set[int] = set()
    read: set[int] = set()
    in_tuples = []  # (label, array) of the arrays in each tuple argument, as `x[1]`; [] for others
    for name, arg in zip(kernel.param_names, args):
        if isinstance(arg, DeviceArray):
            leaves, arrays = [], (arg,)
        elif isinstance(arg, tuple):  # an array in a tuple is used as the tuple is
            leaves = _tuple_arrays(arg, name)
            arrays = [array for _, array in leaves]
        else:
            leaves = arrays = []
        in_tuples.append(leaves)
        usage = kernel.param_usage.get(name, ANY)
        for array in arrays:
            # (an array in a tuple: `t[0]` hands it on whole)
            r, w = usage.of(array.shape if isinstance(arg, DeviceArray) else None,
                            array.dtype.fields is not None)
            if w:
                written.add(array.allocation.id)
            if r:
                read.add(array.allocation.id)
    others = [array for array in [*captured, *pointed.values()] if array is not None]
    for array in others:  # how the kernel uses these is not followed
        written.add(array.allocation.id)
        read.add(array.allocation.id)
    written -= _thread_private(kernel, args, others, grid, block)
    values = []
    flags = (checks.get("races", True), checks.get("uninitialized", True), written, read)
    if captured:
        keep.append(_bind_captured(kernel, memory, c, infos, captured, flags))
    extra = len(kernel.slots)  # the arrays in tuple arguments get slots after the kernel's own
    for k, (name, arg) in enumerate(zip(kernel.param_names, args)):
        if isinstance(arg, DeviceArray):
            if kernel.argtypes is not None:
                _check_declared(kernel, k, arg)
            values.append(_bind_array(kernel, memory, c, infos, k, name, arg, flags))
            continue
        infos[k] = SlotInfo(name, "none", (), np.dtype(np.int8))
        if k in pointed:  # a raw pointer: the allocation it points into gets a slot
            _bind_array(kernel, memory, c, infos, extra, name, pointed[k], flags)
            extra += 1
        if name in kernel.pointers:
            values.append(int(arg))
            continue
        leaves = in_tuples[k]
        if not leaves:
            values.append(_as_declared(kernel, k, arg))
            continue
        views = iter([_bind_array(kernel, memory, c, infos, extra + j, label, array, flags)
                      for j, (label, array) in enumerate(leaves)])
        extra += len(leaves)
        values.append(_replaced(arg, views))
    return values, not written


def _thread_private(kernel: SimKernel, args: tuple, others: list[DeviceArray],
                    grid: tuple[int, int, int], block: tuple[int, int, int]) -> set[int]:
    """The allocations whose every element only one thread of this launch can touch, which
    need no race records: each is the only argument on its allocation, indexed only by the
    thread's grid coordinates (`kernel.thread_indexed`) in every dimension in which the launch
    has more than one thread, through a view whose elements do not overlap."""
    found: set[int] = set()
    if not kernel.thread_indexed:
        return found
    arrays = _arrays(args) + others
    for name, arg in zip(kernel.param_names, args):
        axes = kernel.thread_indexed.get(name)
        if axes is None or not isinstance(arg, DeviceArray) or len(axes) != len(arg.shape):
            continue
        if any(grid[d] * block[d] > 1 for d in range(3) if d not in axes):
            continue  # threads differing only there share coordinates
        if sum(array.alloc is arg.alloc for array in arrays) == 1 and _disjoint(arg):
            found.add(arg.alloc.id)
    return found


def _disjoint(array: DeviceArray) -> bool:
    """Whether no two elements of `array` share a byte (a view made by strides can overlap)."""
    dims = sorted((abs(stride), extent) for extent, stride in zip(array.shape, array.strides)
                  if extent > 1)
    span = array.dtype.itemsize
    for stride, extent in dims:
        if stride < span:
            return False
        span = stride * extent
    return True


def _bind_array(kernel: SimKernel, memory: DeviceMemory, c: np.ndarray, infos: list, k: int,
                name: str, arg: DeviceArray, flags: tuple) -> np.ndarray:
    """Bind device array `arg` to slot `k` of the launch context (its bounds, element size,
    race records and written-elements mask); the host view the compiled kernel gets.
    flags: (races checked, uninitialised reads checked, ids written, ids read)."""
    races, uninit, written, read = flags
    s = L.HEADER + k * L.SLOT_FIELDS
    alloc = arg.allocation  # raises for a freed array
    if alloc.memory is not memory:
        raise InvalidDeviceArrayError(
            f"argument '{name}' of kernel '{kernel.name}' lives on another backend's "
            "device; copy it to the host and to this backend's device first")
    if races and alloc.id in written:  # the records first: their error says how to avoid them
        alloc.race_records(alloc.id in read, name)
        c[s + L.S_WREC], c[s + L.S_RREC] = alloc.writers_address, alloc.readers_address
    view = arg.host_view()  # materialises the storage
    if uninit and alloc.init_mask() is not None:
        c[s + L.S_INIT], c[s + L.S_INIT_KIND] = alloc.init_mask_address, L.INIT_BYTE
    base, itemsize = alloc.address, view.itemsize
    c[s + L.S_BASE], c[s + L.S_END] = base, base + max(alloc.nbytes, 1)
    c[s + L.S_SHIFT], c[s + L.S_ITEMSIZE] = _shift(itemsize), itemsize
    c[s + L.S_WRITABLE], c[s + L.S_SPACE], c[s + L.S_ELEMS] = 1, L.SPACE_GLOBAL, alloc.count
    infos[k] = SlotInfo(name, "global", arg.shape, view.dtype, arg)
    return view


def _pointed(kernel: SimKernel, memory: DeviceMemory, args: tuple) -> dict[int, DeviceArray]:
    """For each raw pointer argument (by position), an array over all of the allocation it
    points into (a null pointer gets none: every access through it fails)."""
    found = {}
    for k, (name, value) in enumerate(zip(kernel.param_names, args)):
        if name not in kernel.pointers:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"argument '{name}' of kernel '{kernel.name}' is a pointer "
                            f"({kernel.argtypes[k]}): pass an address as an int (such as "
                            f"`a.__cuda_array_interface__['data'][0]`), not a "
                            f"{type(value).__name__}")
        alloc = memory.find(int(value))
        if alloc is not None:
            found[k] = DeviceArray(alloc, (alloc.count,), (alloc.dtype.itemsize,), 0)
        elif value != 0:
            raise TypeError(f"argument '{name}' of kernel '{kernel.name}' points to address "
                            f"{int(value):#x}, which is in no array of the simulated device; "
                            "pass the address of a device array's element")
    return found


def _captured_view(kernel: SimKernel, memory: DeviceMemory, entry: tuple) -> DeviceArray | None:
    """The device array a captured object is (None: an empty one, with no memory)."""
    obj, slot = entry[:2]
    if isinstance(obj, DeviceArray):
        return obj
    return interface_view(memory, obj.__cuda_array_interface__,
                          f"'{kernel.slots[slot].label}', a {type(obj).__name__} kernel "
                          f"'{kernel.name}' captures,")


def _bind_captured(kernel: SimKernel, memory: DeviceMemory, c: np.ndarray, infos: list,
                   captured: list, flags: tuple) -> np.ndarray:
    """Bind each captured device array to its slot and describe it in the table the compiled
    code reads it from (c[CAPTURED]: per array, its data pointer, shape and strides)."""
    table = np.zeros(sum(words for *_, words in kernel.captured), np.int64)
    for (_, k, offset, words), array in zip(kernel.captured, captured):
        spec = kernel.slots[k]
        if array is None:  # empty: no memory, every index out of bounds
            table[offset + 1:offset + 1 + len(spec.shape)] = spec.shape
            infos[k] = SlotInfo(spec.label, "none", spec.shape, spec.dtype)
            continue
        view = _bind_array(kernel, memory, c, infos, k, spec.label, array, flags)
        table[offset:offset + words] = (view.ctypes.data, *view.shape, *view.strides)
    c[L.CAPTURED] = table.ctypes.data
    return table


def _tuple_arrays(value: tuple, label: str) -> list[tuple[str, DeviceArray]]:
    """(label, array) for each device array in a (nested) tuple argument, as `x[1][0]`."""
    found = []
    for i, item in enumerate(value):
        if isinstance(item, DeviceArray):
            found.append((f"{label}[{i}]", item))
        elif isinstance(item, tuple):
            found += _tuple_arrays(item, f"{label}[{i}]")
    return found


def _arrays(args: tuple) -> list[DeviceArray]:
    """Every device array among the arguments, those in tuples too."""
    found = []
    for arg in args:
        if isinstance(arg, DeviceArray):
            found.append(arg)
        elif isinstance(arg, tuple):
            found += [array for _, array in _tuple_arrays(arg, "")]
    return found


def _replaced(value: tuple, views: Any) -> tuple:
    """`value` with each device array replaced by the next of `views` (in _tuple_arrays order);
    a namedtuple stays of its class."""
    items = [next(views) if isinstance(item, DeviceArray) else
             _replaced(item, views) if isinstance(item, tuple) else item for item in value]
    return type(value)(*items) if hasattr(value, "_fields") else tuple(items)


def _as_declared(kernel: SimKernel, k: int, value: Any) -> Any:
    """A scalar converted to the type an eager signature declares (as numba-cuda does)."""
    if kernel.argtypes is None:
        return value
    declared = kernel.argtypes[k]
    if isinstance(declared, (numba.types.Number, numba.types.Boolean)):
        return c_convert(value, numba.np.numpy_support.as_dtype(declared))
    return value


def _check_declared(kernel: SimKernel, k: int, arg: DeviceArray) -> None:
    declared = kernel.argtypes[k]
    if not isinstance(declared, numba.types.Array) or \
            numba.np.numpy_support.as_dtype(declared.dtype) != arg.dtype or \
            declared.ndim != arg.ndim:
        raise TypeError(f"kernel '{kernel.name}' was compiled for argument "
                        f"'{kernel.param_names[k]}' of type {declared}, not a {arg.ndim}-D "
                        f"{arg.dtype} array (numba-cuda: no matching definition)")


def _shared(kernel: SimKernel, ws: Workspace, c: np.ndarray, dynamic: int,
            infos: list[SlotInfo]) -> None:
    static = _aligned(kernel.static_shared_bytes, 16)
    align = kernel.shared_align  # 16, or an `alignment=` larger than that
    c[L.SHARED_BASE] = _aligned(ws.address("shared", static + dynamic + 16 + align), align)
    c[L.SHARED_STATIC] = static
    c[L.DYN_SHARED] = dynamic
    for k, spec in enumerate(kernel.slots):
        if spec.kind not in ("shared", "dynamic_shared"):
            continue
        s = L.HEADER + k * L.SLOT_FIELDS
        if spec.kind == "shared":
            offset, nbytes, itemsize = spec.offset, spec.nbytes, spec.dtype.itemsize
            shape = spec.shape
        else:
            offset, nbytes, itemsize = int(c[L.SHARED_STATIC]), dynamic, 1
            shape = (dynamic // spec.dtype.itemsize,)
        elems = max(nbytes // itemsize, 1)
        shift = _shift(itemsize)
        base = c[L.SHARED_BASE] + offset
        c[s + L.S_BASE], c[s + L.S_END] = base, base + max(nbytes, 1)
        c[s + L.S_SHIFT], c[s + L.S_ITEMSIZE] = shift, itemsize
        c[s + L.S_WREC] = ws.address(f"rec{k}w", elems * 8)
        if c[L.CHECKS] & L.CHECK_RACES:
            c[s + L.S_INIT], c[s + L.S_INIT_KIND] = c[s + L.S_WREC], L.INIT_WREC
        else:
            c[s + L.S_INIT] = ws.address(f"shared{k}init", elems * 8)
            c[s + L.S_INIT_KIND] = L.INIT_STAMP
        c[s + L.S_RREC] = ws.address(f"rec{k}r", elems * 8)
        c[s + L.S_SPACE], c[s + L.S_WRITABLE], c[s + L.S_ELEMS] = L.SPACE_SHARED, 1, elems
        infos[k] = SlotInfo(spec.label, "shared", shape, spec.dtype)


def _aligned(n: int, align: int) -> int:
    """`n` rounded up to a multiple of `align` (a power of 2)."""
    return (n + align - 1) & -align


def _local(kernel: SimKernel, ws: Workspace, c: np.ndarray, tpb: int, infos: list) -> None:
    align = kernel.local_align  # every thread's frame starts at a multiple of it
    per_thread = _aligned(max(kernel.local_bytes, 8), align)
    threads = tpb if kernel.generator else 1
    base = _aligned(ws.address("local", per_thread * threads + align), align)
    init = ws.address("localinit", per_thread * threads + 16)
    key = (threads, base, init)
    found = kernel.local_slots.get(key)  # a loop of launches finds its slot made
    if found is None:
        if len(kernel.local_slots) >= 16:
            kernel.local_slots.clear()
        row = np.zeros(L.SLOT_FIELDS, np.int64)
        row[L.S_BASE], row[L.S_END] = base, base + per_thread * threads
        row[L.S_SHIFT], row[L.S_ITEMSIZE] = 0, 1
        row[L.S_INIT], row[L.S_INIT_KIND] = init, L.INIT_BYTE
        row[L.S_SPACE], row[L.S_WRITABLE], row[L.S_ELEMS] = L.SPACE_LOCAL, 1, per_thread
        stride = per_thread if kernel.generator else 0
        info = SlotInfo("local", "local", (per_thread,), np.dtype(np.uint8),
                        decls=tuple(kernel.local_decls), stride=stride)
        found = kernel.local_slots[key] = (row, stride, info)
    row, stride, infos[kernel.local_slot] = found
    s = L.HEADER + kernel.local_slot * L.SLOT_FIELDS
    c[s: s + L.SLOT_FIELDS] = row
    c[L.LOCAL_BASE], c[L.LOCAL_SIZE], c[L.LOCAL_INIT] = base, per_thread, init
    c[L.LOCAL_STRIDE], c[L.LOCAL_KERNEL] = stride, kernel.local_kernel_bytes


def _grid_sync_table(kernel: SimKernel, ws: Workspace, c: np.ndarray, nblocks: int,
                     tpb: int) -> np.ndarray:
    """The table a kernel that calls grid.sync() needs (layout COOP_*): the memory that holds
    one block's state, saved while the other blocks take their turn, and a save area per
    block."""
    regions = [(int(c[L.SHARED_BASE]), int(c[L.SHARED_STATIC] + c[L.DYN_SHARED]))]
    for k, spec in enumerate(kernel.slots):
        if spec.kind in ("shared", "dynamic_shared"):
            s = L.HEADER + k * L.SLOT_FIELDS
            nbytes = int(c[s + L.S_ELEMS]) * 8
            regions += [(addr, nbytes) for addr in  # (S_INIT may be S_WREC: INIT_WREC)
                        dict.fromkeys(int(c[s + f]) for f in (L.S_INIT, L.S_WREC, L.S_RREC))]
    regions.append((int(c[L.XCH]) + L.XCH_THREADS, tpb * L.XF * 8))
    local = int(c[L.LOCAL_SIZE]) * tpb
    regions += [(int(c[L.LOCAL_BASE]), local), (int(c[L.LOCAL_INIT]), local)]
    regions = [(addr, _aligned(n, 8)) for addr, n in regions if n > 0]  # buffers have the room
    per_block = sum(n for _, n in regions)
    table = np.zeros(L.COOP_HEADER + 2 * len(regions) + nblocks * L.COOP_BLOCK_FIELDS, np.int64)
    table[L.COOP_REGIONS], table[L.COOP_BLOCK_BYTES] = len(regions), per_block
    table[L.COOP_SAVE] = ws.address("coopsave", nblocks * per_block)
    table[L.COOP_HEADER:L.COOP_HEADER + 2 * len(regions)] = [v for r in regions for v in r]
    c[L.COOP] = table.ctypes.data
    return table


def _renumber(memory: DeviceMemory, workspace: Workspace) -> None:
    """Stamps are about to outgrow the records: zero every record and start again."""
    for alloc in list(memory.live.values()):
        alloc.clear_race_records()
    workspace.clear_records()
    memory.race_stamp = 0


def _stats(kernel: SimKernel, c: np.ndarray, dynamic: int, infos: list, types: tuple | None
           ) -> LaunchStats:
    """The launch's statistics from its per-site counters (`types`: its arguments' type key,
    which gives the element sizes of what it accessed); a loop of launches repeats them."""
    base = int(c[L.SITE_BASE])
    counters = c[base: base + len(kernel.sites.items) * L.SITE_FIELDS]
    barriers = int(c[L.BARRIERS])
    if types is None:
        traffic, sites = _counted(kernel, counters, infos)
    else:
        key = (types, dynamic, counters.tobytes())
        found = kernel.counted.get(key)
        if found is None:
            if len(kernel.counted) >= 256:
                kernel.counted.clear()
            found = kernel.counted[key] = _counted(kernel, counters, infos)
        traffic, sites = found
    return LaunchStats(*traffic, static_shared_bytes=kernel.static_shared_bytes,
                       dynamic_shared_bytes=dynamic, barriers=barriers,
                       local_bytes_per_thread=kernel.local_bytes, sites=sites)


def _counted(kernel: SimKernel, counters: np.ndarray, infos: list) -> tuple[tuple, tuple]:
    """((global load, global store, shared load, shared store bytes, atomics), the sites that
    ran) from the per-site counters (see `layout.SITE_FIELDS`)."""
    gl = gs = sl = ss = atomics = 0
    sites = []
    rows = counters.reshape(-1, L.SITE_FIELDS).tolist()
    for index, (site, row) in enumerate(zip(kernel.sites.items, rows)):
        glob = row[L.SPACE_GLOBAL] + row[L.SPACE_CONST]
        shared = row[L.SPACE_SHARED]
        if glob == shared == row[L.SPACE_LOCAL] == 0:
            continue
        slot = kernel.site_slots.get(index, -1)
        itemsize = row[L.SC_ITEMSIZE] if slot < 0 else int(infos[slot].dtype.itemsize)
        if site.kind == "read":
            gl += glob * itemsize
            sl += shared * itemsize
        elif site.kind == "write":
            gs += glob * itemsize
            ss += shared * itemsize
        elif site.kind == "atomic":
            atomics += glob + shared
            gl += glob * itemsize
            gs += glob * itemsize
        sites.append((index, site.kind, itemsize, glob, shared))
    return (gl, gs, sl, ss, atomics), tuple(sites)
