"""Turning what compiled code left in the launch context into words: errors and printed output.

Compiled code reports an error as a code and a few numbers (layout.Err); this module names the
kernel, the thread, the block, the source line, the array and element, and says how to fix it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import (
    BarrierError,
    KernelArithmeticError,
    KernelError,
    KernelTimeoutError,
    LaunchConfigError,
    OutOfBoundsError,
    RaceConditionError,
    UninitializedMemoryError,
)
from . import layout as L
from .runtime import P_BOOL, P_CLOSE, P_END, P_FLOAT, P_INT, P_OPEN, P_UINT
from .source import Site


class TraceCapacityError(LaunchConfigError):
    """A traced launch made more accesses than the trace could hold (the backend words it)."""


@dataclass
class ErrorContext:
    kernel: Any
    c: np.ndarray
    infos: list
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    watchdog_s: float | None = None

    @property
    def tpb(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def thread(self, lt: int) -> tuple[int, int, int]:
        bx, by, _ = self.block
        return (lt % bx, (lt // bx) % by, lt // (bx * by))

    def block_coords(self, blin: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        return (blin % gx, (blin // gx) % gy, blin // (gx * gy))

    def site(self, index: int) -> Any:
        return self.kernel.sites[index] if 0 <= index < len(self.kernel.sites) else None

    def _array(self, field: int, count: int) -> np.ndarray:
        addr = int(self.c[field])
        ptr = ctypes.cast(addr, ctypes.POINTER(ctypes.c_int64))
        return np.ctypeslib.as_array(ptr, shape=(count,))

    def block_of_stamp(self, stamp: int) -> int:
        """The linear block that was running when `stamp` was current."""
        c = self.c
        if stamp >= c[L.BLOCK_STAMP]:
            return int(c[L.BLIN])
        if c[L.BLOCK_STARTS] != 0:
            started = int(self._array(L.BLOCK_STARTS, 1)[0])
            starts = self._array(L.BLOCK_STARTS, started + 1)[1:]
            run = int(np.searchsorted(starts, stamp, side="right")) - 1
        else:
            run = int(stamp - c[L.LAUNCH_STAMP])
        if c[L.ORDER] != 0:
            return int(self._array(L.ORDER, int(c[L.NBLOCKS]))[max(run, 0)])
        return max(run, 0)

    def where(self, slot: int, element: int) -> str:
        info = self.infos[slot] if 0 <= slot < len(self.infos) else None
        if info is None:
            return f"element {element}"
        if info.space == "local":
            return self._local_where(element)
        index = _index(info, element, self.c, slot)
        return f"{info.label}[{index}]"

    def _local_where(self, byte: int) -> str:
        """A byte of the local arena, named by the kernel's local array declaration."""
        c = self.c
        offset = byte - int(c[L.LT]) * int(c[L.LOCAL_STRIDE])
        for decl in self.kernel.local_decls:
            if decl.offset <= offset < decl.offset + decl.nbytes:
                index = (offset - decl.offset) // decl.dtype.itemsize
                coords = np.unravel_index(index, decl.shape) if len(decl.shape) > 1 else (index,)
                return f"{decl.label}[{', '.join(str(int(v)) for v in coords)}]"
        return "a local array of a device function"

    def slot_at(self, addr: int) -> int:
        """The slot holding address `addr`, or -1."""
        c = self.c
        for k in range(int(c[L.NSLOTS])):
            s = L.HEADER + k * L.SLOT_FIELDS
            if c[s + L.S_BASE] <= addr < c[s + L.S_END]:
                return k
        return -1

    def space_at(self, addr: int) -> str:
        """The memory space of the slot holding address `addr` ("global" when none does)."""
        k = self.slot_at(addr)
        return self.space(k) if k >= 0 else "global"

    def pointer_target(self, base: int, index: int, itemsize: int) -> str:
        """Where pointer `base` points and why element `index` from there is outside it."""
        k = self.slot_at(base)
        if k < 0:
            return f"the pointer ({base:#x}) points into no array of this launch"
        s = L.HEADER + k * L.SLOT_FIELDS
        start, count = (base - int(self.c[s + L.S_BASE])) // itemsize, \
            (int(self.c[s + L.S_END]) - int(self.c[s + L.S_BASE])) // itemsize
        return (f"it points at element {start} of {self.infos[k].label} ({count} elements of "
                f"{itemsize} bytes), so element {start + index} is outside 0..{count - 1}")

    def space(self, slot: int) -> str:
        return self.infos[slot].space if 0 <= slot < len(self.infos) else "global"


def _index(info: Any, element: int, c: np.ndarray, slot: int) -> str:
    shape = info.shape
    if info.space == "global" and info.array is not None:
        arr = info.array
        itemsize = arr.itemsize
        rel = element - arr.offset_bytes // itemsize
        strides = [s // itemsize for s in arr.strides]
        comps = []
        for axis in sorted(range(len(shape)), key=lambda a: -abs(strides[a])):
            step = strides[axis]
            if step == 0:
                comps.append((axis, 0))
                continue
            q, rel = divmod(rel, step)
            comps.append((axis, q))
        if rel == 0 and all(0 <= q < shape[a] for a, q in comps):
            ordered = [q for _, q in sorted(comps)]
            return ", ".join(str(q) for q in ordered)
        return f"{element} (element of the whole allocation)"
    if info.space == "shared" and shape and len(shape) > 1:
        return ", ".join(str(int(v)) for v in np.unravel_index(element, shape))
    return str(element)


_HINTS = {
    "shared": "shared memory starts uninitialised in every block; have a thread write the "
              "element, then cuda.syncthreads(), before any thread reads it",
    "global": "device memory from allocate() (cuda.device_array) starts uninitialised, like "
              "cudaMalloc's; write it first, or create the array with to_device(host_array)",
    "local": "cuda.local.array memory starts uninitialised at every call; write the element "
             "before reading it",
}
_USES = {L.UNDEF_BRANCH: "branches on", L.UNDEF_STORE: "stores",
         L.UNDEF_INDEX: "indexes an array with", L.UNDEF_CALL: "passes on",
         L.UNDEF_RETURN: "returns", L.UNDEF_SYNC: "hands a warp intrinsic"}


def kernel_error(ctx: ErrorContext) -> KernelError:
    """The gpukit error for the error code in the context."""
    c = ctx.c
    code = int(c[L.ERR_CODE])
    site = ctx.site(int(c[L.ERR_SITE]))
    gt = int(c[L.ERR_GT])
    lt, blin = gt % ctx.tpb, gt // ctx.tpb
    a, b, cc, d, e = (int(c[f]) for f in (L.ERR_A, L.ERR_B, L.ERR_C, L.ERR_D, L.ERR_E))
    text = site.text if site is not None else "?"
    where = {"kernel": ctx.kernel.name, "thread": ctx.thread(lt),
             "block": ctx.block_coords(blin), "lineno": site.lineno if site else None,
             "filename": site.filename if site else None}
    label = (site.label or "the array") if site is not None else "the array"
    if code == L.E_BOUNDS:
        ndim = int(c[L.ERR_NDIM])
        shape = tuple(int(v) for v in c[L.ERR_SHAPE:L.ERR_SHAPE + min(ndim, 4)])
        space = ctx.space_at(int(c[L.ERR_BASE]))
        axis = f"axis {a} of " if ndim > 1 else ""
        msg = (f"'{text}' indexes {axis}{space} array {label} (shape {shape}) at {b}, outside "
               f"0..{cc - 1}")
        if b < 0:
            msg += ("; a computed index that goes negative is a bug Numba hides: it silently "
                    "wraps it to the end of the array (write a literal such as a[-1] to count "
                    "from the end; code that relies on the wrap runs with the 'wraparound' "
                    "check off)")
        else:
            msg += (f"; guard the access (e.g. `if i < {label}.shape[{a}]:`) or check the index "
                    "arithmetic")
        return OutOfBoundsError(msg, **where)
    if code == L.E_NO_SLOT:
        if d:
            msg = (f"'{text}' makes an array of {b + 1} elements over raw pointer {label}, and "
                   f"{ctx.pointer_target(a, b, cc)}; make the array no longer than the memory "
                   "the pointer points into (a GPU does not check it)")
        else:
            msg = (f"'{text}' indexes raw pointer {label} at {b}, and "
                   f"{ctx.pointer_target(a, b, cc)}; a pointer has no bounds on a GPU, so guard "
                   "the index (e.g. `if i < n:`)")
        return OutOfBoundsError(msg, **where)
    if code == L.E_UNDEF_USE:
        read = ctx.site(b)
        use = f"line {site.lineno} ('{text}')" if site is not None else "a later line"
        if e != lt:  # the value was read before a barrier, and another thread read one since:
            # the latest read on record is that thread's, so it is named as an example
            msg = (f"{use} {_USES.get(a, 'uses')} a value this thread read from memory that "
                   f"was never written (as '{read.text if read else '?'}' read "
                   f"{ctx.where(cc, d)} in thread {ctx.thread(e)}, the latest such read): "
                   f"{_HINTS[ctx.space(cc)]}")
            return UninitializedMemoryError(msg, **where)
        msg = (f"'{read.text if read else '?'}' reads {ctx.where(cc, d)}, which was never "
               f"written, and {use} {_USES.get(a, 'uses')} the value: {_HINTS[ctx.space(cc)]}")
        if read is not None:  # the read is the bug; where the value went is in the message
            where["lineno"], where["filename"] = read.lineno, read.filename
        return UninitializedMemoryError(msg, **where)
    if code == L.E_UNINIT:
        msg = (f"'{text}' atomically updates {ctx.where(a, b)}, which was never written: "
               f"{_HINTS[ctx.space(a)]}")
        return UninitializedMemoryError(msg, **where)
    if code == L.E_RACE:
        return _race(ctx, where, text, a, b, cc, d, e)
    if code == L.E_DIVZERO:
        op = ("division", "modulo", "divmod", "division")[a]
        if b:  # Python's error model
            msg = (f"{op} by zero in '{text}': the kernel was compiled with debug=True, under "
                   "which numba-cuda uses Python's error model: a zero divisor raises "
                   "ZeroDivisionError, floats too (without debug=True a float result is inf or "
                   "nan, and an integer one 0); guard the divisor")
            return KernelArithmeticError(msg, **where)
        msg = (f"integer {op} by zero in '{text}' (on a GPU numba-cuda makes it 0, without any "
               "error, which hides the bug); guard the divisor")
        return KernelArithmeticError(msg, **where)
    if code == L.E_BARRIER:
        what = _barrier_name(text)
        other_site = ctx.site(d) if d >= 0 else None
        why = (f"it waits at the barrier at line {other_site.lineno}" if other_site is not None
               else "it ran to the end of the kernel without reaching it")
        msg = (f"divergent barrier: {a} of the {b} live threads of block "
               f"{ctx.block_coords(blin)} reached {what} at line "
               f"{site.lineno if site else '?'}, but thread {ctx.thread(cc)} did not ({why}). "
               "Every live thread of a block must reach the same barrier the same number of "
               "times, or the block hangs on a GPU; move the barrier out of the condition "
               "(threads that `return` early no longer count)")
        return BarrierError(msg, **where)
    if code == L.E_DEADLOCK:
        where["thread"] = ctx.thread(a)
        msg = (f"deadlock: thread {ctx.thread(a)} waits at '{text}', which can never complete: "
               "lanes its mask names wait at a block barrier (or at another warp call) instead. "
               "On a GPU this block would hang; call warp intrinsics where every lane their "
               "mask names reaches them")
        return BarrierError(msg, **where)
    if code == L.E_GRID_DEADLOCK:
        msg = (f"grid.sync() deadlock: block {ctx.block_coords(b)} waits at '{text}' (line "
               f"{site.lineno if site else '?'}), but block {ctx.block_coords(a)} finished "
               "without reaching it. grid.sync() waits for every block of the grid, so on a GPU "
               "the launch would hang; every block must call it the same number of times (only "
               "threads, not whole blocks, may return early)")
        return BarrierError(msg, **where)
    if code == L.E_WARP:
        where["thread"] = ctx.thread(b)
        call = f"{_barrier_name(text)} at line {site.lineno if site else '?'}"
        if a == 1:
            msg = (f"{call}: thread {ctx.thread(b)} (lane {b % 32}) calls it with mask "
                   f"{cc:#010x}, which does not include its own lane")
        else:
            msg = (f"{call}: lane {b % 32} reads lane {cc}, which does not take part in this "
                   "call (it returned, took another branch, or is past the end of the block), "
                   "so the value is undefined on a GPU")
        return BarrierError(msg, **where)
    if code == L.E_WATCHDOG:
        loop = f" in the loop '{text}'" if site is not None else ""
        after = f" after {ctx.watchdog_s:g} s" if ctx.watchdog_s else ""
        msg = (f"the watchdog stopped kernel '{ctx.kernel.name}'{after}{loop}. Either a loop "
               "never ends for some thread, a thread spins waiting for a value another thread "
               "sets, or the launch is simply large; fix the loop, or raise the limit with "
               "watchdog_s=...")
        if site is None:
            where["lineno"] = where["filename"] = None
        return KernelTimeoutError(msg, **where)
    if code == L.E_READONLY:
        msg = (f"'{text}' writes {label}, which is constant memory: kernels can only read it "
               "(pass the array as a kernel argument to write it)")
        return KernelError(msg, **where)
    if code == L.E_TRACE_FULL:
        return TraceCapacityError(f"trace capacity {a} reached")
    if code == L.E_RANGE_STEP:
        return KernelError(f"'{text}': range() step must not be zero", **where)
    if code == L.E_ASSERT:
        return KernelError(f"assertion failed: '{text}'", **where)
    if code == L.E_RAISE:
        if site is not None and site.raises is not None:
            return _raised(site, ctx.kernel.name, where)
        return KernelError(f"'{text}' raised an exception inside the kernel (numba-cuda reports "
                           "exceptions from kernels compiled with debug=True)", **where)
    if code == L.E_LOCAL_OVERFLOW:
        return KernelError(f"local memory overflow: a device function needs {a:,} more bytes "
                           f"of local memory than the {b:,} bytes per thread the simulator "
                           "reserves (unbounded recursion?)", **where)
    return KernelError(f"simulator error code {code}", **where)


_RAISED: dict[type, type] = {}


def python_exception(ctx: ErrorContext, error: BaseException) -> KernelError:
    """An exception Numba's compiled code raised in a kernel (a tuple indexed out of range, say),
    as a KernelError of the same class that names the thread and block that raised it."""
    c = ctx.c
    where = {"kernel": ctx.kernel.name, "thread": ctx.thread(int(c[L.LT])),
             "block": ctx.block_coords(int(c[L.BLIN]))}
    msg = str(error) or type(error).__name__
    if not ctx.kernel.debug:
        msg += ("; on a GPU numba-cuda reports exceptions only from kernels compiled with "
                "debug=True: without it the thread goes on with an undefined value")
    return raised_as(type(error), msg, **where)


def _raised(site: Site, kernel: str, where: dict) -> KernelError:
    """The exception a kernel's `raise` raised, as numba-cuda raises it on the host for a kernel
    compiled with debug=True (an instance of the kernel's class, its message prefixed with the
    place and the thread), that is also a KernelError; a plain KernelError when the class and
    KernelError do not combine."""
    cls, args = site.raises
    tid, ctaid = list(where["thread"])[::-1], list(where["block"])[::-1]  # numba-cuda's z, y, x
    prefix = (f"In function '{kernel}', file {site.filename}, line {site.lineno}, "
              f"tid={tid} ctaid={ctaid}")
    return raised_as(cls, f"{prefix}: {args[0]}" if args else prefix, **where)


def raised_as(cls: type, message: str, **where: Any) -> KernelError:
    """A KernelError that is also an instance of the exception class `cls` (so `except
    IndexError` catches an IndexError raised in a kernel, as with numba-cuda); a plain
    KernelError naming the class when the two do not combine."""
    try:
        kind = _RAISED.get(cls)
        if kind is None:
            kind = type(cls.__name__, (KernelError, cls), {"__module__": cls.__module__})
            _RAISED[cls] = kind
        return kind(message, **where)
    except Exception:  # noqa: BLE001 - a layout conflict or an __init__ of its own
        return KernelError(f"{cls.__name__}: {message}", **where)


def _barrier_name(text: str) -> str:
    """cuda.syncthreads() and the like, as the call was written (cuda.<name> when it was not)."""
    if text.endswith(".sync()"):  # a grid group's sync(), as written
        return text
    name = text.split("(", 1)[0].rsplit(".", 1)[-1] if "(" in text else "syncthreads"
    return f"cuda.{name}" + ("()" if name.startswith("syncthreads") else "")


def _race(ctx: ErrorContext, where: dict, text: str, slot: int, element: int, rec: int,
          this_writes: int, other_writes: int) -> RaceConditionError:
    other_stamp = rec >> 32
    other_site = ctx.site((rec >> 16) & 0xFFFF)
    other_lt = rec & 1023
    other_block = ctx.block_coords(ctx.block_of_stamp(other_stamp))
    other_thread = ctx.thread(other_lt)
    verb = ("reads", "writes")
    same_block = other_block == where["block"]
    if same_block:
        fix = "put cuda.syncthreads() between the two accesses, or make both atomic"
    elif ctx.kernel.cooperative:
        fix = "put a grid.sync() between the two accesses, or make both atomic"
    else:
        fix = ("threads of different blocks cannot wait for each other inside one launch: give "
               "each block its own elements, use atomics, or split the work into two launches")
    that = (f"line {other_site.lineno} ('{other_site.text}')" if other_site is not None
            else "another line")
    site = ctx.site(int(ctx.c[L.ERR_SITE]))
    this = f"line {site.lineno} ('{text}')" if site is not None else "here"
    message = (f"data race on {ctx.where(slot, element)}: thread {where['thread']} of block "
               f"{where['block']} {verb[this_writes]} it at {this}, and thread {other_thread} "
               f"of block {other_block} {verb[other_writes]} it at {that} with nothing ordering "
               f"the two; {fix}")
    return RaceConditionError(message, other_thread=other_thread, other_block=other_block,
                              other_lineno=other_site.lineno if other_site else None, **where)


def format_prints(kernel: Any, c: np.ndarray, buf: np.ndarray) -> str:
    """What the kernel's print calls printed, formatted as numba-cuda's printf does: a call of
    more than 32 items prints its raw format string (CUDA's vprintf takes 32 at most)."""
    n = int(c[L.PRINT_N])
    kept = min(n, int(c[L.PRINT_CAP]))
    rows = buf[:kept * L.PRINT_FIELDS].reshape(kept, L.PRINT_FIELDS)
    lines: list[str] = []
    parts: list[tuple[int, str, str]] = []  # (argument, text, printf directive)
    stack: list[list[tuple[str, str]]] = []
    for _, site, tag, bits in rows:
        arg, code = divmod(int(tag), 16)
        if code == P_END:
            raw = arg > L.MAX_PRINT_ITEMS
            texts = _merge(kernel, int(site), parts)
            lines.append(" ".join(fmt if raw else text for _, text, fmt in texts))
            parts = []
            continue
        if code == P_OPEN:
            stack.append([])
            continue
        if code == P_CLOSE:
            items = stack.pop()
            wrap = ("({},)" if len(items) == 1 else "({})").format
            item = (wrap(", ".join(t for t, _ in items)), wrap(", ".join(f for _, f in items)))
        else:
            item = (_format_value(code, int(bits)), _DIRECTIVES[code])
        if stack:
            stack[-1].append(item)
        else:
            parts.append((arg, *item))
    out = "".join(line + "\n" for line in lines)
    if n > kept:
        out += (f"[gpukit: {n - kept:,} more printed values were dropped: the kernel's print "
                "buffer is full, as a GPU's printf buffer would be]\n")
    return out


def _merge(kernel: Any, site: int, parts: list) -> list:
    """A print call's values and its string constants, in argument order."""
    merged = {arg: (arg, text, fmt) for arg, text, fmt in parts}
    for (s, arg), literal in kernel.print_strings.items():
        if s == site:
            merged[arg] = (arg, literal, "%s")
    return [merged[k] for k in sorted(merged)]


_DIRECTIVES = {P_INT: "%lld", P_UINT: "%llu", P_FLOAT: "%f", P_BOOL: "%s"}  # numba-cuda's


def _format_value(code: int, bits: int) -> str:
    if code == P_INT:
        return str(bits)
    if code == P_UINT:
        return str(bits & 0xFFFFFFFFFFFFFFFF)
    if code == P_FLOAT:
        return f"{np.int64(bits).view(np.float64):f}"
    if code == P_BOOL:
        return "True" if bits else "False"
    return "?"
