"""Tracebacks of the simulation mode that end at the user's code, not in gpukit's internals.

Launches re-raise gpukit's errors with their traceback cut at the launch (`gpukit.simulate.dispatch`)
and mark their own frame `__tracebackhide__`, which pytest and IPython honour. For plain scripts,
`excepthook` (installed while a simulation is active, if `sys.excepthook` is Python's own) prints
tracebacks without the frames of gpukit's files. It changes no exception, only what is printed.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from types import TracebackType
from typing import Any

_GPUKIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


@functools.lru_cache(maxsize=1024)  # every launch asks, for each frame
def is_internal(filename: str) -> bool:
    """Whether a frame's file is part of gpukit."""
    return os.path.abspath(filename).startswith(_GPUKIT_DIR)


def user_frames(tb: TracebackType | None) -> list[traceback.FrameSummary]:
    """The frames of a traceback outside gpukit (all of them if every frame is gpukit's)."""
    frames = traceback.extract_tb(tb)
    kept = [f for f in frames if not is_internal(f.filename)]
    return kept or list(frames)


def format_exception(exc: BaseException) -> str:
    """The traceback as Python prints it, without gpukit's frames, for gpukit errors."""
    from ..errors import GpukitError
    if not isinstance(exc, GpukitError):
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    lines = ["Traceback (most recent call last):\n"]
    lines += traceback.format_list(user_frames(exc.__traceback__))
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)


def excepthook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
    """sys.excepthook for the simulation mode: gpukit errors print with the user's frames."""
    if exc.__traceback__ is None:
        exc = exc.with_traceback(tb)
    sys.stderr.write(format_exception(exc))


def user_stacklevel() -> int:
    """The `warnings.warn` stacklevel of the first frame outside gpukit (the user's line), for a
    warning issued by the caller of this function."""
    frame, level = sys._getframe(1), 1
    while frame is not None and is_internal(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level
