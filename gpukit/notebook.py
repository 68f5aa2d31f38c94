"""Errors in notebooks: the learner's frames and the message, not gpukit's internals.

`tracebacks(on)` switches an IPython exception handler that shows a gpukit error (`GpukitError`,
kernel errors included) with the frames of the learner's own code only, then the message and, for
a kernel error, the kernel's failing line; every other exception is shown as IPython always does.
It is on by default when gpukit is imported in IPython or Jupyter (a learner does not know to ask
for it, and it changes no exception, only what is printed); `gpukit.tracebacks(False)`, or the
environment variable `GPUKIT_TRACEBACKS=full` before the import, keeps IPython's full tracebacks.

`show_errors()` is a context manager for cells that demonstrate an error: a gpukit error inside it
is printed (its message and where, without file paths, so the output is the same on every
machine) instead of raised, so Run All goes on to the next cell. Neither imports IPython.
"""

from __future__ import annotations

import linecache
import os
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .errors import GpukitError, InvalidArgumentError, KernelError
from .simulate.tracebacks import is_internal

if TYPE_CHECKING:
    from typing_extensions import Self

ENV_VAR = "GPUKIT_TRACEBACKS"
NOTE = ("(gpukit's own frames are hidden: gpukit.tracebacks(False) shows them, "
        "and %tb shows the last error in full)")


def learner_traceback(tb: TracebackType | None) -> TracebackType | None:
    """The same traceback without the frames of gpukit's own files (unchanged when every frame
    is gpukit's: something must be shown)."""
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    kept = [t for t in frames if not is_internal(t.tb_frame.f_code.co_filename)]
    if not kept:
        return frames[0] if frames else None
    head = None
    for t in reversed(kept):
        head = TracebackType(head, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return head


def _where(error: KernelError, cell_name: Any = None) -> str:
    """'kernel 'k', thread (..) of block (..), line N:' and the line's source, when known."""
    parts = []
    if error.kernel is not None:
        parts.append(f"kernel '{error.kernel}'")
    if error.thread is not None:
        parts.append(f"thread {error.thread}" + (f" of block {error.block}"
                                                 if error.block is not None else ""))
    if error.lineno is not None:
        place = cell_name(error.filename) if cell_name and error.filename else None
        parts.append(f"{' '.join(place)}, line {error.lineno}" if place
                     else f"line {error.lineno}")
    text = ", ".join(parts)
    source = linecache.getline(error.filename, error.lineno).strip() \
        if error.filename and error.lineno else ""
    return f"{text}:\n    {source}" if source else text


def _handler(shell: Any, etype: type, value: BaseException, tb: TracebackType | None,
             tb_offset: int | None = None) -> None:
    """IPython's custom exception handler: the learner's frames, the message, a note."""
    cause, suppress = value.__cause__, value.__suppress_context__
    value.__cause__, value.__suppress_context__ = None, True   # gpukit's chain is internal
    try:
        stb = shell.InteractiveTB.structured_traceback(etype, value, learner_traceback(tb),
                                                       tb_offset=tb_offset)
    finally:
        value.__cause__, value.__suppress_context__ = cause, suppress
    if isinstance(value, KernelError) and value.lineno is not None:
        cell_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
        stb.append("In " + _where(value, cell_name))
    stb.append(NOTE)
    # what showtraceback records, so that %tb and %debug see the whole error
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = value
    shell._showtraceback(etype, value, stb)   # ipykernel sends it to the notebook from here


def _shell() -> Any:
    """The running IPython shell, or None (IPython is not imported just to ask)."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def _installed(shell: Any) -> bool:
    return getattr(shell, "custom_exceptions", ()) == (GpukitError,)   # nobody else's is


def tracebacks(on: bool = True) -> bool:
    """Show gpukit's errors in IPython with the learner's frames only (`on=True`, the default
    in IPython) or with IPython's full traceback (`on=False`). Returns whether the short form is
    now on; outside IPython it does nothing and returns False. A shell that already has another
    custom exception handler keeps it (and this returns False)."""
    if not isinstance(on, bool):
        raise InvalidArgumentError(f"tracebacks(on) takes True or False, not {on!r}")
    shell = _shell()
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return False
    if not on:
        if _installed(shell):
            shell.set_custom_exc((), None)
        return False
    if _installed(shell):
        return True
    if shell.custom_exceptions:   # someone else's handler: leave it alone
        return False
    shell.set_custom_exc((GpukitError,), _handler)
    return True


def install_default() -> bool:
    """At import: the short tracebacks in IPython, unless GPUKIT_TRACEBACKS=full."""
    if os.environ.get(ENV_VAR, "").strip().lower() in ("full", "0", "off", "false", "no"):
        return False
    try:
        return tracebacks(True)
    except Exception:  # noqa: BLE001 - an odd shell must never break `import gpukit`
        return False


def describe(error: GpukitError) -> str:
    """A gpukit error as `show_errors` prints it: the type, the message without the cell's file
    name, and for a kernel error the kernel, thread, block, line and the line's source."""
    if isinstance(error, KernelError):
        return f"{type(error).__name__}: {error.detail}\n  in {_where(error)}"
    return f"{type(error).__name__}: {error}"


class show_errors:
    """`with gpukit.show_errors(): kernel[...](...)`: a gpukit error in the block is printed
    (`describe(error)`) and not raised, so the rest of the notebook still runs; `.error` keeps it
    (None when nothing went wrong). Other exceptions go through unchanged."""

    def __init__(self) -> None:
        self.error: GpukitError | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, etype: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if not isinstance(value, GpukitError):
            return False
        self.error = value
        print(describe(value))
        return True
