"""Arrays as kernels see them in the simulator: global, shared, local and constant memory.

Every access arrives as a vector of indices, one per active lane, and is checked before it
happens: bounds (negative indices included), reads of memory never written, and data races. The
race check keeps, per element, the last writer and a summary of the readers since the last
barrier (`RaceShadow`); two accesses conflict when they come from different threads, at least
one writes, not both are atomic, and no barrier orders them (threads of different blocks are
never ordered within a launch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import (
    KernelError,
    OutOfBoundsError,
    RaceConditionError,
    UninitializedMemoryError,
)
from .context import Group
from .races import NO_CONFLICT, RaceShadow


class SimArray:
    """An array a kernel indexes: a flat buffer plus shape and element strides.

    `lane_base` (None for global and constant memory) offsets each lane into its own block's
    (shared) or thread's (local) slice of the buffer.
    """

    kind = "global"

    def __init__(self, buf: np.ndarray, shape: tuple[int, ...], estrides: tuple[int, ...],
                 offset: int, label: str, init: np.ndarray | None, shadow: RaceShadow | None,
                 lane_base: np.ndarray | None = None, writable: bool = True):
        self.buf = buf
        self.shape = shape
        self.estrides = estrides
        self.offset = offset
        self.label = label
        self.init = init
        self.shadow = shadow
        self.lane_base = lane_base
        self.writable = writable
        self.dtype = buf.dtype
        self.ndim = len(shape)
        self.size = int(np.prod(shape, dtype=np.int64))

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<{self.kind} array {self.label} {self.shape} {self.dtype}>"

    # -- addressing ------------------------------------------------------------------------
    def _flat(self, g: Group, idx: Any, m: Any, site: int
              ) -> tuple[np.ndarray | None, np.ndarray, list]:
        """(lanes, flat element indices, index components) of an access, bounds-checked."""
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != self.ndim:
            raise g.error(
                KernelError,
                f"'{g.launch.site(site).text}' gives {len(idx)} index(es) for the {self.ndim}-D "
                f"{self.kind} array {self.label} of shape {self.shape}; index every dimension "
                "(slices and partial indexing are not simulated)", _first(m), site)
        lanes = None if m is True else np.flatnonzero(m)
        comps = []
        for c in idx:
            if isinstance(c, np.ndarray) and c.ndim:
                if c.dtype.kind not in "iub":
                    raise _index_type_error(g, c.dtype, m, site)
                comps.append(c if lanes is None else c[lanes])
            else:
                if isinstance(c, (float, np.floating)) or not isinstance(
                        c, (int, np.integer, bool, np.bool_)):
                    raise _index_type_error(g, type(c).__name__, m, site)
                comps.append(int(c))
        if g.launch.checks["bounds"]:
            self._check_bounds(g, comps, lanes, site)
        flat: Any = self.offset
        for c, s in zip(comps, self.estrides):
            flat = flat + c * s if s != 1 else flat + c
        if self.lane_base is not None:
            flat = flat + (self.lane_base if lanes is None else self.lane_base[lanes])
        nlanes = g.size if lanes is None else len(lanes)
        if not isinstance(flat, np.ndarray):
            flat = np.full(nlanes, flat, np.int64)
        return lanes, flat, comps

    def _check_bounds(self, g: Group, comps: list, lanes: np.ndarray | None, site: int) -> None:
        for axis, (c, n) in enumerate(zip(comps, self.shape)):
            if isinstance(c, np.ndarray):
                if len(c) == 0 or (c.min() >= 0 and c.max() < n):  # two reductions, no temporary
                    continue
                bad = (c < 0) | (c >= n)
                k = int(np.argmax(bad))
                value = int(c[k])
                lane = k if lanes is None else int(lanes[k])
            else:
                if 0 <= c < n:
                    continue
                value, lane = c, _first_lane(lanes, g)
            raise g.error(OutOfBoundsError, _oob_message(self, g, site, axis, value, n),
                          lane, site)

    def _lane(self, lanes: np.ndarray | None, k: int) -> int:
        return k if lanes is None else int(lanes[k])

    def _where(self, comps: list, k: int) -> str:
        parts = [str(int(c[k])) if isinstance(c, np.ndarray) else str(c) for c in comps]
        return f"{self.label}[{', '.join(parts)}]"

    # -- checks ----------------------------------------------------------------------------
    def _check_init(self, g: Group, flat: np.ndarray, lanes: Any, comps: list, site: int) -> None:
        if self.init is None or not g.launch.checks["uninitialized"]:
            return
        ok = self.init[flat]
        if ok.all():
            return
        k = int(np.argmin(ok))
        raise g.error(UninitializedMemoryError,
                      f"'{g.launch.site(site).text}' reads {self._where(comps, k)}, which was "
                      f"never written: {self._uninit_hint()}", self._lane(lanes, k), site)

    def _uninit_hint(self) -> str:
        return ("device memory from allocate() starts uninitialised, like cudaMalloc's; "
                "write it first, or create the array with to_device(host_array)")

    def _race(self, g: Group, k: int, lanes: Any, comps: list, site: int, other_tid: int,
              other_site: int, this_writes: bool, other_writes: bool) -> RaceConditionError:
        launch = g.launch
        tpb = launch.tpb
        lane = self._lane(lanes, k)
        other_block_lin, other_t = divmod(other_tid, tpb)
        bx, by, _ = launch.block
        gx, gy, _ = launch.grid
        other_thread = (other_t % bx, (other_t // bx) % by, other_t // (bx * by))
        other_block = (other_block_lin % gx, (other_block_lin // gx) % gy,
                       other_block_lin // (gx * gy))
        this_site, that_site = launch.site(site), launch.site(other_site)
        verb = lambda w: "writes" if w else "reads"
        same_block = other_block == g.block_of(lane)
        fix = ("put cuda.syncthreads() between the two accesses, or make both atomic"
               if same_block else
               "threads of different blocks cannot wait for each other inside one launch: give "
               "each block its own elements, use atomics, or split the work into two launches")
        message = (f"data race on {self._where(comps, k)}: thread {g.thread_of(lane)} of block "
                   f"{g.block_of(lane)} {verb(this_writes)} it at line {this_site.lineno} "
                   f"('{this_site.text}'), and thread {other_thread} of block {other_block} "
                   f"{verb(other_writes)} it at line {that_site.lineno} ('{that_site.text}') "
                   f"with nothing ordering the two; {fix}")
        return g.error(RaceConditionError, message, lane, site, other_thread=other_thread,
                       other_block=other_block, other_lineno=that_site.lineno)

    def _record_read(self, g: Group, flat: np.ndarray, lanes: Any, comps: list, site: int
                     ) -> None:
        tid = g.gtid if lanes is None else g.gtid[lanes]
        blk = g.gblk if lanes is None else g.gblk[lanes]
        k, other, other_site = self.shadow.read(flat, tid, blk, g.lane_phase(lanes), site,
                                                g.launch.tpb)
        if k != NO_CONFLICT:
            raise self._race(g, k, lanes, comps, site, other, other_site, False, True)

    def _record_write(self, g: Group, flat: np.ndarray, lanes: Any, comps: list, site: int,
                      atomic: bool) -> None:
        tid = g.gtid if lanes is None else g.gtid[lanes]
        blk = g.gblk if lanes is None else g.gblk[lanes]
        k, other, other_site, other_wrote = self.shadow.write(
            flat, tid, blk, g.lane_phase(lanes), site, g.launch.tpb, atomic)
        if k != NO_CONFLICT:
            raise self._race(g, k, lanes, comps, site, other, other_site, True, other_wrote)

    # -- the accesses ----------------------------------------------------------------------
    def load(self, g: Group, idx: Any, m: Any, site: int) -> Any:
        lanes, flat, comps = self._flat(g, idx, m, site)
        self._check_init(g, flat, lanes, comps, site)
        if self.shadow is not None:
            self._record_read(g, flat, lanes, comps, site)
        self._count(g, len(flat), False)
        if g.launch.trace is not None:
            g.launch.trace.record(g, self, "read", lanes, flat, site)
        values = self.buf[flat]
        if lanes is None:
            return values
        out = np.zeros(g.size, self.dtype)
        out[lanes] = values
        return out

    def store(self, g: Group, idx: Any, value: Any, m: Any, site: int) -> None:
        if not self.writable:
            raise g.error(KernelError, f"'{g.launch.site(site).text}': {self.label} is in "
                          "constant memory, which kernels can only read", _first(m), site)
        lanes, flat, comps = self._flat(g, idx, m, site)
        if self.shadow is not None:
            self._record_write(g, flat, lanes, comps, site, atomic=False)
        if isinstance(value, np.ndarray) and value.ndim:
            value = value if lanes is None else value[lanes]
        if self.init is not None:
            self.init[flat] = True
        self._count(g, len(flat), True)
        if g.launch.trace is not None:
            g.launch.trace.record(g, self, "write", lanes, flat, site)
        order = g.launch.rng
        if order is not None and isinstance(value, np.ndarray) and len(flat) > 1:
            perm = order.permutation(len(flat))  # which racing write lands last varies
            self.buf[flat[perm]] = value[perm]
        else:
            self.buf[flat] = value

    def atomic(self, g: Group, op: str, idx: Any, m: Any, site: int, *operands: Any) -> Any:
        from .atomics import apply_atomic

        if not self.writable:
            raise g.error(KernelError, f"atomic on constant array {self.label}", _first(m), site)
        lanes, flat, comps = self._flat(g, idx, m, site)
        self._check_init(g, flat, lanes, comps, site)
        if self.shadow is not None:
            self._record_write(g, flat, lanes, comps, site, atomic=True)
        if self.init is not None:
            self.init[flat] = True
        ops = [o if not (isinstance(o, np.ndarray) and o.ndim) or lanes is None else o[lanes]
               for o in operands]
        g.launch.stats.atomics += len(flat)
        if g.launch.trace is not None:
            g.launch.trace.record(g, self, "atomic", lanes, flat, site)
        old = apply_atomic(self.buf, op, flat, ops, g.launch.rng)
        if lanes is None:
            return old
        out = np.zeros(g.size, self.dtype)
        out[lanes] = old
        return out

    def _count(self, g: Group, n: int, store: bool) -> None:
        nbytes = n * self.dtype.itemsize
        stats = g.launch.stats
        if self.kind == "shared":
            if store:
                stats.shared_store_bytes += nbytes
            else:
                stats.shared_load_bytes += nbytes
        elif self.kind in ("global", "const"):
            if store:
                stats.global_store_bytes += nbytes
            else:
                stats.global_load_bytes += nbytes


class SharedArray(SimArray):
    kind = "shared"

    def _uninit_hint(self) -> str:
        return ("shared memory starts uninitialised in every block; have a thread write the "
                "element, then cuda.syncthreads(), before any thread reads it")


class ConstArray(SimArray):
    """A host numpy array a kernel reads as constant memory (`cuda.const.array_like`, or a global
    numpy array, which Numba copies into constant memory when it compiles the kernel)."""

    kind = "const"


def constant_view(g: Group, host: np.ndarray, label: str) -> ConstArray:
    """The group's read-only view of a host array (made once per group)."""
    key = ("const", id(host))
    arr = g.shared.get(key)
    if arr is None:
        data = np.ascontiguousarray(host)
        strides, acc = [], 1
        for n in reversed(data.shape):
            strides.insert(0, acc)
            acc *= n
        arr = ConstArray(data.reshape(-1), data.shape, tuple(strides), 0, label, None, None,
                         writable=False)
        g.shared[key] = (arr, host)  # keep `host` alive so its id stays unique
        return arr
    return arr[0]


class LocalArray(SimArray):
    kind = "local"

    def _uninit_hint(self) -> str:
        return "cuda.local.array memory starts uninitialised; write the element before reading it"


def _first(m: Any) -> int | None:
    if m is True:
        return 0
    if isinstance(m, np.ndarray):
        nz = np.flatnonzero(m)
        return int(nz[0]) if len(nz) else None
    return None


def _first_lane(lanes: np.ndarray | None, g: Group) -> int:
    return 0 if lanes is None else int(lanes[0])


def _index_type_error(g: Group, what: Any, m: Any, site: int) -> KernelError:
    return g.error(KernelError, f"'{g.launch.site(site).text}': array indices must be integers, "
                   f"not {what}; convert with int(...) or use // for integer division",
                   _first(m), site)


def _oob_message(arr: SimArray, g: Group, site: int, axis: int, value: int, n: int) -> str:
    text = g.launch.site(site).text
    where = f"axis {axis} of " if arr.ndim > 1 else ""
    msg = (f"'{text}' indexes {where}{arr.kind} array {arr.label} (shape {arr.shape}) at "
           f"{value}, outside 0..{n - 1}")
    if value < 0:
        msg += ("; negative indices are out of bounds on a GPU (Numba would silently wrap them "
                "to the end of the array)")
    else:
        msg += (f"; guard the access (e.g. `if i < {arr.label}.shape[{axis}]:`) or check the index "
                "arithmetic")
    return msg


