"""The one exception hierarchy of gpukit.

Every error a user can cause derives from `GpukitError`. Messages say what was wrong, the value and
the limit, and how to fix it. Errors raised inside a simulated kernel derive from `KernelError` and
carry the kernel name, the thread and block (as (x, y, z) tuples) and the source line.
"""

from __future__ import annotations


class GpukitError(Exception):
    """Root of every gpukit error."""


class InvalidArgumentError(GpukitError, ValueError):
    """A public function was given an argument with an impossible value (a negative count, an
    unknown name, NaN, ...). The message names the argument, the value and what is allowed."""


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """A public function was given an argument of the wrong type (a string for a number, ...)."""


class InvalidOptionError(InvalidArgumentError):
    """A backend or launch option (checks, schedule, seed, watchdog_s, flops, ...) is not valid."""


class OptionTypeError(InvalidOptionError, ArgumentTypeError):
    """A backend or launch option has the wrong type."""


class BackendUnavailableError(GpukitError):
    """A backend was asked for but cannot be used here (no GPU, missing package, ...)."""


class BackendError(GpukitError):
    """A backend broke the backend contract (a factory returned something that is not a
    Backend), or was asked for something it does not offer."""


class UnsupportedOperationError(BackendError, NotImplementedError):
    """The backend does not offer this operation (streams, timed copies, tracing, ...)."""


class LaunchConfigError(GpukitError, ValueError):
    """A kernel launch asked for a grid, block or shared memory the device cannot give."""


class DeviceMemoryError(GpukitError):
    """Something is wrong with (simulated) device memory."""


class OutOfMemoryError(DeviceMemoryError, MemoryError):
    """An allocation asked for more device memory than is free."""

    def __init__(self, message: str, requested_bytes: int = 0, free_bytes: int = 0,
                 total_bytes: int = 0):
        super().__init__(message)
        self.requested_bytes = requested_bytes
        self.free_bytes = free_bytes
        self.total_bytes = total_bytes


class HostMemoryBudgetError(DeviceMemoryError, MemoryError):
    """Simulating this would take more host memory than the simulator's budget allows."""


class HostMemoryError(GpukitError, MemoryError):
    """The host could not hold an array gpukit was asked to make (numpy's MemoryError)."""


class InvalidDeviceArrayError(DeviceMemoryError):
    """A device array was used after it was freed, freed twice, or belongs to another backend."""


class HostAccessError(DeviceMemoryError, TypeError):
    """A device array was used as if it lived on the host: converted to numpy implicitly,
    iterated, tested for truth, computed with, or assigned element by element."""


class DeviceIndexError(DeviceMemoryError, IndexError):
    """A device array was indexed (to make a view) outside its shape."""


class TransferError(GpukitError, ValueError):
    """A host/device copy was asked for with a wrong source or destination."""


class KernelError(GpukitError):
    """An error inside a kernel, located at a thread, a block and a source line.

    `thread` and `block` are (x, y, z) tuples (threadIdx within the block, blockIdx); `lineno` is
    the line in the source file of the failing statement.
    """

    def __init__(self, message: str, kernel: str | None = None,
                 thread: tuple[int, int, int] | None = None,
                 block: tuple[int, int, int] | None = None, lineno: int | None = None,
                 filename: str | None = None):
        self.detail = message
        self.kernel = kernel
        self.thread = thread
        self.block = block
        self.lineno = lineno
        self.filename = filename
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.kernel is not None:
            where.append(f"kernel '{self.kernel}'")
        if self.thread is not None:
            where.append(f"thread {self.thread}")
        if self.block is not None:
            where.append(f"block {self.block}")
        if self.lineno is not None:
            place = f"{self.filename}:" if self.filename else "line "
            where.append(f"{place}{self.lineno}")
        return f"{self.detail} [{', '.join(where)}]" if where else self.detail

    def __str__(self) -> str:  # not OSError's, which KernelTimeoutError would use (.filename)
        return self._format()


class OutOfBoundsError(KernelError, IndexError):
    """A kernel indexed outside an array (negative indices included)."""


class RaceConditionError(KernelError):
    """Two threads touched one element between barriers, at least one writing, not both atomically.

    `other_thread`, `other_block` and `other_lineno` locate the second access.
    """

    def __init__(self, message: str, *, other_thread=None, other_block=None, other_lineno=None,
                 **where):
        self.other_thread = other_thread
        self.other_block = other_block
        self.other_lineno = other_lineno
        super().__init__(message, **where)


class StreamRaceError(RaceConditionError):
    """Two operations on different streams (copies, kernels) touch one element, at least one
    writing, and nothing orders them: on a GPU they may run at the same time.

    `stream` is the later operation's stream, `other_stream` the earlier one's (never the
    default stream, which is ordered with every other).
    """

    def __init__(self, message: str, *, stream: int, other_stream: int):
        self.stream = stream
        self.other_stream = other_stream
        super().__init__(message)


class BarrierError(KernelError):
    """Threads of a block waited at different barriers, or some exited while others waited."""


class UninitializedMemoryError(KernelError):
    """A kernel read shared memory, or device memory from `allocate`, that was never written."""


class KernelArithmeticError(KernelError, ZeroDivisionError):
    """Integer division or modulo by zero inside a kernel (on a GPU numba-cuda silently makes
    the result 0)."""


class KernelTimeoutError(KernelError, TimeoutError):
    """The watchdog stopped a kernel that ran longer than allowed."""


class UnsupportedKernelError(KernelError, NotImplementedError):
    """The kernel uses Python or CUDA features that the simulator does not model."""


class KernelTypingError(UnsupportedKernelError):
    """numba-cuda would not compile this kernel for a GPU (its typing failed); the message is
    numba-cuda's reason. The simulator rejects exactly what numba-cuda rejects. Raised as an
    instance of numba-cuda's own error class too (see `typing_error_as`)."""


_TYPING_ERRORS: dict[tuple, type] = {}


def typing_error_as(numba_error: Exception, message: str, **where) -> KernelTypingError:
    """The KernelTypingError for numba-cuda's rejection `numba_error`: also an instance of its
    class and of numba's and numba-cuda's TypingError (numba-cuda's typing raises either), so
    that code written against numba-cuda (`except TypingError`) catches it; a plain
    KernelTypingError where the classes do not combine."""
    import importlib

    classes = [type(numba_error)]
    for module in ("numba.cuda.core.errors", "numba.core.errors"):
        try:
            typing_error = importlib.import_module(module).TypingError
        except (ImportError, AttributeError):  # (Numba's CUDA simulator has no numba.cuda.core)
            continue
        if not any(issubclass(c, typing_error) for c in classes):
            classes.append(typing_error)
    key = tuple(classes)
    try:
        kind = _TYPING_ERRORS.get(key)
        if kind is None:
            kind = type("KernelTypingError", (KernelTypingError, *key),
                        {"__module__": __name__, "__doc__": KernelTypingError.__doc__})
            _TYPING_ERRORS[key] = kind
        return kind(message, **where)
    except Exception:  # noqa: BLE001 - a layout conflict or an __init__ of its own
        return KernelTypingError(message, **where)


_COMBINED: dict[tuple[type, type], type] = {}


def also_instance_of(error: Exception, extra: type) -> Exception:
    """`error` as an instance of `extra` too (a class of both, made once per pair, named and
    placed as `error`'s), with its arguments and attributes; `error` itself where the two
    classes do not combine."""
    kind = type(error)
    try:
        both = _COMBINED.get((kind, extra))
        if both is None:
            both = _COMBINED[(kind, extra)] = type(kind.__name__, (kind, extra),
                                                   {"__module__": kind.__module__})
        combined = both.__new__(both, *error.args)
    except TypeError:  # a layout conflict
        return error
    combined.args = error.args
    combined.__dict__.update(error.__dict__)
    return combined.with_traceback(error.__traceback__)


def as_numba_cuda_error(numba_error: Exception) -> Exception:
    """An error of Numba's own compiler (`numba.core.errors`, from the simulator compiling a
    kernel with Numba's CPU target: an intrinsic's lowering, say) as an instance of numba-cuda's
    class of the same name as well, which is what a GPU compilation raises (numba-cuda's
    errors module mirrors numba's); `numba_error` itself where numba-cuda has no such class."""
    import importlib
    try:
        cuda_errors = importlib.import_module("numba.cuda.core.errors")
    except ImportError:
        return numba_error
    theirs = getattr(cuda_errors, type(numba_error).__name__, None)
    if not isinstance(theirs, type) or isinstance(numba_error, theirs):
        return numba_error
    return also_instance_of(numba_error, theirs)


class KernelFaultError(KernelError):
    """A kernel faulted on a real GPU (an illegal address, a trap, a misaligned access...). The
    GPU does not say which thread; CUDA's error is sticky, so the process's GPU context is lost:
    every later call on that backend raises this again until the Python process restarts."""


class GpukitWarning(UserWarning):
    """Root of gpukit's warnings."""


class ImplicitTransferWarning(GpukitWarning):
    """A kernel was given host arrays, so they were copied to the device and back implicitly."""


class ReinterpretedArrayWarning(GpukitWarning):
    """A kernel compiled for one signature was given an array of another dtype of the same size:
    numba-cuda passes its bytes unchanged, so the kernel reads them as the declared dtype."""
