"""Kernel launches of numba-cuda dispatchers on the simulated device, and `cuda.jit` meanwhile.

While a simulation is active, `CUDADispatcher.__getitem__`/`configure`/`forall`/`call` (patched
by `gpukit.simulate.patching`) come here, for dispatchers made before the simulation started too.
A launch converts its arguments as numba-cuda does (host arrays copied in and out with numba-cuda's
`NumbaPerformanceWarning`; `cuda.In`/`Out`/`InOut`; scalars to an eager signature's types) and
runs the kernel with `CPUBackend.launch_kernel`. gpukit errors leave the launch with a traceback
that ends at the user's launch line. `jit` makes dispatchers without compiling for a GPU.
"""

from __future__ import annotations

import math
import pickle
import warnings
from typing import Any

import numpy as np
from numba.core import types as core_types
from numba.cuda.args import ArgHint, In
from numba.cuda.core import config as cuda_config
from numba.cuda.core.errors import NumbaPerformanceWarning
from numba.cuda.errors import normalize_kernel_dimensions

from ..backends.validate import check_launch_bounds, normalize_launch_bounds
from ..errors import (
    GpukitError,
    KernelTypingError,
    LaunchConfigError,
    ReinterpretedArrayWarning,
    UnsupportedKernelError,
    also_instance_of,
)
from ..sim.compiler import cuda_typecheck
from ..sim.device_array import DeviceArray
from ..sim.kernel import is_device_function
from . import host_api
from .arrays import SimNDArray, is_mapped
from .compiled import overloads_of
from .launchconfig import compile_if_taking_part, current_args, launching, select
from .session import current
from .tracebacks import user_stacklevel

MIN_GRID_WARNING_BLOCKS = 128  # numba-cuda's low-occupancy warning threshold
FORALL_REGISTERS_PER_THREAD = 32  # forall's block size assumes this (no ptxas in the loop)


# -- cuda.jit during a simulation --------------------------------------------------------------
def jit(func_or_sig: Any = None, device: bool = False, inline: Any = "never",
        forceinline: bool = False, link: Any = (), debug: Any = None, opt: Any = None,
        lineinfo: bool = False, cache: bool = False, launch_bounds: Any = None, lto: Any = None,
        shared_memory_carveout: Any = None, **kws: Any) -> Any:
    """numba-cuda's `cuda.jit`, making dispatchers that need no GPU: every keyword is accepted
    (and kept in `targetoptions`); an eager signature is honoured at launch (arguments converted
    to its types, others refused) instead of compiling for a GPU now."""
    from numba.cuda.core import sigutils
    from numba.cuda.core.errors import NumbaInvalidConfigWarning

    from .patching import original

    options = dict(device=device, inline=inline, forceinline=forceinline, link=link,
                   debug=debug, opt=opt, lineinfo=lineinfo, launch_bounds=launch_bounds,
                   shared_memory_carveout=shared_memory_carveout, **kws)
    if sigutils.is_signature(func_or_sig):
        signatures = [func_or_sig]
    elif isinstance(func_or_sig, list):
        signatures = func_or_sig
    else:
        signatures = None
    if signatures is None and func_or_sig is not None:
        return original("jit")(func_or_sig, **options)
    original("jit")(**options)  # numba-cuda checks its options (and warns) now, as when called

    def decorate(func: Any) -> Any:
        with warnings.catch_warnings():  # said once above, when cuda.jit(...) was called
            warnings.simplefilter("ignore", NumbaInvalidConfigWarning)
            dispatcher = original("jit")(func, **options)
        if signatures is None:
            return dispatcher
        parsed = [sigutils.normalize_signature(sig) for sig in signatures]
        for argtypes, restype in parsed:
            from numba.cuda import types
            if restype and not device and restype != types.void:
                raise TypeError("CUDA kernel must have void return type.")
        if device:
            _compile_device(dispatcher, parsed)
        else:  # numba-cuda compiles now: a kernel it rejects fails here, with its reason
            normalize_launch_bounds(launch_bounds)
            for argtypes, _ in parsed:
                cuda_typecheck(dispatcher.py_func, tuple(argtypes))
        dispatcher._gpukit_signatures = [argtypes for argtypes, _ in parsed]
        if not device:  # listed in overloads, compiled by numba-cuda when looked at
            for argtypes in dispatcher._gpukit_signatures:
                overloads_of(dispatcher).note(tuple(argtypes))
            # as numba-cuda: one signature (not a list) makes a specialized dispatcher
            dispatcher._specialized = sigutils.is_signature(func_or_sig)
            dispatcher.disable_compile()
        return dispatcher

    return decorate


def _compile_device(dispatcher: Any, parsed: list) -> None:
    """Type an eager device function for its signatures, as numba-cuda does, so that calls
    convert their arguments; the simulated device answers for the compute capability."""
    from numba.cuda.core import typeinfer
    try:
        with typeinfer.register_dispatcher(dispatcher):
            for argtypes, restype in parsed:
                dispatcher.compile_device(argtypes, restype)
        dispatcher.disable_compile()
    except Exception:  # noqa: BLE001 - left lazy: calls are typed from their arguments
        dispatcher.overloads.clear()


# -- launches -------------------------------------------------------------------------------
class SimLaunch:
    """`kernel[griddim, blockdim, stream, sharedmem]` of a dispatcher on the simulated device."""

    def __init__(self, dispatcher: Any, griddim: Any, blockdim: Any, stream: Any = 0,
                 sharedmem: Any = 0):
        # numba-cuda's errors when configured, and its (x, y, z) triples
        griddim, blockdim = normalize_kernel_dimensions(griddim, blockdim)
        self.dispatcher, self.griddim, self.blockdim = dispatcher, griddim, blockdim
        self.stream, self.sharedmem = stream, sharedmem
        # numba-cuda's host-side hooks: each is called as callback(kernel, launch_config)
        # just before the launch, `kernel` being numba-cuda's compiled overload it runs
        self.pre_launch_callbacks: list = []
        # set when a compilation for this launch marks it (gpukit.simulate.launchconfig)
        self._kernel_launch_config_sensitive = None
        _warn_low_occupancy(griddim)

    def __call__(self, *args: Any) -> None:
        __tracebackhide__ = True  # pytest and IPython: the user's launch line is the last frame
        try:
            before = launching(args)
            try:
                launch(self.dispatcher, self.griddim, self.blockdim, self.stream,
                       self.sharedmem, args, self)
            finally:
                launching(before)
        except GpukitError as exc:
            raise exc.with_traceback(None) from exc.__cause__

    @property
    def args(self) -> Any:
        """The arguments of the launch running on this thread (None when none is)."""
        return current_args()

    def _is_kernel_launch_config_sensitive(self) -> bool:
        return bool(self._kernel_launch_config_sensitive)

    def __getstate__(self) -> dict:
        if self.pre_launch_callbacks:  # numba-cuda's error
            raise pickle.PicklingError(
                "Cannot pickle configured launches with pre-launch callbacks")
        return self.__dict__.copy()


class SimForAll:
    """`kernel.forall(ntasks, tpb=0, stream=0, sharedmem=0)`: a 1-D launch over ntasks."""

    def __init__(self, dispatcher: Any, ntasks: int, tpb: int, stream: Any, sharedmem: int):
        if ntasks < 0:
            raise ValueError(f"Can't create ForAll with negative task count: {ntasks}")
        self.dispatcher, self.ntasks, self.tpb = dispatcher, ntasks, tpb
        self.stream, self.sharedmem = stream, sharedmem

    def __call__(self, *args: Any) -> None:
        __tracebackhide__ = True
        if self.ntasks == 0:
            return
        try:
            tpb = self.tpb or _forall_block_size(self.dispatcher, self.sharedmem)
            grid = (self.ntasks + tpb - 1) // tpb
            # numba-cuda configures the launch (its low-occupancy warning too)
            SimLaunch(self.dispatcher, grid, tpb, self.stream, self.sharedmem)(*args)
        except GpukitError as exc:
            raise exc.with_traceback(None) from exc.__cause__


def _forall_block_size(dispatcher: Any, sharedmem: int) -> int:
    """The block size numba-cuda would ask the driver for (cudaOccupancyMaxPotentialBlockSize),
    computed by gpukit's occupancy calculator for the simulated device, within the launch bounds."""
    from ..occupancy import best_block_size
    sim = current(required=True)
    kernel = sim.backend.compile_kernel(dispatcher)
    shared = kernel.static_shared_bytes + int(sharedmem)
    bounds = normalize_launch_bounds(dispatcher.targetoptions.get("launch_bounds"))
    return best_block_size(sim.profile, FORALL_REGISTERS_PER_THREAD, shared,
                           max_block_size=bounds[0] if bounds else 0)[1]


def _warn_low_occupancy(griddim: Any) -> None:
    if not cuda_config.CUDA_LOW_OCCUPANCY_WARNINGS or cuda_config.DISABLE_PERFORMANCE_WARNINGS:
        return
    dims = griddim if isinstance(griddim, tuple) else (griddim,)
    try:
        blocks = math.prod(int(d) for d in dims)
    except (TypeError, ValueError):
        return  # a bad grid: the launch says what is wrong with it
    if blocks < MIN_GRID_WARNING_BLOCKS:
        warnings.warn(NumbaPerformanceWarning(
            f"Grid size {blocks} will likely result in GPU under-utilization due to low "
            "occupancy."), stacklevel=user_stacklevel())


def launch(dispatcher: Any, griddim: Any, blockdim: Any, stream: Any, sharedmem: Any,
           args: tuple, config: SimLaunch | None = None) -> Any:
    """Run one launch of a numba-cuda dispatcher on the active simulation (`config`: the
    configured launch it came from, whose pre-launch callbacks run before it)."""
    sim = current(required=True)
    if is_device_function(dispatcher):
        raise RuntimeError("Cannot compile a device function as a kernel")  # numba-cuda's error
    dispatcher = select(dispatcher, config)
    signature = _pointer_signature(dispatcher)
    try:  # a kernel it cannot run fails before any copy
        kernel = sim.backend.compile_kernel(dispatcher, signature)
    except UnsupportedKernelError as exc:
        if not isinstance(exc, KernelTypingError):
            _typecheck(dispatcher, args)  # numba-cuda's own reason first, when it has one
        raise
    if signatures_of(dispatcher) is None:  # lazy: a launch of new types compiles
        compile_if_taking_part(dispatcher, args, config)
    retr: list = []  # numba-cuda's write-backs that extensions register, run after the launch
    args = _extended(dispatcher, args, stream, retr)
    values, copies = _arguments(sim, dispatcher, args, stream)
    if config is not None and config.pre_launch_callbacks:
        argtypes = launch_types(dispatcher, args)
        overloads_of(dispatcher).note(argtypes)
        for callback in config.pre_launch_callbacks:
            callback(overloads_of(dispatcher)[argtypes], config)
    try:
        if signature is not None:  # launched as the kernel compiled for it: the dispatcher's
            check_launch_bounds(kernel.name, blockdim,  # launch bounds are checked here
                                dispatcher.targetoptions.get("launch_bounds"))
        # only the options a launch sets (none: the backend's defaults, checked once)
        options = {k: v for k, v in (("stream", stream), ("dynamic_shared_bytes", sharedmem))
                   if v is not None and not (isinstance(v, int) and v == 0)}
        record = sim.backend.launch_kernel(dispatcher if signature is None else kernel, griddim,
                                           blockdim, *values, **options)
    except LaunchConfigError as exc:
        raise as_driver_error(exc) from exc.__cause__
    if signatures_of(dispatcher) is None:  # numba-cuda compiles one overload per launch types
        overloads_of(dispatcher).note(record.signature)
    for device, host in copies:
        device.copy_to_host(host, stream=stream)
    for write_back in retr:
        write_back()
    return record


def _pointer_signature(dispatcher: Any) -> Any:
    """The eager signature of a kernel declared with raw pointer parameters (`CPointer`
    types), which the simulator's kernel needs to type them; None for the others (their
    arguments are converted here, `_convert`)."""
    signatures = signatures_of(dispatcher)
    if signatures is None or len(signatures) != 1 or \
            not any(isinstance(t, core_types.CPointer) for t in signatures[0]):
        return None
    return core_types.void(*signatures[0])


def launch_types(dispatcher: Any, args: tuple) -> tuple:
    """The argument types of the overload numba-cuda launches for `args`."""
    signatures = signatures_of(dispatcher)
    if signatures is not None:
        return tuple(_best_first(dispatcher, args, signatures)[0])
    return tuple(dispatcher.typeof_pyval(a.value if isinstance(a, ArgHint) else a)
                 for a in args)


def _typecheck(dispatcher: Any, args: tuple) -> None:
    """Type the kernel for these arguments as numba-cuda would (KernelTypingError where its
    typing fails); nothing when an argument has no Numba type."""
    try:
        argtypes = launch_types(dispatcher, args)
    except Exception:  # noqa: BLE001 - numba-cuda says what is wrong with it at launch
        return
    cuda_typecheck(dispatcher.py_func, argtypes)


def as_driver_error(exc: LaunchConfigError) -> LaunchConfigError:
    """`exc`, also an instance of the CUDAError numba-cuda raises on a GPU where the driver
    refuses the launch (`exc` names the driver's code, such as CUDA_ERROR_INVALID_VALUE), so a
    program's `except CUDAError` sees it. That class lives in cuda.core's private `_utils`
    (numba-cuda's own tests import it from there); without it, `exc` as it is."""
    if "CUDA_ERROR_" not in str(exc):
        return exc
    try:
        from cuda.core._utils.cuda_utils import CUDAError  # lazy: cuda.core loads with numba.cuda
    except ImportError:
        return exc
    return also_instance_of(exc, CUDAError)


def _extended(dispatcher: Any, args: tuple, stream: Any, retr: list) -> tuple:
    """The arguments as the dispatcher's extensions map them (numba-cuda's `prepare_args`
    protocol: each gets the argument's Numba type and value, last extension first)."""
    extensions = getattr(dispatcher, "targetoptions", {}).get("extensions") or []
    if not extensions:
        return args
    out = []
    for arg in args:
        ty = dispatcher.typeof_pyval(arg)
        for extension in reversed(extensions):
            ty, arg = extension.prepare_args(ty, arg, stream=stream, retr=retr)
        out.append(arg)
    return tuple(out)


def signatures_of(dispatcher: Any) -> list | None:
    """The argument types a dispatcher was compiled for eagerly (None: lazy)."""
    eager = getattr(dispatcher, "_gpukit_signatures", None)
    if eager is not None:
        return eager
    if not getattr(dispatcher, "_can_compile", True) and dispatcher.signatures:
        return list(dispatcher.signatures)
    return None


def _arguments(sim: Any, dispatcher: Any, args: tuple, stream: Any) -> tuple[list, list]:
    # an object with a CUDA Array Interface that points into simulated memory: a view of it
    args = tuple(host_api.as_cuda_array(a) if not isinstance(a, (DeviceArray, np.ndarray))
                 and hasattr(a, "__cuda_array_interface__") else a for a in args)
    signatures = signatures_of(dispatcher)
    if signatures is not None:
        args = _convert(args, _best_first(dispatcher, args, signatures), dispatcher.specialized)
    values, copies = [], []
    for arg in args:
        hint = None
        if isinstance(arg, ArgHint):
            hint, arg = arg, arg.value
        if isinstance(arg, np.ndarray) or (hint is not None and not isinstance(arg, DeviceArray)):
            host = np.asanyarray(arg)
            copy_in = getattr(hint, "copy_input", True)  # Out: no copy in; InOut: copy
            copy_out = not isinstance(hint, In)
            if copy_in and not is_mapped(host) and _warn_implicit():
                warnings.warn(NumbaPerformanceWarning(
                    "Host array used in CUDA kernel will incur copy overhead to/from device."),
                    stacklevel=user_stacklevel())
            device = host_api.to_device(host, stream=stream, copy=copy_in)
            if copy_out and host.flags.writeable:
                copies.append((device, host))
            arg = device
        values.append(arg)
    return values, copies


def _warn_implicit() -> bool:
    return bool(cuda_config.CUDA_WARN_ON_IMPLICIT_COPY and
                not cuda_config.DISABLE_PERFORMANCE_WARNINGS)


def _best_first(dispatcher: Any, args: tuple, signatures: list) -> list:
    """The eager signatures, the one numba-cuda's overload resolution picks for these arguments
    first (`f[1, 1](r, 1, 0.5)` takes (float64, float64) over (float32, float32), whichever
    is declared first); TypeError for a tie, worded as numba-cuda's dispatcher words it."""
    from numba.cuda import types
    from numba.cuda.descriptor import cuda_target
    from numba.cuda.typing import signature
    from numba.cuda.typing.typeof import Purpose, typeof

    try:
        actual = [typeof(a.value if isinstance(a, ArgHint) else a, Purpose.argument)
                  for a in args]
    except Exception:  # noqa: BLE001 - a value numba-cuda cannot type: declared order
        return signatures
    cases = [signature(types.none, *argtypes) for argtypes in signatures]
    try:
        best = cuda_target.typing_context.resolve_overload(
            dispatcher.py_func, cases, actual, {}, allow_ambiguous=False)
    except TypeError as exc:
        if not str(exc).startswith("Ambiguous overloading"):
            raise
        tied = str(exc).splitlines()[1:]
        raise TypeError(f"Ambiguous overloading for {dispatcher.py_func} "
                        f"({', '.join(map(repr, actual))}):\n" + "\n".join(tied)) from None
    if best is None:
        return signatures
    return [best.args, *(s for s in signatures if tuple(s) != tuple(best.args))]


def _convert(args: tuple, signatures: list, specialized: bool = False) -> tuple:
    """The arguments converted to the first eager signature they fit, as numba-cuda's
    dispatcher does when it may not compile new versions (TypeError when none fits).

    A specialized dispatcher (`cuda.jit("void(int32[:])")`: one signature, not a list) checks
    no argument types at launch: numba-cuda passes an array's memory as it is, so an array of
    another dtype of the same size is read bit for bit as the declared one. The simulator does
    the same, with a ReinterpretedArrayWarning, since on a GPU that is a silent bug as often as
    a deliberate cast."""
    for argtypes in signatures:
        if len(argtypes) != len(args):
            continue
        converted = []
        for ty, arg in zip(argtypes, args):
            value = arg.value if isinstance(arg, ArgHint) else arg
            ok, new = _fit(ty, value, specialized)
            if not ok:
                break
            converted.append(type(arg)(new) if isinstance(arg, ArgHint) else new)
        else:
            return tuple(converted)
    from numba import typeof
    found = ", ".join(str(typeof(a.value if isinstance(a, ArgHint) else a)) for a in args)
    raise TypeError(f"No matching definition for argument type(s) {found}")


def _fit(ty: Any, value: Any, specialized: bool = False) -> tuple[bool, Any]:
    from numba.core import types
    from numba.np.numpy_support import as_dtype

    from ..sim.eager import c_convert
    if isinstance(ty, types.Array):
        if not isinstance(value, (np.ndarray, DeviceArray)):
            return False, value
        layout_ok = ty.layout == "A" or (
            value.flags["C_CONTIGUOUS"] if ty.layout == "C" else value.flags["F_CONTIGUOUS"])
        declared = as_dtype(ty.dtype)
        if not (layout_ok and value.ndim == ty.ndim):
            return False, value
        if np.dtype(value.dtype) == declared:
            return True, value
        if specialized and np.dtype(value.dtype).itemsize == declared.itemsize and \
                hasattr(value, "view"):
            warnings.warn(ReinterpretedArrayWarning(
                f"a {value.dtype} array is passed for a parameter declared {ty}: numba-cuda "
                f"checks no types when launching a kernel compiled for one signature, so the "
                f"kernel reads the array's bytes as {declared}; convert it with "
                f".astype({declared}) if the values should be kept"),
                stacklevel=user_stacklevel())
            return True, value.view(declared)
        return False, value
    if isinstance(ty, (types.Integer, types.Float, types.Complex, types.Boolean)):
        if isinstance(value, (np.ndarray, DeviceArray)) or not isinstance(
                value, (bool, int, float, complex, np.generic)):
            return False, value
        if isinstance(value, (complex, np.complexfloating)) and \
                not isinstance(ty, types.Complex):
            return False, value
        _as_ctypes(ty, value)
        return True, c_convert(value, as_dtype(ty))
    return True, value


def _as_ctypes(ty: Any, value: Any) -> None:
    """The ctypes conversion numba-cuda's `_prepare_args` makes of a scalar argument, for its
    errors: a float given for an integer parameter is a TypeError at launch there too."""
    import ctypes

    from numba.core import types
    if isinstance(ty, types.Integer):
        getattr(ctypes, f"c_{ty}")(value)
    elif ty in (types.float32, types.float64):
        (ctypes.c_float if ty == types.float32 else ctypes.c_double)(value)


# -- the methods patched onto numba-cuda's CUDADispatcher --------------------------------------
def dispatcher_getitem(self: Any, args: Any) -> SimLaunch:
    if not isinstance(args, tuple) or len(args) not in (2, 3, 4):
        raise ValueError("must specify at least the griddim and blockdim")
    return SimLaunch(self, *args)


def dispatcher_configure(self: Any, griddim: Any, blockdim: Any, stream: Any = 0,
                         sharedmem: Any = 0) -> SimLaunch:
    return SimLaunch(self, griddim, blockdim, stream, sharedmem)


def dispatcher_forall(self: Any, ntasks: int, tpb: int = 0, stream: Any = 0,
                      sharedmem: int = 0) -> SimForAll:
    return SimForAll(self, ntasks, tpb, stream, sharedmem)


def dispatcher_call(self: Any, args: tuple, launch_config: Any) -> None:
    """A launch configured before the simulation started (numba's _LaunchConfiguration)."""
    __tracebackhide__ = True
    try:
        launch(self, launch_config.griddim, launch_config.blockdim, 0,
               launch_config.sharedmem, tuple(args), launch_config)
    except GpukitError as exc:
        raise exc.with_traceback(None) from exc.__cause__


def dispatcher_specialize(self: Any, *args: Any) -> Any:
    """numba-cuda's `specialize`: a dispatcher for these arguments' types only (kept per compute
    capability and types), listed in its `overloads` and compiled by numba-cuda when looked at."""
    from numba.cuda.dispatcher import CUDADispatcher
    if self.specialized:
        raise RuntimeError("Dispatcher already specialized")  # numba-cuda's error
    argtypes = tuple(self.typeof_pyval(a) for a in args)
    key = (current(required=True).profile.compute_capability, argtypes)
    specialization = self.specializations.get(key)
    if specialization is None:
        specialization = CUDADispatcher(self.py_func, targetoptions=self.targetoptions)
        overloads_of(specialization).note(argtypes)
        specialization.disable_compile()
        specialization._specialized = True
        specialization._gpukit_signatures = [argtypes]
        self.specializations[key] = specialization
    return specialization


def is_sim_array(value: Any) -> bool:
    return isinstance(value, SimNDArray)
