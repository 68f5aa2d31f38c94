"""The checks `gpukit selftest` runs on one backend, each returning results to compare.

Every check runs through the backend contract only, so it runs unchanged on the simulator, on
a GPU and under Numba's CUDA simulator: the kernel corpus, the ops against their numpy
references, copies (round trips, views, Fortran order, pinned memory on a stream), timing
(events, time_kernel, a bandwidth sweep) and memory accounting (allocations counted and given
back, use after free refused). A check returns named numpy results, which the caller compares
with numpy and with the other backend's; a failed expectation raises `CheckFailed`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import ops
from ..errors import ImplicitTransferWarning, InvalidDeviceArrayError
from ..ops import references
from ..timing import KINDS, bandwidth_sweep, time_kernel
from . import corpus


class CheckFailed(AssertionError):
    """A self-test check found something other than what it expected."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def close(name: str, got: np.ndarray, expected: np.ndarray, rtol: float) -> None:
    """Raise CheckFailed unless `got` matches `expected` (exactly when rtol is 0)."""
    expect(got.shape == expected.shape and got.dtype == expected.dtype,
           f"{name}: got {got.shape} {got.dtype}, expected {expected.shape} {expected.dtype}")
    if rtol == 0:
        bad = int(np.count_nonzero(got != expected))
        expect(bad == 0, f"{name}: {bad} of {got.size} values differ from numpy's")
    elif not np.allclose(got, expected, rtol=rtol, atol=rtol):
        worst = float(np.max(np.abs(got.astype(np.float64) - expected)))
        raise CheckFailed(f"{name}: differs from numpy's by up to {worst:.3g} (rtol {rtol})")


Results = dict[str, np.ndarray]


def run_case(backend: Any, case: corpus.Case) -> Results:
    """Copy the case's arrays in, run its launches, copy its outputs back and check them."""
    device = {name: backend.to_device(array) for name, array in case.arrays.items()}
    for launch in case.launches:
        backend.launch_kernel(launch.kernel, launch.grid, launch.block,
                              *(device[name] for name in launch.args),
                              dynamic_shared_bytes=launch.dynamic_shared_bytes)
    results = {name: backend.to_host(device[name]) for name in case.expected}
    for name, expected in case.expected.items():
        expected = expected.astype(case.arrays[name].dtype)
        close(f"{case.name}: {name}", results[name], expected, case.rtol)
    for array in device.values():
        backend.free(array)
    return results


def op_checks(backend: Any, shuffles: bool) -> list[tuple[str, Callable[[], Results]]]:
    """(name, check) for each op: it runs on device arrays and must match its numpy reference."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((13, 9)).astype(np.float32), \
        rng.standard_normal((9, 7)).astype(np.float32)
    q, k, v = (rng.standard_normal((1, 2, 5, 4)).astype(np.float32) for _ in range(3))
    x, w = rng.standard_normal((1, 2, 5, 6)), rng.standard_normal((3, 2, 3, 2))
    u = rng.standard_normal((3, 40)).astype(np.float32)

    def check(name: str, compute: Callable[[], Any], expected: np.ndarray,
              rtol: float) -> Callable[[], Results]:
        def run() -> Results:
            got = backend.to_host(compute())
            close(name, got, expected.astype(got.dtype), rtol)
            return {name: got}
        return run

    def dev(*arrays: np.ndarray) -> list[Any]:
        return [backend.to_device(array) for array in arrays]

    found = [
        (f"gemm {variant}", check(f"gemm {variant}", lambda v=variant: ops.gemm(
            *dev(a, b), variant=v, backend=backend), references.gemm(a, b), 1e-5))
        for variant in ("naive", "tiled")]
    found += [
        ("attention", check("attention", lambda: ops.attention(
            *dev(q, k, v), causal=True, backend=backend),
            references.attention(q, k, v, causal=True), 1e-5)),
        ("conv2d", check("conv2d", lambda: ops.conv2d_forward(
            *dev(x, w), stride=(2, 1), padding=1, backend=backend),
            references.conv2d_forward(x, w, (2, 1), 1), 1e-10)),
        ("unary", check("unary", lambda: ops.unary("sigmoid", *dev(u), backend=backend),
                        references.unary("sigmoid", u), 1e-6)),
        ("binary", check("binary", lambda: ops.binary("max", *dev(u, u), backend=backend),
                         references.binary("max", u, u), 0))]
    if shuffles:
        found.append(("reduce", check("reduce", lambda: ops.reduce(
            "sum", *dev(u), 1, backend=backend), references.reduce("sum", u, 1), 1e-5)))
    return found


def check_transfers(backend: Any) -> Results:
    host = np.arange(24, dtype=np.float64).reshape(4, 6)
    device = backend.to_device(host)
    close("round trip", backend.to_host(device), host, 0)
    middle = device[1:3]
    backend.copy_to_device(np.full((2, 6), -1.0), middle)
    expected = host.copy()
    expected[1:3] = -1
    whole = backend.to_host(device)
    close("copy through a view", whole, expected, 0)
    close("strided view", backend.to_host(device[:, ::2]), expected[:, ::2], 0)
    fortran = backend.to_device(np.asfortranarray(host))
    expect(fortran.layout == "F", f"a Fortran array came back as layout {fortran.layout!r}")
    close("Fortran order", backend.to_host(fortran), host, 0)
    out = np.zeros(host.shape, ">f8")
    backend.to_host(device, out=out)
    close("into a big-endian out", out.astype(np.float64), expected, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImplicitTransferWarning)
        start = len(backend.transfers)
        backend.free(backend.to_device(np.zeros(16, np.float32)))
    log = backend.transfers[start:]
    expect([(t.direction, t.nbytes) for t in log] == [("h2d", 64)],
           f"the transfer log shows {log}")
    return {"round trip": whole}


def check_streams(backend: Any) -> Results:
    stream = backend.stream()
    pinned = backend.pinned_array(64, np.float32)
    expect(not pinned.any(), "pinned_array is not zeroed")
    pinned[...] = np.arange(64)
    device = backend.to_device(pinned, stream=stream)
    backend.launch_kernel(corpus.scale_shift, 1, 64, device, device, stream=stream)
    out = backend.pinned_array(64, np.float32)
    backend.to_host(device, out=out, stream=stream)
    stream.synchronize()
    close("pinned copies and a kernel on a stream", out,
          (np.arange(64) * 2.5 + 1).astype(np.float32), 1e-6)
    return {"stream": np.array(out)}


def check_timing(backend: Any) -> Results:
    device = backend.to_device(np.ones(256, np.float32))
    begin = backend.record_event()
    backend.launch_kernel(corpus.scale_shift, 4, 64, device, device)
    end = backend.record_event()
    ms = begin.elapsed_ms(end)
    expect(math.isfinite(ms) and ms >= 0, f"events measured {ms} ms")
    timing = time_kernel(corpus.scale_shift, 4, 64, device, device, backend=backend, repeat=2,
                         warmup=0)
    expect(timing.kind in KINDS and len(timing.samples) == 2 and
           all(math.isfinite(s) and s >= 0 for s in timing.samples),
           f"time_kernel gave {timing}")
    rows = bandwidth_sweep(backend, [4096], "h2d", pinned=(False, True), repeat=1)
    expect(bool(rows) and all(r.gb_per_s > 0 for r in rows), f"bandwidth_sweep gave {rows}")
    return {}


def check_memory(backend: Any) -> Results:
    before = backend.status().memory_in_use_bytes
    info = backend.memory_info()
    expect(0 <= info.free_bytes <= info.total_bytes, f"memory_info says {info}")
    device = backend.allocate((256, 256), np.float32)
    used = backend.status().memory_in_use_bytes - before
    expect(used >= 256 * 256 * 4, f"an allocation of 262,144 bytes counted as {used}")
    backend.free(device)
    expect(backend.status().memory_in_use_bytes == before, "free did not give the memory back")
    try:
        backend.to_host(device)
    except InvalidDeviceArrayError:
        pass
    else:
        raise CheckFailed("an array used after free was not refused")
    return {}
