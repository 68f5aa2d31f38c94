"""gpukit.simulate.compiled: numba-cuda's compiled kernels in the simulation mode. `overloads`
lists what was launched or declared; numba-cuda compiles an entry (NVVM, for the simulated
device) only when it is looked at; PTX, LLVM IR and the driver's function attributes (from
ptxas) need no GPU."""

from __future__ import annotations

import pickle
from collections import OrderedDict

import numpy as np
import pytest
from numba import cuda, float32, float64, int32

import gpukit
from gpukit.occupancy import best_block_size, occupancy
from gpukit.occupancy import resources as gi
from gpukit.simulate import compiled

pytestmark = pytest.mark.skipif(gi.unavailable_reason() is not None,
                                reason=f"{gi.unavailable_reason()}")

F64 = float64[::1]


@pytest.fixture(autouse=True)
def _no_simulation_left():
    yield
    gpukit.simulate.stop()


@pytest.fixture
def compiles(monkeypatch):
    """The argument types numba-cuda compiled, in order."""
    seen = []
    real = compiled._compile

    def counting(dispatcher, argtypes):
        seen.append(argtypes)
        return real(dispatcher, argtypes)

    monkeypatch.setattr(compiled, "_compile", counting)
    return seen


def _atomic_sum():
    @cuda.jit
    def atomic_sum(total, x):
        i = cuda.grid(1)
        if i < x.size:
            cuda.atomic.add(total, 0, x[i])
    return atomic_sum


def test_a_launch_lists_its_types_in_overloads_and_compiles_only_when_looked_at(compiles):
    with gpukit.simulate("T4"):
        kernel = _atomic_sum()
        total = np.zeros(1)
        kernel[1, 32](total, np.ones(32))
        kernel[1, 32](total, np.ones(8))  # the same types: one entry
        assert total[0] == 40.0
        assert list(kernel.overloads) == [(F64, F64)] and (F64, F64) in kernel.overloads
        assert kernel.signatures == [(F64, F64)] and compiles == []
        ptx = kernel.inspect_asm()  # numba-cuda compiles now, for sm_75
        assert list(ptx) == [(F64, F64)] and compiles == [(F64, F64)]
        assert ".target sm_75" in ptx[(F64, F64)]
        assert "atom.global.add.f64" in ptx[(F64, F64)]
        kernel.inspect_asm((F64, F64))
        assert compiles == [(F64, F64)]  # compiled once
        llvm = kernel.inspect_llvm((F64, F64))
        assert "atomic_sum" in llvm and "define" in llvm


def test_eager_signatures_are_the_overloads_in_declared_order(compiles):
    with gpukit.simulate():
        @cuda.jit(["void(float32[:], float32)", "void(float64[:], float64)"])
        def fill(a, v):
            a[cuda.grid(1)] = v

        a = np.zeros(4, np.float32)
        fill[1, 4](a, 2.5)  # converted to the first signature; nothing new is listed
        assert a.tolist() == [2.5] * 4
        assert list(fill.overloads) == [(float32[:], float32), (float64[:], float64)]
        assert compiles == []
        assert set(fill.inspect_asm()) == {(float32[:], float32), (float64[:], float64)}


def test_resources_are_ptxas_numbers_for_the_simulated_device():
    @cuda.jit
    def staged(out, x):
        tile = cuda.shared.array(128, float32)
        i = cuda.threadIdx.x
        tile[i] = x[i]
        cuda.syncthreads()
        out[i] = tile[127 - i]

    sig = (float32[::1], float32[::1])
    expected = gi.resources(staged, sig, "A100")  # ptxas on numba-cuda's PTX, no simulation
    with gpukit.simulate("A100"):
        x = np.arange(128, dtype=np.float32)
        out = np.zeros_like(x)
        staged[1, 128](out, x)
        np.testing.assert_array_equal(out, x[::-1])
        assert staged.get_regs_per_thread() == {sig: expected.regs_per_thread}
        assert staged.get_shared_mem_per_block() == {sig: 512} and \
            expected.shared_mem_bytes == 512
        assert staged.get_local_mem_per_thread() == {sig: expected.local_mem_bytes}
        assert staged.get_const_mem_size() == {sig: expected.const_mem_bytes}
        regs = expected.regs_per_thread
        assert staged.get_max_threads_per_block() == {sig: max(
            t for t in range(32, 1025, 32) if occupancy("A100", t, regs).valid)}
        kernel = staged.overloads[sig]  # numba-cuda's own compiled kernel
        assert type(kernel).__name__ == "_Kernel" and kernel.regs_per_thread == regs


def test_compile_gives_numba_cudas_kernel_for_the_simulated_device():
    with gpukit.simulate("H100"):
        @cuda.jit
        def scale(a, k):
            a[cuda.grid(1)] *= k

        kernel = scale.compile((F64, int32))
        assert (F64, int32) in scale.overloads and scale.overloads[(F64, int32)] is kernel
        assert ".target sm_90" in scale.inspect_asm((F64, int32))


def test_stopping_keeps_what_numba_cuda_compiled_and_drops_the_rest():
    kernel = _atomic_sum()
    with gpukit.simulate():
        kernel[1, 32](np.zeros(1), np.ones(32))
        kernel[1, 32](np.zeros(1, np.float32), np.ones(32, np.float32))
        assert len(kernel.overloads) == 2
        kernel.inspect_asm((F64, F64))
    assert type(kernel.overloads) is OrderedDict and list(kernel.overloads) == [(F64, F64)]


def test_a_device_function_has_no_function_to_load():
    @cuda.jit(device=True)
    def twice(x):
        return 2 * x

    with gpukit.simulate():
        library = twice.compile_device((float64,)).library
        with pytest.raises(RuntimeError, match="Missing entry_name - are you trying to get the "
                                               "cufunc for a device function"):
            library.get_cufunc()


def test_specialize_makes_a_lazy_dispatcher_for_the_arguments_types_as_numba_cuda_does(compiles):
    with gpukit.simulate():
        kernel = _atomic_sum()
        total, x = np.zeros(1), np.ones(16)
        special = kernel.specialize(total, x)
        assert special is not kernel and special.specialized and not kernel.specialized
        assert kernel.specialize(total, x) is special and len(kernel.specializations) == 1
        special[1, 16](total, x)
        assert total[0] == 16.0 and list(special.overloads) == [(F64, F64)]
        assert isinstance(special.get_regs_per_thread(), int)  # one overload: an int
        assert compiles == [(F64, F64)]
        with pytest.raises(RuntimeError, match="^Dispatcher already specialized$"):
            special.specialize(total, x)


def test_one_eager_signature_makes_a_specialized_dispatcher_a_list_does_not():
    with gpukit.simulate():
        one = cuda.jit("void(float64[:])")(_first_to_one)
        listed = cuda.jit(["void(float64[:])"])(_first_to_one)
        assert one.specialized and not listed.specialized
        assert isinstance(one.get_local_mem_per_thread(), int)
        assert list(listed.get_local_mem_per_thread()) == [(float64[:],)]


def _first_to_one(a):
    a[0] = 1.0


def test_launch_bounds_limit_the_block_and_reach_the_ptx():
    with gpukit.simulate():
        @cuda.jit(launch_bounds=(128, 2))
        def bounded(a):
            a[cuda.grid(1)] = 1.0

        a = np.zeros(256)
        bounded[2, 128](a)
        with pytest.raises(gpukit.errors.LaunchConfigError, match="more than the 128 its launch "
                                                                  "bounds allow") as caught:
            bounded[1, 256](a)
        # on a GPU numba-cuda raises cuda.core's CUDAError for it, and programs catch that
        from cuda.core._utils.cuda_utils import CUDAError
        assert isinstance(caught.value, CUDAError) and "CUDA_ERROR_INVALID_VALUE" in str(
            caught.value)
        ptx = bounded.inspect_asm((F64,))
        assert ".maxntid 128, 1, 1" in ptx and ".minnctapersm 2" in ptx


def test_a_real_gpu_is_not_asked_about_resources_during_a_simulation(monkeypatch):
    monkeypatch.setattr(gi, "_detected_gpu_cc", lambda: (8, 0))  # as if an A100 were here
    assert gi._real_gpu_cc() == (8, 0)
    with gpukit.simulate("A100"):  # numba.cuda now answers for the simulated A100
        assert gi._real_gpu_cc() is None


def test_occupancy_questions_are_answered_for_the_simulated_device():
    with gpukit.simulate("T4"):
        @cuda.jit("void(float64[:])")
        def fill(a):
            a[cuda.grid(1)] = 1.0

        kernel = fill.overloads[(float64[:],)]
        regs = kernel.regs_per_thread
        per_sm = occupancy("T4", 256, regs).active_blocks_per_sm
        assert kernel.max_cooperative_grid_blocks(256) == per_sm * 40  # a T4 has 40 SMs
        assert kernel.max_cooperative_grid_blocks((16, 4, 4)) == per_sm * 40
        context = cuda.current_context()
        assert context.get_max_potential_block_size(
            kernel._codelibrary.get_cufunc(), 0, 0, 1024) == best_block_size("T4", regs)


def test_a_kernel_that_calls_linked_code_is_inspected_before_linking():
    with gpukit.simulate():
        @cuda.jit("void(int32[:])")
        def grid_wide(a):
            a[cuda.grid(1)] = 1
            cuda.cg.this_grid().sync()  # calls cudadevrt, linked after ptxas

        kernel = grid_wide.overloads[(int32[:],)]
        assert kernel.regs_per_thread > 0 and kernel.max_cooperative_grid_blocks(128) > 0
        assert kernel.cooperative  # numba-cuda marks it so, and launches it cooperatively
        a = np.zeros(64, np.int32)
        grid_wide[2, 32](a)  # and the simulator runs it
        assert (a == 1).all()


def test_pre_launch_callbacks_see_the_compiled_kernel_and_the_configured_launch(compiles):
    with gpukit.simulate("T4"):
        kernel = _atomic_sum()
        configured = kernel[(2,), 32]
        assert (configured.griddim, configured.blockdim) == ((2, 1, 1), (32, 1, 1))  # numba's
        seen = []
        configured.pre_launch_callbacks.append(
            lambda compiled_kernel, config: seen.append((compiled_kernel, config)))
        total = np.zeros(1)
        configured(total, np.ones(64))
        configured(total, np.ones(64))
        assert total[0] == 128.0
        argtypes = (float64[::1], float64[::1])
        assert [config for _, config in seen] == [configured, configured]
        assert seen[0][0] is seen[1][0] is kernel.overloads[argtypes]  # numba-cuda's _Kernel
        assert compiles == [argtypes]  # compiled once, for the callbacks
        with pytest.raises(pickle.PicklingError, match=(
                "Cannot pickle configured launches with pre-launch callbacks")):
            pickle.dumps(configured)
        again = pickle.loads(pickle.dumps(kernel[3, 8]))  # without callbacks: as numba-cuda
        assert (again.griddim, again.blockdim) == ((3, 1, 1), (8, 1, 1))


def test_a_compilation_marked_launch_config_sensitive_gives_numba_cudas_kernel_the_mark():
    from numba.cuda import launchconfig
    with gpukit.simulate("T4"):
        kernel = _atomic_sum()
        original = kernel._compile_for_args

        def marking(*args):
            launchconfig.ensure_current_launch_config().dispatcher \
                .mark_launch_config_sensitive()
            return original(*args)

        kernel._compile_for_args = marking
        kernel[1, 32](np.zeros(1), np.ones(32))
        assert kernel.overloads[(F64, F64)].launch_config_sensitive is True
        plain = _atomic_sum()
        plain[1, 32](np.zeros(1), np.ones(32))
        assert plain.overloads[(F64, F64)].launch_config_sensitive is False
