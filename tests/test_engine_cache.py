"""The simulator's own compiled functions are kept on disk between processes, in a folder of
the gpukit cache named by the engine's version, and nowhere that outlives a process when the
cache is off."""

from __future__ import annotations

import math
import os
import shutil
import textwrap

import numba
import numpy as np
import pytest
from numba import cuda
from script_run import run_script

from gpukit.sim import cache, engine_cache

# A fresh process launches a kernel of its own (a constant no other test uses, so that its
# driver is compiled, not loaded) and says which of the engine's functions Numba compiled.
SCRIPT = textwrap.dedent("""
    import hashlib
    import json
    import re

    import numpy as np
    from numba import cuda
    from numba.core import event
    from gpukit.backends.cpu import CPUBackend
    from gpukit.sim import engine_cache

    compiled = []

    class Listener(event.Listener):
        def on_start(self, ev):
            func = ev.data["dispatcher"].py_func
            compiled.append(f"{func.__module__}.{func.__qualname__}")

        def on_end(self, ev):
            pass

    event.register("numba:compile", Listener())

    @cuda.jit
    def add_k(a, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + 7919

    backend = CPUBackend()
    out = backend.allocate(40, np.int64)
    backend.launch_kernel(add_k, 2, 32, backend.to_device(np.arange(40)), out)
    # the driver's machine code, less the unique ids in symbol names and Numba's environment
    driver = backend.compile_kernel(add_k).sim.driver
    asm = driver.inspect_asm(driver.signatures[0])
    asm = re.sub(r"B[0-9]+v[0-9]+B|_gpukit_kernel_[0-9a-f]+", "", asm)
    asm = "\\n".join(line for line in asm.splitlines() if "missing Environment" not in line)
    print(json.dumps({"result": backend.to_host(out).tolist(), "folder": str(engine_cache.folder()),
                      "compiled": compiled, "code": hashlib.sha256(asm.encode()).hexdigest()}))
""")


def _run(tmp_path, setting: str) -> dict:
    return run_script(tmp_path, SCRIPT, GPUKIT_CACHE_DIR=setting,
                      XDG_CACHE_HOME=str(tmp_path / "xdg"))


def test_a_second_process_loads_the_engine_functions_the_first_compiled(tmp_path):
    where = tmp_path / "cache"
    first = _run(tmp_path, str(where))
    # the engine's functions are not cached beside their sources, where only a file's own
    # time would tell that they are stale, nor beside the kernels
    assert not list((where / "kernels").glob("**/access.*"))
    shutil.rmtree(where / "kernels")  # so that the second process compiles the driver again
    second = _run(tmp_path, str(where))
    expected = [i + 7919 for i in range(40)]
    assert first["result"] == second["result"] == expected
    assert "gpukit.sim.access.touch" in first["compiled"]
    assert "gpukit.sim.sync.begin_thread" in first["compiled"]
    assert not [name for name in second["compiled"] if name.startswith("gpukit.sim.")
                and "<locals>" not in name], second["compiled"]
    digest = first["folder"].rsplit("/", 1)[-1]
    assert first["folder"] == second["folder"] == str(where / "engine" / digest)
    # loaded from disk, the helpers are still inlined into the driver: the same machine code
    assert first["code"] == second["code"]
    saved = os.listdir(first["folder"])
    assert any(name.startswith("access.touch-") and name.endswith(".nbi") for name in saved)


def test_with_the_cache_off_the_engine_functions_outlive_no_process(tmp_path):
    result = _run(tmp_path, "off")
    assert result["result"] == [i + 7919 for i in range(40)]
    assert "gpukit.sim.access.touch" in result["compiled"]
    assert not os.path.exists(result["folder"])  # the process's own folder, gone at its exit
    assert not (tmp_path / "xdg").exists()


def test_each_engine_version_has_a_folder_and_only_the_latest_three_are_kept(
        tmp_path, monkeypatch):
    monkeypatch.setenv("GPUKIT_CACHE_DIR", str(tmp_path))
    folders = []
    for version in ("v1", "v2", "v3", "v4"):
        monkeypatch.setattr(cache, "engine_version", lambda version=version: version)
        folders.append(engine_cache.folder())
        os.utime(folders[-1], (len(folders), len(folders)))  # older first, whatever the clock
    assert len(set(folders)) == 4
    assert all(f.parent == tmp_path / "engine" for f in folders)
    assert not folders[0].exists()
    assert all(f.is_dir() for f in folders[1:])
    assert engine_cache.folder() == folders[3]  # the same version: the same folder


def test_the_locator_claims_only_the_engine_functions(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUKIT_CACHE_DIR", str(tmp_path))

    def users_function(x):
        return x + 1

    from gpukit.sim.access import touch
    assert engine_cache.EngineLocator.from_function(users_function, __file__) is None
    locator = engine_cache.EngineLocator.from_function(touch, "access.py")
    assert locator is not None
    assert locator.get_cache_path() == str(engine_cache.folder())
    assert locator.get_source_stamp() == cache.engine_version()


@pytest.mark.skipif(not engine_cache.CACHING, reason="NUMBA_CACHE_LOCATOR_CLASSES is set: "
                    "the engine's functions are not cached")
def test_numbas_cache_consults_the_engine_locator_first():
    from numba.core.caching import CacheImpl
    assert CacheImpl._locator_classes[0] is engine_cache.EngineLocator
    assert numba.config.CACHE_LOCATOR_CLASSES == ""


def test_each_signature_of_an_implementation_has_an_index_of_its_own(tmp_path, monkeypatch):
    # Numba numbers one index's data files as they are saved: two processes saving two
    # signatures of one function at once could each write entry 1 for their own
    monkeypatch.setenv("GPUKIT_CACHE_DIR", str(tmp_path))

    def impl(x):
        return x

    engine_cache.enroll(impl)
    tags = []
    for arg_types in (((numba.int64,), {}), ((numba.float32,), {}), ((numba.int64,), {})):
        engine_cache.expect(impl, arg_types)
        tags.append(engine_cache.EngineLocator.from_function(impl, __file__).get_disambiguator())
    line = str(impl.__code__.co_firstlineno)
    assert all(tag.startswith(line + "-") for tag in tags)
    assert tags[0] != tags[1] and tags[0] == tags[2]


def test_each_closure_of_an_implementation_has_an_index_of_its_own(tmp_path, monkeypatch):
    # one code, different captured values: Numba's keys differ, so the indexes must too
    monkeypatch.setenv("GPUKIT_CACHE_DIR", str(tmp_path))

    def make(field):
        def get(c):
            return c[field]
        return get

    tags = []
    for fn in (make(3), make(4), make(3)):
        engine_cache.enroll(fn)
        engine_cache.expect(fn, ((numba.int64[:],), {}))
        tags.append(engine_cache.EngineLocator.from_function(fn, __file__).get_disambiguator())
    assert tags[0] != tags[1] and tags[0] == tags[2]


def test_a_function_built_with_exec_needs_a_tag_naming_its_source():
    namespace: dict = {}
    exec("def impl(obj):\n    return obj.shape[0]", namespace)  # noqa: S102
    with pytest.raises(ValueError, match=r"^impl was built with exec \(<string>\): enroll it "
                       r"with a tag naming its source before it is cached$"):
        engine_cache.enroll(namespace["impl"])
    engine_cache.enroll(namespace["impl"], "shape-0")
    # the same text run with other globals is another function: its own tag is its own
    other: dict = {"DT": numba.float64}
    exec("def impl(obj):\n    return obj.shape[0]", other)  # noqa: S102
    engine_cache.enroll(other["impl"], "shape-0-float64")
    tags = [engine_cache.EngineLocator.from_function(fn, "<string>").get_disambiguator()
            for fn in (namespace["impl"], other["impl"])]
    assert tags[0].startswith("shape-0-") and tags[1].startswith("shape-0-float64-")


def test_functions_whose_bytecode_is_the_same_are_told_apart():
    # the same bytecode, other names (Numba's own key has the bytecode only), on one line
    ceil, floor = lambda a: np.ceil(a), lambda a: np.floor(a)
    assert ceil.__code__.co_code == floor.__code__.co_code
    tags = []
    for fn in (ceil, floor):
        engine_cache.enroll(fn)
        tags.append(engine_cache.EngineLocator.from_function(fn, __file__).get_disambiguator())
    line = str(ceil.__code__.co_firstlineno)
    assert tags[0].startswith(line + "-") and tags[1].startswith(line + "-")
    assert tags[0] != tags[1]


# Two processes compile the same program but for one coordinate, Numba's counter of compiled
# functions starting at the same number, so that each gives its coordinate getter (a closure of
# one factory, `intrinsics._coord`) the same unique id; a third loads both from the engine folder
# they fill and launches a kernel that reads both.
COORDINATES = textwrap.dedent("""
    import itertools, json, os
    import numpy as np
    from numba import cuda
    from numba.core.bytecode import FunctionIdentity
    from gpukit.backends.cpu import CPUBackend

    FunctionIdentity._unique_ids = itertools.count(10 ** 6)

    def block_x(out):
        out[0] = cuda.blockDim.x

    def grid_x(out):
        out[0] = cuda.gridDim.x

    def both(out):
        out[0] = cuda.blockDim.x
        out[1] = cuda.gridDim.x

    backend = CPUBackend()
    out = backend.to_device(np.zeros(2, np.int64))
    backend.launch_kernel({"block": block_x, "grid": grid_x, "both": both}[os.environ["WHICH"]],
                          3, 5, out)
    print(json.dumps(backend.to_host(out).tolist()))
""")


def test_closures_of_one_factory_compiled_by_two_processes_keep_apart_in_a_third(tmp_path):
    # Numba names a compiled function by module, qualified name, argument types and a per-process
    # counter: without names of their own, blockDim.x's getter and gridDim.x's could share one
    # symbol, and the kernel reading both read one twice
    roots = {which: tmp_path / which for which in ("block", "grid")}
    for which, root in roots.items():
        (tmp_path / which).mkdir()
        run_script(tmp_path / which, COORDINATES, GPUKIT_CACHE_DIR=str(root), WHICH=which)
    merged = tmp_path / "merged"
    for root in roots.values():
        shutil.copytree(root / "engine", merged / "engine", dirs_exist_ok=True)
    assert run_script(tmp_path, COORDINATES, GPUKIT_CACHE_DIR=str(merged), WHICH="both") == [5, 3]


def _atomics_math_and_views(a, hist, out):
    i = cuda.grid(1)
    if i < a.size:
        cuda.atomic.add(hist, a[i] % 4, 1)
        cuda.atomic.max(hist, 4, a[i])
        out[i // 4, i % 4] = math.sqrt(float(a[i])) + math.floor(0.5 * a[i])


def test_every_function_of_the_engine_has_a_name_no_other_shares():
    from gpukit.backends.cpu import CPUBackend
    from gpukit.sim import intrinsics

    getters = [getattr(intrinsics, f"{what}_{axis}") for what in ("tid", "bid", "bdim", "gdim")
               for axis in "xyz"]
    assert len({f.__qualname__ for f in getters}) == 12
    assert all(f.__qualname__.startswith("_coord.<locals>.get__") for f in getters)
    backend = CPUBackend()
    hist, out = backend.to_device(np.zeros(5, np.int64)), backend.to_device(np.zeros((4, 4)))
    backend.launch_kernel(_atomics_math_and_views, 1, 16, backend.to_device(np.arange(16)), hist,
                          out)
    assert backend.to_host(hist).tolist() == [4, 4, 4, 4, 15]
    by_name: dict = {}
    for fn in engine_cache.named():  # whatever this process compiled, this test's and others'
        by_name.setdefault((fn.__module__, fn.__qualname__), set()).add(engine_cache.identity(fn))
    assert len(by_name) > 50
    assert [name for name, contents in by_name.items() if len(contents) > 1] == []
