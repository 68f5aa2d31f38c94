"""Exercises 22 and 26, answered by a host function instead of one kernel.

scan_multiblock (a scan over many blocks: per-block scans, a scan of the block sums, an add-back)
and stream_overlap (chunks copied and computed on several streams so that copies overlap kernels)
are checked by `gpukit.exercises.host`: the learner's function gets a fresh simulator per case and
order, every launch it makes is traced and budgeted, and each exercise adds its own rules (no copy
to the host in the scan; pinned copies on several streams overlapping a kernel on the modeled
timeline). Sizes as in the other exercises: blocks of 32 to 256 threads, partial blocks, one and
several blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .budgets import AccessCounter
from .host import HostExerciseSpec, RecordingBackend
from .spec import Budget, Case, case_1d, ceil_div
from .spec import n_of as _n
from .spec import small_ints as _vals
from .spec import tpb_of as _tpb

F32 = np.float32
COMMON_TAGS = {
    "tag:TPB=32": "the block is a single warp (TPB=32)",
}


# -- 22. scan_multiblock (a host function) ---------------------------------------------------------
def _scan_case(n: int, tpb: int) -> Case:
    case = case_1d(n, tpb, params={"TPB": tpb})
    extra = {"more_blocks_than_threads" if ceil_div(n, tpb) > tpb else "blocks_fit_a_block"}
    return Case(case.size, case.grid, case.block, case.params, case.tags | extra)


def _scan_cases() -> list[Case]:
    return [_scan_case(n, tpb) for n, tpb in ((5, 32), (256, 256), (700, 64), (1024, 128),
                                              (2000, 32), (5000, 32))]


def _scan_drawn(rng: np.random.Generator) -> list[Case]:
    tpb = int(rng.choice((32, 64, 128)))
    return [_scan_case(int(rng.integers(tpb + 1, min(40 * tpb, 4000))), tpb)]


def _scan_harness(func: Any, backend: RecordingBackend, inputs: dict[str, Any],
                  case: Case) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    a = backend.to_device(inputs["a"])
    out = backend.allocate(_n(case), F32)
    backend.reset_timeline()
    func(backend, a, out, inputs["n"], _tpb(case))
    copies = [e for e in backend.timeline() if e.kind in ("h2d", "d2h")]
    backend.copies_made = len(copies)
    got = backend.to_host(out)
    mask = out.allocation.init_mask()
    return {"out": (got, None if mask is None else mask.reshape(got.shape))}


def _scan_rules(backend: RecordingBackend, case: Case) -> tuple[str, str] | None:
    if backend.copies_made:
        return ("host_copy", (f"your function copied data between host and device "
                f"({backend.copies_made} copies): the whole scan must stay on the device"))
    return None


SCAN_MULTIBLOCK = HostExerciseSpec(
    name="scan_multiblock", title="Multi-block prefix sum",
    goal="out[i] = a[0] + a[1] + ... + a[i] over the whole array, by a host function "
    "scan(backend, a, out, n, TPB) that launches kernels of TPB threads: (1) each block scans "
    "its TPB elements in shared memory and writes its total to block_sums; (2) block_sums is "
    "scanned (by calling scan itself, so any number of blocks works); (3) every element of block "
    "b > 0 gets the scanned total of blocks 0..b-1 added. a and out are device arrays; nothing "
    "is copied to the host.",
    params=("a", "out", "n", "TPB"),
    inputs=lambda rng, c: {"a": _vals(rng, _n(c)), "n": _n(c)},
    reference=lambda x, c: {"out": np.cumsum(x["a"], dtype=np.float64).astype(F32)},
    outputs={"out": "uninitialized"},
    drawn=_scan_drawn,
    cases=_scan_cases,
    budget=Budget(global_reads_per_thread=2, global_writes_per_thread=2,
                  min_shared_bytes=lambda c: _tpb(c) * 4),
    harness=_scan_harness, rules=_scan_rules,
    hints={**COMMON_TAGS,
           "tag:more_blocks_than_threads": "there are more blocks than a block has threads "
           "(the block sums do not fit in one block)",
           "tag:blocks_fit_a_block": "the block sums fit in one block",
           "pattern:more_blocks_than_threads": "Scan the block sums with the same function, "
           "scan_multiblock(backend, sums, scanned, blocks, TPB): it recurses until one block "
           "is enough.",
           "pattern:several_blocks": "After the per-block scans, block b must add the total of "
           "all blocks before it (the inclusive scan of the block sums at b - 1), not only the "
           "block just before.",
           "no_launch": "Launch the kernels through the backend: "
           "backend.compile_kernel(block_scan)[blocks, TPB](a, out, block_sums, n).",
           "host_copy": "Keep everything on the device: allocate the block sums with "
           "backend.allocate(blocks, np.float32) and launch kernels on them.",
           "budget": "Each thread of each launch may read at most 2 and write at most 2 global "
           "elements: scan in a cuda.shared.array(TPB, numba.float32), not by re-reading a.",
           "RaceConditionError": "In each Hillis-Steele step read the neighbour's value into a "
           "register, cuda.syncthreads(), then add and write, then cuda.syncthreads() again.",
           "host_error": "Your function itself raised: read the message, and launch kernels "
           "through the `backend` argument (backend.compile_kernel(k)[blocks, TPB](...))."},
)


# -- 26. stream_overlap (a host function) ----------------------------------------------------------
def _stream_cases() -> list[Case]:
    out = []
    for n, tpb, chunks in ((20, 32, 2), (256, 256, 2), (1000, 64, 4), (1000, 128, 3),
                           (4096, 256, 4), (999, 32, 5)):
        out.append(case_1d(n, tpb, params={"TPB": tpb, "CHUNKS": chunks}))
    return out


def _stream_drawn(rng: np.random.Generator) -> list[Case]:
    tpb = int(rng.choice((32, 64, 128, 256)))
    n = int(rng.integers(tpb + 1, 8 * tpb))
    return [case_1d(n, tpb, params={"TPB": tpb, "CHUNKS": int(rng.integers(2, 7))})]


def _stream_harness(func: Any, backend: RecordingBackend, inputs: dict[str, Any],
                    case: Case) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    n = _n(case)
    h_in = backend.pinned_array(n, F32)
    h_in[:] = inputs["h_in"]
    h_out = backend.pinned_array(n, F32)
    h_out[:] = np.nan  # elements nobody copied back stay nan
    backend.reset_timeline()
    func(backend, h_in, h_out, n, _tpb(case), case.params["CHUNKS"])
    backend.synchronize()
    got = np.array(h_out)
    return {"h_out": (got, ~np.isnan(got))}


def _overlaps(a: Any, b: Any) -> bool:
    return a.start_ms < b.end_ms and b.start_ms < a.end_ms


def _stream_rules(backend: RecordingBackend, case: Case) -> tuple[str, str] | None:
    n, chunks = _n(case), case.params["CHUNKS"]
    events = backend.timeline()
    copies = [e for e in events if e.kind in ("h2d", "d2h")]
    kernels = [e for e in events if e.kind == "kernel"]
    for e in copies:
        if e.stream == 0 or not e.pinned:
            why = "on the default stream" if e.stream == 0 else "from or to pageable memory"
            return ("sync_copy", (f"a {e.kind} copy of {e.nbytes} bytes was made {why}, so it "
                    "is synchronous and nothing can overlap it: copy between the pinned h_in / "
                    "h_out (slices of them) and the device with stream=your_stream"))
    streams = {e.stream for e in kernels}
    if len(streams) < 2:
        return ("one_stream", (f"all {len(kernels)} kernel launches ran on one stream "
                f"({'the default stream' if streams == {0} else 'stream ' + str(min(streams))}): "
                "work on one stream runs one operation at a time"))
    if len(kernels) < chunks:
        return ("chunks", (f"{len(kernels)} kernel launches for CHUNKS={chunks}: launch one "
                "kernel per chunk"))
    moved = {d: sum(e.nbytes for e in copies if e.kind == d) for d in ("h2d", "d2h")}
    for direction, nbytes in moved.items():
        if nbytes < n * 4:
            return ("chunks", (f"the {direction} copies moved {nbytes} bytes, less than the "
                    f"{n * 4} bytes of the data"))
    written = sum(_elements_written(r) for r in backend.checked)
    if written < n:
        return ("host_compute", (f"the kernels wrote {written} elements, fewer than n={n}: "
                "compute on the device, not on the host"))
    if not any(_overlaps(c, k) for c in copies for k in kernels if c.stream != k.stream):
        return ("no_overlap", ("no copy overlaps a kernel on the modeled timeline: something "
                "makes the host wait between chunks (a synchronize inside the loop?)"))
    return None


def _elements_written(record: Any) -> int:
    """Distinct global elements a launch wrote, from its trace."""
    counter = AccessCounter(Case({}, tuple(record.grid), tuple(record.block)), record.trace)
    return int(counter.writes.sum())


STREAM_OVERLAP = HostExerciseSpec(
    name="stream_overlap", title="Overlapping copies and kernels with streams",
    goal="h_out[i] = 3 * h_in[i] + 1, by a host function pipeline(backend, h_in, h_out, n, TPB, "
    "CHUNKS) that splits the n elements into CHUNKS chunks (the last may be shorter) and, for "
    "each chunk on its own stream (backend.stream()), copies it to the device, launches a kernel "
    "of TPB-thread blocks on it and copies the result back, all asynchronously, so that the "
    "copies of one chunk overlap the kernel of another on the modeled timeline. h_in and h_out "
    "are pinned host arrays.",
    params=("h_in", "h_out", "n", "TPB", "CHUNKS"),
    inputs=lambda rng, c: {"h_in": _vals(rng, _n(c)), "n": _n(c)},
    reference=lambda x, c: {"h_out": (F32(3) * x["h_in"] + F32(1)).astype(F32)},
    outputs={"h_out": "uninitialized"},
    drawn=_stream_drawn,
    cases=_stream_cases,
    budget=Budget(global_reads_per_thread=1, global_writes_per_thread=1),
    harness=_stream_harness, rules=_stream_rules,
    hints={**COMMON_TAGS,
           "sync_copy": "Copy slices of the pinned arrays with a stream: "
           "backend.copy_to_device(h_in[part], d_in[part], stream=s) and "
           "backend.to_host(d_out[part], out=h_out[part], stream=s).",
           "one_stream": "Make one stream per chunk (streams = [backend.stream() for _ in "
           "range(CHUNKS)]) and put each chunk's copy in, kernel and copy out on its stream: "
           "kernel[blocks, TPB, s](...).",
           "no_overlap": "Issue all the chunks first and synchronize once at the end "
           "(backend.synchronize()): a stream.synchronize() inside the loop makes the host wait.",
           "chunks": "Split into CHUNKS pieces of ceil(n / CHUNKS) elements; the last piece "
           "ends at n.",
           "unwritten": "Some elements were never copied back: the last chunk must end at n "
           "(chunk = ceil(n / CHUNKS); stop = min(start + chunk, n)).",
           "budget": "One thread per element: each thread reads one element and writes one.",
           "host_compute": "The kernel must compute h_out's values (y[i] = 3 * x[i] + 1 for "
           "its chunk); the host only copies.",
           "no_launch": "Launch one kernel per chunk: kernel[blocks, TPB, s](d_in[part], "
           "d_out[part]).",
           "StreamRaceError": "Keep each chunk's copy in, kernel and copy back on the chunk's "
           "own stream: work on one stream runs in order, work on two streams may run at the "
           "same time unless an event orders it.",
           "host_error": "Your function itself raised: read the message, and use the `backend` "
           "argument for streams, arrays and kernels."},
)


HOST_EXERCISES = (SCAN_MULTIBLOCK, STREAM_OVERLAP)
