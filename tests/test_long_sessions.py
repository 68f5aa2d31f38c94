"""Long sessions stay flat: bounded launch and copy logs, compiled kernels reused by content (in
the process and, through a cache directory, between processes)."""

from __future__ import annotations

import contextlib
import gc
import linecache
import os
import queue
import subprocess
import sys
import textwrap
import threading
import types

import numpy as np
import pytest
from script_run import run_script

from gpukit.backends.cpu import KERNEL_CACHE_LIMIT, CPUBackend
from gpukit.errors import ArgumentTypeError, InvalidArgumentError
from gpukit.sim import cache
from gpukit.sim.log import RecordLog

KERNEL = """
from numba import cuda

SCALE = {scale}

def scale(out, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] * SCALE
"""


def cell(source: str, count: list[int]) -> dict:
    """Run `source` as a notebook cell does (its text findable by inspect, a new function each
    time it runs); returns the cell's namespace."""
    count[0] += 1
    filename = f"<notebook cell {count[0]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace


# -- the logs -------------------------------------------------------------------------------------
def test_a_record_log_keeps_the_latest_records_and_counts_them_all():
    log = RecordLog(limit=3)
    for k in range(5):
        log.append(k)
    assert list(log) == [2, 3, 4] and log == [2, 3, 4] and len(log) == 3
    assert (log.total, log.dropped, log.limit) == (5, 2, 3)
    assert log[-1] == 4 and log[0] == 2 and log[1:] == [3, 4]
    mark = log.total
    log.append(5)
    assert log.since(mark) == [5] and log.since(0) == [3, 4, 5]
    log.limit = 2
    assert log == [4, 5] and log.total == 6
    log.clear()
    assert log == [] and log.total == 6 and "limit 2" in repr(log)


def test_a_record_log_refuses_a_limit_that_is_not_a_positive_int():
    with pytest.raises(InvalidArgumentError) as excinfo:
        RecordLog(limit=0)
    assert str(excinfo.value) == ("a log's limit must be an int >= 1 (the records it keeps), "
                                  "got 0")
    with pytest.raises(ArgumentTypeError) as excinfo:
        RecordLog().limit = 2.5
    assert str(excinfo.value) == ("a log's limit must be an int >= 1 (the records it keeps), "
                                  "not float 2.5")


def test_launch_and_copy_logs_are_bounded_and_still_count_everything():
    backend = CPUBackend()
    ns = cell(KERNEL.format(scale=2.0), [0])
    backend.launches.limit = 4
    backend.transfers.limit = 3
    a = backend.to_device(np.arange(64, dtype=np.float32))
    out = backend.allocate(64, np.float32)
    records = [backend.launch_kernel(ns["scale"], 2, 32, out, a) for _ in range(10)]
    assert backend.launches == records[-4:] and backend.launches.total == 10
    assert backend.status().kernels_launched == 10
    for _ in range(5):
        backend.to_host(out)
    assert len(backend.transfers) == 3 and backend.transfers.total == 6
    np.testing.assert_array_equal(backend.to_host(out), np.arange(64) * 2.0)


# -- compiled code reused by content ------------------------------------------------------------
def test_running_a_cell_again_reuses_the_compiled_kernel():
    backend, count = CPUBackend(), [0]
    first = backend.compile_kernel(cell(KERNEL.format(scale=2.0), count)["scale"])
    again = backend.compile_kernel(cell(KERNEL.format(scale=2.0), count)["scale"])
    changed = backend.compile_kernel(cell(KERNEL.format(scale=3.0), count)["scale"])
    assert first is not again and first.sim.key == again.sim.key != changed.sim.key
    assert first.sim.driver is again.sim.driver is not changed.sim.driver
    a = backend.to_device(np.arange(40, dtype=np.float32))
    out = backend.allocate(40, np.float32)
    for kernel, factor in ((first, 2.0), (again, 2.0), (changed, 3.0)):
        kernel[2, 32](out, a)  # a global is frozen when its kernel compiles, as in Numba
        np.testing.assert_array_equal(backend.to_host(out), np.arange(40) * factor)


UNDEFINED_ON_A_PATH = """
from numba import cuda

def bump(out, n):
    if n > 0:
        c = 1
    out[0] = c
"""


def test_a_cell_run_again_gives_numba_cudas_typing_warnings_again(monkeypatch, tmp_path):
    # numba-cuda types each new function, warning each time; the simulator reuses the first
    # typing, so it gives its warnings again (and none about its own generated code)
    from numba.cuda.core import config
    from numba.cuda.core.errors import NumbaWarning  # numba-cuda's own class
    monkeypatch.setattr(config, "ALWAYS_WARN_UNINIT_VAR", 1)
    monkeypatch.setenv("GPUKIT_CACHE_DIR", str(tmp_path))  # typed in no earlier process
    backend, count = CPUBackend(), [0]
    out = backend.allocate(1, np.int64)
    for _ in range(2):
        kernel = backend.compile_kernel(cell(UNDEFINED_ON_A_PATH, count)["bump"])
        with pytest.warns(NumbaWarning) as caught:
            kernel[1, 1](out, 1)
        texts = [str(w.message) for w in caught if issubclass(w.category, NumbaWarning)]
        assert texts and all(t.startswith("Detected uninitialized variable c") for t in texts)
        assert all("<notebook cell" in t and "<gpukit" not in t for t in texts)
    assert backend.to_host(out)[0] == 1


def test_a_cell_run_again_under_other_numba_cuda_settings_is_typed_again(monkeypatch, tmp_path):
    # numba-cuda warns of the undefined path only with ALWAYS_WARN_UNINIT_VAR on: a cell run
    # again after the setting changed gives the warning its typing now gives, and back again
    import warnings

    from numba.cuda.core import config
    from numba.cuda.core.errors import NumbaWarning
    monkeypatch.setenv("GPUKIT_CACHE_DIR", str(tmp_path))
    backend, count = CPUBackend(), [0]
    out = backend.allocate(1, np.int64)
    for setting in (0, 1, 0):
        monkeypatch.setattr(config, "ALWAYS_WARN_UNINIT_VAR", setting)
        kernel = backend.compile_kernel(cell(UNDEFINED_ON_A_PATH, count)["bump"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel[1, 1](out, 1)
        texts = [str(w.message) for w in caught if issubclass(w.category, NumbaWarning)
                 and "uninitialized variable c" in str(w.message)]
        assert len(texts) == setting, (setting, texts)


ROW_SOFTMAX = """
import math
from numba import cuda, float32

def softmax(a, out):
    cache = cuda.shared.array(32, float32)
    row, t = cuda.blockIdx.x, cuda.threadIdx.x
    m = -math.inf  # a float64 here, a float32 below: the kernel cannot run region by region
    for c in range(t, a.shape[1], 32):
        m = max(m, a[row, c])
    cache[t] = m
    cuda.syncthreads()
    step = 16
    while step > 0:
        if t < step:
            cache[t] = max(cache[t], cache[t + step])
        cuda.syncthreads()
        step //= 2
    m = cache[0]
    cuda.syncthreads()
    for c in range(t, a.shape[1], 32):
        out[row, c] = math.exp(a[row, c] - m)
"""


def test_a_cell_run_again_keeps_what_its_typing_decided(tmp_path, monkeypatch):
    # the second run reuses the first one's typing: it must still see that `m` changes type
    # across a barrier (it read a float32's bits as a float64's: wrong rows)
    monkeypatch.setenv("GPUKIT_CACHE_DIR", str(tmp_path))
    backend, count = CPUBackend(), [0]
    a = (np.random.default_rng(1).uniform(-3, 3, (3, 50)) +
         np.array([[0.0], [95.0], [-95.0]])).astype(np.float32)
    expected = np.exp(a - a.max(axis=1, keepdims=True))
    for _ in range(2):
        kernel = backend.compile_kernel(cell(ROW_SOFTMAX, count)["softmax"])
        out = backend.allocate(a.shape, np.float32)
        kernel[3, 32](backend.to_device(a), out)
        np.testing.assert_allclose(backend.to_host(out), expected, rtol=1e-6)


def test_globals_that_cannot_be_fingerprinted_leave_a_kernel_uncached():
    unit = types.SimpleNamespace(source="def f(): pass", namespace={"g": object()})
    assert cache.content_key([unit], "driver", {}) is None
    same = types.SimpleNamespace(source="def f(): pass", namespace={"g": np.arange(3)})
    key = cache.content_key([same], "driver", {})
    assert key == cache.content_key([same], "driver", {}) and len(key) == 32
    other = types.SimpleNamespace(source="def f(): pass", namespace={"g": np.arange(4)})
    assert cache.content_key([other], "driver", {}) != key


def test_a_backend_keeps_a_bounded_number_of_compiled_kernels():
    backend, count = CPUBackend(), [0]
    kernels = [backend.compile_kernel(cell(KERNEL.format(scale=1.0), count)["scale"])
               for _ in range(KERNEL_CACHE_LIMIT + 5)]
    assert len(backend._kernels) == KERNEL_CACHE_LIMIT
    assert backend.compile_kernel(kernels[-1].py_func) is kernels[-1]


def test_thousands_of_compiles_and_launches_keep_memory_flat(monkeypatch):
    """A notebook cell compiled and launched again and again (an exercise loop, a re-run)."""
    monkeypatch.setattr("gpukit.backends.cpu.KERNEL_CACHE_LIMIT", 16)  # reached sooner
    backend, count = CPUBackend(), [0]
    backend.launches.limit = backend.transfers.limit = 500
    backend.modeled_timeline.events.limit = 500
    a = backend.to_device(np.arange(64, dtype=np.float32))
    out = backend.allocate(64, np.float32)

    def session(compiles: int, launches_each: int) -> None:
        for _ in range(compiles):
            ns = cell(KERNEL.format(scale=2.0), count)
            kernel = backend.compile_kernel(ns["scale"])
            for _ in range(launches_each):
                kernel[2, 32](out, a)
            linecache.cache.pop(f"<notebook cell {count[0]}>")  # the notebook's, not gpukit's

    session(250, 10)  # warm: every log and cache reaches its bound
    gc.collect()
    before = sys.getallocatedblocks()  # Python objects alive (cheap, unlike tracemalloc)
    session(750, 10)  # 750 more compiles, 7,500 more launches
    gc.collect()
    growth = sys.getallocatedblocks() - before
    assert backend.launches.total == 10_000 and len(backend.launches) == 500
    assert len(backend._kernels) == 16
    # a leak of one object per launch would leave 7,500 blocks, of two per compile 1,500
    assert growth < 1_000, f"{growth:,} more memory blocks after 750 compiles, 7,500 launches"
    np.testing.assert_array_equal(backend.to_host(out), np.arange(64) * 2.0)


# -- between processes --------------------------------------------------------------------------
SCRIPT = textwrap.dedent("""
    import json, sys, numpy as np
    from numba import cuda
    import gpukit.sim.launch as launch
    from gpukit.backends.cpu import CPUBackend

    typed = []
    real = launch.cuda_typecheck
    launch.cuda_typecheck = lambda *args: (typed.append(1), real(*args))

    def add_one(out, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + 1

    backend = CPUBackend()
    out = backend.allocate(50, np.int64)
    backend.launch_kernel(add_one, 2, 32, out, backend.to_device(np.arange(50)))
    driver = backend.compile_kernel(add_one).sim.driver
    print(json.dumps({"result": backend.to_host(out).tolist(), "typed": len(typed),
                      "hits": sum(driver.stats.cache_hits.values()),
                      "misses": sum(driver.stats.cache_misses.values())}))
""")


def _run(tmp_path, cache_dir: str) -> dict:
    return run_script(tmp_path, SCRIPT, GPUKIT_CACHE_DIR=cache_dir)


def test_a_second_process_loads_the_compiled_kernel_from_the_cache_directory(tmp_path):
    where = tmp_path / "cache"
    first = _run(tmp_path, str(where))
    second = _run(tmp_path, str(where))
    expected = list(range(1, 51))
    assert first == {"result": expected, "typed": 1, "hits": 0, "misses": 1}
    assert second == {"result": expected, "typed": 0, "hits": 1, "misses": 0}
    assert len(list((where / "kernels").glob("k*.py"))) == 1


def test_the_cache_directory_can_be_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUKIT_CACHE_DIR", "off")
    assert cache.cache_dir() is None
    result = _run(tmp_path, "off")
    assert result["hits"] == 0 and result["typed"] == 1
    monkeypatch.setenv("GPUKIT_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert cache.cache_dir() == tmp_path / "elsewhere" / "kernels"


def test_the_cache_directory_keeps_the_most_recently_used_kernels(tmp_path, monkeypatch):
    folder = tmp_path / "kernels"
    (folder / "__pycache__").mkdir(parents=True)
    for age, key in enumerate(["new", "mid", "old", "busy"]):
        for name in (f"k{key}.py", f"k{key}.typed", f"k{key}.lock",
                     f"__pycache__/k{key}._g_drive-1.py311.nbi"):
            (folder / name).write_text("")
        os.utime(folder / f"k{key}.typed", (1e9 - age, 1e9 - age))  # "new" used last
    monkeypatch.setattr(cache, "IN_USE", {"busy"})  # this process's kernels are never deleted
    assert cache.prune(folder, keep=2) == 1
    assert sorted(p.name for p in folder.glob("k*.py")) == ["kbusy.py", "kmid.py", "knew.py"]
    assert sorted(p.name for p in folder.glob("k*.lock")) == ["kbusy.lock", "kmid.lock",
                                                              "knew.lock"]
    assert sorted(p.name for p in (folder / "__pycache__").iterdir()) == [
        "kbusy._g_drive-1.py311.nbi", "kmid._g_drive-1.py311.nbi", "knew._g_drive-1.py311.nbi"]


@pytest.mark.skipif(cache.fcntl is None, reason="no file locks on this platform (Windows): "
                    "compiles of one kernel are not serialised there")
def test_compiles_of_one_kernel_take_turns_on_its_lock_file(tmp_path, monkeypatch):
    # Numba's index of a function's signatures is read, extended and written back unlocked:
    # two processes saving two signatures of one kernel at once could both number theirs 1
    monkeypatch.setenv("GPUKIT_CACHE_DIR", str(tmp_path))
    entered = []
    real = cache.saving

    @contextlib.contextmanager
    def saving(key):
        with real(key):
            entered.append(key)
            yield

    monkeypatch.setattr(cache, "saving", saving)
    backend = CPUBackend()
    kernel = backend.compile_kernel(cell(KERNEL.format(scale=7.5), [0])["scale"])
    out, a = backend.allocate(4, np.float64), backend.to_device(np.ones(4))
    kernel[1, 4](out, a)
    key = kernel.sim.key
    assert entered == [key] and backend.to_host(out).tolist() == [7.5] * 4
    assert (tmp_path / "kernels" / f"k{key}.lock").exists()

    other = subprocess.Popen(  # another process compiling the same kernel
        [sys.executable, "-c", OTHER_PROCESS, key], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "GPUKIT_CACHE_DIR": str(tmp_path)})
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.strip()) for line in other.stdout],
                     daemon=True).start()
    with real(key):
        assert lines.get(timeout=120) == "ready"
        with pytest.raises(queue.Empty):  # it waits while this process holds the lock
            lines.get(timeout=1.0)
    assert lines.get(timeout=60) == "got it"
    assert other.wait(60) == 0


OTHER_PROCESS = """
import sys
from gpukit.sim import cache
import numba.core.compiler_lock
print("ready", flush=True)
with cache.saving(sys.argv[1]):
    print("got it", flush=True)
"""


def test_the_texts_kept_for_exec_built_kernels_stay_within_their_bound():
    from gpukit.sim import exec_sources

    filler = "# " + "x" * 4_000 + "\n"
    for k in range(2 * exec_sources.KEEP_BYTES // len(filler)):  # twice the bound, all distinct
        exec(f"def f{k}():\n    return {k}\n" + filler, {})  # noqa: S102
    assert exec_sources.KEEP_BYTES - len(filler) - 40 < exec_sources.kept_bytes() \
        <= exec_sources.KEEP_BYTES
    namespace: dict = {}
    exec("def newest(x):\n    return x + 1\n", namespace)  # noqa: S102 - the newest is kept
    lines, first = exec_sources.function_lines(namespace["newest"])
    assert (lines, first) == (["def newest(x):\n", "    return x + 1\n"], 1)


def test_a_launch_keeps_few_objects_for_the_garbage_collector():
    # each launch's record stays in the launch log: every object in it that the collector
    # tracks brings its next full collection (hundreds of ms in a process that imported
    # numba-cuda) nearer. Two are left: the record and its statistics. The timeline keeps
    # plain tuples (untracked at their first collection), the statistics share their per-site
    # tuple with launches that counted the same, the records of one launch configuration share
    # the partial that works out its occupancy. (It was seven before; a closure made it 13)
    backend = CPUBackend()
    out, a = backend.allocate(32, np.float64), backend.to_device(np.ones(32))
    kernel = backend.compile_kernel(cell(KERNEL.format(scale=2.0), [0])["scale"])
    for _ in range(50):
        kernel[1, 32](out, a)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(500):
        kernel[1, 32](out, a)
    gc.collect()
    assert (len(gc.get_objects()) - before) / 500 <= 2.1
