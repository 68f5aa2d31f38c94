"""A corpus of buggy Numba CUDA kernels, each with the error the simulator must raise and where.

Each `Bug` names its kernel, how to make its arguments on a backend, the launch, the exception
type, and for errors inside a kernel the thread and block (as (x, y, z) tuples) and the line:
the line carrying the comment `# bug` in the kernel (or in the device function `where`), found
from the source, never hard-coded. Races also name the other access (`# other`, or the same line).
The expected threads follow the simulator's rule: threads run in lock-step in the order of their
linear ids, and the error names the first thread whose access is wrong, or for a race, the
thread whose access conflicts with an earlier one. `silent_when_off` names the check that, once
switched off, lets the kernel run to the end without raising (None when it would still fail,
e.g. an index past the end of the buffer). It checks where and how errors are reported, not
speed.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import cuda, float32, int32

from gpukit.errors import (
    BarrierError,
    KernelArithmeticError,
    KernelTimeoutError,
    KernelTypingError,
    LaunchConfigError,
    OutOfBoundsError,
    RaceConditionError,
    UninitializedMemoryError,
)


@dataclass(frozen=True)
class Bug:
    name: str
    kernel: Callable
    args: Callable[[Any], tuple]  # backend -> launch arguments
    grid: Any
    block: Any
    error: type[Exception]
    message: str  # a regex the message must match: it says what is wrong
    thread: tuple[int, int, int] | None = None
    block_idx: tuple[int, int, int] | None = None
    where: Callable | None = None  # the function holding `# bug` (default: the kernel)
    other_thread: tuple[int, int, int] | None = None  # races: the other access
    other_block: tuple[int, int, int] | None = None
    check: str | None = None  # the check that catches it
    silent_when_off: bool = False
    options: dict = field(default_factory=dict)  # launch_kernel options
    device: str = "T4"


def line_of(func: Any, marker: str = "bug") -> int:
    """The line number in its file of the one line of `func` whose comment starts `# marker`."""
    lines, first = inspect.getsourcelines(getattr(func, "py_func", func))
    pattern = re.compile(rf"#\s*{marker}\b")
    hits = [first + k for k, text in enumerate(lines) if pattern.search(text)]
    if len(hits) != 1:
        raise ValueError(f"{func.__name__} has {len(hits)} lines marked {marker!r}")
    return hits[0]


BUGS: dict[str, Bug] = {}


def bug(**spec: Any) -> Bug:
    b = Bug(**spec)
    BUGS[b.name] = b
    return b


def _arange(be: Any, n: int, dtype: Any = np.float32, start: int = 0) -> Any:
    return be.to_device(np.arange(start, start + n, dtype=dtype))


def _zeros(be: Any, n: Any, dtype: Any = np.float32) -> Any:
    return be.to_device(np.zeros(n, dtype))


# -- out of bounds --------------------------------------------------------------------------------
def double_without_guard(a, out):
    i = cuda.grid(1)
    out[i] = a[i] * 2  # bug


bug(name="oob_missing_guard", kernel=double_without_guard, grid=2, block=64,
    args=lambda be: (_arange(be, 100), _zeros(be, 100)), error=OutOfBoundsError,
    thread=(36, 0, 0), block_idx=(1, 0, 0), check="bounds",
    message=r"indexes global array a \(shape \(100,\)\) at 100, outside 0\.\.99; guard")


def double_off_by_one(a, out):
    i = cuda.grid(1)
    if i <= a.shape[0]:
        out[i] = a[i] * 2  # bug


bug(name="oob_off_by_one", kernel=double_off_by_one, grid=2, block=64,
    args=lambda be: (_arange(be, 100), _zeros(be, 100)), error=OutOfBoundsError,
    thread=(36, 0, 0), block_idx=(1, 0, 0), check="bounds",
    message=r"global array a \(shape \(100,\)\) at 100, outside 0\.\.99")


def backward_difference(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] - a[i - 1]  # bug


bug(name="oob_negative_index", kernel=backward_difference, grid=2, block=64,
    args=lambda be: (_arange(be, 100), _zeros(be, 100)), error=OutOfBoundsError,
    thread=(0, 0, 0), block_idx=(0, 0, 0), check="wraparound", silent_when_off=True,
    message=r"'a\[i - 1\]' indexes global array a \(shape \(100,\)\) at -1, outside 0\.\.99; "
            r"a computed index that goes negative is a bug Numba hides")


def scale_2d_wrong_axis(a, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[0]:  # should be a.shape[1]
        out[row, col] = a[row, col] * 2  # bug


bug(name="oob_2d_wrong_axis", kernel=scale_2d_wrong_axis, grid=1, block=(8, 8),
    args=lambda be: (be.to_device(np.ones((8, 5), np.float32)), _zeros(be, (8, 5))),
    error=OutOfBoundsError, thread=(5, 0, 0), block_idx=(0, 0, 0), check="bounds",
    message=r"indexes axis 1 of global array a \(shape \(8, 5\)\) at 5, outside 0\.\.4")


def right_neighbour_sum(a, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] - 1 and col < a.shape[1]:
        out[row, col] = a[row, col] + a[row, col + 1]  # bug: col + 1 runs past the row's end


# past the end of axis 1 but inside the array's memory (the next row's first element), which is
# what a GPU reads: with the check off the kernel runs
bug(name="oob_past_the_end_of_a_row", kernel=right_neighbour_sum, grid=1, block=(8, 4),
    args=lambda be: (be.to_device(np.arange(32, dtype=np.float32).reshape(4, 8)),
                     _zeros(be, (4, 8))), error=OutOfBoundsError,
    thread=(7, 0, 0), block_idx=(0, 0, 0), check="bounds", silent_when_off=True,
    message=r"'a\[row, col \+ 1\]' indexes axis 1 of global array a \(shape \(4, 8\)\) at 8, "
            r"outside 0\.\.7")


def shared_too_small(a, out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.grid(1)]  # bug
    cuda.syncthreads()
    out[cuda.grid(1)] = s[t]


bug(name="oob_shared_overflow", kernel=shared_too_small, grid=2, block=64,
    args=lambda be: (_arange(be, 128), _zeros(be, 128)), error=OutOfBoundsError,
    thread=(32, 0, 0), block_idx=(0, 0, 0), check="bounds",
    message=r"indexes shared array s \(shape \(32,\)\) at 32, outside 0\.\.31")


def local_too_small(a, out):
    i = cuda.grid(1)
    w = cuda.local.array(4, float32)
    for k in range(5):
        w[k] = a[i] * k  # bug
    out[i] = w[0]


bug(name="oob_local_overflow", kernel=local_too_small, grid=1, block=32,
    args=lambda be: (_arange(be, 32), _zeros(be, 32)), error=OutOfBoundsError,
    thread=(0, 0, 0), block_idx=(0, 0, 0), check="bounds",
    message=r"indexes local array w \(shape \(4,\)\) at 4, outside 0\.\.3")


@cuda.jit(device=True)
def read_next(a, i):
    return a[i + 1]  # bug


def next_value(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = read_next(a, i)


bug(name="oob_in_device_function", kernel=next_value, where=read_next, grid=2, block=64,
    args=lambda be: (_arange(be, 100), _zeros(be, 100)), error=OutOfBoundsError,
    thread=(35, 0, 0), block_idx=(1, 0, 0), check="bounds",
    message=r"'a\[i \+ 1\]' indexes global array a \(shape \(100,\)\) at 100, outside 0\.\.99")


# -- data races -----------------------------------------------------------------------------------
def reverse_without_barrier(a, out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = a[i]  # bug
    out[i] = s[63 - t]  # other


# Threads run one after another between barriers: thread 31 reads s[32] before thread 32 writes it.
bug(name="race_shared_reverse_without_barrier", kernel=reverse_without_barrier, grid=2,
    block=64, args=lambda be: (_arange(be, 128), _zeros(be, 128)), error=RaceConditionError,
    thread=(32, 0, 0), block_idx=(0, 0, 0), other_thread=(31, 0, 0), other_block=(0, 0, 0),
    check="races",  # with the race check off, thread 31's read of unwritten s[32] is reported
    message=r"data race on s\[32\]: thread \(32, 0, 0\) of block \(0, 0, 0\) writes it at line "
            r"\d+ \('s\[t\]'\), and thread \(31, 0, 0\) of block \(0, 0, 0\) reads it at line "
            r"\d+ \('s\[63 - t\]'\).*put cuda.syncthreads\(\) between the two accesses")


def reduce_missing_barrier(a, out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.grid(1)]
    cuda.syncthreads()
    step = 32
    while step > 0:
        if t < step:
            s[t] += s[t + step]  # bug
        step //= 2  # no cuda.syncthreads() before the next round reads what this one wrote
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


bug(name="race_reduction_missing_barrier", kernel=reduce_missing_barrier, grid=2, block=64,
    args=lambda be: (_arange(be, 128), _zeros(be, 2)), error=RaceConditionError,
    thread=(1, 0, 0), block_idx=(0, 0, 0), other_thread=(0, 0, 0), other_block=(0, 0, 0),
    check="races",
    message=r"data race on s\[1\]: thread \(1, 0, 0\) of block \(0, 0, 0\) writes it .* "
            r"thread \(0, 0, 0\) of block \(0, 0, 0\) reads it")


def everyone_writes_out0(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[0] = a[i]  # bug


bug(name="race_global_write_write", kernel=everyone_writes_out0, grid=2, block=32,
    args=lambda be: (_arange(be, 64), _zeros(be, 1)), error=RaceConditionError,
    thread=(1, 0, 0), block_idx=(0, 0, 0), other_thread=(0, 0, 0), other_block=(0, 0, 0),
    check="races", silent_when_off=True,
    message=r"data race on out\[0\]: thread \(1, 0, 0\) of block \(0, 0, 0\) writes it .* "
            r"thread \(0, 0, 0\) of block \(0, 0, 0\) writes it")


def read_neighbour_block(a, out, shifted):
    i = cuda.grid(1)
    out[i] = a[i] * 2  # other
    cuda.syncthreads()  # orders the threads of one block only
    if cuda.blockIdx.x > 0:
        shifted[i] = out[i - cuda.blockDim.x]  # bug


bug(name="race_cross_block_read", kernel=read_neighbour_block, grid=2, block=32,
    args=lambda be: (_arange(be, 64, start=1), _zeros(be, 64), _zeros(be, 64)),
    error=RaceConditionError, thread=(0, 0, 0), block_idx=(1, 0, 0), other_thread=(0, 0, 0),
    other_block=(0, 0, 0), check="races", silent_when_off=True,
    message=r"data race on out\[0\]: thread \(0, 0, 0\) of block \(1, 0, 0\) reads it .* "
            r"thread \(0, 0, 0\) of block \(0, 0, 0\) writes it .*threads of different blocks "
            r"cannot wait for each other")


def count_then_read(a, counter, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        cuda.atomic.add(counter, 0, 1)  # bug
        out[i] = counter[0]  # other


bug(name="race_plain_read_of_atomic", kernel=count_then_read, grid=1, block=64,
    args=lambda be: (_arange(be, 64), _zeros(be, 1, np.int32), _zeros(be, 64, np.int32)),
    error=RaceConditionError, thread=(1, 0, 0), block_idx=(0, 0, 0), other_thread=(0, 0, 0),
    other_block=(0, 0, 0), check="races", silent_when_off=True,
    message=r"data race on counter\[0\]: thread \(1, 0, 0\) of block \(0, 0, 0\) writes it .* "
            r"thread \(0, 0, 0\) of block \(0, 0, 0\) reads it")


def reset_while_counting(hist, data):
    i = cuda.grid(1)
    if i == 0:
        hist[0] = 0  # other
    cuda.atomic.add(hist, data[i], 1)  # bug


bug(name="race_plain_write_and_atomic", kernel=reset_while_counting, grid=1, block=64,
    args=lambda be: (_zeros(be, 4, np.int32), _zeros(be, 64, np.int32)),
    error=RaceConditionError, thread=(1, 0, 0), block_idx=(0, 0, 0), other_thread=(0, 0, 0),
    other_block=(0, 0, 0), check="races", silent_when_off=True,
    message=r"data race on hist\[0\]: thread \(1, 0, 0\) of block \(0, 0, 0\) writes it .* "
            r"thread \(0, 0, 0\) of block \(0, 0, 0\) writes it")


def zero_shared_without_barrier(data, hist):
    s = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    if t < 8:
        s[t] = 0  # other
    cuda.atomic.add(s, data[cuda.grid(1)] % 8, 1)  # bug
    cuda.syncthreads()
    if t < 8:
        cuda.atomic.add(hist, t, s[t])


bug(name="race_shared_zeroing_without_barrier", kernel=zero_shared_without_barrier, grid=1,
    block=32, args=lambda be: (_arange(be, 32, np.int32), _zeros(be, 8, np.int32)),
    error=RaceConditionError, thread=(8, 0, 0), block_idx=(0, 0, 0), other_thread=(0, 0, 0),
    other_block=(0, 0, 0), check="races", silent_when_off=True,
    message=r"data race on s\[0\]: thread \(8, 0, 0\) of block \(0, 0, 0\) writes it .* "
            r"thread \(0, 0, 0\) of block \(0, 0, 0\) writes it")


# -- divergent barriers ---------------------------------------------------------------------------
def barrier_in_branch(a, out):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncthreads()  # bug
    out[t] = a[t]


bug(name="barrier_inside_if", kernel=barrier_in_branch, grid=1, block=32,
    args=lambda be: (_arange(be, 32), _zeros(be, 32)), error=BarrierError,
    thread=(0, 0, 0), block_idx=(0, 0, 0), check="barriers", silent_when_off=True,
    message=r"divergent barrier: 16 of the 32 live threads of block \(0, 0, 0\) reached "
            r"cuda.syncthreads\(\) at line \d+, but thread \(16, 0, 0\) did not")


def barrier_in_uneven_loop(a, out):
    t = cuda.threadIdx.x
    acc = 0.0
    for k in range(1 + t % 2):
        acc += a[t] * k
        cuda.syncthreads()  # bug
    out[t] = acc


bug(name="barrier_in_loop_with_per_thread_trip_count", kernel=barrier_in_uneven_loop, grid=1,
    block=32, args=lambda be: (_arange(be, 32), _zeros(be, 32)), error=BarrierError,
    thread=(1, 0, 0), block_idx=(0, 0, 0), check="barriers", silent_when_off=True,
    message=r"divergent barrier: 16 of the 32 live threads of block \(0, 0, 0\) reached "
            r"cuda.syncthreads\(\) at line \d+, but thread \(0, 0, 0\) did not")


def barrier_in_each_branch(a, out):
    t = cuda.threadIdx.x
    if t % 2 == 0:
        cuda.syncthreads()  # bug
        out[t] = a[t]
    else:
        cuda.syncthreads()
        out[t] = -a[t]


bug(name="barrier_in_each_branch", kernel=barrier_in_each_branch, grid=1, block=32,
    args=lambda be: (_arange(be, 32), _zeros(be, 32)), error=BarrierError,
    thread=(0, 0, 0), block_idx=(0, 0, 0), check="barriers", silent_when_off=True,
    message=r"16 of the 32 live threads .* but thread \(1, 0, 0\) did not")


def shuffle_in_branch(a, out):
    i = cuda.grid(1)
    v = a[i]
    if cuda.laneid < 16:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, 16)  # bug
    out[i] = v


bug(name="warp_shuffle_in_branch", kernel=shuffle_in_branch, grid=1, block=32,
    args=lambda be: (_arange(be, 32), _zeros(be, 32)), error=BarrierError,
    thread=(0, 0, 0), block_idx=(0, 0, 0), check="barriers",
    message=r"cuda.shfl_down_sync at line \d+: lane 0 reads lane 16, which does not take part in "
            r"this call")


# -- uninitialised memory -------------------------------------------------------------------------
def read_half_written_shared(a, out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    if t < 16:
        s[t] = a[t]
    cuda.syncthreads()
    out[t] = s[t]  # bug


bug(name="uninit_shared_partly_written", kernel=read_half_written_shared, grid=1, block=32,
    args=lambda be: (_arange(be, 32), _zeros(be, 32)), error=UninitializedMemoryError,
    thread=(16, 0, 0), block_idx=(0, 0, 0), check="uninitialized", silent_when_off=True,
    message=r"'s\[t\]' reads s\[16\], which was never written, and line \d+ \('out\[t\]'\) "
            r"stores the value: shared memory starts uninitialised in every block")


def carry_unwritten_across_a_barrier(out):
    s = cuda.shared.array(8, float32)
    t = cuda.threadIdx.x
    if t < 4:
        s[t] = t
    cuda.syncthreads()
    v = s[t]  # threads 4..7 read elements no thread wrote
    cuda.syncthreads()
    out[t] = v  # bug


# the value is used after a barrier, by which time thread 7 has made the latest unwritten read:
# the error names the storing thread, and that read only as the latest example
bug(name="uninit_value_kept_across_a_barrier", kernel=carry_unwritten_across_a_barrier, grid=1,
    block=8, args=lambda be: (_zeros(be, 8),), error=UninitializedMemoryError,
    thread=(4, 0, 0), block_idx=(0, 0, 0), check="uninitialized", silent_when_off=True,
    message=r"line \d+ \('out\[t\]'\) stores a value this thread read from memory that was "
            r"never written \(as 's\[t\]' read s\[7\] in thread \(7, 0, 0\), the latest such "
            r"read\): shared memory starts uninitialised in every block")


def read_never_written_shared(out):
    s = cuda.shared.array(8, int32)
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]  # bug


bug(name="uninit_shared_never_written", kernel=read_never_written_shared, grid=3, block=8,
    args=lambda be: (_zeros(be, 8, np.int32),), error=UninitializedMemoryError,
    thread=(0, 0, 0), block_idx=(0, 0, 0), check="uninitialized",
    message=r"reads s\[0\], which was never written")


def accumulate_into(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] += a[i]  # bug


bug(name="uninit_allocated_array", kernel=accumulate_into, grid=2, block=64,
    args=lambda be: (_arange(be, 100), be.allocate(100, np.float32)),
    error=UninitializedMemoryError, thread=(0, 0, 0), block_idx=(0, 0, 0),
    check="uninitialized", silent_when_off=True,
    message=r"'out\[i\]' reads out\[0\], which was never written, and line \d+ \('out\[i\]'\) "
            r"stores the value: device memory from allocate\(\) \(cuda.device_array\) starts "
            r"uninitialised")


def _half_copied(be: Any) -> Any:
    out = be.allocate(100, np.float32)
    out[:50].copy_to_device(np.zeros(50, np.float32))  # a device view: only half is written
    return out


bug(name="uninit_allocated_array_half_copied", kernel=accumulate_into, grid=2, block=64,
    args=lambda be: (_arange(be, 100), _half_copied(be)), error=UninitializedMemoryError,
    thread=(50, 0, 0), block_idx=(0, 0, 0), check="uninitialized", silent_when_off=True,
    message=r"reads out\[50\], which was never written")


def read_unwritten_local(a, out):
    i = cuda.grid(1)
    w = cuda.local.array(4, float32)
    for k in range(3):
        w[k] = a[i] + k
    out[i] = w[0] + w[3]  # bug


bug(name="uninit_local_array", kernel=read_unwritten_local, grid=1, block=32,
    args=lambda be: (_arange(be, 32), _zeros(be, 32)), error=UninitializedMemoryError,
    thread=(0, 0, 0), block_idx=(0, 0, 0), check="uninitialized", silent_when_off=True,
    message=r"reads w\[3\], which was never written, and line \d+ \('out\[i\]'\) stores the "
            r"value: cuda.local.array memory starts uninitialised")


# -- integer division by zero ---------------------------------------------------------------------
def _divisors(be: Any) -> Any:
    b = np.arange(1, 65, dtype=np.int32)
    b[37] = 0
    return be.to_device(b)


def per_element_ratio(a, b, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] // b[i]  # bug


bug(name="integer_division_by_zero", kernel=per_element_ratio, grid=2, block=32,
    args=lambda be: (_arange(be, 64, np.int32), _divisors(be), _zeros(be, 64, np.int32)),
    error=KernelArithmeticError, thread=(5, 0, 0), block_idx=(1, 0, 0),
    check="division_by_zero", silent_when_off=True,
    message=r"integer division by zero in 'a\[i\] // b\[i\]' \(on a GPU numba-cuda makes it 0")


def bucket_of(a, out, buckets):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] % buckets  # bug


bug(name="integer_modulo_by_zero", kernel=bucket_of, grid=2, block=64,
    args=lambda be: (_arange(be, 100, np.int64), _zeros(be, 100, np.int64), 0),
    error=KernelArithmeticError, thread=(0, 0, 0), block_idx=(0, 0, 0),
    check="division_by_zero", silent_when_off=True,
    message=r"integer modulo by zero in 'a\[i\] % buckets'")


# -- the watchdog ---------------------------------------------------------------------------------
def wait_for_flag(flag, out):
    i = cuda.grid(1)
    while flag[0] == 0:  # bug: nobody ever sets the flag
        pass
    out[i] = 1


bug(name="watchdog_spin_wait", kernel=wait_for_flag, grid=1, block=32,
    args=lambda be: (_zeros(be, 1, np.int32), _zeros(be, 32, np.int32)),
    error=KernelTimeoutError, thread=(0, 0, 0), block_idx=(0, 0, 0),
    options={"watchdog_s": 0.5},
    message=r"the watchdog stopped kernel 'wait_for_flag' after 0.5 s in the loop "
            r"'while flag\[0\] == 0:")


def odd_threads_never_finish(a, out):
    i = cuda.grid(1)
    k = i
    while k % 2 == 1:  # bug: k stays odd
        k += 2
    out[i] = k


bug(name="watchdog_some_threads_loop_forever", kernel=odd_threads_never_finish, grid=1,
    block=32, args=lambda be: (_arange(be, 32), _zeros(be, 32, np.int64)),
    error=KernelTimeoutError, thread=(1, 0, 0), block_idx=(0, 0, 0),
    options={"watchdog_s": 0.5}, message=r"the watchdog stopped kernel 'odd_threads_never_finish'")


# -- a Python mistake inside a kernel: numba-cuda rejects it when typing, so does the simulator ----
def typo_in_kernel(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] * scale_factr  # bug  # noqa: F821 - the typo is the point


bug(name="python_error_in_kernel", kernel=typo_in_kernel, grid=2, block=64,
    args=lambda be: (_arange(be, 100), _zeros(be, 100)), error=KernelTypingError,
    thread=None, block_idx=None, message=r"NameError: name 'scale_factr' is not defined")


# -- launch limits (raised before or while a block starts: no thread to name) ---------------------
def fill(out):
    t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
    if t < out.shape[0]:
        out[t] = 1


bug(name="launch_1025_threads_per_block", kernel=fill, grid=1, block=1025,
    args=lambda be: (_zeros(be, 1025),), error=LaunchConfigError, check="launch_limits",
    silent_when_off=True,
    message=r"kernel 'fill': block 1025 has 1025 threads; the simulated T4 \(CC 7.5\) allows at "
            r"most 1024 threads per block")


bug(name="launch_block_z_65", kernel=fill, grid=1, block=(1, 1, 65),
    args=lambda be: (_zeros(be, 4),), error=LaunchConfigError, check="launch_limits",
    silent_when_off=True,
    message=r"kernel 'fill': block dimension z is 65; the simulated T4 \(CC 7.5\) allows at most "
            r"64")


bug(name="launch_grid_y_65536", kernel=fill, grid=(1, 65536), block=1,
    args=lambda be: (_zeros(be, 4),), error=LaunchConfigError, check="launch_limits",
    message=r"kernel 'fill': grid dimension y is 65536; the simulated T4 \(CC 7.5\) allows at "
            r"most 65535")


bug(name="launch_too_much_dynamic_shared", kernel=fill, grid=1, block=32,
    args=lambda be: (_zeros(be, 32),), error=LaunchConfigError, check="launch_limits",
    options={"dynamic_shared_bytes": 65 * 1024}, silent_when_off=True,
    message=r"dynamic_shared_bytes must be an int from 0 to 65536 \(the simulated T4 \(CC 7.5\)'s "
            r"shared memory per block\), got 66560")


def big_static_tile(out):
    tile = cuda.shared.array(12289, float32)  # 49,156 bytes: over the 48 KiB static cap
    tile[cuda.threadIdx.x] = 1
    cuda.syncthreads()
    out[cuda.threadIdx.x] = tile[cuda.threadIdx.x]


bug(name="launch_static_shared_over_48KiB", kernel=big_static_tile, grid=1, block=32,
    args=lambda be: (_zeros(be, 32),), error=LaunchConfigError, check="launch_limits",
    device="A100", silent_when_off=True,
    message=r"kernel 'big_static_tile' declares 49,156 bytes of static shared memory \(line \d+\); "
            r"static shared memory is limited to 49,152 bytes \(48 KiB\) per block on every GPU")


def static_plus_dynamic(out):
    tile = cuda.shared.array(10240, float32)  # 40 KiB static
    extra = cuda.shared.array(0, float32)
    tile[cuda.threadIdx.x] = 1
    extra[cuda.threadIdx.x] = 2
    cuda.syncthreads()
    out[cuda.threadIdx.x] = tile[cuda.threadIdx.x] + extra[cuda.threadIdx.x]


bug(name="launch_static_plus_dynamic_shared", kernel=static_plus_dynamic, grid=1, block=32,
    args=lambda be: (_zeros(be, 32),), error=LaunchConfigError, check="launch_limits",
    options={"dynamic_shared_bytes": 30 * 1024},
    message=r"kernel 'static_plus_dynamic' needs 40,960 bytes of static plus 30,720 bytes of "
            r"dynamic shared memory per block, over the T4's limit of 65,536 bytes")
