"""gpukit.simulate.launchconfig: numba-cuda's launch configuration during compilation. A launch
that compiles calls `_compile_for_args` with its configuration current where the program takes
part in compiling (a wrapper, a rewrite of its own), and a compilation marked launch-config
sensitive compiles again for each new configuration, as numba-cuda does."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
from numba import cuda
from numba.cuda import launchconfig
from numba.cuda.core.rewrites import Rewrite, rewrite_registry

import gpukit


@pytest.fixture(autouse=True)
def _no_simulation_left():
    yield
    gpukit.simulate.stop()


def _store_one():
    @cuda.jit
    def store_one(x):
        x[cuda.grid(1)] = 1
    return store_one


def test_capture_compile_config_sees_the_launch_that_compiles_and_only_it():
    with gpukit.simulate("T4"):
        kernel = _store_one()
        x = np.zeros(64, np.int32)
        with launchconfig.capture_compile_config(kernel) as capture:
            kernel[2, 32](x)
        config = capture["config"]
        assert config.dispatcher is kernel
        assert (config.griddim, config.blockdim, config.sharedmem) == ((2, 1, 1), (32, 1, 1), 0)
        assert "_compile_for_args" not in vars(kernel)  # put back as numba-cuda does
        with launchconfig.capture_compile_config(kernel) as capture:
            kernel[1, 64](x)  # the same types: compiled before, so nothing is seen
        assert capture["config"] is None
        assert (x == 1).all()
        assert launchconfig.current_launch_config() is None  # outside a compilation


def test_a_wrapper_sees_its_own_launchs_arguments_on_each_thread():
    with gpukit.simulate("T4"):
        kernel = _store_one()
        configured = kernel[1, 1]
        original = kernel._compile_for_args
        barrier = threading.Barrier(2)
        seen, errors = [], []

        def wrapped(*args):
            config = launchconfig.ensure_current_launch_config()
            barrier.wait(timeout=10)  # both threads compile at once
            seen.append(id(config.args[0]))
            return original(*args)

        kernel._compile_for_args = wrapped
        arrays = [np.zeros(1, np.int32), np.zeros(1, np.int32)]

        def run(a):
            try:
                configured(a)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(a,)) for a in arrays]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert errors == []
        assert set(seen) == {id(a) for a in arrays}
        assert configured.args is None  # only while a launch runs
        assert [a[0] for a in arrays] == [1, 1]


def test_numba_cudas_typing_runs_from_several_threads_at_once():
    """numba-cuda's typing context and pass registry are not safe from two threads at once
    (numba-cuda compiles under its global lock): without the lock this fails with 'generator
    already executing' or 'dictionary changed size during iteration' in most runs."""
    from numba.cuda import types

    from gpukit.sim.compiler import cuda_typecheck

    def store(x):
        x[0] = 1

    errors = []

    def run():
        try:
            for _ in range(40):
                cuda_typecheck(store, (types.int32[:],))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: the races show in most runs
    try:
        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        sys.setswitchinterval(interval)
    assert errors == []


def test_forall_launches_compile_with_the_configuration_forall_chose():
    with gpukit.simulate("T4"):
        @cuda.jit
        def fill(x):
            i = cuda.grid(1)
            if i < x.size:
                x[i] = 7

        x = np.zeros(1000, np.int32)
        with launchconfig.capture_compile_config(fill) as capture:
            fill.forall(x.size, tpb=128)(x)
        assert (capture["config"].griddim, capture["config"].blockdim) == ((8, 1, 1),
                                                                          (128, 1, 1))
        assert (x == 7).all()


def test_a_programs_rewrite_marks_the_kernel_sensitive_and_each_new_config_compiles_again():
    log = []

    class NoteBlockSize(Rewrite):  # reads the launch's configuration, as cuda.coop's do
        def __init__(self, state):
            super().__init__(state)
            self.done = False

        def match(self, func_ir, block, typemap, calltypes):
            self.block = block
            return func_ir.func_id.func_name == "sized_by_launch" and not self.done

        def apply(self):
            config = launchconfig.ensure_current_launch_config()
            log.append(config.blockdim)
            config.dispatcher.mark_launch_config_sensitive()
            self.done = True
            return self.block

    rewrite_registry.register("after-inference")(NoteBlockSize)
    try:
        with gpukit.simulate("T4"):
            @cuda.jit
            def sized_by_launch(x):
                x[cuda.grid(1)] = cuda.blockDim.x

            x = np.zeros(64, np.int32)
            sized_by_launch[2, 32](x)
            sized_by_launch[2, 32](x)  # the same configuration: compiled already
            assert log == [(32, 1, 1)]
            assert (x == 32).all()
            sized_by_launch[1, 64](x)  # a new one: numba-cuda compiles a specialization
            assert log == [(32, 1, 1), (64, 1, 1)]
            assert (x == 64).all()
            sized_by_launch[2, 32](x)
            assert len(log) == 2
    finally:
        rewrite_registry.rewrites["after-inference"].remove(NoteBlockSize)


def test_without_a_programs_part_in_compiling_no_launch_calls_compile_for_args(monkeypatch):
    from numba.cuda.dispatcher import CUDADispatcher
    with gpukit.simulate("T4"):
        calls = []
        real = CUDADispatcher._compile_for_args
        monkeypatch.setattr(CUDADispatcher, "_compile_for_args",
                            lambda self, *a: calls.append(a) or real(self, *a))
        kernel = _store_one()
        kernel[1, 8](np.zeros(8, np.int32))
        assert calls == []
