"""A kernel's own source: its syntax tree with the file's line numbers, and its source sites.

A site is a place in the learner's code that the simulator may report: an array access, a call,
a loop header. Sites are numbered per kernel (the compiled code passes the number; the host keeps
the table), so nothing is kept process-wide.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import UnsupportedKernelError


@dataclass(frozen=True)
class Site:
    """A place in kernel source: its file, line, text and function; `label` names the array
    an access goes through (the variable, as the learner wrote it)."""

    lineno: int
    text: str
    filename: str
    function: str
    kind: str = "expr"  # "read", "write", "atomic", "call", "loop", "sync", "expr"
    label: str | None = None


@dataclass
class Sites:
    """The sites of one kernel (and the device functions compiled with it)."""

    items: list[Site] = field(default_factory=list)

    def add(self, site: Site) -> int:
        self.items.append(site)
        return len(self.items) - 1

    def __getitem__(self, index: int) -> Site:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class FunctionSource:
    tree: ast.FunctionDef
    text: str  # the file's text up to and including the function (for source segments)
    filename: str
    firstlineno: int

    def segment(self, node: ast.AST) -> str:
        text = ast.get_source_segment(self.text, node) or ast.unparse(node)
        return " ".join(text.split())


def read_function(func: Callable) -> FunctionSource:
    """The definition of `func` with its own line numbers (decorators dropped)."""
    name = getattr(func, "__name__", repr(func))
    try:
        lines, firstlineno = inspect.getsourcelines(func)
    except (OSError, TypeError) as exc:
        raise UnsupportedKernelError(
            f"cannot read the source of {name!r} ({exc}); the simulator needs kernels defined "
            "with def in a file or a notebook cell, not built with exec()", kernel=name) from None
    source = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = None
    fn = tree.body[0] if tree is not None and tree.body else None
    if not isinstance(fn, ast.FunctionDef):
        what = "a lambda" if name == "<lambda>" else "not defined with a plain def statement"
        raise UnsupportedKernelError(
            f"kernel {name!r} is {what}; write kernels and device functions with def (numba-cuda "
            "compiles lambdas only as device functions of other kernels)", kernel=name)
    ast.increment_lineno(fn, firstlineno - 1)
    fn.decorator_list = []
    padded = "\n" * (firstlineno - 1) + source  # positions of `fn` refer to the file's lines
    return FunctionSource(fn, padded, func.__code__.co_filename, firstlineno)
