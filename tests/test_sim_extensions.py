"""numba-cuda's extension API in simulated kernels (gpukit.sim.extensions, gpukit.sim.overloads):
a type of the program's own (typeof, data model, constructor, attributes, lowering), method
overloads, intrinsics, register_jitable and numba's own overload for the CUDA target, each
checked against what Python computes; and Numba's own CPU functions resolve as before."""

from __future__ import annotations

import operator

import llvmlite.ir
import numba
import numpy as np
import pytest
from numba import cuda
from numba.core.errors import TypingError
from numba.cuda import cgutils, types
from numba.cuda.cudadecl import registry as cuda_registry
from numba.cuda.cudaimpl import lower_attr
from numba.cuda.extending import (
    core_models,
    intrinsic,
    lower_builtin,
    make_attribute_wrapper,
    overload_method,
    register_jitable,
    register_model,
    type_callable,
    typeof_impl,
)
from numba.cuda.typing import signature
from numba.cuda.typing.templates import AttributeTemplate, ConcreteTemplate
from numba.extending import overload as numba_overload

import gpukit
from gpukit.errors import ArgumentTypeError, RaceConditionError, UnsupportedKernelError


class Span:
    """A half-open interval (numba-cuda's extension example, under another name)."""

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi


class SpanType(types.Type):
    def __init__(self):
        super().__init__(name="Span")


span_type = SpanType()


@typeof_impl.register(Span)
def _typeof_span(val, c):
    return span_type


@type_callable(Span)
def _type_span(context):
    def typer(lo, hi):
        if isinstance(lo, types.Float) and isinstance(hi, types.Float):
            return span_type
    return typer


@register_model(SpanType)
class SpanModel(core_models.StructModel):
    def __init__(self, dmm, fe_type):
        core_models.StructModel.__init__(self, dmm, fe_type,
                                         [("lo", types.float64), ("hi", types.float64)])


make_attribute_wrapper(SpanType, "lo", "lo")
make_attribute_wrapper(SpanType, "hi", "hi")


@lower_builtin(Span, types.Float, types.Float)
def _make_span(context, builder, sig, args):
    span = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    span.lo, span.hi = args
    return span._getvalue()


@cuda_registry.register_attr
class SpanAttributes(AttributeTemplate):
    key = SpanType

    def resolve_width(self, span):
        return types.float64


@lower_attr(SpanType, "width")
def _span_width(context, builder, sig, arg):
    return builder.fsub(builder.extract_value(arg, 1), builder.extract_value(arg, 0))


@cuda_registry.register_global(operator.add)  # `+` of two spans (numba-cuda's typing registry)
class SpanAdd(ConcreteTemplate):
    cases = (signature(span_type, span_type, span_type),)


@lower_builtin(operator.add, SpanType, SpanType)
def _add_spans(context, builder, sig, args):
    a, b = (cgutils.create_struct_proxy(span_type)(context, builder, value=v) for v in args)
    total = cgutils.create_struct_proxy(span_type)(context, builder)
    total.lo, total.hi = builder.fadd(a.lo, b.lo), builder.fadd(a.hi, b.hi)
    return total._getvalue()


@overload_method(types.Array, "scaled_at")
def _scaled_at(arr, i, factor=2):
    def impl(arr, i, factor=2):
        return factor * arr[i]
    return impl


@intrinsic
def plus_one(typingctx, a):
    def codegen(context, builder, signature, args):
        return builder.add(args[0], context.get_constant(a, 1))
    return a(a), codegen


@register_jitable
def cube(x):
    return x * x * x


def forty_two():
    raise NotImplementedError


@numba_overload(forty_two, target="cuda", inline="always")  # numba's own overload
def _forty_two():
    return lambda: 42


def spans(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = Span(x[i], x[i] + 0.25 * i)
        out[i, 0], out[i, 1], out[i, 2] = s.lo, s.hi, s.width


def added_spans(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = Span(x[i], x[i] + 1.0) + Span(0.5, 2.0)
        out[i, 0], out[i, 1] = s.lo, s.hi


def helpers(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i, 0] = a.scaled_at(i)
        out[i, 1] = a.scaled_at(i, 5)
        out[i, 2] = plus_one(a[i])
        out[i, 3] = cube(a[i]) + forty_two()


@pytest.fixture(autouse=True)
def _simulation():
    with gpukit.simulate():
        yield


def test_a_type_of_the_programs_own_is_built_and_read_in_kernels():
    x = np.linspace(-1.0, 2.0, 40)
    out = np.zeros((40, 3))
    cuda.jit(spans)[2, 32](x, out)
    width = 0.25 * np.arange(40)
    np.testing.assert_array_equal(out, np.stack([x, x + width, (x + width) - x], axis=1))


def test_an_operator_typed_in_numba_cudas_registry_for_the_programs_type():
    x = np.linspace(-1.0, 2.0, 40)
    out = np.zeros((40, 2))
    cuda.jit(added_spans)[2, 32](x, out)
    np.testing.assert_array_equal(out, np.stack([x + 0.5, x + 3.0], axis=1))


def test_method_overloads_intrinsics_and_jitable_functions_run_in_kernels():
    a = np.arange(-5, 35, dtype=np.int64)
    out = np.zeros((40, 4), np.int64)
    cuda.jit(helpers)[2, 32](a, out)
    np.testing.assert_array_equal(out, np.stack([2 * a, 5 * a, a + 1, a ** 3 + 42], axis=1))


def test_numbas_cpu_functions_do_not_see_the_cuda_targets_extensions():
    cuda.jit(helpers)[1, 1](np.arange(1), np.zeros((1, 4), np.int64))  # mirrored by now

    @numba.njit
    def on_the_cpu(a):
        return a.scaled_at(0)

    with pytest.raises(TypingError, match="scaled_at"):
        on_the_cpu(np.arange(3))


@intrinsic
def forgets_its_value(typingctx, a):
    def codegen(context, builder, signature, args):
        pass  # returns None for an int32: numba-cuda's lowering refuses it
    return types.int32(types.int32), codegen


def test_an_intrinsics_lowering_error_is_numba_cudas_class_as_a_gpu_compile_raises_it():
    from numba.core.errors import LoweringError as NumbasLoweringError
    from numba.cuda.errors import LoweringError

    @cuda.jit
    def calls_it(out):
        out[0] = forgets_its_value(1)

    with pytest.raises(LoweringError, match="non-void function returns None") as caught:
        calls_it[1, 1](np.zeros(1, np.int32))
    assert isinstance(caught.value, NumbasLoweringError)  # and still numba's own


def thread_index():
    raise NotImplementedError


@numba.cuda.extending.overload(thread_index, target="cuda")
def _thread_index():
    def impl():
        return cuda.threadIdx.x
    return impl


def store_after(arr, i):
    raise NotImplementedError


@numba.cuda.extending.overload(store_after, target="cuda")
def _store_after(arr, i):
    def impl(arr, i):
        arr[i + 1] = i
    return impl


def test_an_overload_whose_implementation_uses_cuda_is_simulated():
    @cuda.jit
    def uses_it(out):
        out[cuda.threadIdx.x] = thread_index()

    out = np.zeros(8, np.int64)
    uses_it[1, 8](out)
    np.testing.assert_array_equal(out, np.arange(8))


def scaled_local(x):
    raise NotImplementedError


@numba.cuda.extending.overload(scaled_local, target="cuda")
def _scaled_local(x):
    """numba-cuda's issue 718 shape (`cuda.local.array` in an implementation), with an
    implementation that depends on the argument's type, as numba-cuda picks it per call."""
    if isinstance(x, types.Integer):
        def impl(x):
            a = cuda.local.array(2, np.int64)
            a[0] = x
            a[1] = 10
            return a[0] * a[1]
        return impl

    def impl(x):
        a = cuda.local.array(1, np.float32)
        a[0] = x
        return a[0] + np.float32(0.5)
    return impl


@cuda.jit(device=True)
def scaled_twice(x):
    return scaled_local(x) + scaled_local(x)


def test_each_call_of_an_overload_using_cuda_runs_the_implementation_for_its_types():
    @cuda.jit
    def both(ints, floats):
        i = cuda.grid(1)
        if i < ints.size:
            ints[i] = scaled_local(ints[i]) + scaled_twice(ints[i])
            floats[i] = scaled_local(floats[i])

    ints, floats = np.arange(5, dtype=np.int64), np.linspace(0, 1, 5, dtype=np.float32)
    expected_ints, expected_floats = ints * 30, floats + np.float32(0.5)
    both[1, 32](ints, floats)
    np.testing.assert_array_equal(ints, expected_ints)
    np.testing.assert_array_equal(floats, expected_floats)


def test_a_kernel_is_rewritten_for_each_launchs_types_when_an_overload_depends_on_them():
    backend = gpukit.get_backend("cpu")

    @cuda.jit
    def one(out, x):
        out[0] = scaled_local(x)

    kernel = backend.compile_kernel(one)
    with pytest.raises(UnsupportedKernelError, match=(
            r"kernel 'one' calls an @overload whose implementation uses CUDA, so how it is "
            r"simulated depends on the arguments' types: launch it first")):
        kernel.explain()
    out = backend.allocate(1, np.float64)
    kernel[1, 1](out, 3)  # an int64: the integer implementation
    assert backend.to_host(out)[0] == 30
    kernel[1, 1](out, 3.0)  # a float64: the other one
    assert backend.to_host(out)[0] == 3.5
    assert "a[1] = 10" not in kernel.explain()  # the latest launch's rewrite
    eager = backend.compile_kernel(one, signature="void(float64[:], int64)")
    assert "10" in eager.explain()  # an eager signature gives the types at once
    with pytest.raises(ArgumentTypeError, match=(  # checked before it is typed
            r"argument 'x' of kernel 'one' is a object; kernels take device arrays")):
        kernel[1, 1](out, object())


def test_an_overloads_cuda_implementation_is_checked_like_a_device_function():
    """Its accesses are bounds-, race- and initialisation-checked, at its own lines."""
    @cuda.jit
    def all_write_one(out):
        store_thread_index(out, 0)

    with pytest.raises(RaceConditionError, match=(
            r"data race on out\[0\]: thread \(1, 0, 0\) .* writes it at line \d+ "
            r"\('out\[i\]'\).*test_sim_extensions\.py")):
        all_write_one[1, 2](np.zeros(1, np.int64))


def store_thread_index(out, i):
    raise NotImplementedError


@numba.cuda.extending.overload(store_thread_index, target="cuda")
def _store_thread_index(out, i):
    def impl(out, i):
        out[i] = cuda.threadIdx.x
    return impl


def reverse_in_block(a):
    raise NotImplementedError


@numba.cuda.extending.overload(reverse_in_block, target="cuda")
def _reverse_in_block(a):
    def impl(a):
        s = cuda.shared.array(32, numba.float32)
        i = cuda.threadIdx.x
        s[i] = a[i]
        cuda.syncthreads()
        a[i] = s[31 - i]
    return impl


def test_an_overloads_implementation_may_hold_a_barrier():
    @cuda.jit
    def reverse(a):
        reverse_in_block(a)

    a = np.arange(32, dtype=np.float32)
    reverse[1, 32](a)
    np.testing.assert_array_equal(a, np.arange(32, dtype=np.float32)[::-1])


@overload_method(types.Array, "store_lane")
def _store_lane(arr, value):
    """A method whose implementation uses CUDA: each thread stores into its own element."""
    def impl(arr, value):
        arr[cuda.threadIdx.x] = value + cuda.laneid
    return impl


def test_an_overload_method_whose_implementation_uses_cuda_is_simulated_and_checked():
    @cuda.jit
    def each(out):
        out.store_lane(10)

    out = np.zeros(8, np.int64)
    each[1, 8](out)
    np.testing.assert_array_equal(out, 10 + np.arange(8))
    with pytest.raises(IndexError, match=(  # thread 8 stores past the end, in the method
            r"'arr\[cuda\.threadIdx\.x\]' indexes global array arr \(shape \(8,\)\) at 8, "
            r"outside 0\.\.7.*\[kernel 'each', thread \(8, 0, 0\), block \(0, 0, 0\), .*"
            r"test_sim_extensions\.py:\d+\]")):
        each[1, 9](np.zeros(8, np.int64))


@overload_method(types.Array, "reversed_in_block")
def _reversed_in_block(arr):
    """A method with a barrier: the block's 32 elements reversed through shared memory."""
    def impl(arr):
        tile = cuda.shared.array(32, numba.int64)
        i = cuda.threadIdx.x
        tile[i] = arr[i]
        cuda.syncthreads()
        arr[i] = tile[31 - i]
    return impl


def test_an_overload_methods_implementation_may_hold_a_barrier():
    @cuda.jit
    def reverse(out):
        out.reversed_in_block()

    out = np.arange(32, dtype=np.int64)
    reverse[1, 32](out)
    np.testing.assert_array_equal(out, np.arange(32)[::-1])


def last_of_run(x, k):
    raise NotImplementedError


@numba.cuda.extending.overload(last_of_run, target="cuda", prefer_literal=True)
def _last_of_run(x, k):
    """A local array sized by a literal argument, as numba-cuda types the call with it."""
    if isinstance(k, types.IntegerLiteral):
        n = k.literal_value

        def impl(x, k):
            run = cuda.local.array(n, np.int64)
            for j in range(n):
                run[j] = x + j
            return run[n - 1]
        return impl

    def impl(x, k):
        return x * 1000
    return impl


def test_an_overload_picked_by_a_literal_argument_gets_that_implementation():
    @cuda.jit
    def both(out):
        out[0] = last_of_run(out[0], 3)  # the literal 3: a local array of three
        out[1] = last_of_run(out[1], out[2])  # an int64 value: the other implementation

    out = np.array([10, 20, 2], np.int64)
    both[1, 1](out)
    assert out.tolist() == [12, 20000, 2]


def doubled_as_float64(x):
    raise NotImplementedError


@numba.cuda.extending.overload(doubled_as_float64, target="cuda")
def _doubled_as_float64(x):
    """An overload that gives its signature with its implementation (numba-cuda keeps no
    cached implementation for it): the argument is converted to float64 first."""
    def impl(x):
        a = cuda.local.array(1, np.float64)
        a[0] = x
        return a[0] * 2
    return signature(types.float64, types.float64), impl


def test_an_overload_giving_its_own_signature_runs_its_implementation():
    @cuda.jit
    def doubles(out, v):
        out[0] = doubled_as_float64(v)

    out = np.zeros(1, np.float64)
    doubles[1, 1](out, np.int32(3))
    assert out[0] == 6.0


def test_keyword_arguments_to_an_overload_using_cuda_are_refused_by_name():
    @cuda.jit
    def by_keyword(out):
        out[0] = scaled_local(x=out[0])

    with pytest.raises(UnsupportedKernelError, match=(
            r"keyword arguments to a device function \(or to an overload whose implementation "
            r"uses CUDA\) is not supported in kernels by gpukit's simulator \[kernel "
            r"'by_keyword', ")):
        by_keyword[1, 1](np.zeros(1, np.int64))


DEBUG = False


def test_an_overload_call_in_a_branch_numba_cuda_prunes_is_never_run():
    @cuda.jit
    def pruned(out):
        if DEBUG:  # a global False: numba-cuda prunes the branch and never types the call
            out[0] = scaled_local(out[1])
        out[1] = 1

    out = np.zeros(2, np.int64)
    pruned[1, 1](out)
    assert out.tolist() == [0, 1]


def test_a_device_function_whose_overload_call_depends_on_two_callers_types_is_refused():
    @cuda.jit
    def mixed(ints, floats):
        ints[0] = scaled_twice(ints[0])
        floats[0] = scaled_twice(floats[0])

    with pytest.raises(UnsupportedKernelError, match=(
            r"calling scaled_local, an @overload whose implementation uses CUDA and depends on "
            r"the argument types, from a device function called with arguments of different "
            r"types \(2 implementations;.*\[kernel 'mixed', .*test_sim_extensions\.py:\d+\]")):
        mixed[1, 1](np.zeros(1, np.int64), np.zeros(1, np.float32))


def test_an_overloads_implementation_is_bounds_checked():
    @cuda.jit
    def one_past(out):
        i = cuda.grid(1)
        if i < out.size:
            store_after(out, i)

    out = np.zeros(33, np.int64)
    one_past[1, 32](out)  # the guard keeps every store in bounds
    np.testing.assert_array_equal(out, np.r_[0, np.arange(32)])
    with pytest.raises(IndexError, match=r"index is out of bounds.*thread \(31, 0, 0\)"):
        one_past[1, 32](np.zeros(32, np.int64))  # thread 31 stores one past the end


def test_the_simulators_own_jitable_functions_declare_their_own_parameters():
    """numba-cuda's `test_signatures_match_overloaded_api` walks the typing registry and asks
    that each overload outside Numba take the parameters of the function it overloads; Numba's
    `register_jitable` declares `(*args, **kwargs)`, so each of the simulator's (about 150)
    failed it. gpukit's own `register_jitable` declares the function's signature."""
    import inspect

    from numba.core.typing import templates

    import gpukit.sim.launch  # noqa: F401 - loads every module of the compiled engine

    checked = []
    for _, ftype in templates.builtin_registry.globals:
        for template in getattr(ftype, "templates", ()):
            func = template.key
            if (getattr(func, "__module__", None) or "").startswith("gpukit.") and \
                    getattr(template, "_overload_func", None) is not None:
                checked.append(func)
                assert inspect.signature(template._overload_func) == inspect.signature(func), func
    assert len(checked) > 100


MIRROR_WITHOUT_REFRESH = """
from numba.cuda.cudadecl import registry
from numba.cuda.descriptor import cuda_target
from numba.cuda.typing import signature
from numba.cuda.typing.templates import AttributeTemplate, ConcreteTemplate
from numba.core.typing import templates
from numba.cuda import types
from gpukit.sim import extensions, overloads

refreshed = []
for context in (cuda_target.typing_context, cuda_target.target_context):
    context.refresh = lambda context=context: refreshed.append(type(context).__name__)


class PointType(types.Type):
    def __init__(self):
        super().__init__(name="Point")


@registry.register_attr
class PointAttributes(AttributeTemplate):
    key = PointType

    def resolve_x(self, point):
        return types.float64


overloads.mirror_cuda_overloads()
extensions.mirror_cuda_extensions()
mirrored = [t for t in templates.builtin_registry.attributes if issubclass(t, PointAttributes)]
print(refreshed, len(mirrored))
"""


def test_a_programs_registrations_are_mirrored_without_loading_numba_cudas_library():
    """Mirroring does not refresh numba-cuda's contexts (which imports and installs every
    registry of its library: about half a second of a process's first launch, even when the
    kernel comes from the cache), yet finds a registration made with one of numba-cuda's own
    registries that only a refresh installs. In a fresh process, where nothing has refreshed."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", MIRROR_WITHOUT_REFRESH], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "[] 1"


def test_the_simulators_own_functions_compile_without_entry_points_for_python_or_c():
    """Only compiled code calls the engine's overloads and jitable functions, so Numba builds
    them without the CPython and C wrappers it gives a function by default (a sixth of a
    process's first compile); options an overload asks for are kept."""
    from numba.core.typing import templates

    from gpukit.sim import access, lowlevel

    def options_of(func):
        for key, ftype in templates.builtin_registry.globals:
            if key is func:
                return [t._jit_options for t in ftype.templates]
        raise LookupError(func)

    for func in (access.ld, access.st, lowlevel.trap, access.fail):
        for options in options_of(func):
            assert options["no_cpython_wrapper"] and options["no_cfunc_wrapper"], func
    assert all(o.get("forceinline") for o in options_of(access.ld))


def spans_in_local_and_shared_memory(x, out):
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    mine = cuda.local.array(3, dtype=span_type)
    for k in range(3):
        mine[k] = Span(x[i] + k, x[i] + 2.0 * k)
    block = cuda.shared.array(32, dtype=span_type)
    block[t] = mine[2]
    cuda.syncthreads()
    neighbour = block[(t + 1) % 32]
    out[i, 0], out[i, 1] = mine[1].hi, neighbour.lo


def test_arrays_of_a_programs_type_in_local_and_shared_memory():
    """numba-cuda lays out an array of an extension type by its data model: so does the
    simulator, and the element's accesses are checked like any other."""
    x = np.arange(64.0)
    out = np.zeros((64, 2))
    cuda.jit(spans_in_local_and_shared_memory)[2, 32](x, out)
    np.testing.assert_array_equal(out[:, 0], x + 2.0)
    neighbour = (np.arange(64) // 32) * 32 + (np.arange(64) + 1) % 32
    np.testing.assert_array_equal(out[:, 1], x[neighbour] + 2.0)


def test_arrays_of_a_programs_type_are_checked():
    from gpukit.errors import OutOfBoundsError, RaceConditionError, UninitializedMemoryError

    @cuda.jit
    def unwritten(out):
        spans = cuda.local.array(4, dtype=span_type)
        spans[0] = Span(1.0, 2.0)
        out[0] = spans[1].lo

    @cuda.jit
    def one_past(out):
        spans = cuda.local.array(4, dtype=span_type)
        for k in range(5):
            spans[k] = Span(1.0, 2.0)
        out[0] = spans[0].lo

    @cuda.jit
    def all_at_once(out):
        spans = cuda.shared.array(4, dtype=span_type)
        spans[0] = Span(1.0 * cuda.threadIdx.x, 2.0)
        cuda.syncthreads()
        out[cuda.threadIdx.x] = spans[0].lo

    out = np.zeros(4)
    with pytest.raises(UninitializedMemoryError, match=r"'spans\[1\]' reads spans\[1\], which "
                       r"was never written.*\[kernel 'unwritten', thread \(0, 0, 0\)"):
        unwritten[1, 1](out)
    with pytest.raises(OutOfBoundsError, match=r"indexes local array spans \(shape \(4,\)\) at "
                       r"4, outside 0\.\.3.*\[kernel 'one_past', thread \(0, 0, 0\)"):
        one_past[1, 1](out)
    with pytest.raises(RaceConditionError, match=r"data race on spans\[0\]: thread \(1, 0, 0\) "
                       r"of block \(0, 0, 0\) writes it at line \d+ \('spans\[0\]'\), and thread "
                       r"\(0, 0, 0\)"):
        all_at_once[1, 4](out)


class Opaque(types.Type):  # a type with no data model
    def __init__(self):
        super().__init__(name="Opaque")


class Wide(types.Type):  # a 128-bit integer: aligned to 16 bytes on x86-64
    def __init__(self):
        super().__init__(name="Wide")


@register_model(Wide)
class WideModel(core_models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        core_models.PrimitiveModel.__init__(self, dmm, fe_type, llvmlite.ir.IntType(128))


def declares_an_array_of(dtype):
    def declares(out):
        values = cuda.local.array(4, dtype=dtype)
        out[0] = len(values)
    return cuda.jit(declares)


@pytest.mark.parametrize(("dtype", "reason"), [
    (Opaque(), (r"an array of Opaque, a type with neither a numpy dtype nor a data model "
                r"\(numba-cuda refuses it too\)")),
    (Wide(), r"an array of Wide, whose data model aligns it to 16 bytes"),
])
def test_an_array_of_a_type_the_simulator_cannot_lay_out_is_refused(dtype, reason):
    with pytest.raises(UnsupportedKernelError, match=(
            reason + r" is not supported in kernels by gpukit's simulator "
                     r"\[kernel 'declares', ")):
        declares_an_array_of(dtype)[1, 1](np.zeros(1, np.int64))
