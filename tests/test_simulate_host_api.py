"""numba.cuda's host API under gpukit's simulation mode: devices, memory, device arrays with
numba-cuda's methods, launches (eager signatures, forall, In/Out, host arrays), streams and
events, numba.cuda.random. Kernel results are checked against numpy."""

from __future__ import annotations

import gc
import re
import warnings

import numpy as np
import pytest
from numba import cuda
from numba.cuda.cudadrv.devicearray import DeviceNDArray
from numba.cuda.random import (
    create_xoroshiro128p_states,
    init_xoroshiro128p_states_cpu,
    xoroshiro128p_dtype,
    xoroshiro128p_normal_float32,
    xoroshiro128p_uniform_float32,
)

import gpukit
from gpukit.errors import OutOfMemoryError, ReinterpretedArrayWarning, UninitializedMemoryError

pytestmark = pytest.mark.filterwarnings("ignore:Grid size")


@pytest.fixture
def sim():
    with gpukit.simulate("T4") as simulation:
        yield simulation


@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def test_devices_and_their_attributes_come_from_the_profile(sim, capsys):
    assert cuda.is_available() and len(cuda.gpus) == 1 and len(cuda.list_devices()) == 1
    dev = cuda.get_current_device()
    assert dev is cuda.gpus[0] is cuda.select_device(0) is cuda.current_context().device
    assert (dev.name, dev.compute_capability, dev.id) == ("T4 (gpukit simulator)", (7, 5), 0)
    assert (dev.MULTIPROCESSOR_COUNT, dev.MAX_THREADS_PER_BLOCK, dev.WARP_SIZE) == (40, 1024, 32)
    assert (dev.MAX_SHARED_MEMORY_PER_BLOCK, dev.MAX_BLOCK_DIM_Z, dev.MAX_GRID_DIM_X) == (
        48 * 1024, 64, 2**31 - 1)
    assert (dev.COMPUTE_CAPABILITY_MAJOR, dev.MAX_THREADS_PER_MULTIPROCESSOR) == (7, 1024)
    with pytest.raises(AttributeError, match="does not model the device attribute CLOCK_RATE"):
        _ = dev.CLOCK_RATE
    with pytest.raises(TypeError, match="the simulation has 1 device"):
        cuda.select_device(1)
    assert cuda.detect() is True
    assert "Found 1 CUDA devices" in capsys.readouterr().out


def test_memory_info_counts_allocations_and_frees_as_numba_cuda_defers_them(sim):
    context = cuda.current_context()
    deallocations = context.memory_manager.deallocations
    free, total = context.get_memory_info()
    assert free == total == sim.profile.memory_bytes
    a = cuda.device_array((1000,), np.float32)  # 4000 bytes: 4096 reserved
    assert context.get_memory_info().free == total - 4096
    view = a[10:20]
    del a
    gc.collect()
    assert len(deallocations) == 0  # the view keeps it alive
    del view
    gc.collect()
    # numba-cuda frees collected arrays later (its _PendingDeallocs): still held, one pending
    assert len(deallocations) == 1 and context.get_memory_info().free == total - 4096
    deallocations.clear()
    assert len(deallocations) == 0 and context.get_memory_info().free == total
    arrays = [cuda.device_array(8) for _ in range(11)]
    del arrays
    gc.collect()  # an 11th pending free is more than CUDA_DEALLOCS_COUNT (10): all go
    assert len(deallocations) == 0 and context.get_memory_info().free == total
    big = cuda.device_array(total // 5 + 1, np.uint8)  # more than 20% of the memory pending
    del big
    gc.collect()
    assert len(deallocations) == 0 and context.get_memory_info().free == total
    with cuda.defer_cleanup():
        b = cuda.to_device(np.zeros(256))
        del b
        gc.collect()
        deallocations.clear()  # nothing is freed while cleanup is deferred
        assert len(deallocations) == 1 and context.get_memory_info().free < total
        # an allocation that would not fit does not free what is pending either
        with pytest.raises(OutOfMemoryError, match="out of device memory: requested"):
            cuda.device_array(total - 1024, np.uint8)
    assert len(deallocations) == 1  # the end of defer_cleanup frees nothing
    c = cuda.device_array(total - 1024, np.uint8)  # needs the pending memory: freed first
    assert len(deallocations) == 0 and c.size == total - 1024
    del c
    gc.collect()
    deallocations.clear()
    with pytest.raises(OutOfMemoryError, match="out of device memory: requested"):
        cuda.device_array(total + 1, np.uint8)


def test_device_arrays_have_numba_cuda_methods(sim):
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    d = cuda.to_device(host)
    assert isinstance(d, DeviceNDArray) and cuda.is_cuda_array(d)
    assert (d.shape, d.strides, d.dtype, d.size, d.ndim, d.nbytes) == (
        (4, 6), (24, 4), np.float32, 24, 2, 96)
    assert d.is_c_contiguous() and not d.is_f_contiguous() and d.flags["C_CONTIGUOUS"]
    assert d[1, 2] == 8.0 and isinstance(d[1, 2], np.float32)
    np.testing.assert_array_equal(d[1].copy_to_host(), host[1])
    np.testing.assert_array_equal(d[:, 1].copy_to_host(), host[:, 1])
    np.testing.assert_array_equal(d.reshape(6, 4).copy_to_host(), host.reshape(6, 4))
    np.testing.assert_array_equal(d.ravel().copy_to_host(), host.ravel())
    np.testing.assert_array_equal(np.asarray(d), host)
    np.testing.assert_array_equal(d.T.copy_to_host(), host.T)
    with pytest.raises(NotImplementedError, match=re.escape(  # numba-cuda's refusal
            "D->H copy not implemented for negative strides: (-24, 4)")):
        d[::-1].copy_to_host()
    pieces = d.ravel().split(10)
    assert [p.shape for p in pieces] == [(10,), (10,), (4,)]
    np.testing.assert_array_equal(pieces[2].copy_to_host(), host.ravel()[20:])
    interface = d.__cuda_array_interface__
    assert (interface["shape"], interface["typestr"], interface["version"]) == ((4, 6), "<f4", 3)
    out = np.empty_like(host)
    assert d.copy_to_host(out, stream=0) is out
    d[0] = 7.0
    d[1, 1:3] = np.array([-1, -2], np.float32)
    d[2:] = cuda.to_device(np.ones((2, 6), np.float32))
    expected = host.copy()
    expected[0], expected[1, 1:3], expected[2:] = 7.0, [-1, -2], 1.0
    np.testing.assert_array_equal(d.copy_to_host(), expected)
    with pytest.raises(ValueError, match=re.escape("Can't copy sequence with size 3 to array "
                                                   "axis 0 with dimension 6")):
        d[0] = np.zeros(3)
    like = cuda.device_array_like(np.zeros((3, 2), order="F"))
    assert like.is_f_contiguous() and like.shape == (3, 2)


def test_an_eager_kernel_numba_cuda_rejects_fails_when_decorated_as_there(sim):
    from numba.cuda.core.errors import TypingError

    def concatenates(x):
        x + "a"

    with pytest.raises(TypingError, match="numba-cuda would not compile kernel 'concatenates'"):
        cuda.jit("void(int64)")(concatenates)


def test_a_device_function_launched_as_a_kernel_gets_numba_cudas_error(sim):
    @cuda.jit(device=True)
    def helper():
        pass

    with pytest.raises(RuntimeError, match="^Cannot compile a device function as a kernel$"):
        helper[1, 1]()


def test_strided_host_views_are_refused_and_copied_like_as_numba_cuda_does(sim):
    from numba.cuda.cudadrv.devicearray import errmsg_contiguous_buffer
    with pytest.raises(ValueError) as caught:  # one contiguous region, or nothing
        cuda.to_device(np.arange(10.0)[::2])
    assert str(caught.value) == errmsg_contiguous_buffer
    cuda.to_device(np.broadcast_to(np.arange(3.0), (4, 3)))  # a stride of 0 is no gap
    view = np.zeros((10, 12), order="F")[::2, ::2]
    for like in (cuda.device_array_like, cuda.pinned_array_like, cuda.mapped_array_like):
        assert like(view).strides == np.zeros_like(view).strides == (8, 40), like


def test_launches_convert_arguments_and_copy_host_arrays_as_numba_does(sim):
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, np.float32)
    out = np.zeros(100, np.float32)
    with pytest.warns(Warning, match="Host array used in CUDA kernel will incur copy overhead"):
        axpy[1, 128](2.0, x, y, out)
    np.testing.assert_array_equal(out, 2 * x + 1)
    d_out = cuda.device_array(100, np.float32)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "Host array")  # device and mapped: no copies
        mapped = cuda.mapped_array(100, np.float32)
        mapped[:] = x
        axpy[4, 32, 0, 0](3.0, cuda.to_device(x), mapped, d_out)
    np.testing.assert_array_equal(d_out.copy_to_host(), 3 * x + x)
    inputs = np.full(100, 5, np.float32)
    result = np.zeros(100, np.float32)
    axpy[1, 128](1.0, cuda.In(inputs), cuda.In(inputs), cuda.Out(result))
    np.testing.assert_array_equal(result, 10)
    assert sim.launches[-1].kernel == "axpy"


def test_mapped_and_managed_arrays_describe_themselves_as_numba_cudas_do(sim):
    stream = cuda.stream()
    for make in (cuda.mapped_array, cuda.managed_array):
        interface = make((2, 3), np.int32, stream=stream).__cuda_array_interface__
        assert interface["stream"] == int(stream) and interface["typestr"] == "<i4"
        assert (interface["shape"], interface["strides"], interface["version"]) == \
            ((2, 3), None, 3)
        assert make(4).__cuda_array_interface__["stream"] is None  # the default stream
    mapped = cuda.mapped_array(8, np.float32, stream=stream)
    view = mapped[::2]  # a view: the same memory and stream
    assert view.__cuda_array_interface__["data"][0] == mapped.ctypes.data
    assert view.__cuda_array_interface__["strides"] == (8,)
    assert view.__cuda_array_interface__["stream"] == int(stream)
    assert not hasattr(mapped + 1, "__cuda_array_interface__")  # a new host array
    assert cuda.mapped_array_like(np.zeros(3), stream=stream).__cuda_array_interface__[
        "stream"] == int(stream)
    with pytest.raises(NotImplementedError, match="a mapped .or managed. array is host memory "
                       "that kernels use as it is, so pass the array itself"):
        cuda.as_cuda_array(mapped)


def test_eager_signatures_are_honoured():
    with gpukit.simulate():
        @cuda.jit("void(float32[:], int32, float32[:])")
        def scale(x, factor, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = x[i] * factor

        x = cuda.to_device(np.arange(8, dtype=np.float32))
        out = cuda.device_array(8, np.float32)
        scale[1, 32](x, np.int64(3), out)  # int64 -> int32, as numba-cuda converts it
        np.testing.assert_array_equal(out.copy_to_host(), np.arange(8) * 3)
        # a float for the int32: numba-cuda's argument preparation (ctypes) refuses it, as
        # its own test_coerce_input_types_unsafe (an expected failure) records
        with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
            scale[1, 32](x, 3.9, out)
        with pytest.raises(TypeError, match=re.escape(
                "No matching definition for argument type(s) array(float64, 1d, C), int64, "
                "array(float32, 1d, C)")):
            scale[1, 32](np.zeros(8), 2, out)
        assert scale.targetoptions["device"] is False


def test_a_specialized_kernel_reads_a_same_size_array_as_its_declared_dtype():
    # numba-cuda's dispatcher for one signature checks no argument types: the array's bytes
    # go to the kernel unchanged (its test_atomic_sub3 passes uint32 for int32[:, :])
    with gpukit.simulate():
        @cuda.jit("void(int32[:])")
        def decrement(x):
            x[cuda.grid(1)] -= 1

        values = np.array([5, 0, 7, 1], np.uint32)
        with pytest.warns(ReinterpretedArrayWarning, match=re.escape(
                "a uint32 array is passed for a parameter declared array(int32, 1d, A): "
                "numba-cuda checks no types when launching a kernel compiled for one "
                "signature, so the kernel reads the array's bytes as int32")):
            decrement[1, 4](values)
        np.testing.assert_array_equal(values, np.array([4, 0xFFFFFFFF, 6, 0], np.uint32))
        device = cuda.to_device(np.array([1.0, 2.0], np.float32))
        with pytest.warns(ReinterpretedArrayWarning):
            decrement[1, 2](device)
        np.testing.assert_array_equal(device.copy_to_host().view(np.int32),
                                      np.array([1.0, 2.0], np.float32).view(np.int32) - 1)
        # another size or dimensionality cannot be passed as it is: numba-cuda's TypeError
        for wrong in (np.zeros(4, np.int64), np.zeros((2, 2), np.int32)):
            with pytest.raises(TypeError, match="No matching definition"):
                decrement[1, 4](wrong)

        @cuda.jit(["void(int32[:])"])  # a list of signatures: types are matched
        def listed(x):
            x[cuda.grid(1)] -= 1

        with pytest.raises(TypeError, match=re.escape(
                "No matching definition for argument type(s) array(uint32, 1d, C)")):
            listed[1, 4](values)


def test_jit_accepts_numba_cudas_keywords_and_device_functions():
    with gpukit.simulate():
        @cuda.jit("float32(float32)", device=True, inline="always")
        def square(v):
            return v * v

        @cuda.jit(fastmath=True, lineinfo=True, debug=False, opt=True, cache=True,
                  launch_bounds=(128,), forceinline=False)
        def apply(x):
            i = cuda.grid(1)
            if i < x.size:
                x[i] = square(x[i])

        d = cuda.to_device(np.arange(6, dtype=np.float32))
        apply.forall(6)(d)
        np.testing.assert_array_equal(d.copy_to_host(), np.arange(6) ** 2)
        apply.forall(6, tpb=4)(d)
        np.testing.assert_array_equal(d.copy_to_host(), np.arange(6.0) ** 4)
        with pytest.raises(ValueError, match="Can't create ForAll with negative task count: -1"):
            apply.forall(-1)


def test_small_grids_get_numba_cudas_low_occupancy_warning(sim, monkeypatch):
    from numba.cuda.core import config
    from numba.cuda.core.errors import NumbaPerformanceWarning
    monkeypatch.setattr(config, "CUDA_LOW_OCCUPANCY_WARNINGS", 1)
    monkeypatch.setattr(config, "DISABLE_PERFORMANCE_WARNINGS", 0)

    @cuda.jit
    def touch(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] = 1

    d = cuda.device_array(1024, np.int32)
    with pytest.warns(NumbaPerformanceWarning, match=re.escape(
            "Grid size 4 will likely result in GPU under-utilization due to low occupancy.")):
        touch[(2, 2), 64](d)
    with pytest.warns(NumbaPerformanceWarning, match="Grid size 8 will"):  # forall configures
        touch.forall(1024, tpb=128)(d)  # a launch too (numba's gufuncs launch this way)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        touch[128, 8](d)  # 128 blocks: no warning
        monkeypatch.setattr(config, "CUDA_LOW_OCCUPANCY_WARNINGS", 0)
        touch[1, 8](d)


def test_uninitialised_device_arrays_are_caught(sim):
    @cuda.jit
    def accumulate(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] += 1.0

    with pytest.raises(UninitializedMemoryError) as info:
        accumulate[1, 32](cuda.device_array(16))
    assert info.value.kernel == "accumulate"


def test_streams_and_events_give_modeled_times(sim):
    stream = cuda.stream()
    start, end = cuda.event(), cuda.event(timing=True)
    host = cuda.pinned_array(1 << 20, np.float32)
    start.record(stream)
    d = cuda.to_device(host, stream=stream)
    axpy[256, 128, stream](1.0, d, d, d)
    d.copy_to_host(host, stream=stream)
    end.record(stream)
    end.synchronize()
    stream.synchronize()
    elapsed = cuda.event_elapsed_time(start, end)
    assert elapsed == start.elapsed_time(end) > 0 and start.kind == "modeled"
    kinds = [e.kind for e in sim.backend.timeline()]
    assert kinds == ["h2d", "kernel", "d2h"]
    assert elapsed == pytest.approx(sim.backend.timeline()[-1].end_ms)
    with pytest.raises(TypeError, match="an event was never recorded"):
        cuda.event().elapsed_time(end)
    cuda.synchronize()
    for default in (cuda.default_stream(), cuda.legacy_default_stream(),
                    cuda.per_thread_default_stream()):
        default.synchronize()  # a stream object, as numba-cuda's
        assert int(default) == default.handle == 0
    with stream.auto_synchronize():
        pass


def test_random_states_and_draws_are_numba_cudas_streams(sim):
    n, seed = 64, 1234
    states = create_xoroshiro128p_states(n, seed=seed, subsequence_start=2)
    expected = np.empty(n, xoroshiro128p_dtype)
    init_xoroshiro128p_states_cpu(expected, seed, 2)  # numba-cuda's own CPU implementation
    np.testing.assert_array_equal(states.copy_to_host(), expected)

    @cuda.jit
    def draw(rng, uniform, normal):
        i = cuda.grid(1)
        if i < uniform.size:
            uniform[i] = xoroshiro128p_uniform_float32(rng, i)
            normal[i] = xoroshiro128p_normal_float32(rng, i)

    uniform, normal = np.zeros(n, np.float32), np.zeros(n, np.float32)
    draw[1, n](states, uniform, normal)
    cpu = expected.copy()
    np.testing.assert_array_equal(uniform, [xoroshiro128p_uniform_float32(cpu, i)
                                            for i in range(n)])
    np.testing.assert_allclose(normal, [xoroshiro128p_normal_float32(cpu, i) for i in range(n)],
                               rtol=1e-6)
    np.testing.assert_array_equal(states.copy_to_host(), cpu)  # the states advanced alike


def test_numba_cudas_library_kernels_find_the_simulated_device_through_the_driver(sim):
    from numba.cuda.cudadrv.driver import driver
    from numba.cuda.kernels.transpose import transpose

    assert driver.get_device().MAX_THREADS_PER_BLOCK == 1024
    a = np.arange(6, dtype=np.int32).reshape(2, 3) % 2 == 0
    d_t = cuda.device_array_like(a.T)
    transpose(cuda.to_device(a), d_t)
    np.testing.assert_array_equal(d_t.copy_to_host(), a.T)


class Wrapper:
    """Another library's array: only a CUDA Array Interface (as CuPy's or PyTorch's are)."""

    def __init__(self, interface: dict):
        self.__cuda_array_interface__ = interface


def test_an_array_interface_into_simulated_memory_is_a_view_of_that_memory(sim):
    host = np.arange(12, dtype=np.float64)
    d = cuda.to_device(host)
    wrapped = cuda.as_cuda_array(Wrapper(d.__cuda_array_interface__))
    assert wrapped is not d and wrapped.shape == (12,) and wrapped.dtype == np.float64
    assert wrapped.device_ctypes_pointer.value == d.device_ctypes_pointer.value
    strided = cuda.as_cuda_array(Wrapper(d[1::3].__cuda_array_interface__))
    np.testing.assert_array_equal(strided.copy_to_host(), host[1::3])
    backwards = cuda.from_cuda_array_interface(d[::-1].__cuda_array_interface__)
    assert backwards.strides == (-host.itemsize,)  # numba-cuda copies no negative strides:
    np.testing.assert_array_equal(backwards[::-1].copy_to_host(), host)  # reversed again

    @cuda.jit
    def add(arr, val):
        i = cuda.grid(1)
        if i < arr.size:
            arr[i] += val

    add[1, 16](Wrapper(d[2:6].__cuda_array_interface__), 100.0)  # a launch takes one too
    expected = host.copy()
    expected[2:6] += 100
    np.testing.assert_array_equal(d.copy_to_host(), expected)
    np.testing.assert_array_equal(wrapped.copy_to_host(), expected)
    empty = cuda.as_cuda_array(Wrapper(cuda.device_array(0).__cuda_array_interface__))
    assert empty.shape == (0,) and empty.__cuda_array_interface__["data"][0] == 0


def test_an_imported_view_keeps_the_memory_alive(sim):
    context = cuda.current_context()
    d = cuda.to_device(np.arange(100))
    view = cuda.as_cuda_array(Wrapper(d.__cuda_array_interface__))
    free_before = context.get_memory_info().free
    del d
    gc.collect()
    assert len(context.deallocations) == 0  # the view keeps the memory alive
    np.testing.assert_array_equal(view.copy_to_host(), np.arange(100))
    del view
    gc.collect()
    assert len(context.deallocations) == 1  # the last reference gone: a pending free
    context.deallocations.clear()
    assert context.get_memory_info().free > free_before
    assert context.memory_manager.deallocations is context.deallocations


@cuda.jit
def _first(a, result):
    result[0] = a[0, 0]


def test_numbas_own_device_array_made_without_memory_gets_simulated_memory(sim):
    from numba.cuda.cudadrv.devicearray import from_array_like
    from numba.cuda.kernels.transpose import transpose
    host = np.arange(30, dtype=np.float64).reshape(5, 6)
    free = cuda.current_context().get_memory_info().free
    out = from_array_like(np.zeros((6, 5)))  # numba's class, its memory allocated here
    assert type(out) is DeviceNDArray and cuda.current_context().get_memory_info().free < free
    with pytest.raises(UninitializedMemoryError):  # unwritten, as GPU memory starts
        _first[1, 1](out, cuda.device_array(1))
    transpose(cuda.to_device(host), out)  # numba-cuda's library kernel writes it
    np.testing.assert_array_equal(out.copy_to_host(), host.T)
    assert out[1, 2] == host[2, 1] and out.getitem((0, 1)) == host[1, 0]
    np.testing.assert_array_equal(out[1].copy_to_host(), host[:, 1])
    out[0, 0] = 99.0
    out.setitem((0, 1), 98.0)
    assert out.copy_to_host()[0, :3].tolist() == [99.0, 98.0, host[2, 0]]
    out.copy_to_device(np.ones((6, 5)))
    assert out.copy_to_host().sum() == 30.0
    np.testing.assert_array_equal(transpose(cuda.to_device(host)).copy_to_host(), host.T)


def test_numbas_own_device_array_over_gpu_data_launches_with_its_strides(sim):
    host = np.array([2.5, 7.0])
    d = cuda.to_device(host)
    assert int(d.gpu_data.device_pointer) == d.__cuda_array_interface__["data"][0]
    assert int(d[1:].gpu_data) == int(d.gpu_data) + 8 == int(d.gpu_data.view(8))
    broadcast = DeviceNDArray(shape=(5,), strides=(0,), dtype=d.dtype,
                              gpu_data=d[1:].gpu_data)  # numba's gufuncs build these
    out = cuda.device_array(5)

    @cuda.jit
    def copy(src, dst):
        i = cuda.grid(1)
        if i < dst.size:
            dst[i] = src[i]

    copy[1, 8](broadcast, out)
    np.testing.assert_array_equal(out.copy_to_host(), np.full(5, 7.0))


def test_an_array_interface_stream_becomes_the_arrays_stream(sim):
    s = cuda.stream()
    d = cuda.device_array(10, stream=s)
    assert d.__cuda_array_interface__["stream"] == s.handle
    view = cuda.as_cuda_array(Wrapper(d.__cuda_array_interface__))
    assert view.stream.external and view.stream.handle == s.handle
    assert cuda.as_cuda_array(Wrapper(cuda.device_array(3).__cuda_array_interface__)).stream == 0
    other = cuda.external_stream(12345)  # a handle no simulated stream has: a new stream
    assert other.external and other.handle == int(other) == 12345  # kept, as numba-cuda does
    assert cuda.external_stream(12345).id == other.id != s.id  # the same handle: that stream
    on_other = cuda.device_array(2, stream=other)
    assert on_other.__cuda_array_interface__["stream"] == 12345
    assert cuda.as_cuda_array(Wrapper(on_other.__cuda_array_interface__)).stream.id == other.id


def test_array_interfaces_the_simulation_cannot_take_are_refused_in_words(sim):
    d = cuda.to_device(np.arange(8, dtype=np.int32))
    interface = d.__cuda_array_interface__
    with pytest.raises(NotImplementedError, match="^Masked arrays are not supported$"):
        cuda.from_cuda_array_interface({**interface, "mask": d})
    with pytest.raises(TypeError, match=r"^a Wrapper lives in memory the simulated device does "
                                        r"not hold \(real GPU memory, or freed\)"):
        cuda.as_cuda_array(Wrapper({**interface, "data": (np.zeros(8).ctypes.data, False)}))
    with pytest.raises(TypeError, match=r"^a Wrapper reads the simulated device's int32 array "
                                        r"as float64; the simulator reads an array only as a "
                                        r"dtype of the same size"):
        cuda.as_cuda_array(Wrapper({**interface, "typestr": "<f8"}))
    with pytest.raises(TypeError, match=r"^a Wrapper describes bytes 0\.\.36 of a 32-byte "
                                        r"simulated allocation: not a view of it$"):
        cuda.as_cuda_array(Wrapper({**interface, "shape": (9,)}))
    with pytest.raises(TypeError, match=r"^\*obj\* doesn't implement the cuda array interface"):
        cuda.as_cuda_array(np.zeros(3))
    del d
    gc.collect()
    with pytest.raises(TypeError, match="lives in memory the simulated device does not hold"):
        cuda.as_cuda_array(Wrapper(interface))


def test_numba_cudas_typing_error_comes_before_what_the_simulator_lacks(sim):
    from numba.cuda.core.errors import TypingError

    @cuda.guvectorize(["void(int32[:], int32[:])"], "(n)->(n)")
    def gufunc_copy(a, b):
        for i in range(a.shape[0]):
            b[i] = a[i]

    @cuda.jit
    def calls_a_gufunc(a, b):
        return gufunc_copy(a, b)  # the simulator would refuse the return; numba the call

    a = np.arange(4, dtype=np.int32)
    with pytest.raises(TypingError, match="Untyped global name 'gufunc_copy'"):
        calls_a_gufunc[1, 1](a, np.zeros_like(a))


def test_device_arrays_captured_by_kernels_and_device_functions_are_used_by_pointer(sim):
    """numba-cuda captures a global (or closure) device array by pointer when it compiles:
    later copies into it are seen, writes go to it; its checks are those of an argument."""
    prices = cuda.to_device(np.array([10.0, 25.0, 5.0], dtype=np.float32))
    grid2d = cuda.to_device(np.zeros((3, 8)))
    every_other = grid2d[:, ::2]  # a strided view, captured as it is
    backing = cuda.to_device(np.arange(3, dtype=np.int64))  # (the wrapper does not keep it)
    foreign = Wrapper(backing.__cuda_array_interface__)

    @cuda.jit(device=True)
    def price(i):
        return prices[i]

    @cuda.jit
    def totals(quantities, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = quantities[i] * price(i) + foreign[i]
            every_other[i, i] = out[i]

    q, out = cuda.to_device(np.full(3, 2.0, np.float32)), cuda.device_array(3, np.float32)
    totals[1, 4](q, out)
    np.testing.assert_array_equal(out.copy_to_host(), [20.0, 51.0, 12.0])
    prices.copy_to_device(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    totals[1, 4](q, out)
    np.testing.assert_array_equal(out.copy_to_host(), [2.0, 5.0, 8.0])
    expected = np.zeros((3, 8))
    expected[[0, 1, 2], [0, 2, 4]] = [2.0, 5.0, 8.0]
    np.testing.assert_array_equal(grid2d.copy_to_host(), expected)

    @cuda.jit
    def past_the_end():
        prices[cuda.threadIdx.x] = 0.0

    with pytest.raises(gpukit.errors.OutOfBoundsError,
                       match=r"indexes global array prices \(shape \(3,\)\) at 3, outside 0..2"):
        past_the_end[1, 4]()

    @cuda.jit
    def racing():
        prices[0] = cuda.threadIdx.x

    with pytest.raises(gpukit.errors.RaceConditionError, match=r"data race on prices\[0\]"):
        racing[1, 2]()
    unwritten = cuda.device_array(4)

    @cuda.jit
    def reads_unwritten(out):
        out[0] = unwritten[1]

    with pytest.raises(UninitializedMemoryError, match=r"reads unwritten\[1\], which was never "
                                                       r"written"):
        reads_unwritten[1, 1](cuda.device_array(1))


def test_a_captured_array_the_simulation_does_not_hold_is_refused_at_launch(sim):
    elsewhere = Wrapper({"shape": (4,), "typestr": "<f8", "version": 3, "strides": None,
                         "data": (np.zeros(4).ctypes.data, False)})

    @cuda.jit
    def reads(out):
        out[0] = elsewhere[0]

    with pytest.raises(TypeError, match=r"^'elsewhere', a Wrapper kernel 'reads' captures, lives "
                                        r"in memory the simulated device does not hold"):
        reads[1, 1](cuda.device_array(1))


def test_raw_pointer_kernels_take_device_addresses_as_numba_cuda_does(sim):
    from numba import types
    from numba.cuda.np.numpy_support import farray

    @cuda.jit(types.void(types.CPointer(types.float32), types.int64))
    def scale(ptr, n):
        a = farray(ptr, (2, n // 2), dtype=cuda.float32)
        i, j = cuda.grid(2)
        if i < a.shape[0] and j < a.shape[1]:
            a[i, j] *= 10.0

    d = cuda.to_device(np.arange(6, dtype=np.float32))
    scale[1, (2, 4)](int(d.gpu_data.device_pointer), 6)
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(6) * 10.0)
    with pytest.raises(gpukit.errors.OutOfBoundsError,
                       match="makes an array of 8 elements over raw pointer ptr"):
        scale[1, (2, 4)](int(d.gpu_data.device_pointer), 8)


def test_numbas_ufuncs_broadcast_simulated_device_arrays(sim):
    @cuda.vectorize(["float64(float64, float64)"])
    def sub(a, b):
        return a - b

    a = np.random.default_rng(0).standard_normal((4, 3, 1))
    b = a.transpose(2, 1, 0)
    got = sub(cuda.to_device(a), cuda.to_device(b))  # numba broadcasts both to (4, 3, 4)
    np.testing.assert_array_equal(got.copy_to_host(), a - b)
    with pytest.raises(NotImplementedError, match="^ravel on non-contiguous array$"):
        cuda.to_device(np.zeros((4, 6)))[:, ::2].ravel()  # numba-cuda's error, as on a GPU


def test_a_view_as_a_dtype_of_the_same_size_reads_the_same_bytes(sim):
    days = np.array(["2026-11-27", "2026-11-28"], dtype="datetime64[D]")
    d = cuda.to_device(days)
    as_int = d.view(np.int64)
    assert as_int.dtype == np.int64 and as_int[1:].dtype == np.int64
    assert as_int.gpu_data == d.gpu_data != d[1:].gpu_data  # the same memory
    np.testing.assert_array_equal(as_int.copy_to_host(), days.view(np.int64))

    @cuda.jit
    def next_day(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 1

    next_day[1, 2](as_int)  # a kernel gets the int64 view
    np.testing.assert_array_equal(d.copy_to_host(), days + 1)
    as_float = cuda.as_cuda_array(Wrapper({**d.__cuda_array_interface__, "typestr": "<f8"}))
    assert as_float.dtype == np.float64
    with pytest.raises(gpukit.errors.UnsupportedOperationError,
                       match=r"view\(int32\) of a simulated datetime64\[D\] array: the "
                             r"simulator views an array only as a dtype of the same size"):
        d.view(np.int32)
